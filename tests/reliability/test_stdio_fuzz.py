"""Hostile JSON-RPC input to `mino --stdio`: framing, JSON and params, fuzzed with hypothesis.

A real server over real pipes (tests/server_client.py checks every byte it writes). Whatever
arrives, the server answers with one-line errors, keeps answering, never writes a traceback, and
changes nothing outside MINO_HOME and the workspace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fuzz import SCALE, OutsideGuard, fuzz
from hypothesis import given
from hypothesis import strategies as st
from server_client import Client, contract_problems
from tally import TALLY

from mino_server.server import protocol as P

pytestmark = pytest.mark.timeout(120 * SCALE)

STR = st.one_of(
    st.text(max_size=30),
    st.just("x" * 100_000),
    st.sampled_from(
        ["/new", "/clear", "/resume " + "a" * 32, "/mode bypass", "/compact", "/sessions", "/x", "A" * 32]
    ),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | STR,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=6,
)
# Never a small positive integer: those are the ids of the client's own requests.
IDS = st.one_of(
    st.text(max_size=6).map(lambda s: "f" + s),
    st.integers(-(10**6), -1),
    st.none(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.just({"a": 1}),
    st.booleans(),
)
PARAMS = st.one_of(
    JSONISH,
    st.fixed_dictionaries(
        {}, optional={k: st.one_of(STR, JSONISH) for k in ("text", "line", "id", "typedId", "mode")}
    ),
)


UNKNOWN_METHODS = ["textDocument/hover", "", "mino/", "$/x", "rpc.discover"]
METHODS = [m.name for m in P.ALL_METHODS if m.name not in ("exit", "shutdown")] + UNKNOWN_METHODS


@st.composite
def a_message(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(JSONISH)  # not a request object at all
    message: dict[str, Any] = {
        "jsonrpc": draw(st.sampled_from(["2.0"] * 6 + ["1.0", None, 2])),
        "method": draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=10))),
    }
    if message["method"] in ("exit", "shutdown"):
        message["method"] = "mino/state"
    if draw(st.booleans()):
        message["id"] = draw(IDS)
    if draw(st.integers(0, 4)):
        message["params"] = draw(PARAMS)
    return message


@pytest.fixture
def server_env(mino_env: dict[str, str], mino_home: Path, workdir: Path) -> tuple[dict[str, str], Path, Path]:
    """The shared mino_env, MINO_HOME and workspace, without the sandbox probe."""
    mino_home.mkdir()
    (mino_home / "config.yaml").write_text('sandbox: "off"\n')
    return mino_env, mino_home, workdir


def test_jsonrpc_message_fuzz(server_env: tuple[dict[str, str], Path, Path], tmp_path: Path) -> None:
    env, home, ws = server_env
    client = Client(env, ws)
    client.initialize(ws)
    guard = OutsideGuard(tmp_path, [home, ws])

    @fuzz(60)
    @given(messages=st.lists(a_message(), min_size=1, max_size=4))
    def case(messages: list[Any]) -> None:
        TALLY.fuzz_cases += 1
        for message in messages:
            client.send(message)
        state = client.request("mino/state", timeout=30)  # still answering, in order
        assert state["sessionId"] or state["restoreProblem"], state

    try:
        case()
    finally:
        code = client.stop()
    stderr = bytes(client.stderr).decode(errors="replace")
    assert code == 0, stderr[-2000:]
    assert contract_problems(client) == [], stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-4000:]
    assert guard.changed() == []


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


STATE = frame(json.dumps({"jsonrpc": "2.0", "id": "fs", "method": "mino/state"}).encode())
PIECES = st.one_of(
    st.sampled_from(
        [b"0", b"2", b"-1", b"abc", b"99999999999999999999", b" 5", b"5 ", b"1e3", b"17", b""]
    ).map(lambda n: b"Content-Length: " + n + b"\r\n\r\n"),
    st.sampled_from(
        [
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            b"content-length: 2\r\n\r\n{}",
            b"Content-Length: 2\n\n{}",
            b"Content-Type: application/vscode-jsonrpc; charset=latin-1\r\n",
            b"NoColonHeader\r\n",
            b"\r\n\r\n",
            b"X: " + b"a" * 70_000 + b"\r\n",
            frame(b'{"jsonrpc":"2.0","id":"f1","method":"mino/state","params":\xff}'),
            frame(b'{"jsonrpc":"2.0","id":"f2","method":"mino/turn","params":{"text":"\xed\xa0\x80"}}'),
            frame(b"[" * 5000 + b"]" * 5000),
            frame(b'{"jsonrpc":"2.0","id":"f3","method":"mino/state"'),
            STATE,
        ]
    ),
    st.binary(max_size=64),
)


def test_framing_fuzz(server_env: tuple[dict[str, str], Path, Path], tmp_path: Path) -> None:
    """Broken framing, then end of input: the server reports what it can, exits, never crashes."""
    env, home, ws = server_env
    guard = OutsideGuard(tmp_path, [home, ws])

    @fuzz(20)
    @given(pieces=st.lists(PIECES, min_size=1, max_size=5), init=st.booleans())
    def case(pieces: list[bytes], init: bool) -> None:
        TALLY.fuzz_cases += 1
        client = Client(env, ws)
        try:
            if init:
                client.initialize(ws)
            client.write_raw(b"".join(pieces))
            client.close_stdin()
            code = client.wait_exit(30)
        finally:
            if client.proc.poll() is None:
                client.proc.kill()
                client.proc.wait()
        stderr = bytes(client.stderr).decode(errors="replace")
        assert code in (0, 1), (code, stderr[-2000:])  # EOF without shutdown is an exit with 1
        assert contract_problems(client) == [], stderr[-2000:]
        assert "Traceback" not in stderr, stderr[-4000:]

    case()
    assert guard.changed() == []


def test_deeply_nested_json_is_an_error_for_that_message_only(
    server_env: tuple[dict[str, str], Path, Path],
) -> None:
    """Found by the framing fuzz: "[[[[…" 5000 deep ended the server with a RecursionError."""
    env, home, ws = server_env
    client = Client(env, ws)
    client.initialize(ws)
    seen = len(client.messages)
    client.write_raw(frame(b"[" * 5000 + b"]" * 5000))
    client.write_raw(frame(b'{"a":' * 5000 + b"1" + b"}" * 5000))
    deep = {"x": None}
    for _ in range(900):  # just under Python's recursion limit: parses, then meets the handlers
        deep = {"x": deep}
    for method in ("mino/state", "mino/turn", "mino/command", "mino/sessions/resume"):
        client.start(method, {"text": deep, "line": deep, "id": deep} if method != "mino/state" else deep)
    assert client.request("mino/state")["sessionId"]
    errors = [m["error"] for m in client.messages[seen:] if "error" in m]
    TALLY.fuzz_cases += 6
    code = client.stop()
    stderr = bytes(client.stderr).decode(errors="replace")
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    assert contract_problems(client) == []
    assert sum("too deeply" in e["message"] for e in errors) == 2, errors


def test_cancel_with_an_id_that_is_no_id_is_ignored(server_env: tuple[dict[str, str], Path, Path]) -> None:
    """Found by `make soak` (the message fuzz at MINO_FUZZ_SCALE=30): `$/cancelRequest` whose `id`
    was an object or an array logged a TypeError traceback (an unhashable lookup)."""
    env, home, ws = server_env
    client = Client(env, ws)
    client.initialize(ws)
    for bad in ({"a": 1}, [1, 2], None, 1.5, True, "x" * 50):
        client.notify("$/cancelRequest", {"id": bad})
    assert client.request("mino/state")["sessionId"]
    TALLY.fuzz_cases += 6
    code = client.stop()
    stderr = bytes(client.stderr).decode(errors="replace")
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    assert contract_problems(client) == []
