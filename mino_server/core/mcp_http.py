"""What an HTTP MCP server's answers can make Mino hold: at most MAX_MESSAGE_BYTES a message, as for
a stdio server's line.

The SDK reads a JSON answer whole (`response.aread()`) and an event stream through httpx2's parser,
whose own per-event limit fails only the one request (or makes the standalone GET reconnect). So the
bound is kept on the client Mino hands the SDK, below the SDK: a response hook (httpx2's public
`event_hooks`) puts a counting stream under every response body, whatever transport or proxy
carried it. A body that is not an event stream is one message; an event stream is counted event by
event (an event ends at a blank line). The first message past the bound closes that response's
connection, and the connection's owner is told (`on_cut`), which ends the server's session.

Compressed bodies would be counted before they are inflated: Mino asks for none (`Accept-Encoding:
identity`) and refuses one it did not ask for. Headers are bounded by h11 already.

Imported only when an HTTP server is configured (httpx2 itself comes with the SDK), by
mcp_client.py, which gives the bound and the refusal it defines once for stdio and HTTP alike.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import NoReturn

import httpx2

# Two line ends in a row (`\r\n`, `\n` or `\r` each, never a `\r\n` split in two): an event's end.
_EVENT_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
_CARRY = 3  # the line-end bytes a chunk ends with that may pair with the next chunk's


class Bound:
    """One HTTP server's client, each message within `limit` bytes; `on_cut` hears of the first one
    refused (`refuse(what)` is the exception that says so)."""

    def __init__(
        self, limit: int, refuse: Callable[[str | None], Exception], on_cut: Callable[[Exception], None]
    ) -> None:
        self.limit = limit
        self.refuse = refuse
        self._on_cut = on_cut

    def client(
        self, make_http: Callable[..., httpx2.AsyncClient], headers: dict[str, str]
    ) -> httpx2.AsyncClient:
        headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
        http = make_http(headers={**headers, "Accept-Encoding": "identity"})
        hooks = http.event_hooks
        http.event_hooks = {"request": hooks["request"], "response": [*hooks["response"], self._response]}
        return http

    def cut(self, what: str | None) -> NoReturn:
        """Refuse: `what` the server sent, None for a message over the limit."""
        exc = self.refuse(what)
        self._on_cut(exc)
        raise exc

    async def _response(self, response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            self.cut(f"a compressed answer ({encoding[:40]}) Mino did not ask for")
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):  # the bound would be lost: refuse instead
            raise RuntimeError("this version of httpx2 reads answers in a way Mino cannot bound")
        response.stream = _Counted(stream, kind == "text/event-stream", self)


class _Counted(httpx2.AsyncByteStream):
    """A response body passed on chunk by chunk while the message being read stays within the bound."""

    def __init__(self, inner: httpx2.AsyncByteStream, events: bool, bound: Bound) -> None:
        self._inner = inner
        self._events = events
        self._bound = bound
        self._size = 0  # bytes of the message being read
        self._carry = b""
        self.read = 0  # bytes read in all (the tests' measure)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self.read += len(chunk)
            self._size = self._message_size(chunk) if self._events else self._size + len(chunk)
            if self._size > self._bound.limit:
                await self._inner.aclose()  # the connection goes with it: never back to the pool
                self._bound.cut(None)
            yield chunk

    def _message_size(self, chunk: bytes) -> int:
        data = self._carry + chunk
        end = -1
        for end_of_event in _EVENT_END.finditer(data):
            end = end_of_event.end()
        body = data.rstrip(b"\r\n")
        self._carry = data[len(body) :][-_CARRY:]
        return self._size + len(chunk) if end < 0 else len(data) - end

    async def aclose(self) -> None:
        await self._inner.aclose()
