"""The ACP connection's peer side (`mino --acp`, docs/ACP.md): reading the client's messages,
writing answers and notifications, the ids of the requests Mino sends and waiting for their
answers, and the workers requests run on. What each method does is the agent's (app.py: the
session verbs); this side knows only which methods there are and which of them may block.

The threads are described in app.py's docstring: the read loop dispatches in arrival order and
answers the quick methods itself; every other request gets a worker; a worker that asks the client
waits for the answer (which the read loop hands over), for session/cancel or for the process to
stop, whichever comes first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..core.cancel import CancelToken
from ..jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Cancels,
    ClientError,
    Outgoing,
    RpcError,
    core_error,
    error_message,
    valid_id,
)
from . import mapping as M
from .session import NotAnswered, Unanswered
from .transport import LineError, Writer, read_messages

log = logging.getLogger("mino.acp")

Handlers = dict[str, Callable[[dict[str, Any]], Any]]


@dataclass
class Reply:
    """A result, and what to send right after it (updates about a session the client now knows)."""

    result: Any
    after: Callable[[], None] | None = None


def one_line(exc: BaseException) -> str:
    return " ".join((str(exc).strip() or exc.__class__.__name__).split())


class AcpPeer:
    """One client on stdin/stdout. Subclassed by the agent (app.AcpAgent), which says what the
    methods are (`methods`) and when the client has initialized."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.initialized = False
        self.stopping = CancelToken()
        self._lock = threading.Lock()  # the workers here; the agent's sessions too
        self.outgoing = Outgoing()  # session/request_permission waiting for the client
        self.cancels = Cancels()  # the running session/prompt of each session, by session ID
        self._workers: set[threading.Thread] = set()

    def methods(self) -> tuple[Handlers, Handlers]:
        """(answered on the read loop, answered on a worker of their own), by method name."""
        raise NotImplementedError

    # ---- the read loop ---------------------------------------------------------------------------
    def run(self, stream: BinaryIO) -> None:
        for message in read_messages(stream):
            if isinstance(message, LineError):
                if message.answers is not None:  # an answer too long to read: that request fails
                    self.outgoing.answered(message.answers, None, ClientError(message.code, message.message))
                self.send_error(None, message.code, message.message)
            else:
                self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if message.get("jsonrpc") != "2.0":
            self.send_error(
                _id_or_none(message), INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".'
            )
            return
        if method is None:
            if "id" in message and ("result" in message or "error" in message):
                self._answered(message)
            else:
                self.send_error(
                    None, INVALID_REQUEST, "Invalid request: a message needs a method or a result."
                )
            return
        params = message.get("params")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            if "id" in message:
                self.send_error(
                    _id_or_none(message),
                    INVALID_REQUEST,
                    "Invalid request: method must be a string, params an object.",
                )
            return
        if "id" not in message:
            self._notification(method, params or {})
            return
        msg_id = message["id"]
        if not valid_id(msg_id):
            self.send_error(None, INVALID_REQUEST, 'Invalid request: "id" must be a number or a string.')
            return
        self._request(msg_id, method, params or {})

    def _request(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        inline, threaded = self.methods()
        handler = inline.get(method) or threaded.get(method)
        if handler is None:
            self.send_error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        if method != "initialize" and not self.initialized:
            self.send_error(msg_id, INVALID_REQUEST, "Invalid request: send initialize first.")
            return
        if method in inline:
            self._answer(msg_id, method, lambda: handler(params))
            return
        worker = threading.Thread(
            target=self._worker,
            args=(msg_id, method, handler, params),
            name=f"mino-acp-{method}",
            daemon=True,
        )
        with self._lock:
            self._workers.add(worker)
        worker.start()

    def _worker(
        self, msg_id: Any, method: str, handler: Callable[[dict[str, Any]], Any], params: Any
    ) -> None:
        try:
            self._answer(msg_id, method, lambda: handler(params))
        finally:
            with self._lock:
                self._workers.discard(threading.current_thread())

    def _answer(self, msg_id: Any, method: str, work: Callable[[], Any]) -> None:
        try:
            reply = work()
        except Exception as exc:
            code, message, data = self._error_for(method, exc)
            self.send_error(msg_id, code, message, data)
            return
        if not isinstance(reply, Reply):
            reply = Reply(reply)
        self.writer.send({"jsonrpc": "2.0", "id": msg_id, "result": reply.result})
        if reply.after is not None:
            try:
                reply.after()
            except Exception:
                log.exception("after %s", method)

    @staticmethod
    def _error_for(method: str, exc: Exception) -> tuple[int, str, Any]:
        """The error answer for what a request raised (the JSON-RPC layer's table for the core's)."""
        if isinstance(exc, RpcError):
            return exc.code, exc.message, exc.data
        if isinstance(exc, M.ParamsError):
            return INVALID_PARAMS, str(exc), None
        answer = core_error(exc)
        if answer is not None:
            return answer.code, answer.message, answer.data
        # A bug: one line for the client, the traceback on stderr.
        log.error("%s failed", method, exc_info=exc)
        return INTERNAL_ERROR, f"Internal error: {one_line(exc)}", None

    def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel":
            sid = params.get("sessionId")
            if isinstance(sid, str):  # pending permissions count as denied now; late answers are ignored
                self.cancels.cancel(sid)
        else:
            log.debug("ignored notification %s", method)

    # ---- talking to the client -------------------------------------------------------------------
    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        self.writer.send(error_message(msg_id, code, message, data))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method: str, params: dict[str, Any], cancel: CancelToken | None) -> Any:
        """Send a request and wait for its result: None on an error answer, on cancel and on exit
        (then the request is forgotten: an answer that comes later is ignored)."""
        try:
            return self.call(method, params, cancel)
        except Unanswered:
            return None
        except ClientError as exc:
            log.info("%s answered with an error (a denial): %s", method, exc)
            return None

    def call(
        self, method: str, params: dict[str, Any], cancel: CancelToken | None, timeout: float | None = None
    ) -> Any:
        """Send a request and wait for its result; ClientError for an error answer, Unanswered on
        cancel and on exit, NotAnswered after `timeout` seconds (then the request is forgotten: an
        answer that comes later is ignored)."""
        if self.stopping.cancelled or (cancel is not None and cancel.cancelled):
            raise Unanswered
        msg_id = self.outgoing.new_id()
        future = self.outgoing.open(msg_id)
        self.writer.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        if not self.outgoing.wait(msg_id, future, self.stopping, cancel, timeout=timeout):
            if self.stopping.cancelled or (cancel is not None and cancel.cancelled):
                raise Unanswered
            raise NotAnswered
        return future.result()

    def _answered(self, message: dict[str, Any]) -> None:
        error = message.get("error")
        failure = None
        if "error" in message:
            body = error if isinstance(error, dict) else {}
            failure = ClientError(body.get("code", 0), str(body.get("message", "")), body.get("data"))
        if not self.outgoing.answered(message["id"], message.get("result"), failure):
            log.debug("an answer to %r came after it was no longer awaited; ignored", message.get("id"))

    def join_workers(self, timeout: float) -> None:
        """Wait (up to `timeout` in all) for the requests running on workers to answer."""
        deadline = time.monotonic() + timeout
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))


def _id_or_none(message: dict[str, Any]) -> Any:
    msg_id = message.get("id")
    return msg_id if valid_id(msg_id) else None
