"""The MCP client on the official Python SDK (`mcp` on PyPI), fitted to Mino's synchronous core.

The SDK is async (anyio). One asyncio loop on a daemon thread owns every client session of the
process; a server's session lives in one task on it (entered and left there, as anyio's scopes
require). A turn's thread submits a call to the loop and waits on its future with the turn's cancel
token: a cancel cancels the call's task, and the SDK then sends `notifications/cancelled` for it.

Imported only when a server is to be started: the SDK costs ~0.3-0.6 s of imports
(bench/README.md), which a session without MCP servers never pays.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .cancel import Cancelled, CancelToken
from .mcp import CallOutcome, ServerGone, ServerSpec, ToolInfo, content_text

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
STOP_TIMEOUT_S = 5.0  # a server's shutdown: stdin closed, then SIGTERM, then SIGKILL (the SDK's steps)
STDERR_TAIL = 400  # the last characters of a failed server's stderr, in its one line
# One message from a server, bounded while it is read: a stdio server's line (the SDK's own reader
# holds a line whole however long it grows: a 200 MiB result took 238 s and 1.3 GiB), an HTTP
# server's JSON answer or one event of its event streams (mcp_http.py). A result the model gets is
# cut at 256 KiB anyway (mcp.MAX_RESULT_CHARS); images are named, not passed on.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024


def _runtime() -> asyncio.AbstractEventLoop:
    """The process's MCP loop, started on first use on a daemon thread."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="mino-mcp-loop", daemon=True).start()
            _loop = loop
        return _loop


def _submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    return asyncio.run_coroutine_threadsafe(coro, _runtime())


class SdkConnection:
    """One server's client session, owned by one task on the MCP loop."""

    def __init__(
        self, spec: ServerSpec, env: dict[str, str], cwd: str, on_exit: Callable[[str], None]
    ) -> None:
        from .tools import orphans

        self.spec = spec
        # A marker of its own in its environment: what the server starts (a `setsid` child too)
        # is ended with it (orphans.end_service), never taken for a command's leftover.
        self.marker = orphans.service(orphans.new_marker()) if spec.url is None else None
        self.env = env if self.marker is None else {**env, orphans.MARKER: self.marker}
        self.cwd = cwd
        self.on_exit = on_exit
        self.tools: list[ToolInfo] = []
        self.session: Any = None
        # The server's stderr goes to an unnamed file, never to Mino's terminal; its tail explains a failure.
        self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._closing = False
        self._ended: BaseException | None = None  # why the session's task ended, when it failed
        # An HTTP server's answer refused while it was read (mcp_http.py): the session ends with it.
        self._cut: MessageTooLarge | None = None
        self._cut_event: asyncio.Event | None = None
        # The server's elicitation/create, asked of the person (core/mcp.py, McpHub); None: declined.
        self.elicit: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None = None

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        from mcp.types import ElicitResult

        ask = self.elicit
        # Form requests only: a URL request would have Mino open a page the server names.
        if ask is None or getattr(params, "mode", "form") != "form":
            return ElicitResult(action="decline")
        schema = params.requested_schema if isinstance(params.requested_schema, dict) else {}
        # Asked on an executor thread: the loop keeps serving every server meanwhile.
        content = await asyncio.get_running_loop().run_in_executor(None, ask, str(params.message), schema)
        if content is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=content)

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        import anyio
        from mcp import ClientSession
        from mcp.types import Implementation

        self._stop = asyncio.Event()
        self._cut_event = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    read, write = await stack.enter_async_context(self._transport())
                finally:
                    if self.marker is not None:  # exec'd (or failed): a command's cleanup may judge again
                        from .tools import orphans

                        orphans.service_started(self.marker)
                # The server's messages pass through one relay, whose end is the server's end (EOF on
                # its stdout): a server that exits while idle is known at once, not at its next call.
                relay, relayed = anyio.create_memory_object_stream[Any](16)
                ended = asyncio.ensure_future(_relay(read, relay))
                stack.callback(ended.cancel)
                session = await stack.enter_async_context(
                    ClientSession(
                        relayed,
                        write,
                        client_info=Implementation(name="mino", version=_version()),
                        elicitation_callback=self._on_elicit,
                    )
                )
                await session.initialize()
                self.tools = await _list_tools(session)
                self.session = session
                ready.set_result(None)
                stop = asyncio.ensure_future(self._stop.wait())
                cut = asyncio.ensure_future(self._cut_event.wait())
                await asyncio.wait({stop, ended, cut}, return_when=asyncio.FIRST_COMPLETED)
                stop.cancel()
                cut.cancel()
                if self._cut is not None and not self._closing:
                    raise self._cut  # the SDK may have taken it for one request's failure: the session ends
                if ended.done() and not self._closing:
                    self.session = None
                    self.on_exit("stopped: the server closed its connection")
                    self._closing = True  # said once
        except BaseException as exc:  # noqa: B036 - the loop must outlive any server
            why = self._cut or exc
            self._ended = why
            if not ready.done():
                ready.set_exception(why if isinstance(why, Exception) else RuntimeError("stopped"))
            elif not self._closing:
                self.session = None
                self.on_exit(_describe(why))
            if not isinstance(exc, Exception):
                raise

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        spec = self.spec
        if spec.url is not None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            from .mcp_http import Bound

            bound = Bound(MAX_MESSAGE_BYTES, _crowded, lambda what: refused(what or too_long()), self._on_cut)
            http = bound.client(create_mcp_http_client, dict(spec.headers))
            return _http(spec.url, http, streamable_http_client)
        import mcp.client.stdio as sdk_stdio
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # The SDK reads the server's stdout through this one name: bounded lines instead. Checked,
        # so that an SDK that reads otherwise refuses to start servers rather than lose the bound.
        module: Any = sdk_stdio
        if module.TextReceiveStream is not _BoundedLines:
            from anyio.streams.text import TextReceiveStream

            if module.TextReceiveStream is not TextReceiveStream:
                raise RuntimeError(
                    "this version of the MCP SDK reads stdio servers in a way Mino cannot bound"
                )
            module.TextReceiveStream = _BoundedLines
        params = StdioServerParameters(
            command=spec.command[0], args=list(spec.command[1:]), env=self.env, cwd=self.cwd
        )
        return stdio_client(params, errlog=self.errlog)

    def _on_cut(self, exc: Exception) -> None:
        """An answer was refused (on the MCP loop, in the SDK's task that read it): end the session."""
        if self._cut is None and isinstance(exc, MessageTooLarge):
            self._cut = exc
            if self._cut_event is not None:
                self._cut_event.set()

    def start(self, timeout_s: float) -> None:
        # The SDK's import (0.3-0.6 s, more on a loaded machine) is Mino's, not the server's start:
        # done here, on this server's thread, before its clock starts.
        import mcp.client.stdio  # noqa: F401
        import mcp.client.streamable_http  # noqa: F401

        async def begin() -> None:
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # always retrieved
            self._task = asyncio.ensure_future(self._serve(ready))
            try:
                await asyncio.wait_for(asyncio.shield(ready), timeout_s)
            except TimeoutError:
                self._closing = True
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self._task, STOP_TIMEOUT_S)
                raise TimeoutError(f"did not start within {timeout_s:g} s") from None

        try:
            _submit(begin()).result()
        except BaseException as exc:
            self._end_leftovers()
            raise RuntimeError(self._failure(exc)) from None

    def _end_leftovers(self) -> None:
        if self.marker is not None:
            from .tools import orphans

            orphans.end_service(self.marker)

    def _failure(self, exc: BaseException) -> str:
        why = _describe(exc)
        tail = self._stderr_tail()
        return f"{why} (stderr: {tail})" if tail else why

    def _stderr_tail(self) -> str:
        try:
            self.errlog.flush()
            self.errlog.seek(0)
            text = self.errlog.read()
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][-STDERR_TAIL:] if lines else ""

    def call(self, tool: str, arguments: dict[str, Any], cancel: CancelToken) -> CallOutcome:
        session = self.session
        if session is None:
            raise ServerGone("the server is not running")
        future = _submit(self._call(session, tool, arguments))
        unregister = cancel.on_cancel(
            lambda: None if future.cancel() else None
        )  # cancels the task: the SDK tells the server
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Cancelled() from None
        finally:
            unregister()

    async def _call(self, session: Any, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        assert self._task is not None and self._cut_event is not None
        call = asyncio.ensure_future(session.call_tool(tool, arguments))
        call.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved, even if left
        cut = asyncio.ensure_future(self._cut_event.wait())
        try:
            # A server that exits mid-call ends its session's task, an answer refused while it was
            # read ends the session: the call fails rather than waits.
            await asyncio.wait({call, self._task, cut}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()  # the SDK sends notifications/cancelled for the request it abandons
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(call, STOP_TIMEOUT_S)
            raise
        finally:
            cut.cancel()
        if self._cut is not None:
            raise ServerGone(_describe(self._cut))  # the session's end resolves the call meanwhile
        if not call.done():
            call.cancel()
            raise ServerGone(self._gone("the server exited"))
        try:
            result = call.result()
        except Exception as exc:
            from mcp.shared.exceptions import MCPError
            from mcp.types import CONNECTION_CLOSED

            if self._task.done() or (isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED):
                # The session sees the stream close before its task has the reason: wait for it.
                await asyncio.wait({self._task}, timeout=STOP_TIMEOUT_S)
                raise ServerGone(self._gone(_describe(exc))) from None
            # An error answer, or a result the SDK refuses (structured content against the tool's
            # output schema, a result kind it does not take: RuntimeError) fails this call only;
            # the server is still running and keeps its tools.
            if isinstance(exc, MCPError | RuntimeError):
                return CallOutcome(text=f"MCP error: {_describe(exc)}", is_error=True)
            raise ServerGone(_describe(exc)) from None
        blocks: list[tuple[str, str | None]] = [
            (str(b.type), getattr(b, "text", None)) for b in result.content
        ]
        return CallOutcome(text=content_text(blocks), is_error=bool(result.is_error))

    def _gone(self, otherwise: str) -> str:
        """Why the connection ended, when Mino ended it (a message too large), else `otherwise`."""
        ended = self._cut or self._ended
        while isinstance(ended, BaseExceptionGroup) and ended.exceptions:
            ended = ended.exceptions[0]
        return _describe(ended) if isinstance(ended, MessageTooLarge) else otherwise

    def close(self) -> None:
        self._closing = True

        async def stop() -> None:
            if self._stop is not None:
                self._stop.set()
            if self._task is not None:
                try:
                    await asyncio.wait_for(self._task, STOP_TIMEOUT_S)
                except BaseException:
                    self._task.cancel()

        with contextlib.suppress(BaseException):
            _submit(stop()).result(STOP_TIMEOUT_S + 1)
        self._end_leftovers()  # the SDK ends the server's process group; a `setsid` child left it
        with contextlib.suppress(OSError):
            self.errlog.close()


def connect(
    spec: ServerSpec, env: dict[str, str], cwd: str, timeout_s: float, on_exit: Callable[[str], None]
) -> SdkConnection:
    connection = SdkConnection(spec, env, cwd, on_exit)
    connection.start(timeout_s)
    return connection


class MessageTooLarge(Exception):
    """A server sent a message over MAX_MESSAGE_BYTES, or one that would parse into too much
    (inbound.too_much_json), or (HTTP) an answer Mino cannot count: its connection ends with this
    as the reason."""


def too_long() -> str:
    return f"a message longer than {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB"


def _crowded(message: bytes) -> str | None:
    """What a message within MAX_MESSAGE_BYTES would parse into, when that is too much, else None."""
    if len(message) <= 65536:  # cannot be
        return None
    from .inbound import too_much_json

    crowded = too_much_json(message)
    return crowded.replace("the message holds", "a message that holds", 1) if crowded else None


def refused(what: str) -> MessageTooLarge:
    """The one line for a server's message Mino refused, stdio or HTTP."""
    return MessageTooLarge(f"the server sent {what}; its connection was closed")


class _BoundedLines:
    """What the SDK's stdio reader iterates over (in place of anyio's TextReceiveStream): the
    server's stdout decoded, but only in whole lines, each at most MAX_MESSAGE_BYTES and within
    inbound's JSON bounds. A longer line ends the connection as soon as the cap is passed, the pipe
    closed first (the SDK then drains stdout until EOF: a server writing forever would hold it).
    Whole lines also keep the SDK's `(buffer + chunk).split()` from going quadratic."""

    def __init__(self, transport_stream: Any, encoding: str = "utf-8", errors: str = "strict") -> None:
        import codecs

        self._source = transport_stream
        self._decoder = codecs.getincrementaldecoder(encoding)(errors=errors)
        self._parts: list[bytes] = []  # the line being read
        self._size = 0

    def __aiter__(self) -> _BoundedLines:
        return self

    async def __anext__(self) -> str:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> str:
        while True:
            chunk: bytes = await self._source.receive()  # at most 64 KiB
            end = chunk.rfind(b"\n")
            if end < 0:
                self._size += len(chunk)
                if self._size > MAX_MESSAGE_BYTES:
                    await self._refuse(too_long())
                self._parts.append(chunk)
                continue
            first = self._size + chunk.find(b"\n")  # the one line that may be long: the others fit a chunk
            if first > MAX_MESSAGE_BYTES:
                await self._refuse(too_long())
            lines = b"".join((*self._parts, chunk[: end + 1]))
            rest = chunk[end + 1 :]
            self._parts, self._size = ([rest] if rest else []), len(rest)
            crowded = _crowded(lines[:first])
            if crowded:
                await self._refuse(crowded)
            return str(self._decoder.decode(lines))

    async def _refuse(self, what: str) -> None:
        import contextlib

        self._parts, self._size = [], 0
        with contextlib.suppress(Exception):
            await self._source.aclose()
        raise refused(what)


async def _relay(source: Any, sink: Any) -> None:
    """Forward the transport's messages to the session until the transport's stream ends."""
    async with sink:
        try:
            async for item in source:
                await sink.send(item)
        except Exception:  # the stream broke: the same as its end
            return


@contextlib.asynccontextmanager
async def _http(url: str, http: Any, client: Any) -> Any:
    # The SDK's own per-event limit (1 MiB by default) would fail a legal answer; Mino's bound is
    # the one that holds (mcp_http.py), the SDK's is set to it as a second line.
    async with http, client(url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES) as streams:
        yield streams


async def _list_tools(session: Any) -> list[ToolInfo]:
    tools: list[ToolInfo] = []
    cursor = None
    for _ in range(20):  # pages; a server that pages forever gets what 20 pages hold
        from mcp.types import PaginatedRequestParams

        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        for t in page.tools:
            tools.append(
                ToolInfo(name=t.name, description=t.description or "", schema=_schema(t.input_schema))
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _schema(schema: Any) -> dict[str, Any]:
    if hasattr(schema, "model_dump"):
        dumped: dict[str, Any] = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    return dict(schema) if isinstance(schema, dict) else {}


def _describe(exc: BaseException) -> str:
    """One line for an exception from the SDK, anyio's exception groups unwrapped."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the program: {exc.strerror or exc} ({exc.filename})"
    if isinstance(exc, PermissionError):
        return f"cannot start the program: {exc.strerror or exc}"
    text = " ".join(str(exc).split())
    return text or exc.__class__.__name__


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mino")
    except PackageNotFoundError:
        return "0"
