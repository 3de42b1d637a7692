"""Mino's JSON-RPC rules on top of pygls (through pygls_fence, the one module that touches pygls).

pygls tells message kinds apart, sends notifications and runs handlers on its thread pool. Here:
requests are validated and busy-checked in arrival order (the server's `prepare_request`, on the
reading thread) before a worker runs them, `$/cancelRequest` reaches the server (which cancels a
turn's CancelToken: a running thread cannot be cancelled), no traceback reaches the client, and
frames go through the server's FrameWriter.

The server's own requests (mino/approve, mino/confirm) are kept apart from the client's: a
response is matched only against the requests the server sent and still waits for, once. A
client's *response* carrying the id of its own in-flight request is logged and ignored (pygls
would complete that request's future with it).

This module imports pygls (through pygls_fence) when it is imported: app.py does that in a
background thread. It knows the server only through `Server` below.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from ..jsonrpc import ClientError, Outgoing
from . import protocol as P
from .pygls_fence import Channel, ErrorBody, Message, MsgId
from .transport import FrameWriter

log = logging.getLogger("mino.server")

MAX_WORKERS = 16


class Server(Protocol):
    """What rpc needs from the server (app.MinoServer)."""

    writer: FrameWriter
    outgoing: Outgoing  # the server's requests waiting for an answer

    def prepare_request(self, msg_id: Any, method: str, raw: Any) -> Callable[[], Any] | None:
        """Check a request now; the function that answers it, or None for an unknown method."""
        ...

    def on_notification(self, method: str, params: Any) -> None: ...


class _PoolCall:
    """A request handler that runs on the thread pool (see mark_thread)."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[], Any]) -> None:
        self.func = func

    def __call__(self) -> Any:
        return self.func()


def mark_thread(func: Callable[[], Any]) -> Callable[[], Any]:
    """Run this handler on the thread pool (the conversation is synchronous).

    Unmarked handlers (initialize) run on the reading thread before the next message is read."""
    return _PoolCall(func)


class MinoProtocol:
    """The server's side of one JSON-RPC connection (a pygls_fence.Peer)."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._outgoing = server.outgoing
        self._channel = Channel(self, server.writer.send, MAX_WORKERS)

    # ---- incoming (on the reading thread) ----------------------------------------------------
    def handle_message(self, message: Message) -> None:
        """One decoded message whose JSON-RPC shape app._shape_problem() has checked."""
        self._channel.receive(message)

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> None:
        try:
            call = self._server.prepare_request(msg_id, method, params)
        except P.ProtocolError as exc:
            self._send_error(msg_id, exc.code, exc.message, exc.data)
            return
        except Exception as exc:
            log.exception("preparing %s failed", method)
            self._send_internal(msg_id, exc)
            return
        if call is None:
            message = f"Unknown method {method!r}: not part of Mino protocol version {P.PROTOCOL_VERSION}."
            self._send_error(msg_id, P.METHOD_NOT_FOUND, message)
            return
        if isinstance(call, _PoolCall):
            future = self._channel.submit(call)
        else:
            future = Future()
            try:
                future.set_result(call())
            except Exception as exc:
                future.set_exception(exc)
        future.add_done_callback(lambda done: self._answer(msg_id, done))

    def on_notification(self, method: str, params: Any) -> None:
        try:
            self._server.on_notification(method, params)
        except Exception:
            log.exception("notification %s failed", method)

    def on_response(self, msg_id: MsgId, result: Any, error: ErrorBody | None) -> None:
        failure = None if error is None else ClientError(error.code, error.message, error.data)
        if not self._outgoing.answered(msg_id, result, failure):
            # Not an id the server is waiting on: never issued, answered already, or given up on.
            log.warning("ignored a response to id %r: the server is not waiting for it", msg_id)

    def _answer(self, msg_id: MsgId, future: Future[Any]) -> None:
        if future.cancelled():
            self._send_error(
                msg_id, P.REQUEST_CANCELLED, f"Request {msg_id!r} was cancelled before it started."
            )
            return
        exc = future.exception()
        if exc is None:
            self._channel.respond(msg_id, P.dump(future.result()))
        elif isinstance(exc, P.ProtocolError):
            self._send_error(msg_id, exc.code, exc.message, exc.data)
        else:
            log.error("request %r failed", msg_id, exc_info=exc)
            self._send_internal(msg_id, exc)

    # ---- outgoing ----------------------------------------------------------------------------
    def notify(self, method: str, params: Any = None) -> None:
        self._channel.notify(method, P.dump(params))

    def send_request(self, method: str, params: Any, *, msg_id: Any) -> Future[Any]:
        """A request to the client; its future is completed by the matching response only."""
        future = self._outgoing.open(msg_id)
        self._channel.request(msg_id, method, P.dump(params))
        return future

    def _send_error(self, msg_id: MsgId, code: int, message: str, data: Any = None) -> None:
        self._channel.respond_error(msg_id, ErrorBody(code, P.one_line(message) or "error", data))

    def _send_internal(self, msg_id: MsgId, exc: BaseException) -> None:
        # The traceback went to stderr with log.exception/log.error.
        self._send_error(msg_id, P.INTERNAL_ERROR, P.internal_error_message(exc))


def build(server: Server) -> MinoProtocol:
    return MinoProtocol(server)
