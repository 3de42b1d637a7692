"""What mino_server/server/pygls_fence.py relies on in pygls is still there, in the installed release.

The fence overrides private hooks of pygls's JsonRPCProtocol (its docstring says which and why).
A pygls release that renames one, changes its parameters or stops routing a message kind through
it would make the editor server silently answer nothing, or answer wrongly: these tests fail
first, naming the installed pygls and what changed. Checked two ways: the hooks' signatures
(inspect), and real messages through a real in-process pygls protocol.
"""

from __future__ import annotations

import inspect
import re
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from pygls.protocol import JsonRPCProtocol

from mino_server.server import pygls_fence as fence

ROOT = Path(__file__).resolve().parent.parent
PYGLS = version("pygls")
ADVICE = (
    "mino_server/server/pygls_fence.py relies on it (its docstring says why); adapt the fence to this "
    "pygls or keep the pin in pyproject.toml"
)


def broken(what: str) -> str:
    return f"pygls {PYGLS}: {what}. {ADVICE}."


def signature_problems(cls: type) -> list[str]:
    """How `cls` differs from what the fence overrides (RELIED_ON), one line per difference."""
    problems = []
    for name, expected in fence.RELIED_ON.items():
        member = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(member):
            problems.append(f"{cls.__name__}.{name} is gone")
            continue
        params = tuple(inspect.signature(member).parameters)
        if params != expected:
            problems.append(f"{cls.__name__}.{name} now takes {params}, the fence expects {expected}")
    return problems


class Recorder:
    """A Peer that records what the fence hands it."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_request(self, msg_id: fence.MsgId, method: str, params: Any) -> None:
        self.calls.append(("request", msg_id, method, params))

    def on_notification(self, method: str, params: Any) -> None:
        self.calls.append(("notification", method, params))

    def on_response(self, msg_id: fence.MsgId, result: Any, error: fence.ErrorBody | None) -> None:
        self.calls.append(("response", msg_id, result, error))


@pytest.fixture
def wired() -> tuple[fence.Channel, Recorder, list[dict[str, Any]]]:
    peer = Recorder()
    sent: list[dict[str, Any]] = []
    return fence.Channel(peer, sent.append, max_workers=2), peer, sent


def test_the_installed_pygls_is_the_pinned_major() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"pygls>=2.0,<3"' in pyproject, "pyproject.toml no longer pins pygls>=2.0,<3: re-check the fence"
    assert re.match(r"2\.\d", PYGLS), broken("not a pygls 2 release")


def test_the_overridden_hooks_exist_with_the_expected_parameters() -> None:
    problems = signature_problems(JsonRPCProtocol)
    assert problems == [], broken("; ".join(problems))
    defaults = inspect.signature(JsonRPCProtocol._handle_response).parameters
    assert defaults["result"].default is None and defaults["error"].default is None, broken(
        "JsonRPCProtocol._handle_response no longer defaults result and error to None"
    )


def test_the_signature_check_notices_a_changed_hook() -> None:
    """The check above is not vacuous: a pygls whose hooks moved or changed fails it."""

    class Changed(JsonRPCProtocol):
        def _handle_response(self, msg_id: Any, result: Any, error: Any, extra: Any) -> None:  # type: ignore[override]
            pass

    class Gone:
        pass

    assert signature_problems(Changed) == [
        "Changed._handle_response now takes ('self', 'msg_id', 'result', 'error', 'extra'), "
        "the fence expects ('self', 'msg_id', 'result', 'error')"
    ]
    assert len(signature_problems(Gone)) == len(fence.RELIED_ON)


def test_the_fence_adds_no_name_pygls_uses(
    wired: tuple[fence.Channel, Recorder, list[dict[str, Any]]],
) -> None:
    channel, _, _ = wired
    protocol = channel._protocol
    plain = JsonRPCProtocol(channel._server, None)  # type: ignore[arg-type]
    pygls_names = set(dir(JsonRPCProtocol)) | set(vars(plain))
    ours = {"mino_peer", "mino_write"}
    assert ours <= set(vars(protocol)), "the fence's own attributes moved: update this test"
    assert ours.isdisjoint(pygls_names), broken(f"JsonRPCProtocol now has {sorted(ours & pygls_names)}")
    assert getattr(protocol, "_shutdown", False) is False, broken(
        "a new JsonRPCProtocol starts shut down (handle_message would drop every message)"
    )


def test_every_message_kind_reaches_the_peer(
    wired: tuple[fence.Channel, Recorder, list[dict[str, Any]]],
) -> None:
    channel, peer, sent = wired
    messages: list[tuple[dict[str, Any], tuple[Any, ...]]] = [
        (
            {"jsonrpc": "2.0", "id": 7, "method": "mino/turn", "params": {"text": "hi"}},
            ("request", 7, "mino/turn", {"text": "hi"}),
        ),
        (  # pygls would answer "method not found" itself
            {"jsonrpc": "2.0", "id": "u", "method": "no/such", "params": None},
            ("request", "u", "no/such", None),
        ),
        (  # pygls would cancel a thread future itself (and fail on a dict's missing `.id`)
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}},
            ("notification", "$/cancelRequest", {"id": 7}),
        ),
        ({"jsonrpc": "2.0", "method": "initialized", "params": {}}, ("notification", "initialized", {})),
        (  # pygls would look the id up in the dict it shares with the client's requests
            {"jsonrpc": "2.0", "id": "mino-1", "result": {"approved": True}},
            ("response", "mino-1", {"approved": True}, None),
        ),
        (
            {"jsonrpc": "2.0", "id": "mino-2", "error": {"code": -1, "message": "no", "data": {"x": 1}}},
            ("response", "mino-2", None, fence.ErrorBody(-1, "no", {"x": 1})),
        ),
    ]
    for message, expected in messages:
        peer.calls.clear()
        channel.receive(message)
        assert peer.calls == [expected], broken(f"handle_message({message}) reached the peer as {peer.calls}")
        assert sent == [], broken(f"pygls answered {message} itself with {sent}")


def test_everything_sent_goes_through_the_writer_as_plain_json(
    wired: tuple[fence.Channel, Recorder, list[dict[str, Any]]],
) -> None:
    channel, _, sent = wired
    channel.notify("mino/event", {"type": "text_delta", "text": "é"})
    channel.notify("mino/ping")
    channel.request("mino-3", "mino/approve", {"tool": "bash"})
    channel.respond(4, {"ok": True})
    channel.respond_error(None, fence.ErrorBody(-32700, "Parse error", None))
    channel.respond_error(5, fence.ErrorBody(-32001, "busy", {"detail": "A turn is running."}))
    assert sent == [
        {"jsonrpc": "2.0", "method": "mino/event", "params": {"type": "text_delta", "text": "é"}},
        {"jsonrpc": "2.0", "method": "mino/ping"},
        {"jsonrpc": "2.0", "id": "mino-3", "method": "mino/approve", "params": {"tool": "bash"}},
        {"jsonrpc": "2.0", "id": 4, "result": {"ok": True}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {"code": -32001, "message": "busy", "data": {"detail": "A turn is running."}},
        },
    ], broken(f"JsonRPCProtocol.notify no longer sends through _send_data as expected: {sent}")
    # pygls's own request bookkeeping (shared with the client's ids) is never used.
    with pytest.raises(NotImplementedError):
        channel._protocol.send_request("mino/approve", {}, msg_id="x")
    assert not getattr(channel._protocol, "_request_futures", {}), broken(
        "a request was filed in _request_futures"
    )


def test_work_runs_on_the_thread_pool(wired: tuple[fence.Channel, Recorder, list[dict[str, Any]]]) -> None:
    channel, _, _ = wired
    future = channel.submit(lambda: threading.current_thread() is threading.main_thread())
    assert future.result(timeout=10) is False, broken(
        "JsonRPCServer.thread_pool ran the work on the main thread"
    )
