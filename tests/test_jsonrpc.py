"""The JSON-RPC layer both protocol front ends share (mino_server/jsonrpc.py); each front end's
subprocess tests (test_server*.py, test_acp.py) show it on the wire."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

from mino_server import jsonrpc as J
from mino_server.core.cancel import CancelToken
from mino_server.core.contract import OpenElsewhere
from mino_server.core.errors import CommandError, SessionOpenElsewhere, StorageError


def test_an_answer_is_taken_once_and_only_for_an_id_that_was_sent() -> None:
    out = J.Outgoing()
    msg_id = out.new_id()
    future = out.open(msg_id)
    assert not out.answered("mino-999", {"x": 1}, None)  # never sent
    assert not out.answered({"not": "hashable"}, None, None)
    assert out.answered(msg_id, {"ok": True}, None)
    assert not out.answered(msg_id, {"ok": False}, None)  # answered already
    assert out.wait(msg_id, future)
    assert future.result() == {"ok": True}


def test_an_error_answer_is_a_client_error() -> None:
    out = J.Outgoing()
    msg_id = out.new_id()
    future = out.open(msg_id)
    assert out.answered(msg_id, None, J.ClientError(-1, "no"))
    assert out.wait(msg_id, future)
    assert isinstance(future.exception(), J.ClientError)


def test_a_cancelled_wait_forgets_the_request_and_a_late_answer_is_ignored() -> None:
    out = J.Outgoing()
    msg_id = out.new_id()
    future = out.open(msg_id)
    cancel = CancelToken()
    threading.Timer(0.05, cancel.cancel).start()
    assert not out.wait(msg_id, future, None, cancel)
    assert not out.answered(msg_id, {"late": True}, None)
    assert future.cancelled()


def test_an_id_waits_once() -> None:
    out = J.Outgoing()
    out.open("mino-1")
    try:
        out.open("mino-1")
    except ValueError:
        pass
    else:
        raise AssertionError("a second wait for one id was accepted")


def test_cancels_by_key_and_ignores_what_is_no_key() -> None:
    cancels = J.Cancels()
    token = cancels.start(7)
    assert not cancels.cancel([7])  # an array is no id
    assert not cancels.cancel(8)
    assert cancels.cancel(7) and token.cancelled
    cancels.end(7, token)
    assert not cancels.cancel(7)
    other = cancels.start("a")
    cancels.cancel_all()
    assert other.cancelled


def test_the_core_error_table() -> None:
    other = OpenElsewhere(session_id="a" * 32, pid=12, workdir="/w")
    in_use = J.core_error(SessionOpenElsewhere(other))
    assert in_use is not None and in_use.code == J.SESSION_IN_USE
    assert in_use.data == {"sessionId": "a" * 32, "pid": 12, "workdir": "/w"}
    refused = J.core_error(CommandError("no"))
    assert refused is not None and (refused.code, refused.message) == (J.REFUSED, "no")
    storage = J.core_error(StorageError("disk full"))
    assert storage is not None and storage.code == J.STORAGE_FAILED
    assert J.core_error(ValueError("a bug")) is None


def test_error_messages_are_one_line() -> None:
    message = J.error_message(3, J.REFUSED, "two\nlines", {"k": 1})
    assert message == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32004, "message": "two lines", "data": {"k": 1}},
    }
    assert "data" not in J.error_message(None, J.PARSE_ERROR, "x")["error"]


def test_error_codes_are_named_where_they_are_defined_and_nowhere_else_a_literal() -> None:
    """A JSON-RPC error code (-32768..-32000) is written as a number only where it is named: the
    shared ones in jsonrpc.py, each protocol's own in server/protocol.py and acp/mapping.py
    (`NAME = -32xxx`). Everywhere else the code uses the name (comments and doc strings may say the
    number)."""
    package = Path(J.__file__).parent
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            # -32600 is UnaryOp(USub, Constant(32600))
            if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)):
                continue
            value = node.operand
            if isinstance(value, ast.Constant) and type(value.value) is int and 32000 <= value.value <= 32768:
                if not re.match(r"[A-Z][A-Z0-9_]* = -32[0-9]{3}\b", lines[node.lineno - 1]):
                    found.append(f"{path.relative_to(package)}:{node.lineno}: -{value.value}")
    assert not found, "literal JSON-RPC error codes; use the named constant:\n" + "\n".join(found)
