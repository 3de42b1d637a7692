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
# A `\r` that ends a chunk is taken for a line end alone: an end may be found a byte before the
# parser's (its `\n` comes next), never where the parser finds none.
_EVENT_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
_CARRY = 3  # the line-end bytes a chunk ends with that may pair with the next chunk's
_SMALL = 65536  # a message this small cannot hold too much JSON (inbound's bounds)


class Bound:
    """One HTTP server's client, each message within `limit` bytes and passing `judge`; `on_cut`
    hears of the first one refused (`refuse(what)` is the exception that says so)."""

    def __init__(
        self,
        limit: int,
        judge: Callable[[bytes], str | None],
        refuse: Callable[[str | None], Exception],
        on_cut: Callable[[Exception], None],
    ) -> None:
        self.limit = limit
        self.judge = judge  # what a whole message would parse into, when that is too much
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
        """Refuse: `what` the server sent, None for a message over the limit. The caller's response
        is closed by httpx2 as the exception passes (its connection is not reused)."""
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
    """A response body passed on chunk by chunk while the message being read stays within the
    bound, and each whole message within the JSON bounds before the SDK can parse it: a JSON body
    is checked before its last chunk is passed on, an event before the chunk that ends it."""

    def __init__(self, inner: httpx2.AsyncByteStream, events: bool, bound: Bound) -> None:
        self._inner = inner
        self._events = events
        self._bound = bound
        self._parts: list[bytes] = []  # the message being read (the chunks passed on, not copies)
        self._size = 0
        self._carry = b""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held: bytes | None = None  # a JSON body's latest chunk: passed on once the next one came
        try:
            async for chunk in self._inner:
                if self._events:
                    self._events_in(chunk)
                    yield chunk
                    continue
                self._add(chunk)
                if held is not None:
                    yield held
                held = chunk
            if not self._events:
                self._judge(b"".join(self._parts))
                if held is not None:
                    yield held
        finally:
            self._parts = []

    def _add(self, part: bytes) -> None:
        self._size += len(part)
        if self._size > self._bound.limit:
            self._parts = []
            self._bound.cut(None)
        self._parts.append(part)

    def _events_in(self, chunk: bytes) -> None:
        carry = len(self._carry)
        data = self._carry + chunk
        start = 0  # where the event being read starts in `chunk`
        for end_of_event in _EVENT_END.finditer(data):
            end = end_of_event.end() - carry
            if end <= 0:  # found in the chunk before
                continue
            self._add(chunk[start:end])
            if self._size > _SMALL:  # a small one cannot be too much JSON: not joined
                self._judge(b"".join(self._parts))
            self._parts, self._size, start = [], 0, end
        if start < len(chunk):
            self._add(chunk[start:] if start else chunk)
        body = data.rstrip(b"\r\n")
        self._carry = data[len(body) :][-_CARRY:]

    def _judge(self, message: bytes) -> None:
        crowded = self._bound.judge(message)
        if crowded:
            self._bound.cut(crowded)

    async def aclose(self) -> None:
        self._parts = []
        await self._inner.aclose()
