"""A scripted OpenAI Responses-API (and Chat Completions) server on loopback, for tests, `mino eval`
and benchmarks.

`ScriptedModel` is a real HTTP/1.1 server (keep-alive, chunked SSE) on 127.0.0.1 with an ephemeral
port, running in background threads. Every `POST /v1/responses` consumes the next scripted reply and
streams it as real Responses-API events (`event: <type>` / `data: <json>` SSE frames, each event with
`type` and `sequence_number`)::

    response.created, response.in_progress,
    [message]  response.output_item.added, response.content_part.added,
               response.output_text.delta (several), response.output_text.done,
               response.content_part.done, response.output_item.done,
    [per call] response.output_item.added, response.function_call_arguments.delta (several),
               response.function_call_arguments.done, response.output_item.done,
    response.completed   (`response.output` holds the full items, `response.usage` the usage)

Reply keys (all optional; validated by `parse_reply`):

- `text` (str): an assistant message, streamed in deltas of a few words.
- `calls` (list): function calls after the text, each `{name, arguments, call_id?}`. `arguments` is
  a mapping (JSON-encoded) or a string sent as is (e.g. invalid JSON). `call_id` defaults to
  `call_<n>`, n counting every call this server has streamed (so IDs are unique per server).
- `require` (str or list of str): each must occur in the request, either in the raw body or in a
  JSON string value of it (so text with quotes, newlines or non-ASCII matches however the client
  escapes it). If one is missing, the error "request #N does not contain 'X'" is recorded and the
  request is answered with HTTP 400.
- `status` (int 400-599) with optional `error` (message) and `headers` (e.g. `{"Retry-After": "0"}`):
  answer that HTTP error, body `{"error": {"message": ..., "type": ...}}`, instead of a stream.
- `fail` (str): end the stream with a `response.failed` event carrying this error message.
- `cut_after` (int): close the connection abruptly after that many SSE events.
- `stall` (float s): send the headers and the first event, then pause that long (the server's stop
  interrupts the pause), then go on.
- `hold` (true): send every event but the last (`response.completed`), then wait until the test
  calls `release()` (or the server stops): a turn that is surely still streaming, with no clock.
- `malformed` (true): send a `data:` line that is not JSON after the first two events.
- `delay` (float s): pause between events (slow stream).
- `usage` ({input_tokens, output_tokens}): overrides the defaults, input = request bytes // 4 and
  output = streamed characters // 4. `null`: the response carries no usage (llama.cpp servers);
  zeros are sent as given (LiteLLM's chat-completions bridge sends 0s when the backend counted none).
- `incomplete` (str, e.g. "max_output_tokens"): stream the text (and calls) as given, then end with
  `response.incomplete` (status "incomplete", `incomplete_details.reason`) instead of completed.
- `chunk` (int): stream the text in deltas of this many characters (a big answer in few events).
- `reasoning` (str): a reasoning item before the answer whose summary is this text
  (`response.reasoning_summary_text.delta`/`.done` events), carrying `encrypted_content` when the
  request asked for it (`include: ["reasoning.encrypted_content"]`). On chat: `reasoning_content`
  deltas before the answer.
- `usage` may also give `cached_tokens` and `reasoning_tokens` (reported in the usage details).

`POST /v1/chat/completions` answers the same replies as Chat Completions chunks (`data: {json}`
lines, `chat.completion.chunk` objects, `data: [DONE]` at the end): the text as `delta.content`,
each call as `delta.tool_calls` pieces by `index` (id and name first, then the arguments in
pieces), `finish_reason` `stop`, `tool_calls` or (with `incomplete`) `length`, and a last chunk with
`usage` when the request asked for it (`stream_options.include_usage`). `fail` sends a
`data: {"error": ...}` chunk. Strict input checks the messages as a strict chat template would:
alternating user/assistant roles, string content for assistant and system messages, each `tool`
message answering a call of the assistant message before it. `paths` records each request's path. A POST of an empty object (`mino doctor`'s question which API
this is) gets HTTP 400 and is recorded in `probes`, not `requests`.
- `error_format` ("json", "sse" or "text"; with `status`): the error body's shape. "sse" sends
  `data: {"error": {...}}` then `data: [DONE]` as text/event-stream, as LiteLLM's proxy does when a
  streamed request fails before it starts; "text" sends the message as text/plain.

Reasoning items sent back on /responses are checked too (strict or not): each must be one this
server returned, unchanged, and be followed by the item it led to (as OpenAI checks them).

Strict input (`ScriptedModel(strict=True)`, the default): every request is checked as a strict
chat-completions bridge would take it (LiteLLM in front of llama-cpp-python, with a chat template
that demands alternating roles). A text-only message must carry string content (such bridges drop
or refuse a list of parts; llama-cpp-python takes only strings from assistant and system messages),
except a user message of several text parts, which is how context items travel (a chat-completions
user message takes a list of text parts); and no two adjacent messages may have the same role. A
violation is recorded in `errors` and answered with HTTP 400, like a script violation.

`requests` keeps every request body as received (tests read what reached the model there;
`image_urls(request)` lists its images' data URLs). Strict input also checks each `input_image`
part: in a user message, with an `image_url` string.

A request when no reply is left records "unexpected request #N: <first 300 chars of body>" and gets
HTTP 400 `{"error": {"message": "scripted model: ...", "type": "invalid_request_error"}}`.

Run by hand: `python -m mino_server.testing.scripted_model --replies FILE.yaml [--port N]` prints the base URL
and serves the YAML list of replies until interrupted.
"""

from __future__ import annotations

import argparse
import http.server
import json
import re
import selectors
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

__all__ = ["ScriptedModel", "contains_text", "image_urls", "parse_reply", "string_values"]

_KEYS = (
    "text",
    "calls",
    "require",
    "status",
    "error",
    "headers",
    "fail",
    "cut_after",
    "stall",
    "malformed",
    "hold",
    "delay",
    "usage",
    "incomplete",
    "error_format",
    "chunk",
    "reasoning",
)
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")
_ERROR_FORMATS = ("json", "sse", "text")
_TEXT_PARTS = ("input_text", "output_text")
_CALL_KEYS = ("name", "arguments", "call_id")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def parse_reply(obj: object, where: str = "reply") -> dict:
    """Validate one scripted reply and return a normalised copy (`require` becomes a list).

    Raises ValueError naming the reply and the field, e.g. "reply 3: 'calls[0].name' must be a string".
    """

    def bad(field: str, problem: str) -> ValueError:
        return ValueError(f"{where}: '{field}' {problem}")

    if not isinstance(obj, dict):
        raise ValueError(f"{where}: must be a mapping, not {type(obj).__name__}")
    for key in obj:
        if key not in _KEYS:
            raise ValueError(f"{where}: unknown key {key!r} (expected one of: {', '.join(_KEYS)})")
    reply: dict[str, Any] = {}
    if "text" in obj:
        if not isinstance(obj["text"], str):
            raise bad("text", "must be a string")
        reply["text"] = obj["text"]
    if "calls" in obj:
        if not isinstance(obj["calls"], list):
            raise bad("calls", "must be a list")
        calls = []
        for i, call in enumerate(obj["calls"]):
            field = f"calls[{i}]"
            if not isinstance(call, dict):
                raise bad(field, "must be a mapping with 'name' and 'arguments'")
            for key in call:
                if key not in _CALL_KEYS:
                    raise bad(f"{field}.{key}", "is not a known key (name, arguments, call_id)")
            if not isinstance(call.get("name"), str) or not call["name"]:
                raise bad(f"{field}.name", "must be a string")
            arguments = call.get("arguments", {})
            if isinstance(arguments, dict):
                try:
                    arguments = json.dumps(arguments, ensure_ascii=False)
                except (TypeError, ValueError) as exc:
                    raise bad(f"{field}.arguments", f"cannot be encoded as JSON ({exc})") from None
            elif not isinstance(arguments, str):
                raise bad(f"{field}.arguments", "must be a mapping or a string")
            normal = {"name": call["name"], "arguments": arguments}
            if "call_id" in call:
                if not isinstance(call["call_id"], str) or not call["call_id"]:
                    raise bad(f"{field}.call_id", "must be a string")
                normal["call_id"] = call["call_id"]
            calls.append(normal)
        reply["calls"] = calls
    if "require" in obj:
        require = obj["require"]
        if isinstance(require, str):
            require = [require]
        if not isinstance(require, list) or not all(isinstance(r, str) and r for r in require):
            raise bad("require", "must be a string or a list of non-empty strings")
        reply["require"] = list(require)
    if "status" in obj:
        status = obj["status"]
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise bad("status", "must be an HTTP error status (400-599)")
        if "text" in obj or "calls" in obj:
            raise bad("status", "cannot be combined with 'text' or 'calls' (an error has no stream)")
        reply["status"] = status
    for key in ("error", "fail", "reasoning"):
        if key in obj:
            if not isinstance(obj[key], str):
                raise bad(key, "must be a string")
            reply[key] = obj[key]
    if "error" in obj and "status" not in obj:
        raise bad("error", "needs 'status' (use 'fail' for an error inside the stream)")
    if "headers" in obj:
        headers = obj["headers"]
        if "status" not in obj:
            raise bad("headers", "needs 'status'")
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
            for k, v in headers.items()
        ):
            raise bad("headers", "must map header names to strings or numbers")
        reply["headers"] = {k: str(v) for k, v in headers.items()}
    if "cut_after" in obj:
        if not isinstance(obj["cut_after"], int) or not _number(obj["cut_after"]):
            raise bad("cut_after", "must be a non-negative integer")
        reply["cut_after"] = obj["cut_after"]
    for key in ("stall", "delay"):
        if key in obj:
            if not _number(obj[key]):
                raise bad(key, "must be a non-negative number of seconds")
            reply[key] = float(obj[key])
    if "chunk" in obj:
        if not isinstance(obj["chunk"], int) or isinstance(obj["chunk"], bool) or obj["chunk"] < 1:
            raise bad("chunk", "must be a positive number of characters")
        reply["chunk"] = obj["chunk"]
    for key in ("malformed", "hold"):
        if key in obj:
            if not isinstance(obj[key], bool):
                raise bad(key, "must be true or false")
            reply[key] = obj[key]
    if "incomplete" in obj:
        if not isinstance(obj["incomplete"], str) or not obj["incomplete"]:
            raise bad("incomplete", "must be the reason, e.g. max_output_tokens")
        if "fail" in obj:
            raise bad("incomplete", "cannot be combined with 'fail'")
        reply["incomplete"] = obj["incomplete"]
    if "error_format" in obj:
        if obj["error_format"] not in _ERROR_FORMATS:
            raise bad("error_format", f"must be one of {', '.join(_ERROR_FORMATS)}")
        if "status" not in obj:
            raise bad("error_format", "needs 'status'")
        reply["error_format"] = obj["error_format"]
    if "usage" in obj and obj["usage"] is None:
        reply["usage"] = None
    elif "usage" in obj:
        usage = obj["usage"]
        if not isinstance(usage, dict):
            raise bad("usage", "must be a mapping with input_tokens and/or output_tokens, or null")
        for key, value in usage.items():
            if key not in _USAGE_KEYS:
                raise bad(f"usage.{key}", f"is not a known key ({', '.join(_USAGE_KEYS)})")
            if not isinstance(value, int) or not _number(value):
                raise bad(f"usage.{key}", "must be a non-negative integer")
        reply["usage"] = dict(usage)
    return reply


def _text_chunks(text: str) -> list[str]:
    """Split text into deltas of about three words, like a model's token stream (long words split too)."""
    words = re.split(r"(?<=\s)(?=\S)", text)
    pieces: list[str] = []
    for word in words:
        pieces.extend(word[i : i + 16] for i in range(0, len(word), 16))
    return ["".join(pieces[i : i + 3]) for i in range(0, len(pieces), 3)]


def _arg_chunks(arguments: str) -> list[str]:
    """Up to three pieces, so a stream cut can land inside a call's arguments."""
    if len(arguments) < 3:
        return [arguments] if arguments else []
    a, b = len(arguments) // 3, 2 * len(arguments) // 3
    return [arguments[:a], arguments[a:b], arguments[b:]]


def string_values(value: object) -> Iterator[str]:
    """Every string value inside a JSON value (decoded: no escapes)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_values(item)


def contains_text(needle: str, raw: str, strings: list[str]) -> bool:
    """`require`'s rule: in the raw body, or in one decoded string of it (so text with quotes,
    newlines or non-ASCII matches however the client escaped it)."""
    return needle in raw or any(needle in s for s in strings)


def input_problems(body: dict) -> list[str]:
    """What a strict chat-completions bridge would refuse or drop in a request's `input` (see the
    module doc): text-only messages sent as lists of parts, and adjacent messages of one role."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    problems: list[str] = []
    previous: object = None
    for i, item in enumerate(items):
        is_message = isinstance(item, dict) and item.get("type", "message") == "message" and "role" in item
        role = item.get("role") if is_message else None
        if is_message:
            content = item.get("content")
            context_parts = role == "user" and isinstance(content, list) and len(content) > 1
            if (
                isinstance(content, list)
                and not context_parts
                and all(isinstance(part, dict) and part.get("type") in _TEXT_PARTS for part in content)
            ):
                problems.append(
                    f"input[{i}]: a text-only {role} message sent as a list of parts, not a string"
                )
            elif not isinstance(content, str | list):
                problems.append(f"input[{i}]: {role} message content is neither a string nor a list")
            for part in content if isinstance(content, list) else ():
                if isinstance(part, dict) and part.get("type") == "input_image":
                    problems += _image_problems(part, f"input[{i}]", role)
            if role == previous:
                problems.append(f"input[{i}]: two {role} messages in a row (roles must alternate)")
        previous = role
    return problems


def _image_problems(part: dict, where: str, role: object) -> list[str]:
    """What a chat bridge refuses of an `input_image` part: an image outside a user message (chat
    templates take images from the user only), or one without an `image_url` string to pass on as
    its image_url part. (The exact shape Mino sends is the tests' to assert.)"""
    problems = []
    if role != "user":
        problems.append(f"{where}: an input_image in a {role} message")
    if not isinstance(part.get("image_url"), str):
        problems.append(f"{where}: an input_image without an image_url string")
    return problems


def chat_problems(body: dict) -> list[str]:
    """What a strict chat template would refuse in a chat request's `messages` (module doc)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["'messages' must be a non-empty list"]
    problems: list[str] = []
    previous: object = None
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"messages[{i}]: unknown role {role!r}")
            continue
        content = message.get("content")
        if role in ("system", "assistant") and not (
            isinstance(content, str)
            or (role == "assistant" and content is None and message.get("tool_calls"))
        ):
            problems.append(f"messages[{i}]: {role} content must be a string")
        if role == "system" and i:
            problems.append(f"messages[{i}]: a system message after the first")
        if role in ("user", "assistant") and role == previous:
            problems.append(f"messages[{i}]: two {role} messages in a row (roles must alternate)")
        if role == "user" and isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "image_url":
                    url = part.get("image_url")
                    if not (isinstance(url, dict) and isinstance(url.get("url"), str)):
                        problems.append(f"messages[{i}]: an image_url part without image_url.url")
                elif kind != "text" or not isinstance(part.get("text"), str):
                    problems.append(f"messages[{i}]: a user part of type {kind!r}")
        elif role == "user" and not isinstance(content, str):
            problems.append(f"messages[{i}]: user content must be a string or a list of parts")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            open_calls = {str(c.get("id")) for c in calls if isinstance(c, dict)}
        elif role == "tool":
            if message.get("tool_call_id") not in open_calls:
                problems.append(
                    f"messages[{i}]: a tool message for no call of the assistant message before it"
                )
            if not isinstance(content, str):
                problems.append(f"messages[{i}]: tool content must be a string")
        else:
            open_calls = set()
        previous = role
    return problems


def image_urls(request: dict) -> list[str]:
    """The `image_url` of every input_image part of a recorded request (or image_url part of a chat
    request), in order."""
    messages = request.get("messages")
    if isinstance(messages, list):
        return [
            part["image_url"]["url"]
            for message in messages
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict)
            and part.get("type") == "image_url"
            and isinstance(part.get("image_url"), dict)
            and isinstance(part["image_url"].get("url"), str)
        ]
    items = request.get("input")
    return [
        part["image_url"]
        for item in (items if isinstance(items, list) else ())
        if isinstance(item, dict) and isinstance(item.get("content"), list)
        for part in item["content"]
        if isinstance(part, dict)
        and part.get("type") == "input_image"
        and isinstance(part.get("image_url"), str)
    ]


def _error_body(message: str, type_: str = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": None, "code": None}}).encode()


class _Abort(Exception):
    """The stream was cut on purpose (cut_after, server stopping): drop the connection."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: _Owner  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: problems go to `errors`, where tests look

    def do_GET(self) -> None:
        # `mino doctor` asks for the model list, as OpenAI-compatible servers answer it.
        if self.path.split("?", 1)[0].rstrip("/") == "/v1/models":
            model = self.server.model
            with model._lock:
                model.model_lists.append({k.lower(): v for k, v in self.headers.items()})
            listing = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
            self._send_json(200, json.dumps(listing).encode(), {})
            return
        self._refuse(404, f"unexpected GET {self.path}")

    def do_POST(self) -> None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._refuse(411, "request without Content-Length")
            return
        raw = self.rfile.read(int(length))
        read_at = time.perf_counter()
        if len(raw) < int(length):
            # The client went away mid-body (killed, cancelled): no request was made, nothing to answer.
            self.close_connection = True
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/responses", "/v1/chat/completions"):
            self._refuse(404, f"unexpected POST {self.path}")
            return
        chat = path == "/v1/chat/completions"
        model = self.server.model
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if body == {}:  # `mino doctor` asking which API this is: refused as a real server would
            with model._lock:
                model.probes.append(path)
            self._send_json(400, _error_body("you must provide a model parameter"), {})
            return
        with model._lock:
            model.requests.append(
                body if isinstance(body, dict) else {"_raw": raw.decode("utf-8", "replace")}
            )
            model.request_times.append(read_at)
            model.request_headers.append({k.lower(): v for k, v in self.headers.items()})
            model.paths.append(path)
            number = len(model.requests)
            reply = model._queue.popleft() if model._queue else None
        text = raw.decode("utf-8", "replace")
        if reply is None:
            self._refuse(400, f"unexpected request #{number}: {text[:300]}")
            return
        if not isinstance(body, dict):
            self._refuse(400, f"request #{number} is not a JSON object: {text[:300]}")
            return
        if chat:
            problems = chat_problems(body) if model.strict else []
        else:
            problems = model._reasoning_problems(body) + (input_problems(body) if model.strict else [])
        if problems:
            self._refuse(400, f"request #{number}: {'; '.join(problems)}")
            return
        decoded = list(string_values(body))
        for needle in reply.get("require", ()):
            if not contains_text(needle, text, decoded):
                self._refuse(400, f"request #{number} does not contain {needle!r}")
                return
        if "status" in reply:
            self._http_error(reply, body)
            return
        self._stream(reply, body, len(raw), chat)

    # -- answers -------------------------------------------------------------------------------

    def _refuse(self, status: int, problem: str) -> None:
        """A violated script: record it and answer an error the client will show."""
        with self.server.model._lock:
            self.server.model.errors.append(problem)
        self._send_json(status, _error_body(f"scripted model: {problem}"), {})

    def _http_error(self, reply: dict, body: dict) -> None:
        status = reply["status"]
        message = reply.get("error") or HTTPStatus(status).phrase
        type_ = (
            "rate_limit_error"
            if status == 429
            else "server_error"
            if status >= 500
            else "invalid_request_error"
        )
        shape = reply.get("error_format", "json")
        if shape == "sse":
            payload = b"data: " + _error_body(message, type_) + b"\n\ndata: [DONE]\n\n"
            content_type = "text/event-stream"
        elif shape == "text":
            payload, content_type = message.encode(), "text/plain; charset=utf-8"
        else:
            payload, content_type = _error_body(message, type_), "application/json"
        self._send_json(status, payload, reply.get("headers", {}), content_type)

    def _send_json(
        self, status: int, payload: bytes, headers: dict[str, str], content_type: str = "application/json"
    ) -> None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        head = [f"HTTP/1.1 {status} {phrase}", f"Content-Type: {content_type}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        head.append(f"Content-Length: {len(payload)}")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)

    def _stream(self, reply: dict, body: dict, body_bytes: int, chat: bool = False) -> None:
        model = self.server.model
        if chat:
            frames = [_data_frame(chunk) for chunk in model._chat_chunks(reply, body, body_bytes)]
            frames.append(_chunk(b"data: [DONE]\n\n"))
        else:
            frames = [_frame(event) for event in model._events(reply, body, body_bytes)]
        if reply.get("malformed"):
            garbage = b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": \n\n'
            frames.insert(min(2, len(frames)), _chunk(garbage))
        cut = reply.get("cut_after")
        if cut is not None and cut < len(frames):
            frames = frames[:cut]
        else:
            cut = None
        delay, stall = reply.get("delay", 0.0), reply.get("stall", 0.0)
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        end = b"" if cut is not None else b"0\r\n\r\n"
        try:
            if reply.get("hold") and frames:
                self.wfile.write(head + b"".join(frames[:-1]))
                self.wfile.flush()
                model._released.wait()  # release() or stop() sets it
                if model._stopping.is_set():
                    raise _Abort()
                self.wfile.write(frames[-1] + end)
            elif not delay and not stall:
                # One write for the whole stream: the fastest path for tests and benchmarks.
                self.wfile.write(head + b"".join(frames) + end)
            else:
                self.wfile.write(head + (frames[0] if frames else b""))
                for i, frame in enumerate(frames[1:]):
                    pause = stall if i == 0 and stall else delay
                    if i == 0 and stall:
                        model.stalling.set()  # the headers and the first event are out
                    if pause and model._stopping.wait(pause):
                        raise _Abort()
                    self.wfile.write(frame)
                self.wfile.write(end)
            if cut is not None:
                raise _Abort()
        except _Abort:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _frame(event: dict) -> bytes:
    """One SSE event as one HTTP chunk."""
    return _chunk(f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode())


def _data_frame(chunk: dict) -> bytes:
    """One Chat Completions chunk: a bare `data:` line, as chat servers send them."""
    return _chunk(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())


class _Owner:
    """What the handler sees as `self.server`."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model


class ScriptedModel:
    """A loopback Responses-API server answering from a queue of scripted replies (see module doc)."""

    # The request handler; benchmarks subclass it to time-stamp what is sent.
    handler_class: type[http.server.BaseHTTPRequestHandler] = _Handler

    def __init__(self, replies: list[dict] | None = None, *, port: int = 0, strict: bool = True) -> None:
        self.strict = strict  # check every request's input as a strict chat bridge would (module doc)
        self._lock = threading.Lock()
        self._queue: deque[dict] = deque()
        self._added = 0
        self._port = port
        self._calls = 0
        self._responses = 0
        self.base_url = ""
        self.requests: list[dict] = []
        self.request_times: list[float] = []
        self.request_headers: list[dict[str, str]] = []  # lower-cased names, per request
        self.paths: list[str] = []  # each request's path (/v1/responses or /v1/chat/completions)
        self.probes: list[str] = []  # paths POSTed an empty object (`mino doctor`): 400, not a request
        self._issued: dict[str, str] = {}  # reasoning item id -> its JSON as returned
        self.errors: list[str] = []
        self.model_lists: list[dict[str, str]] = []  # the headers of each GET /v1/models
        self.connections = 0  # TCP connections accepted (keep-alive checks)
        self._stopping = threading.Event()
        self._released = threading.Event()  # ends every `hold` (and stop() sets it too)
        self.stalling = threading.Event()  # a `stall` reply has begun its pause (tests wait on it)
        self._sock: socket.socket | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self.add(*(replies or []))

    # -- script ------------------------------------------------------------------------------

    def add(self, *replies: dict) -> None:
        with self._lock:
            parsed = [parse_reply(r, f"reply {self._added + i + 1}") for i, r in enumerate(replies)]
            self._queue.extend(parsed)
            self._added += len(parsed)

    def release(self) -> None:
        """End the wait of every `hold` reply, now and later."""
        self._released.set()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedModel:
        if self._sock is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        sock.listen(64)
        sock.setblocking(False)
        self._sock = sock
        self._wake = socket.socketpair()
        self._stopping.clear()
        self.base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        thread = threading.Thread(target=self._accept_loop, name="scripted-model", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop at once: wakes the accept loop, drops open connections, interrupts stalls and delays."""
        if self._sock is None:
            return
        self._stopping.set()
        self._released.set()
        assert self._wake is not None
        self._wake[1].send(b"x")
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # unblocks a handler waiting for the next request
            except OSError:
                pass
        deadline = time.monotonic() + 2.0
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = [t for t in self._threads if t.is_alive()]
        self._sock.close()
        for s in self._wake:
            s.close()
        self._sock = self._wake = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        assert self._sock is not None and self._wake is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._sock, selectors.EVENT_READ)
            selector.register(self._wake[0], selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is not self._sock:
                        return
                    try:
                        conn, address = self._sock.accept()
                    except OSError:
                        continue
                    conn.setblocking(True)
                    # Small SSE writes must not wait for the peer's delayed ACK (Nagle).
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    with self._lock:
                        self.connections += 1
                        self._conns.add(conn)
                        self._threads = [t for t in self._threads if t.is_alive()]
                    thread = threading.Thread(
                        target=self._serve_connection,
                        args=(conn, address),
                        name="scripted-model-conn",
                        daemon=True,
                    )
                    self._threads.append(thread)
                    thread.start()

    def _serve_connection(self, conn: socket.socket, address: Any) -> None:
        try:
            self.handler_class(conn, address, _Owner(self))  # type: ignore[arg-type]
        except OSError:
            pass  # the client went away (cancel, timeout) or the server is stopping: normal
        except Exception as exc:  # a bug here must show up in the test that hit it
            with self._lock:
                self.errors.append(f"scripted model crashed: {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    # -- events ------------------------------------------------------------------------------

    def _reasoning_problems(self, body: dict) -> list[str]:
        """Reasoning items sent back: each one this server returned, unchanged, with an item after it."""
        found = body.get("input")
        items: list[Any] = found if isinstance(found, list) else []
        problems: list[str] = []
        for i, item in enumerate(items):
            if not (isinstance(item, dict) and item.get("type") == "reasoning"):
                continue
            with self._lock:
                issued = self._issued.get(str(item.get("id")))
            if issued is None or json.dumps(item, sort_keys=True) != issued:
                problems.append(f"input[{i}]: a reasoning item this server did not return as it is")
            after = items[i + 1] if i + 1 < len(items) else None
            if (
                not isinstance(after, dict)
                or after.get("type", "message") == "reasoning"
                or (after.get("type", "message") == "message" and after.get("role") != "assistant")
            ):
                problems.append(f"input[{i}]: a reasoning item without the item that followed it")
        return problems

    def _start(self, reply: dict) -> tuple[int, list[str]]:
        """The response's number and its calls' IDs."""
        with self._lock:
            self._responses += 1
            n = self._responses
            call_ids = []
            for call in reply.get("calls", []):
                self._calls += 1
                call_ids.append(call.get("call_id") or f"call_{self._calls}")
        return n, call_ids

    @staticmethod
    def _counts(reply: dict, body_bytes: int, streamed: int) -> dict[str, int]:
        return {
            "input_tokens": body_bytes // 4,
            "output_tokens": streamed // 4,
            "cached_tokens": 0,
            "reasoning_tokens": 0,
            **(reply.get("usage") or {}),
        }

    def _chat_chunks(self, reply: dict, body: dict, body_bytes: int) -> list[dict]:
        """The reply as Chat Completions chunks (module doc)."""
        n, call_ids = self._start(reply)
        model = body.get("model") if isinstance(body.get("model"), str) else "scripted"
        base = {
            "id": f"chatcmpl-{n:06d}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        chunks: list[dict] = []

        def emit(delta: dict, finish: str | None = None) -> None:
            chunks.append(
                {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            )

        emit({"role": "assistant", "content": ""})
        streamed = 0
        if "reasoning" in reply:
            for piece in _text_chunks(reply["reasoning"]):
                emit({"reasoning_content": piece})
        if "text" in reply:
            text, size = reply["text"], reply.get("chunk")
            for delta in (
                [text[i : i + size] for i in range(0, len(text), size)] if size else _text_chunks(text)
            ):
                emit({"content": delta})
            streamed += len(text)
        for index, (call, call_id) in enumerate(zip(reply.get("calls", []), call_ids, strict=True)):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            emit({"tool_calls": [head]})
            for piece in _arg_chunks(call["arguments"]):
                emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            streamed += len(call["name"]) + len(call["arguments"])
        if "fail" in reply:
            chunks.append({"error": {"message": reply["fail"], "type": "server_error", "code": None}})
            return chunks
        finish = "length" if "incomplete" in reply else "tool_calls" if reply.get("calls") else "stop"
        emit({}, finish)
        options = body.get("stream_options")
        if (
            isinstance(options, dict)
            and options.get("include_usage")
            and not ("usage" in reply and reply["usage"] is None)
        ):
            counts = self._counts(reply, body_bytes, streamed)
            usage = {
                "prompt_tokens": counts["input_tokens"],
                "completion_tokens": counts["output_tokens"],
                "total_tokens": counts["input_tokens"] + counts["output_tokens"],
                "prompt_tokens_details": {"cached_tokens": counts["cached_tokens"]},
                "completion_tokens_details": {"reasoning_tokens": counts["reasoning_tokens"]},
            }
            chunks.append({**base, "choices": [], "usage": usage})
        return chunks

    def _events(self, reply: dict, body: dict, body_bytes: int) -> list[dict]:
        n, call_ids = self._start(reply)
        model = body.get("model") if isinstance(body.get("model"), str) else "scripted"
        response: dict[str, Any] = {
            "id": f"resp_{n:06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "error": None,
            "incomplete_details": None,
            "model": model,
            "output": [],
            "usage": None,
        }
        events: list[dict] = []

        def emit(type_: str, **fields: Any) -> None:
            events.append({"type": type_, "sequence_number": len(events), **fields})

        emit("response.created", response=dict(response))
        emit("response.in_progress", response=dict(response))
        output: list[dict] = []
        streamed = 0
        if "reasoning" in reply:
            summary, index, item_id = reply["reasoning"], len(output), f"rs_{n:06d}_{len(output)}"
            thought: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
            emit("response.output_item.added", output_index=index, item=thought)
            where = {"item_id": item_id, "output_index": index, "summary_index": 0}
            emit("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
            for delta in _text_chunks(summary):
                emit("response.reasoning_summary_text.delta", **where, delta=delta)
            emit("response.reasoning_summary_text.done", **where, text=summary)
            part = {"type": "summary_text", "text": summary}
            emit("response.reasoning_summary_part.done", **where, part=part)
            thought = {**thought, "summary": [part]}
            include = body.get("include")
            if isinstance(include, list) and "reasoning.encrypted_content" in include:
                thought["encrypted_content"] = (
                    f"gAAAAB-scripted-{n:06d}-" + "x" * 64
                )  # opaque, as the real one
            emit("response.output_item.done", output_index=index, item=thought)
            output.append(thought)
            with self._lock:
                self._issued[item_id] = json.dumps(thought, sort_keys=True)
        if "text" in reply:
            text, index, item_id = reply["text"], len(output), f"msg_{n:06d}_{len(output)}"
            item: dict[str, Any] = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            emit("response.output_item.added", output_index=index, item=item)
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            emit("response.content_part.added", **where, part=part)
            size = reply.get("chunk")
            deltas = [text[i : i + size] for i in range(0, len(text), size)] if size else _text_chunks(text)
            for delta in deltas:
                emit("response.output_text.delta", **where, delta=delta, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
            part = {**part, "text": text}
            emit("response.content_part.done", **where, part=part)
            done = "incomplete" if "incomplete" in reply else "completed"
            item = {**item, "status": done, "content": [part]}
            emit("response.output_item.done", output_index=index, item=item)
            output.append(item)
            streamed += len(text)
        for call, call_id in zip(reply.get("calls", []), call_ids, strict=True):
            index, item_id, arguments = len(output), f"fc_{n:06d}_{len(output)}", call["arguments"]
            item = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": call_id,
                "name": call["name"],
            }
            emit("response.output_item.added", output_index=index, item=item)
            for delta in _arg_chunks(arguments):
                emit(
                    "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=delta
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                name=call["name"],
                arguments=arguments,
            )
            item = {**item, "status": "completed", "arguments": arguments}
            emit("response.output_item.done", output_index=index, item=item)
            output.append(item)
            streamed += len(call["name"]) + len(arguments)
        counts = self._counts(reply, body_bytes, streamed)
        usage: dict[str, Any] | None = {
            "input_tokens": counts["input_tokens"],
            "input_tokens_details": {"cached_tokens": counts["cached_tokens"]},
            "output_tokens": counts["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": counts["reasoning_tokens"]},
            "total_tokens": counts["input_tokens"] + counts["output_tokens"],
        }
        if "usage" in reply and reply["usage"] is None:
            usage = None
        if "incomplete" in reply:
            details = {"reason": reply["incomplete"]}
            final = {**response, "status": "incomplete", "incomplete_details": details}
            emit("response.incomplete", response={**final, "output": output, "usage": usage})
        elif "fail" in reply:
            error = {"code": "server_error", "message": reply["fail"]}
            emit(
                "response.failed", response={**response, "status": "failed", "error": error, "output": output}
            )
        else:
            emit(
                "response.completed",
                response={**response, "status": "completed", "output": output, "usage": usage},
            )
        return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mino_server.testing.scripted_model",
        description="Serve scripted Responses-API replies on loopback.",
    )
    parser.add_argument("--replies", required=True, help="YAML file holding a list of replies")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    args = parser.parse_args(argv)
    import yaml  # only the command needs it

    try:
        with open(args.replies, encoding="utf-8") as f:
            data = yaml.safe_load(f)
        if not isinstance(data, list):
            raise ValueError("the file must hold a list of replies")
        model = ScriptedModel(data, port=args.port)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"{args.replies}: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    try:
        model.start()
    except OSError as exc:
        print(f"Cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(model.base_url, flush=True)
    try:
        threading.Event().wait()  # serve until interrupted
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    for error in model.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if model.errors else 0


if __name__ == "__main__":
    sys.exit(main())
