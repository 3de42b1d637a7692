"""The only module that touches pygls and lsprotocol: what Mino relies on in them, fenced.

The editor server uses pygls's JSON-RPC layer (pygls.server.JsonRPCServer and
pygls.protocol.JsonRPCProtocol, not pygls.lsp) to tell requests, notifications and responses
apart, to send notifications and to run handlers on its thread pool. Mino's own rules (rpc.py)
need a few things pygls does not offer publicly, so this module relies on these pygls 2 internals
(pyproject pins pygls>=2.0,<3; tests/test_pygls_fence.py fails, naming the installed release,
when one of them changes):

- `JsonRPCProtocol._handle_request(self, msg_id, method_name, params)`: `handle_message` calls it
  for every request. pygls's own looks the method up in its feature table and starts it at once;
  Mino validates and busy-checks requests in arrival order before a worker runs one.
- `JsonRPCProtocol._handle_notification(self, method_name, params)`: called for every
  notification. pygls's own answers `$/cancelRequest` by cancelling the handler's thread future,
  which does nothing once it runs; Mino cancels the turn's CancelToken instead.
- `JsonRPCProtocol._handle_response(self, msg_id, result=None, error=None)`: called with
  `(id, result)` for a result and `(id, None, error)` for an error. pygls's own matches the id
  against one dict (`_request_futures`) shared by the client's in-flight requests and the
  server's own, so a client's response could complete its own request's future; Mino matches a
  response only against the requests the server sent.
- `JsonRPCProtocol._send_data(self, data)`: every message `notify` builds goes through it.
  pygls's own JSON-encodes with its own header; Mino's frames go through transport.FrameWriter
  (ASCII JSON, one lock, a closed pipe is not an error).
- `JsonRPCProtocol._shutdown`: `handle_message` drops every message but `exit` once it is true.
  Only pygls's LanguageServerProtocol sets it; it must stay false here (the server does its own
  shutdown).

Public pygls/lsprotocol API used: `JsonRPCServer(protocol_cls, converter_factory, max_workers)`,
its `protocol` and `thread_pool`; `JsonRPCProtocol(server, converter)`, `handle_message`,
`notify`; the message classes JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage
(pygls.protocol) and ResponseError, ResponseErrorMessage (lsprotocol.types). pygls's
`send_request` is refused: it files requests in the shared dict above (`Channel.request` sends
them instead).

The rest of the server sees `Channel` and `Peer` only, with plain JSON values: no pygls or
lsprotocol object leaves this module. Importing it costs ~200 ms (nearly all lsprotocol.types),
which is why app.py loads it in a background thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

import cattrs
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.protocol import JsonRPCNotification, JsonRPCProtocol, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.server import JsonRPCServer

log = logging.getLogger("mino.server")

MsgId = str | int
Message = dict[str, Any]  # one JSON-RPC message, as decoded from or encoded to JSON

# The names JsonRPCProtocol must have, with these parameters (self first); checked by the test.
RELIED_ON: dict[str, tuple[str, ...]] = {
    "_handle_request": ("self", "msg_id", "method_name", "params"),
    "_handle_notification": ("self", "method_name", "params"),
    "_handle_response": ("self", "msg_id", "result", "error"),
    "_send_data": ("self", "data"),
}


@dataclass(frozen=True)
class ErrorBody:
    """The `error` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = None


class Peer(Protocol):
    """What a Channel hands incoming messages to (rpc.MinoProtocol); called on the reading thread."""

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> None: ...

    def on_notification(self, method: str, params: Any) -> None: ...

    def on_response(self, msg_id: MsgId, result: Any, error: ErrorBody | None) -> None: ...


class _FencedProtocol(JsonRPCProtocol):
    """pygls's protocol with its dispatch hooks pointed at a Peer and its output at a writer."""

    # Set right after construction by Channel; `mino_` names cannot collide with pygls's own.
    mino_peer: Peer
    mino_write: Callable[[Message], None]

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        self.mino_peer.on_request(msg_id, method_name, params)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        self.mino_peer.on_notification(method_name, params)

    def _handle_response(self, msg_id: MsgId, result: Any = None, error: ResponseError | None = None) -> None:
        body = None if error is None else ErrorBody(error.code, error.message, error.data)
        self.mino_peer.on_response(msg_id, result, body)

    def _send_data(self, data: Any) -> None:
        message = _to_json(data)
        if message is not None:
            self.mino_write(message)

    def send_request(self, *args: Any, **kwargs: Any) -> Future[Any]:
        raise NotImplementedError("pygls's send_request mixes the server's ids with the client's")


class Channel:
    """One JSON-RPC connection on pygls: incoming messages to a Peer, outgoing ones to `write`."""

    def __init__(self, peer: Peer, write: Callable[[Message], None], max_workers: int) -> None:
        # A plain cattrs converter: params stay dicts (protocol.parse checks them), and building
        # lsprotocol's converter would cost start-up time for nothing.
        self._server = JsonRPCServer(_FencedProtocol, cattrs.Converter, max_workers=max_workers)
        protocol = self._server.protocol
        assert isinstance(protocol, _FencedProtocol)
        protocol.mino_peer = peer
        protocol.mino_write = write
        self._protocol = protocol

    def receive(self, message: Message) -> None:
        """Dispatch one decoded message whose JSON-RPC shape the caller has checked."""
        self._protocol.handle_message(_structure(message))

    def notify(self, method: str, params: Any = None) -> None:
        """`params` must be plain JSON values."""
        self._protocol.notify(method, params)

    def request(self, msg_id: MsgId, method: str, params: Any) -> None:
        """Send a request; its answer arrives as Peer.on_response."""
        self._write(JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0"))

    def respond(self, msg_id: MsgId, result: Any) -> None:
        self._write(JsonRPCResponseMessage(id=msg_id, result=result, jsonrpc="2.0"))

    def respond_error(self, msg_id: MsgId | None, error: ErrorBody) -> None:
        err = ResponseError(code=error.code, message=error.message, data=error.data)
        self._write(ResponseErrorMessage(id=msg_id, error=err))

    def submit(self, work: Callable[[], Any]) -> Future[Any]:
        """Run `work` on pygls's thread pool."""
        return self._server.thread_pool.submit(work)

    def _write(self, data: Any) -> None:
        message = _to_json(data)
        if message is not None:
            self._protocol.mino_write(message)


def _structure(message: Message) -> Any:
    """pygls's message object for a decoded message (handle_message dispatches on its shape)."""
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


def _to_json(data: Any) -> Message | None:
    """The JSON object of a message pygls or this module built; None (logged) for anything else."""
    if isinstance(data, ResponseErrorMessage):
        err = data.error
        assert err is not None
        body: dict[str, Any] = {"code": err.code, "message": err.message}
        # pygls's own errors carry a Python traceback in data: it never reaches the client.
        if err.data is not None and not (isinstance(err.data, dict) and "traceback" in err.data):
            body["data"] = err.data
        return {"jsonrpc": "2.0", "id": data.id, "error": body}
    if isinstance(data, JsonRPCResponseMessage):
        return {"jsonrpc": "2.0", "id": data.id, "result": data.result}
    if isinstance(data, JsonRPCRequestMessage):
        return {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": data.params}
    if isinstance(data, JsonRPCNotification):
        out: Message = {"jsonrpc": "2.0", "method": data.method}
        if data.params is not None:
            out["params"] = data.params
        return out
    log.error("not sent: unexpected message object %r", type(data))
    return None
