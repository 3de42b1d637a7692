"""The model port over Chat Completions (config.yaml `wire_api: chat`): `POST {base_url}/chat/completions`.

For servers that have no `/responses` (llama.cpp's llama-server, llama-cpp-python, most hosted
OpenAI-compatible endpoints). It takes the same Responses-shaped request a turn builds and gives the
same `ModelResponse`, so the session log, recovery, compaction, cut-off answers and errors are the
wire's business only here: the request is translated on the way out (instructions → a system
message, tools → functions, function calls → an assistant message's `tool_calls`, their outputs →
`tool` messages, images → `image_url` parts; reasoning items are Responses-only and left out), and
the streamed chunks are assembled on the way in (tool calls arrive in pieces by `index`; usage in a
last chunk, asked for with `stream_options.include_usage`; `finish_reason: length` is a cut-off
answer). The HTTP exchange, retries, cancel and error lines are ModelClient's.

Imported only when a session is configured for it (start-up stays light).
"""

from __future__ import annotations

import json
from typing import Any

from .model_client import (
    Accumulator,
    FunctionCall,
    Job,
    ModelClient,
    ModelError,
    ModelResponse,
    Thought,
    alternating,
    message_in,
    usage_counts,
    valid_text,
)

__all__ = ["ChatClient", "chat_messages", "chat_tools"]

# finish_reason values that mean the answer was cut short (OpenAI: length, content_filter).
_CUT = ("length", "content_filter")


def _text_of(content: object) -> str:
    """A message's text: string content, or its text parts joined (what chat servers take best)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type") != "input_image"
    )


def _user_content(content: object) -> str | list[dict[str, Any]]:
    """A user message's content: a string stays one; parts become chat `text` / `image_url` parts."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
            image = {"url": part["image_url"]}
            if isinstance(part.get("detail"), str):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        elif isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
    return parts


def chat_messages(instructions: object, items: list[Any]) -> list[dict[str, Any]]:
    """Responses input items as chat messages, in order. Function calls join the assistant message
    before them (or start one); each output is a `tool` message. Reasoning items are dropped."""
    messages: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    for item in alternating(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role == "user":
                messages.append({"role": "user", "content": _user_content(item.get("content"))})
            elif role in ("assistant", "system", "developer"):
                messages.append({"role": role, "content": _text_of(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": str(item.get("call_id") or ""),
                "type": "function",
                "function": {
                    "name": str(item.get("name") or ""),
                    "arguments": str(item.get("arguments") or ""),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(item.get("call_id") or ""),
                    "content": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False),
                }
            )
    return messages


def chat_tools(tools: object) -> list[dict[str, Any]]:
    """Responses function tools (`{type, name, description, parameters}`) as chat functions."""
    out: list[dict[str, Any]] = []
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type") == "function" and isinstance(tool.get("name"), str):
            function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
            out.append({"type": "function", "function": function})
    return out


def _chat_usage(raw: object) -> dict[str, int] | None:
    """Chat usage (prompt/completion tokens and their details) in the Responses names."""
    if not isinstance(raw, dict):
        return None
    return usage_counts(
        {
            "input_tokens": raw.get("prompt_tokens"),
            "output_tokens": raw.get("completion_tokens"),
            "total_tokens": raw.get("total_tokens"),
            "input_tokens_details": raw.get("prompt_tokens_details"),
            "output_tokens_details": raw.get("completion_tokens_details"),
        }
    )


class ChatClient(ModelClient):
    """ModelClient speaking Chat Completions: the same port, another wire."""

    endpoint = "chat/completions"

    def payload(self, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("input")
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(body.get("instructions"), items if isinstance(items, list) else []),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        tools = chat_tools(body.get("tools"))
        if tools:
            payload["tools"] = tools
        if self.reasoning_effort is not None:
            payload["reasoning_effort"] = self.reasoning_effort
        return payload

    def _whole(self, data: dict[str, Any]) -> ModelResponse:
        """A whole chat completion (a server that ignored `stream: true`)."""
        choices = data.get("choices")
        choice = (
            choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        )
        if choice is None:
            raise ModelError(f"Model request failed: {message_in(data) or 'the service sent no choices'}")
        message = _dict(choice.get("message"))
        acc = Accumulator()
        if isinstance(message.get("content"), str):
            acc.text.append(valid_text(message["content"]))
        for i, call in enumerate(message.get("tool_calls") or []):
            if isinstance(call, dict):
                acc.calls[str(i)] = _call_item(call)
        acc.finish = choice.get("finish_reason")
        acc.usage = data.get("usage")
        return self._result(acc)

    def _handle(self, event: dict[str, Any], acc: Accumulator, job: Job) -> ModelResponse | None:
        """Apply one chunk. The answer is made at the end of the stream (`_end`): the usage chunk
        comes after the one with finish_reason."""
        if event.get("type") == "[DONE]":
            acc.done = True
            self._flush_thought(acc, job)
            return None
        if event.get("error") and not event.get("choices"):
            message = message_in(event) or "unknown error"
            raise ModelError(f"Model request failed: {message}")
        if isinstance(event.get("usage"), dict):
            acc.usage = event["usage"]
        choices = event.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = _dict(choice.get("delta"))
            # Reasoning text some servers stream beside the answer (llama.cpp, DeepSeek, vLLM).
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought:
                acc.reasoning_text.append(thought)
            content = delta.get("content")
            if isinstance(content, str) and content:
                self._flush_thought(acc, job)
                self._text(content, acc, job)
            for piece in delta.get("tool_calls") or ():
                if not isinstance(piece, dict):
                    continue
                self._flush_thought(acc, job)
                key = self._call_key(piece, acc)
                call = acc.calls.setdefault(
                    key, {"type": "function_call", "call_id": "", "name": "", "arguments": ""}
                )
                if isinstance(piece.get("id"), str) and piece["id"]:
                    call["call_id"] = piece["id"]
                function = _dict(piece.get("function"))
                if isinstance(function.get("name"), str):
                    call["name"] += function["name"]
                if isinstance(function.get("arguments"), str):
                    call["arguments"] += function["arguments"]
            if isinstance(choice.get("finish_reason"), str):
                acc.finish = choice["finish_reason"]
                self._flush_thought(acc, job)
        return None

    @staticmethod
    def _call_key(piece: dict[str, Any], acc: Accumulator) -> str:
        """Which call a piece continues: its `index`; without one (some servers), a new id starts a
        call and a piece with neither continues the latest."""
        index = piece.get("index")
        if type(index) is int:
            return str(index)
        ident = piece.get("id")
        if isinstance(ident, str) and ident and not any(c["call_id"] == ident for c in acc.calls.values()):
            return f"id:{ident}"
        return next(reversed(acc.calls), "0") if acc.calls else "0"

    @staticmethod
    def _flush_thought(acc: Accumulator, job: Job) -> None:
        """Reasoning text ends where the answer begins: shown as one thought."""
        if acc.reasoning_text:
            text = valid_text("".join(acc.reasoning_text)).strip()
            acc.reasoning_text.clear()
            if text:
                job.events.put(Thought(text))

    @staticmethod
    def _text(delta: str, acc: Accumulator, job: Job) -> None:
        delta, acc.half = acc.half + delta, ""
        if "\ud800" <= delta[-1] <= "\udbff":  # half an emoji: its pair may begin the next delta
            delta, acc.half = delta[:-1], delta[-1]
        delta = valid_text(delta)
        if delta:
            acc.text.append(delta)
            job.events.put(delta)

    def _end(self, acc: Accumulator) -> ModelResponse | None:
        if acc.finish is None and not acc.done:
            return None  # no finish_reason and no [DONE]: the stream was cut
        return self._result(acc)

    @staticmethod
    def _result(acc: Accumulator) -> ModelResponse:
        usage = _chat_usage(acc.usage)
        text = "".join(acc.text)
        if acc.finish in _CUT:  # a cut-off answer: the text as shown, and no (maybe cut) call
            return ModelResponse(text=text, calls=[], usage=usage, incomplete=acc.finish)
        calls = []
        for call in acc.calls.values():
            if call["name"]:
                calls.append(
                    FunctionCall(
                        call_id=valid_text(call["call_id"]),
                        name=valid_text(call["name"]),
                        arguments=valid_text(call["arguments"]),
                    )
                )
        return ModelResponse(text=text, calls=calls, usage=usage)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _call_item(call: dict[str, Any]) -> dict[str, Any]:
    function = _dict(call.get("function"))
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {
        "type": "function_call",
        "call_id": str(call.get("id") or ""),
        "name": str(function.get("name") or ""),
        "arguments": arguments,
    }
