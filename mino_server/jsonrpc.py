"""JSON-RPC 2.0 as both protocol front ends speak it (`mino --stdio`, `mino --acp`), written once.

Here: the error codes they share, the error answer (`RpcError`) and the table that turns what a
request raised into one, the requests this side sends and waits for (`Outgoing`: only an id it
sent and still waits for may be answered, once; a late answer is ignored), and the cancel tokens of
running requests (`Cancels`). Their framing (LSP headers, one JSON per line), their shape checks and
their methods stay with each front end.

Standard library only, like stdio.py beside it: both front ends answer `initialize` before the core
has loaded, so the core's exception classes are looked up when an error needs them.
"""

from __future__ import annotations

import itertools
import logging
import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any

from .core.cancel import CancelToken

log = logging.getLogger("mino.jsonrpc")

# ---- error codes (docs/PROTOCOL.md and docs/ACP.md say what each means to a client) -------------
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BUSY = -32001
# -32002 is each protocol's own: "not initialized" for the editor server, "not found" for ACP.
UNAVAILABLE = -32003
REFUSED = -32004
STORAGE_FAILED = -32005
SESSION_IN_USE = -32006
REQUEST_CANCELLED = -32800


class RpcError(Exception):
    """An error answer: code, a message a person can act on (sent as one line), optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ClientError(Exception):
    """The client answered one of this side's requests with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


def one_line(text: object) -> str:
    """Error messages are one line: every run of whitespace, newlines included, becomes one space."""
    return " ".join(str(text).split())


def valid_id(value: Any) -> bool:
    """Only a string or an integer (not a bool) can be a request's id."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def error_message(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": one_line(message)}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def core_error(exc: BaseException) -> RpcError | None:
    """The answer for one of the core's exceptions (core/errors.py); None for anything else (a bug).

    The table both front ends answer with. What a front end does besides answering (the editor
    server stops the chat after a storage failure) stays with it."""
    from .core.errors import CommandError, SessionOpenElsewhere, StorageError
    from .core.words import too_many_files

    if isinstance(exc, SessionOpenElsewhere):  # a CommandError that names who has the session open
        other = exc.other
        data = {"sessionId": other.session_id, "pid": other.pid, "workdir": other.workdir}
        return RpcError(SESSION_IN_USE, str(exc), data)
    if isinstance(exc, CommandError):
        return RpcError(REFUSED, str(exc))
    if isinstance(exc, StorageError):
        return RpcError(STORAGE_FAILED, str(exc))
    out_of_files = too_many_files(exc)  # not a bug: the process's limit, said so
    if out_of_files is not None:
        return RpcError(INTERNAL_ERROR, out_of_files)
    return None


class Outgoing:
    """The requests this side sent and still waits for, by id: the only ids a response may answer.

    Ids are `mino-1`, `mino-2`, …; a client's own requests never collide with them."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[Any, Future[Any]] = {}
        self._lock = threading.Lock()

    def new_id(self) -> str:
        return f"mino-{next(self._ids)}"

    def open(self, msg_id: Any) -> Future[Any]:
        """Wait for the answer to `msg_id` (sent right after this)."""
        future: Future[Any] = Future()
        with self._lock:
            if msg_id in self._waiting:
                raise ValueError(f"request id {msg_id!r} is already waiting for an answer")
            self._waiting[msg_id] = future
        return future

    def answered(self, msg_id: Any, result: Any, error: ClientError | None) -> bool:
        """A response arrived; False when nobody waits for that id (never sent, answered, given up)."""
        if not (valid_id(msg_id) or isinstance(msg_id, float) or msg_id is None):
            return False  # an object or an array is not even hashable
        with self._lock:
            future = self._waiting.pop(msg_id, None)
        if future is None or future.done():
            return False
        try:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
        except InvalidStateError:  # the waiting side gave up (cancel, shutdown) at this moment
            return False
        return True

    def forget(self, msg_id: Any) -> None:
        """Stop waiting for the answer to `msg_id`; a late answer is ignored."""
        with self._lock:
            self._waiting.pop(msg_id, None)

    def wait(
        self, msg_id: Any, future: Future[Any], *tokens: CancelToken | None, timeout: float | None = None
    ) -> bool:
        """Wait for the answer, or until one of `tokens` is cancelled or `timeout` seconds have
        passed; False (and forgotten) then."""
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        undo = [token.on_cancel(done.set) for token in tokens if token is not None]
        try:
            done.wait(timeout)
        finally:
            for unregister in undo:
                unregister()
        if future.done():
            return True
        self.forget(msg_id)
        future.cancel()
        return False


class Cancels:
    """The cancel tokens of running requests (or sessions), by key; cancelling an unknown or finished
    key does nothing (a late `$/cancelRequest` or `session/cancel`)."""

    def __init__(self) -> None:
        self._tokens: dict[Any, CancelToken] = {}
        self._lock = threading.Lock()

    def start(self, key: Any) -> CancelToken:
        token = CancelToken()
        with self._lock:
            self._tokens[key] = token
        return token

    def end(self, key: Any, token: CancelToken | None = None) -> None:
        with self._lock:
            if token is None or self._tokens.get(key) is token:
                self._tokens.pop(key, None)

    def get(self, key: Any) -> CancelToken | None:
        if not (valid_id(key) or isinstance(key, float) or key is None):
            return None  # an object or an array is not even hashable
        with self._lock:
            return self._tokens.get(key)

    def cancel(self, key: Any) -> bool:
        token = self.get(key)
        if token is None:
            return False
        token.cancel()
        return True

    def cancel_all(self) -> None:
        with self._lock:
            tokens = list(self._tokens.values())
        for token in tokens:
            token.cancel()
