"""The editor server's pieces without a process: framing (transport.py) and the typed protocol."""

from __future__ import annotations

import io

import pytest

from mino_server.server import protocol as P
from mino_server.server.transport import FrameError, FrameWriter, decode, read_frames


def frames(data: bytes) -> list[bytes | FrameError]:
    return list(read_frames(io.BufferedReader(io.BytesIO(data))))  # type: ignore[arg-type]


def test_frames_tolerate_case_extra_headers_and_stray_blank_lines() -> None:
    data = (
        b"\r\ncontent-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
        b"Content-Length: 7\r\n\r\n[1,2,3]"
    )
    assert frames(data) == [b"{}", b"[1,2,3]"]


def test_frames_report_bad_headers_and_stop_at_eof() -> None:
    out = frames(b"Content-Length: x\r\n\r\nContent-Length: 5\r\n\r\n{}")
    assert (
        isinstance(out[0], FrameError) and out[0].code == P.PARSE_ERROR and "whole number" in out[0].message
    )
    assert len(out) == 1  # EOF inside the second body: nothing more


def test_oversized_body_is_skipped_and_reading_goes_on() -> None:
    size = P.MAX_MESSAGE_BYTES + 1
    out = frames(b"Content-Length: %d\r\n\r\n" % size + b"x" * size + b"Content-Length: 2\r\n\r\n{}")
    assert isinstance(out[0], FrameError) and out[0].code == P.INVALID_REQUEST
    assert out[1:] == [b"{}"]


def test_decode() -> None:
    assert decode(b'{"a": 1}') == {"a": 1}
    assert isinstance(decode(b"\xff"), FrameError)
    assert decode(b"[]").code == P.INVALID_REQUEST  # type: ignore[union-attr]
    assert decode(b"3").code == P.INVALID_REQUEST  # type: ignore[union-attr]


def test_writer_frames_ascii_and_survives_a_closed_pipe() -> None:
    sink = io.BytesIO()
    writer = FrameWriter(sink)  # type: ignore[arg-type]
    writer.send({"text": "中文 \udc80"})
    body = sink.getvalue().split(b"\r\n\r\n", 1)[1]
    assert sink.getvalue().startswith(b"Content-Length: %d\r\n\r\n" % len(body)) and body.isascii()
    sink.close()
    writer.send({"again": True})  # no exception: the client went away
    assert writer.closed


def test_parse_names_the_field_and_the_problem() -> None:
    with pytest.raises(P.ValidationError, match=r"params\.workspaceFolders\[0\]\.uri must be a string"):
        P.parse(P.InitializeParams, {"workspaceFolders": [{"uri": 3, "name": "x"}]})
    with pytest.raises(P.ValidationError, match=r"params\.mode must be one of"):
        P.parse(P.ModeParams, {"mode": True})
    with pytest.raises(P.ValidationError, match="missing the field 'typedId'"):
        P.parse(P.ClearParams, {"id": "a" * 32})
    assert P.parse(P.TurnParams, {"text": "hi", "extra": 1}).text == "hi"  # unknown fields ignored
    with pytest.raises(P.ValidationError, match="does not define: extra"):
        P.parse(P.TurnParams, {"text": "hi", "extra": 1}, strict=True)


def test_events_are_told_apart_by_type_and_dump_omits_absent_optionals() -> None:
    event = P.parse(P.Event, {"type": "turn_end", "turnId": "t", "status": "interrupted"})
    assert isinstance(event, P.TurnEnd)
    with pytest.raises(P.ValidationError, match=r"params\.type must be one of"):
        P.parse(P.Event, {"type": "nope", "turnId": "t"})
    assert P.dump(P.TurnResult(turnId="t", status="completed", text="x")) == {
        "turnId": "t",
        "status": "completed",
        "text": "x",
    }
    state = P.parse(P.HistoryItem, {"seq": 1, "turnId": None, "role": "user", "text": "hi"})
    assert P.dump(state) == {"seq": 1, "turnId": None, "role": "user", "text": "hi"}


def test_every_client_request_has_a_route() -> None:
    from mino_server.server.app import ROUTES

    assert set(ROUTES) == {m.name for m in P.CLIENT_REQUESTS}
    for name, route in ROUTES.items():
        assert route.params is P.BY_NAME[name].params
