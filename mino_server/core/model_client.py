"""The model client: one streamed OpenAI Responses-API request (`POST {base_url}/responses`) at a time.

The HTTP client (http1.py, on h11) is imported inside methods so that importing this module stays
cheap (`mino --help` etc.).

Design notes:
- The HTTP exchange runs in a worker thread that hands events to the caller's thread through a
  queue. The caller calls `on_text` (on its own thread) and can leave at once on cancel, whatever
  the worker is blocked in (connect, waiting for headers, a read); the cancel also shuts down the
  in-flight socket so the worker stops too.
- Retries (429, 5xx, connection errors, timeouts) happen only before the first SSE event arrived:
  after that the caller may already have shown text, and replaying it would duplicate it.
- Many servers behind `base_url` bridge to chat completions and apply strict chat templates: the
  input goes out with adjacent messages of one role merged (`alternating`), an answer cut short
  (`response.incomplete`) comes back as a result, not an error, and usage of 0 means "not counted".
- This is the one model port: `chat_client.ChatClient` speaks the same requests and answers over
  `/chat/completions` (config.yaml `wire_api: chat`); only the wire differs.
- Reasoning (`reasoning_effort` set): the request asks for the encrypted reasoning items (Responses
  is used statelessly, `store: false`); they come back in `ModelResponse.reasoning` for the caller
  to keep and send back in place, and their summaries go to `on_thinking`, never into the answer.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mino_server.core.cancel import Cancelled, CancelToken

from .inbound import MAX_JSON_VALUES, too_much_json
from .values import Mutable, mutable

if TYPE_CHECKING:
    from .http1 import Client, Response

__all__ = ["FunctionCall", "ModelClient", "ModelError", "ModelResponse", "alternating"]

_RETRY_AFTER_CAP_S = 30.0
# What one response may hold, bounded while it is read (a hostile or broken service, or a proxy,
# could stream without end): one SSE event's data (`response.completed` repeats the whole
# response: 16 MiB is far above a long answer with its tool calls), the whole body, and an error
# answer's body (only its message is shown).
MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_ERROR_BODY_BYTES = 64 * 1024
_ENDED_EARLY = "Model stream ended before the response completed"


class ModelError(Exception):
    """A failed model request; `str()` is one line a person can act on. `status` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@mutable
class FunctionCall(Mutable):
    call_id: str
    name: str
    arguments: str  # raw JSON string as sent by the model (may be invalid JSON)


@mutable
class ModelResponse(Mutable):
    text: str
    calls: list[FunctionCall]
    # input_tokens, output_tokens, total_tokens: only the counts the service reported as positive
    # numbers; None when it gave none
    usage: dict[str, int] | None
    incomplete: str | None = None  # why the answer was cut short (e.g. max_output_tokens); no calls then
    # The response's reasoning items as the service sent them (with encrypted_content), in output
    # order; they precede the answer and are sent back before it. None when cut short.
    reasoning: list[dict[str, Any]] = field(default_factory=list)


class Thought(str):
    """A reasoning summary (or a chat server's reasoning text) for `on_thinking`, not the answer."""


# What the worker hands the caller's thread: a text delta, a thought, the answer, the failure, or
# None when aborted.
_Event = str | ModelResponse | ModelError | None


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


def message_in(data: object) -> str | None:
    """The human message inside an error object: OpenAI's {"error": {"message"}}, a bare
    {"error": "..."}, {"message"}, FastAPI's {"detail": "..." | [{"msg"}]}, or a failed response."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        found = message_in(error) or message_in({"message": error.get("code")})
        if found:
            return found
    detail = data.get("detail")
    if isinstance(detail, list):
        detail = "; ".join(str(d.get("msg")) for d in detail if isinstance(d, dict) and d.get("msg"))
    for candidate in (error, data.get("message"), detail):
        if isinstance(candidate, str) and candidate.strip():
            return _one_line(candidate)
    response = data.get("response")  # an SSE `response.failed` event sent as the error body
    return message_in(response) if isinstance(response, dict) else None


def _body_message(raw: bytes) -> str | None:
    """The service's message in an error body, whether JSON, SSE lines (`data: {...}`, as LiteLLM's
    proxy sends when a streamed request fails before it starts) or plain text; None for HTML or nothing."""
    text = raw.decode("utf-8", "replace").strip()
    if not text or text.startswith("<"):  # skip HTML error pages from proxies
        return None
    try:
        return message_in(json.loads(text)) or _one_line(text, 200)
    except ValueError:
        pass
    lines = text.splitlines()
    data = [line[5:].strip() for line in lines if line.startswith("data:")]
    if data and all(not line.strip() or line.startswith(("data:", "event:", "id:", ":")) for line in lines):
        for payload in data:
            if payload and payload != "[DONE]":
                try:
                    found = message_in(json.loads(payload))
                except ValueError:
                    found = _one_line(payload, 200)
                if found:
                    return found
        return None
    return _one_line(text, 200)


def service_message(response: Response, body: bytes) -> str:
    """The service's own error message (in `body`, the start of the error answer), else the
    status's reason phrase."""
    found = _body_message(body)
    if found:
        return found
    try:
        return HTTPStatus(response.status_code).phrase
    except ValueError:
        return "error"


def usage_counts(raw: object) -> dict[str, int] | None:
    """The token counts the service reported. A 0 or a missing count means it did not count (llama.cpp
    servers report none; LiteLLM's bridge passes 0s): it is left out, and with nothing left, None."""
    if not isinstance(raw, dict):
        return None
    usage: dict[str, int] = {
        key: count
        for key in ("input_tokens", "output_tokens", "total_tokens")
        if type(count := raw.get(key)) is int and count > 0
    }
    for details, key, name in (
        ("input_tokens_details", "cached_tokens", "cached_tokens"),
        ("output_tokens_details", "reasoning_tokens", "reasoning_tokens"),
    ):
        inner = raw.get(details)
        if isinstance(inner, dict) and type(count := inner.get(key)) is int and count > 0:
            usage[name] = count
    return usage if "input_tokens" in usage or "output_tokens" in usage else None


def _message_text(content: object) -> str | None:
    """A message's text: string content as is, or a list of one text part; None for anything else.

    Several parts are kept apart: a user message with context items is the typed text followed by
    one part per item, and merged into a neighbour it stays so (the neighbour's text becomes a part)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or len(content) > 1:
        return None
    texts = []
    for part in content:
        if not (
            isinstance(part, dict) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)
        ):
            return None
        texts.append(part["text"])
    return "".join(texts)


_TEXT_PARTS = ("input_text", "output_text", "text")


def alternating(items: list[object]) -> list[object]:
    """`items` with each run of adjacent messages of one role merged into one message.

    A chat-completions bridge turns the input into chat messages, and strict chat templates reject
    two of one role in a row: a turn that failed before any answer leaves its user message just
    before the next one; the front assistant message may meet an assistant message. Text-only
    messages are merged into one string (paragraphs); anything else (an image, context items) keeps
    its parts, concatenated.
    An assistant message followed by function_call items is left alone (the bridge makes one message).
    """
    out: list[object] = []
    for item in items:
        prev = out[-1] if out else None
        if (
            isinstance(item, dict)
            and isinstance(prev, dict)
            and item.get("type", "message") == "message" == prev.get("type", "message")
            and isinstance(item.get("role"), str)
            and item.get("role") == prev.get("role")
        ):
            a, b = _message_text(prev.get("content")), _message_text(item.get("content"))
            merged: str | list[object]
            if a is not None and b is not None:
                merged = "\n\n".join(t for t in (a, b) if t)
            else:
                kind = "output_text" if item["role"] == "assistant" else "input_text"
                merged = [
                    part
                    for content in (prev.get("content"), item.get("content"))
                    for part in (
                        content if isinstance(content, list) else [{"type": kind, "text": str(content or "")}]
                    )
                ]
            out[-1] = {**prev, "content": merged}
            continue
        out.append(item)
    return out


def _retry_after(response: Response) -> float | None:
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


def is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


_EOL = re.compile(rb"\r\n|\r|\n")


def _sse_lines(response: Response) -> Iterator[str]:
    """The stream's lines. Only CR, LF and CRLF end a line (the SSE rule; str.splitlines would also
    break on U+0085, U+2028 and U+2029, which a model's text may hold raw inside the JSON data).
    Bounded while read: a line over MAX_EVENT_BYTES, or a body over MAX_RESPONSE_BYTES, ends it."""
    pending = bytearray()  # the line being read (appended to in place: no quadratic copies)
    total = 0
    for chunk in response.iter_bytes():
        total += len(chunk)
        if total > MAX_RESPONSE_BYTES:
            raise ModelError(_too_large("response", MAX_RESPONSE_BYTES))
        if not pending.endswith(b"\r") and not _EOL.search(chunk):  # no line ends in it
            pending += chunk
            if len(pending) > MAX_EVENT_BYTES:
                raise ModelError(_too_large("line", MAX_EVENT_BYTES))
            continue
        pending += chunk
        hold = pending.endswith(b"\r")  # maybe the first half of a CRLF split across chunks
        *lines, rest = _EOL.split(pending[:-1] if hold else pending)
        pending = bytearray(rest)
        if hold:
            pending += b"\r"
        for line in lines:
            if len(line) > MAX_EVENT_BYTES:
                raise ModelError(_too_large("line", MAX_EVENT_BYTES))
            yield line.decode("utf-8", "replace")
    for line in _EOL.split(pending):
        if line:
            yield line.decode("utf-8", "replace")


def _too_large(what: str, limit: int) -> str:
    return f"Model stream sent a {what} over {limit // (1024 * 1024)} MiB; it was not read further"


class Job:
    """One `stream()` call: the queue between worker and caller, and the in-flight socket to cut on abort."""

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self.aborted = threading.Event()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None

    def track(self, sock: socket.socket | None) -> None:
        """The in-flight socket (from before the request is sent: a cancel while the service has
        not answered yet cuts it too), or None once the attempt is over."""
        with self._lock:
            self._sock = sock
            if self._sock is not None and self.aborted.is_set():
                self._cut()

    def abort(self) -> None:
        """Any thread: stop the worker. Shutting the socket down (not closing it) wakes a blocked read."""
        self.aborted.set()
        with self._lock:
            self._cut()
        self.events.put(None)

    def _cut(self) -> None:
        if self._sock is not None:
            try:
                # socket.socket's own shutdown, also for TLS: SSLSocket.shutdown would first drop
                # the TLS state a blocked read in the worker is still using.
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock = None


@mutable
class Accumulator(Mutable):
    """What the events said so far, for when `response.completed` carries no output."""

    text: list[str] = field(default_factory=list)
    items: dict[int, dict[str, Any]] = field(default_factory=dict)  # output_index -> finished item
    # item_id -> function_call item being built
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: int = 0
    thought: set[str] = field(default_factory=set)  # reasoning items whose summary went to on_thinking
    # Chat Completions (chat_client.py): the finish_reason, the usage chunk, [DONE] seen, reasoning text
    finish: str | None = None
    usage: Any = None
    done: bool = False
    reasoning_text: list[str] = field(default_factory=list)
    half: str = ""  # a high surrogate that ended the last text delta: its pair may begin the next


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` as valid Unicode: surrogate pairs joined, lone surrogates as U+FFFD (JSON escapes
    can carry either; neither can be printed or saved as UTF-8)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class ModelClient:
    endpoint = "responses"  # POST {base_url}/<endpoint>

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        origin: str = "",
        reasoning_effort: str | None = None,
    ) -> None:
        self.reasoning_effort = reasoning_effort  # one of EFFORTS; None: no reasoning settings sent
        self.base_url = base_url.rstrip("/")
        # Where base_url came from ("base URL from MINO_BASE_URL", ...): said with it in errors, so a
        # typo is found at once.
        self.origin = origin
        self.where = f"{self.base_url}, {origin}" if origin else self.base_url
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._client: Client | None = None
        self._lock = threading.Lock()
        self._closed = False

    def warm_up(self) -> None:
        """Import the HTTP client and build it in a background thread now, so that the first request
        does not wait for it (while a person types the first line or the editor starts)."""

        def work() -> None:
            try:
                with self._lock:
                    if self._client is None and not self._closed:
                        self._client = self._new_client()
            except Exception:
                pass  # the first request builds it again and reports what is wrong

        threading.Thread(target=work, name="model-warm-up", daemon=True).start()

    def _http(self) -> Client:
        # One client for the session: its connection pool keeps the TCP (and TLS) connection alive.
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Client:
        from mino_server import __version__

        from .http1 import Client

        # A proxy from the environment must not capture a local model server.
        return Client(
            self.timeout_s, trust_env=not is_loopback(self.base_url), user_agent=f"mino/{__version__}"
        )

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            self._closed = True
        if client is not None:
            client.close()

    # -- the call ----------------------------------------------------------------------------

    def stream(
        self,
        body: dict[str, Any],
        on_text: Callable[[str], None],
        cancel: CancelToken,
        on_thinking: Callable[[str], None] | None = None,
    ) -> ModelResponse:
        """Send one request and stream the answer; `on_text` gets each text delta as it arrives,
        `on_thinking` each reasoning summary.

        `body` is a Responses request: instructions, input items, tools, and `prompt_cache_key`.
        Raises ModelError (one line) or Cancelled.
        """
        cancel.check()
        content = json.dumps(self.payload(body), ensure_ascii=False).encode("utf-8")
        job = Job()
        unregister = cancel.on_cancel(job.abort)
        worker = threading.Thread(target=self._work, args=(content, job), name="model-stream", daemon=True)
        try:
            worker.start()
            while True:
                event = job.events.get()
                if cancel.cancelled:
                    raise Cancelled()
                if isinstance(event, Thought):
                    if on_thinking is not None:
                        on_thinking(str(event))
                elif isinstance(event, str):
                    on_text(event)
                elif isinstance(event, ModelResponse):
                    return event
                elif isinstance(event, ModelError):
                    raise event
                else:  # aborted without a cancel cannot happen; treat it as one anyway
                    raise Cancelled()
        finally:
            unregister()
            job.abort()  # no-op after success; stops the worker if we leave early

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as sent: stateless, streamed, with reasoning settings only when configured."""
        payload = {**body, "model": self.model, "stream": True, "store": False}
        if isinstance(payload.get("input"), list):
            payload["input"] = alternating(payload["input"])
        if self.reasoning_effort is not None:
            payload["reasoning"] = {"effort": self.reasoning_effort, "summary": "auto"}
            payload["include"] = ["reasoning.encrypted_content"]
        return payload

    def _work(self, content: bytes, job: Job) -> None:
        try:
            job.events.put(self._attempts(content, job))
        except _Aborted:
            pass
        except ModelError as exc:
            job.events.put(exc)
        except Exception as exc:  # never leave the caller waiting
            job.events.put(ModelError(f"Model request failed: {type(exc).__name__}: {exc}"))

    def _attempts(self, content: bytes, job: Job) -> ModelResponse:
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

    def _attempt(self, content: bytes, job: Job) -> ModelResponse:
        from .http1 import CannotSend, HTTPFailure

        client = self._http()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        try:
            try:
                response = client.post(f"{self.base_url}/{self.endpoint}", content, headers, job.track)
            except CannotSend as exc:  # the base URL, the environment's proxy, a header: no attempt can help
                raise ModelError(self._describe(exc)) from None
            except HTTPFailure as exc:
                if job.aborted.is_set():
                    raise _Aborted() from None
                raise _Retryable(self._describe(exc)) from None
            try:
                if job.aborted.is_set():
                    raise _Aborted()
                return self._read(response, job)
            finally:
                response.close()
        finally:
            job.track(None)

    def _describe(self, exc: Exception) -> str:
        from .http1 import HTTPTimeout

        if isinstance(exc, HTTPTimeout):
            return f"Model request timed out after {self.timeout_s:g} s"
        text = str(exc)  # http1 words it: "connection refused", "cannot resolve the host name", ...
        return f"Model request failed: {_one_line(text or type(exc).__name__, 200)} ({self.where})"

    def _read(self, response: Response, job: Job) -> ModelResponse:
        from .http1 import HTTPFailure, HTTPTimeout

        status = response.status_code
        if status != 200:
            try:
                body = response.read(MAX_ERROR_BODY_BYTES)
            except HTTPFailure as exc:
                raise _Retryable(self._describe(exc), status) from None
            message = f"Model request failed: HTTP {status}: {service_message(response, body)}"
            if status in (404, 405):  # no such endpoint: most often a base URL without its /v1
                hint = "" if self.base_url.endswith("/v1") else ": does it need /v1?"
                message += f" (POST {self.base_url}/{self.endpoint}; {self.origin or 'the base URL'}{hint}"
                if self.endpoint == "responses" and not hint:
                    message += "; a server with only /chat/completions needs wire_api: chat in config.yaml"
                message += ")"
            if status == 429 or status >= 500:
                raise _Retryable(message, status, _retry_after(response))
            raise ModelError(message, status)
        if response.headers.get("content-type", "").startswith("application/json"):
            # A server that ignored `stream: true` and answered with the whole response object.
            try:
                raw = response.read(MAX_RESPONSE_BYTES + 1)  # a byte more says there was more
                if len(raw) > MAX_RESPONSE_BYTES:
                    raise ModelError(_too_large("response", MAX_RESPONSE_BYTES))
                crowded = too_much_json(raw)
                if crowded:
                    raise ModelError(f"Model request failed: {crowded}")
                data = json.loads(raw)
            except (ValueError, HTTPFailure):
                raise ModelError("Model request failed: the service sent an unreadable response") from None
            return self._whole(data if isinstance(data, dict) else {})
        acc = Accumulator()
        result: ModelResponse | None = None
        try:
            for event in self._events(response):
                if job.aborted.is_set():
                    raise _Aborted()
                if result is None:
                    acc.events += event.get("type") != "[DONE]"
                    result = self._handle(event, acc, job)
                # After response.completed keep reading to the end of the body: a fully read
                # response returns its connection to the pool (keep-alive).
        except HTTPFailure as exc:
            if job.aborted.is_set():
                raise _Aborted() from None
            if result is not None:
                return result  # the answer is whole; only the tail of the body failed
            if isinstance(exc, HTTPTimeout):
                if acc.events:
                    raise ModelError(self._describe(exc)) from None
                raise _Retryable(self._describe(exc)) from None
            if acc.events:
                raise ModelError(f"{_ENDED_EARLY} ({_one_line(str(exc), 120)})") from None
            raise _Retryable(self._describe(exc)) from None
        if job.aborted.is_set():
            raise _Aborted()
        if result is None:
            result = self._end(acc)
        if result is not None:
            return result
        if not acc.events:
            raise _Retryable(
                f"Model request failed: the service closed the stream without data ({self.where})"
            )
        raise ModelError(_ENDED_EARLY)

    def _whole(self, data: dict[str, Any]) -> ModelResponse:
        """A whole (not streamed) response object."""
        if data.get("error") and not data.get("output"):
            raise ModelError(f"Model request failed: {message_in(data) or 'the service sent an error'}")
        return self._finish(data, Accumulator(), _incomplete_reason(data))

    def _end(self, acc: Accumulator) -> ModelResponse | None:
        """The answer when the stream ended without a final event; None: it ended early."""
        return None

    # -- SSE ---------------------------------------------------------------------------------

    @staticmethod
    def _events(response: Response) -> Iterator[dict[str, Any]]:
        """Parse the SSE stream into event dicts (the `type` is inside the data; `event:` is a fallback)."""
        data: list[str] = []
        size = 0  # of the event's data so far
        name = ""
        for line in _sse_lines(response):
            if line:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    size += len(value) + 1
                    if size > MAX_EVENT_BYTES:
                        raise ModelError(_too_large("event", MAX_EVENT_BYTES))
                    data.append(value)
                elif field == "event":
                    name = value
                continue  # `id:`, comments (keep-alive pings)
            if not data:
                continue
            raw, data, size, event_name, name = "\n".join(data), [], 0, name, ""
            if raw.strip() == "[DONE]":  # Chat Completions' end (some Responses servers send it too)
                yield {"type": "[DONE]"}
                continue
            # Fewer characters than the bound cannot hold more values than it: only long ones counted.
            crowded = (
                too_much_json(raw.encode("utf-8", "surrogatepass")) if len(raw) > MAX_JSON_VALUES else None
            )
            if crowded:
                raise ModelError(f"Model stream sent an event that {crowded.removeprefix('the message ')}")
            try:
                event = json.loads(raw)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                raise ModelError(f"Model stream sent malformed data: {_one_line(raw, 80)!r}")
            if "type" not in event and event_name:
                event["type"] = event_name  # the type is in the data for OpenAI; some servers only name it
            yield event

    def _handle(self, event: dict[str, Any], acc: Accumulator, job: Job) -> ModelResponse | None:
        """Apply one event; returns the result on response.completed, raises on a failure event."""
        kind = event.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                # Some servers stream UTF-16 halves: an emoji split over two deltas as \ud83d, \ude00.
                delta, acc.half = acc.half + delta, ""
                if "\ud800" <= delta[-1] <= "\udbff":
                    delta, acc.half = delta[:-1], delta[-1]
                delta = valid_text(delta)
                if delta:
                    acc.text.append(delta)
                    job.events.put(delta)
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
        elif kind == "response.reasoning_summary_text.done":
            text, item_id = event.get("text"), event.get("item_id")
            if isinstance(text, str) and text.strip():
                acc.thought.add(str(item_id))
                job.events.put(Thought(valid_text(text)))
        elif kind == "response.output_item.done":
            item = event.get("item")
            if isinstance(item, dict) and isinstance(event.get("output_index"), int):
                acc.items[event["output_index"]] = item
                if item.get("type") == "reasoning" and str(item.get("id")) not in acc.thought:
                    acc.thought.add(str(item.get("id")))  # a server that sent no summary events
                    for text in _summaries(item):
                        job.events.put(Thought(text))
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            response = response if isinstance(response, dict) else {}
            reason = _incomplete_reason(response)
            if kind == "response.incomplete" and reason is None:
                reason = "incomplete"
            return self._finish(response, acc, reason)
        elif kind == "response.failed":
            response = event.get("response")
            message = message_in(response) if isinstance(response, dict) else None
            raise ModelError(f"Model request failed: {message or 'the response failed'}")
        elif kind == "error" or (kind is None and "error" in event):
            # OpenAI: {"type": "error", "message"}; some proxies: {"error": {"message"}} with no type.
            message = message_in(event) or message_in({"message": event.get("code")}) or "unknown error"
            raise ModelError(f"Model request failed: {message}")
        return None

    @staticmethod
    def _finish(response: dict[str, Any], acc: Accumulator, incomplete: str | None = None) -> ModelResponse:
        """Prefer the final output; else the finished items; else what the deltas built.

        An answer cut short keeps the text the person saw streamed, and no calls: their arguments
        may be cut too, and a half-made call must never run."""
        usage = usage_counts(response.get("usage"))
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
        reasoning: list[dict[str, Any]] = []
        for item in items:
            if item.get("type") == "reasoning":
                # Only an item that carries its encrypted reasoning can be sent back: with store:
                # false the service keeps nothing, so an item by id alone would not be found.
                if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
                    reasoning.append(item)
            elif item.get("type") == "message" and isinstance(item.get("content"), str):
                text.append(item["content"])  # some compatible servers answer with string content
            elif item.get("type") == "message" and isinstance(item.get("content"), list):
                for part in item["content"]:
                    if isinstance(part, dict) and part.get("type") in ("output_text", "refusal"):
                        value = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                        if isinstance(value, str):
                            text.append(value)
            elif item.get("type") == "function_call" and isinstance(item.get("name"), str):
                arguments = item.get("arguments")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
                call_id = valid_text(str(item.get("call_id") or item.get("id") or ""))
                calls.append(
                    FunctionCall(
                        call_id=call_id, name=valid_text(item["name"]), arguments=valid_text(arguments)
                    )
                )
        if incomplete is not None:
            shown = "".join(acc.text)
            return ModelResponse(
                text=shown or valid_text("".join(text)),
                calls=[],
                usage=usage,
                incomplete=_one_line(incomplete, 80),
            )
        # A reasoning item must be followed by the output it led to: with neither text nor calls
        # there is nothing to send it back before.
        kept = reasoning if (text or calls) else []
        return ModelResponse(text=valid_text("".join(text)), calls=calls, usage=usage, reasoning=kept)


def _summaries(item: dict[str, Any]) -> list[str]:
    """The summary texts of a reasoning item."""
    summary = item.get("summary")
    return [
        valid_text(part["text"])
        for part in (summary if isinstance(summary, list) else ())
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"].strip()
    ]


def _incomplete_reason(response: dict[str, Any]) -> str | None:
    """Why a response was cut short (`status: incomplete`, `incomplete_details.reason`), or None."""
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if isinstance(reason, str) and reason.strip():
        return reason
    return "incomplete" if response.get("status") == "incomplete" else None
