"""The pygls layer: JsonRPCServer and a JsonRPCProtocol that routes to the Mino server.

pygls does the JSON-RPC bookkeeping: message kinds, the thread pool for handlers, responses to the
server's own requests (futures), notifications. The overrides below keep Mino's rules:
requests are validated and busy-checked in arrival order before a worker runs them,
`$/cancelRequest` cancels a turn's CancelToken instead of a thread future (which cannot be
cancelled once running), no traceback reaches the client, and frames go through FrameWriter.

The server's own requests (mino/approve, mino/confirm) are kept apart from the client's: pygls
keeps both in one `_request_futures` dict, so a client's *response* carrying the id of its own
in-flight request would complete that request's future (the turn answered with whatever the
response said, and the pool worker still running it died when it finished). Here a response is
matched only against `_server_request_futures`, once; anything else is logged and ignored.

Only pygls.server / pygls.protocol are used (not pygls.lsp.server); they still import
lsprotocol.types, which is why app.py imports this module in a background thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.server import JsonRPCServer

from . import protocol as P

if TYPE_CHECKING:
    from .app import MinoServer

log = logging.getLogger("mino.server")


class MinoProtocol(JsonRPCProtocol):
    app: MinoServer

    def __init__(self, server: JsonRPCServer, converter: Any) -> None:
        super().__init__(server, converter)
        # Requests the server sent and still waits for, by id: the only ids a response may answer.
        self._server_request_futures: dict[Any, Future[Any]] = {}
        self._server_request_lock = threading.Lock()

    # ---- incoming --------------------------------------------------------------------------
    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        try:
            call = self.app.prepare_request(msg_id, method_name, params)
        except (P.ProtocolError, JsonRpcException) as exc:
            self._send_response(msg_id, error=_error(exc.code, exc.message, exc.data))
            return
        except Exception as exc:
            log.exception("preparing %s failed", method_name)
            self._send_response(msg_id, error=_internal(exc))
            return
        if call is None:
            message = (
                f"Unknown method {method_name!r}: not part of Mino protocol version {P.PROTOCOL_VERSION}."
            )
            self._send_response(msg_id, error=_error(P.METHOD_NOT_FOUND, message))
            return
        self._execute_handler(
            msg_id, call, callback=lambda future: self._send_handler_result(future, msg_id=msg_id)
        )

    def _handle_notification(self, method_name: str, params: Any) -> None:
        try:
            self.app.on_notification(method_name, params)
        except Exception:
            log.exception("notification %s failed", method_name)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            error = _error(P.REQUEST_CANCELLED, f"Request {msg_id!r} was cancelled before it started.")
            self._send_response(msg_id, error=error)
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=P.dump(future.result()))
        elif isinstance(exc, P.ProtocolError | JsonRpcException):
            self._send_response(msg_id, error=_error(exc.code, exc.message, exc.data))
        else:
            log.error("request %r failed", msg_id, exc_info=exc)
            self._send_response(msg_id, error=_internal(exc))

    def _handle_response(self, msg_id: Any, result: Any = None, error: ResponseError | None = None) -> None:
        with self._server_request_lock:
            future = self._server_request_futures.pop(msg_id, None)
        if future is None or future.done():
            # Not an id the server is waiting on: never issued, answered already, or given up on.
            log.warning("ignored a response to id %r: the server is not waiting for it", msg_id)
            return
        try:
            if error is not None:
                future.set_exception(JsonRpcException.from_error(error))
            else:
                future.set_result(result)
        except InvalidStateError:  # the waiting side gave up (cancel, shutdown) at this moment
            log.info("ignored a late response to id %r", msg_id)

    # ---- outgoing --------------------------------------------------------------------------
    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: Any = None,
    ) -> Future[Any]:
        """A request to the client; its future is completed by the matching response only."""
        if callback is not None or msg_id is None:
            raise ValueError("MinoProtocol.send_request needs a msg_id and takes no callback")
        future: Future[Any] = Future()
        with self._server_request_lock:
            if msg_id in self._server_request_futures:
                raise ValueError(f"request id {msg_id!r} is already waiting for an answer")
            self._server_request_futures[msg_id] = future
        self._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0"))
        return future

    def forget_request(self, msg_id: Any) -> None:
        """Stop waiting for the answer to a request the server sent; a late answer is ignored."""
        with self._server_request_lock:
            self._server_request_futures.pop(msg_id, None)

    def _send_data(self, data: Any) -> None:
        message = _as_dict(data)
        if message is not None:
            self.app.writer.send(message)


def _error(code: int, message: str, data: Any = None) -> ResponseError:
    return ResponseError(code=code, message=P.one_line(message) or "error", data=data)


def _internal(exc: BaseException) -> ResponseError:
    # The traceback went to stderr with log.exception/log.error.
    return _error(P.INTERNAL_ERROR, P.internal_error_message(exc))


def _as_dict(data: Any) -> dict[str, Any] | None:
    if isinstance(data, ResponseErrorMessage):
        err = data.error
        body: dict[str, Any] = {"code": err.code, "message": P.one_line(err.message)}
        if err.data is not None and not (isinstance(err.data, dict) and "traceback" in err.data):
            body["data"] = err.data
        return {"jsonrpc": "2.0", "id": data.id, "error": body}
    if isinstance(data, JsonRPCResponseMessage):
        return {"jsonrpc": "2.0", "id": data.id, "result": P.dump(data.result)}
    if isinstance(data, JsonRPCRequestMessage):
        return {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": P.dump(data.params)}
    if isinstance(data, JsonRPCNotification):
        out = {"jsonrpc": "2.0", "method": data.method}
        if data.params is not None:
            out["params"] = P.dump(data.params)
        return out
    log.error("not sent: unexpected message object %r", type(data))
    return None


def structure(message: dict[str, Any]) -> Any:
    """pygls's message object for a decoded message whose shape app._shape_problem() has checked."""
    if "method" in message:
        params = message.get("params")
        if "id" in message:
            return JsonRPCRequestMessage(
                id=message["id"], method=message["method"], jsonrpc="2.0", params=params
            )
        return JsonRPCNotification(method=message["method"], jsonrpc="2.0", params=params)
    if "error" in message:
        err = message["error"]
        error = ResponseError(code=err["code"], message=err["message"], data=err.get("data"))
        return ResponseErrorMessage(id=message["id"], error=error)
    return JsonRPCResponseMessage(id=message["id"], jsonrpc="2.0", result=message.get("result"))


def mark_thread(func: Callable[[], Any]) -> Callable[[], Any]:
    """Run this handler on pygls's thread pool (the Agent is synchronous)."""
    from pygls.feature_manager import assign_thread_attr

    def run() -> Any:  # a plain function: bound methods cannot carry pygls's marker attribute
        return func()

    assign_thread_attr(run)
    return run


def build(app: MinoServer) -> MinoProtocol:
    # A plain cattrs converter: params stay dicts (protocol.parse checks them), and building
    # lsprotocol's converter would cost start-up time for nothing.
    server = JsonRPCServer(MinoProtocol, cattrs.Converter, max_workers=16)
    rpc = server.protocol
    assert isinstance(rpc, MinoProtocol)
    rpc.app = app
    rpc.set_writer(app.writer)  # pygls checks for a writer; frames go through _send_data above
    return rpc
