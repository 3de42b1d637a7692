"""The model client: one streamed OpenAI Responses-API request (`POST {base_url}/responses`) at a time.

httpx is imported inside methods so that importing this module stays cheap (`mino --help` etc.).

Design notes:
- The HTTP exchange runs in a worker thread that hands events to the caller's thread through a
  queue. The caller calls `on_text` (on its own thread) and can leave at once on cancel, whatever
  the worker is blocked in (connect, waiting for headers, a read); the cancel also shuts down the
  in-flight socket so the worker stops too.
- Retries (429, 5xx, connection errors, timeouts) happen only before the first SSE event arrived:
  after that the caller may already have shown text, and replaying it would duplicate it.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mino_server.cancel import Cancelled, CancelToken

if TYPE_CHECKING:
    import httpx

__all__ = ["FunctionCall", "ModelClient", "ModelError", "ModelResponse"]

_RETRY_AFTER_CAP_S = 30.0
_ENDED_EARLY = "Model stream ended before the response completed"


class ModelError(Exception):
    """A failed model request; `str()` is one line a person can act on. `status` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class FunctionCall:
    call_id: str
    name: str
    arguments: str  # raw JSON string as sent by the model (may be invalid JSON)


@dataclass
class ModelResponse:
    text: str
    calls: list[FunctionCall]
    usage: dict | None


class _Retryable(Exception):
    """A failure before any event arrived: worth another attempt."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class _Aborted(Exception):
    """The caller left (cancel, or its on_text raised): the worker just stops."""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _service_message(response: httpx.Response) -> str:
    """The service's own error message (OpenAI: {"error": {"message": ...}}), else the body or the reason."""
    raw = response.content
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"].strip():
            return _one_line(error["message"])
        for candidate in (error, data.get("message"), data.get("detail")):
            if isinstance(candidate, str) and candidate.strip():
                return _one_line(candidate)
    text = raw.decode("utf-8", "replace").strip()
    if text and not text.lstrip().startswith("<"):  # skip HTML error pages from proxies
        return _one_line(text, 200)
    try:
        return HTTPStatus(response.status_code).phrase
    except ValueError:
        return "error"


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the service asked us to wait (OpenAI also sends retry-after-ms), capped."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = response.headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if seconds == seconds:  # not NaN
            return min(max(seconds, 0.0), _RETRY_AFTER_CAP_S)
    return None


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


_EOL = re.compile(rb"\r\n|\r|\n")


def _sse_lines(response: httpx.Response) -> Iterator[str]:
    """The stream's lines. Only CR, LF and CRLF end a line (the SSE rule): httpx's iter_lines also
    breaks on U+0085, U+2028 and U+2029, which a model's text may hold raw inside the JSON data."""
    pending = b""
    for chunk in response.iter_bytes():
        data = pending + chunk
        hold = data.endswith(b"\r")  # maybe the first half of a CRLF split across chunks
        *lines, pending = _EOL.split(data[:-1] if hold else data)
        if hold:
            pending += b"\r"
        for line in lines:
            yield line.decode("utf-8", "replace")
    for line in _EOL.split(pending):
        if line:
            yield line.decode("utf-8", "replace")


class _Job:
    """One `stream()` call: the queue between worker and caller, and the in-flight socket to cut on abort."""

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self.aborted = threading.Event()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None

    def track(self, response: httpx.Response | None) -> None:
        sock = None
        if response is not None:
            stream = response.extensions.get("network_stream")
            if stream is not None and hasattr(stream, "get_extra_info"):
                sock = stream.get_extra_info("socket")
        with self._lock:
            self._sock = sock if isinstance(sock, socket.socket) else None
            if self._sock is not None and self.aborted.is_set():
                self._cut()

    def abort(self) -> None:
        """Any thread: stop the worker. Shutting the socket down (not closing it) wakes a blocked read."""
        self.aborted.set()
        with self._lock:
            self._cut()
        self.events.put(("aborted", None))

    def _cut(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock = None


@dataclass
class _Accumulator:
    """What the events said so far, for when `response.completed` carries no output."""

    text: list[str] = field(default_factory=list)
    items: dict[int, dict] = field(default_factory=dict)  # output_index -> finished item
    calls: dict[str, dict] = field(default_factory=dict)  # item_id -> function_call item being built
    events: int = 0
    half: str = ""  # a high surrogate that ended the last text delta: its pair may begin the next


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid(text: str) -> str:
    """`text` as valid Unicode: surrogate pairs joined, lone surrogates as U+FFFD (JSON escapes
    can carry either; neither can be printed or saved as UTF-8)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class ModelClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._closed = False

    def warm_up(self) -> None:
        """Import httpx and build the client in a background thread now, so that the first request
        does not wait for them (~25 ms, while a person types the first line or the editor starts)."""

        def work() -> None:
            try:
                with self._lock:
                    if self._client is None and not self._closed:
                        self._client = self._new_client()
            except Exception:
                pass  # the first request builds it again and reports what is wrong

        threading.Thread(target=work, name="model-warm-up", daemon=True).start()

    def _http(self) -> httpx.Client:
        # One client for the session: its connection pool keeps the TCP (and TLS) connection alive.
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> httpx.Client:
        import httpx

        loopback = _is_loopback(self.base_url)
        return httpx.Client(
            timeout=httpx.Timeout(self.timeout_s),
            # A proxy from the environment must not capture a local model server.
            trust_env=not loopback,
            # Plain http to loopback (no proxy either) never does TLS: skip loading the CA
            # bundle, which costs ~25 ms, a quarter of a cold start.
            verify=not (loopback and self.base_url.startswith("http://")),
        )

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            self._closed = True
        if client is not None:
            client.close()

    # -- the call ----------------------------------------------------------------------------

    def stream(self, body: dict, on_text: Callable[[str], None], cancel: CancelToken) -> ModelResponse:
        """Send one request and stream the answer; `on_text` gets each text delta as it arrives.

        Raises ModelError (one line) or Cancelled.
        """
        cancel.check()
        payload = {**body, "model": self.model, "stream": True, "store": False}
        content = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        job = _Job()
        unregister = cancel.on_cancel(job.abort)
        worker = threading.Thread(target=self._work, args=(content, job), name="model-stream", daemon=True)
        try:
            worker.start()
            while True:
                kind, value = job.events.get()
                if cancel.cancelled:
                    raise Cancelled()
                if kind == "text":
                    on_text(value)
                elif kind == "done":
                    return value
                elif kind == "error":
                    raise value
                else:  # "aborted" without a cancel cannot happen; treat it as one anyway
                    raise Cancelled()
        finally:
            unregister()
            job.abort()  # no-op after success; stops the worker if we leave early

    def _work(self, content: bytes, job: _Job) -> None:
        try:
            job.events.put(("done", self._attempts(content, job)))
        except _Aborted:
            pass
        except ModelError as exc:
            job.events.put(("error", exc))
        except Exception as exc:  # never leave the caller waiting
            job.events.put(("error", ModelError(f"Model request failed: {type(exc).__name__}: {exc}")))

    def _attempts(self, content: bytes, job: _Job) -> ModelResponse:
        attempt = 0
        while True:
            if job.aborted.is_set():
                raise _Aborted()
            try:
                return self._attempt(content, job)
            except _Retryable as exc:
                if attempt >= self.max_retries:
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise ModelError(f"{exc}{suffix}", exc.status) from None
                delay = exc.retry_after if exc.retry_after is not None else self.backoff_s * 2**attempt
                attempt += 1
                if job.aborted.wait(delay):  # set on cancel, so a backoff never delays an interrupt
                    raise _Aborted() from None

    def _attempt(self, content: bytes, job: _Job) -> ModelResponse:
        import httpx

        client = self._http()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = client.build_request("POST", f"{self.base_url}/responses", content=content, headers=headers)
        try:
            response = client.send(request, stream=True)
        except httpx.HTTPError as exc:
            if job.aborted.is_set():
                raise _Aborted() from None
            raise _Retryable(self._describe(exc)) from None
        try:
            job.track(response)
            if job.aborted.is_set():
                raise _Aborted()
            return self._read(response, job)
        finally:
            job.track(None)
            response.close()

    def _describe(self, exc: Exception) -> str:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return f"Model request timed out after {self.timeout_s:g} s"
        text = str(exc)
        if isinstance(exc, httpx.ConnectError):
            lowered = text.lower()
            if "refused" in lowered:
                text = "connection refused"
            elif "name or service not known" in lowered or "nodename nor servname" in lowered:
                text = "cannot resolve the host name"
        return f"Model request failed: {_one_line(text or type(exc).__name__, 200)} ({self.base_url})"

    def _read(self, response: httpx.Response, job: _Job) -> ModelResponse:
        import httpx

        status = response.status_code
        if status != 200:
            try:
                response.read()
            except httpx.HTTPError as exc:
                raise _Retryable(self._describe(exc), status) from None
            message = f"Model request failed: HTTP {status}: {_service_message(response)}"
            if status == 429 or status >= 500:
                raise _Retryable(message, status, _retry_after(response))
            raise ModelError(message, status)
        if response.headers.get("content-type", "").startswith("application/json"):
            # A server that ignored `stream: true` and answered with the whole response object.
            try:
                data = json.loads(response.read())
            except (ValueError, httpx.HTTPError):
                raise ModelError("Model request failed: the service sent an unreadable response") from None
            return self._finish(data if isinstance(data, dict) else {}, _Accumulator())
        acc = _Accumulator()
        result: ModelResponse | None = None
        try:
            for event in self._events(response):
                if job.aborted.is_set():
                    raise _Aborted()
                if result is None:
                    acc.events += 1
                    result = self._handle(event, acc, job)
                # After response.completed keep reading to the end of the body: a fully read
                # response returns its connection to the pool (keep-alive).
        except httpx.HTTPError as exc:
            if job.aborted.is_set():
                raise _Aborted() from None
            if result is not None:
                return result  # the answer is whole; only the tail of the body failed
            if isinstance(exc, httpx.TimeoutException):
                if acc.events:
                    raise ModelError(self._describe(exc)) from None
                raise _Retryable(self._describe(exc)) from None
            if acc.events:
                raise ModelError(f"{_ENDED_EARLY} ({_one_line(str(exc), 120)})") from None
            raise _Retryable(self._describe(exc)) from None
        if job.aborted.is_set():
            raise _Aborted()
        if result is not None:
            return result
        if not acc.events:
            raise _Retryable(
                f"Model request failed: the service closed the stream without data ({self.base_url})"
            )
        raise ModelError(_ENDED_EARLY)

    # -- SSE ---------------------------------------------------------------------------------

    @staticmethod
    def _events(response: httpx.Response) -> Iterator[dict]:
        """Parse the SSE stream into event dicts (the `type` is inside the data; `event:` is a fallback)."""
        data: list[str] = []
        name = ""
        for line in _sse_lines(response):
            if line:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    data.append(value)
                elif field == "event":
                    name = value
                continue  # `id:`, comments (keep-alive pings)
            if not data:
                continue
            raw, data, event_name, name = "\n".join(data), [], name, ""
            if raw.strip() == "[DONE]":  # a Chat-Completions habit of some compatible servers
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                raise ModelError(f"Model stream sent malformed data: {_one_line(raw, 80)!r}")
            if "type" not in event and event_name:
                event["type"] = event_name  # the type is in the data for OpenAI; some servers only name it
            yield event

    def _handle(self, event: dict, acc: _Accumulator, job: _Job) -> ModelResponse | None:
        """Apply one event; returns the result on response.completed, raises on a failure event."""
        kind = event.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                # Some servers stream UTF-16 halves: an emoji split over two deltas as \ud83d, \ude00.
                delta, acc.half = acc.half + delta, ""
                if "\ud800" <= delta[-1] <= "\udbff":
                    delta, acc.half = delta[:-1], delta[-1]
                delta = _valid(delta)
                if delta:
                    acc.text.append(delta)
                    job.events.put(("text", delta))
        elif kind == "response.output_item.added":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                key = str(item.get("id") or event.get("output_index"))
                acc.calls[key] = {**item, "arguments": item.get("arguments") or ""}
        elif kind == "response.function_call_arguments.delta":
            call = acc.calls.get(str(event.get("item_id")))
            if call is not None and isinstance(event.get("delta"), str):
                call["arguments"] += event["delta"]
        elif kind == "response.function_call_arguments.done":
            call = acc.calls.get(str(event.get("item_id")))
            if call is not None and isinstance(event.get("arguments"), str):
                call["arguments"] = event["arguments"]
        elif kind == "response.output_item.done":
            if isinstance(event.get("item"), dict) and isinstance(event.get("output_index"), int):
                acc.items[event["output_index"]] = event["item"]
        elif kind == "response.completed":
            response = event.get("response")
            return self._finish(response if isinstance(response, dict) else {}, acc)
        elif kind == "response.failed":
            response = event.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            message = error.get("message") if isinstance(error, dict) else None
            raise ModelError(f"Model request failed: {_one_line(str(message or 'the response failed'))}")
        elif kind == "response.incomplete":
            response = event.get("response")
            details = response.get("incomplete_details") if isinstance(response, dict) else None
            reason = details.get("reason") if isinstance(details, dict) else None
            raise ModelError(f"Model response was cut short ({reason or 'incomplete'})")
        elif kind == "error":
            message = event.get("message") or event.get("code") or "unknown error"
            raise ModelError(f"Model request failed: {_one_line(str(message))}")
        return None

    @staticmethod
    def _finish(response: dict, acc: _Accumulator) -> ModelResponse:
        """Prefer the final output; else the finished items; else what the deltas built."""
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else None
        output = response.get("output")
        items = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
        if not any(i.get("type") in ("message", "function_call") for i in items):
            items = [acc.items[k] for k in sorted(acc.items)]
        if not any(i.get("type") in ("message", "function_call") for i in items):
            items = list(acc.calls.values())
            if acc.text:
                items.insert(
                    0, {"type": "message", "content": [{"type": "output_text", "text": "".join(acc.text)}]}
                )
        text: list[str] = []
        calls: list[FunctionCall] = []
        for item in items:
            if item.get("type") == "message" and isinstance(item.get("content"), list):
                for part in item["content"]:
                    if isinstance(part, dict) and part.get("type") in ("output_text", "refusal"):
                        value = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                        if isinstance(value, str):
                            text.append(value)
            elif item.get("type") == "function_call" and isinstance(item.get("name"), str):
                arguments = item.get("arguments")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
                call_id = _valid(str(item.get("call_id") or item.get("id") or ""))
                calls.append(
                    FunctionCall(call_id=call_id, name=_valid(item["name"]), arguments=_valid(arguments))
                )
        return ModelResponse(text=_valid("".join(text)), calls=calls, usage=usage)
