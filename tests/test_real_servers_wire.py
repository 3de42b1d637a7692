"""What real servers behind `base_url` need, on the scripted model every run.

Seen with Mino → LiteLLM's proxy (its chat-completions bridge) → llama-cpp-python: text-only messages
must be strings; a request must never hold two messages of one role in a row (strict chat
templates); an answer cut short at max_output_tokens is kept and replayed; an error body may be SSE
lines; a piped run's exit status says whether every turn completed; usage may be 0s or missing.
The scripted model is strict by default: it refuses a request a strict chat bridge would refuse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_driver import piped
from helpers import Conversation, FixedAnswerServer, RecordingUI, command, make_conversation, turn

from mino_server.core.cancel import CancelToken
from mino_server.core.memory import INDEX_LABEL, render_memory
from mino_server.core.model_client import ModelClient, ModelError, alternating
from mino_server.core.sessions.log import INTERRUPTED_NOTE
from mino_server.testing.scripted_model import ScriptedModel, input_problems, parse_reply

CUT = "max_output_tokens"
NOTE = f"[This answer was cut short by the model service ({CUT}).]"


def roles(body: dict[str, Any]) -> list[str]:
    """The input as a bridge sees it: a message's role, else the item type."""
    return [i.get("role") or i["type"] for i in body["input"]]


def check_every_request(model: ScriptedModel) -> None:
    assert model.errors == []
    for body in model.requests:
        assert input_problems(body) == [], body["input"]
        for item in body["input"]:
            if item.get("type") == "message":
                assert isinstance(item["content"], str), item


def records(conversation: Conversation) -> list[dict[str, Any]]:
    assert conversation.log is not None
    return [json.loads(x) for x in conversation.log.path.read_text().splitlines()]


@pytest.fixture
def conversation(model: ScriptedModel, workdir: Path, mino_home: Path) -> Iterator[Conversation]:
    made = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    made.open()
    try:
        yield made
    finally:
        made.close()


# ---- 1. string content ------------------------------------------------------------------------


def test_text_only_messages_are_sent_as_strings(model: ScriptedModel, conversation: Conversation) -> None:
    model.add({"text": "first answer"}, {"text": "second answer"})
    turn(conversation, "first question")
    turn(conversation, "second question")
    assert model.requests[1]["input"] == [
        {"type": "message", "role": "user", "content": "first question"},
        {"type": "message", "role": "assistant", "content": "first answer"},
        {"type": "message", "role": "user", "content": "second question"},
    ]
    check_every_request(model)


def test_the_strict_scripted_model_refuses_what_a_chat_bridge_refuses(model: ScriptedModel) -> None:
    parts = [{"type": "input_text", "text": "hello"}]
    body = {"input": [{"type": "message", "role": "user", "content": parts}]}
    assert input_problems(body) == [
        "input[0]: a text-only user message sent as a list of parts, not a string"
    ]
    twice = {"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    assert input_problems(twice) == ["input[1]: two user messages in a row (roles must alternate)"]
    fine = {
        "input": [
            {"role": "user", "content": "a"},
            {"type": "message", "role": "assistant", "content": "b"},
            {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
            {"type": "message", "role": "assistant", "content": "done"},
            {"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]},
        ]
    }
    assert input_problems(fine) == []
    # Through the wire: refused with HTTP 400, as llama-cpp-python refused list content.
    model.add({"text": "never sent"})
    client = ModelClient(model.base_url, None, "m", max_retries=0)
    try:
        with pytest.raises(ModelError, match="HTTP 400: .*a text-only user message sent as a list of parts"):
            client.stream({"input": body["input"]}, lambda _d: None, CancelToken())
    finally:
        client.close()
    assert len(model.errors) == 1


# ---- 2. cut-off answers and alternating roles ----------------------------------------------


def test_a_cut_off_answer_is_shown_kept_marked_and_replayed(
    model: ScriptedModel, conversation: Conversation
) -> None:
    model.add({"text": "The partial answer that was", "incomplete": CUT}, {"text": "Go on? Sure."})
    outcome = turn(conversation, "Tell me everything.")
    assert (outcome.status, outcome.text) == ("limit", "The partial answer that was")
    assert outcome.error == f"The model's answer was cut short ({CUT})."
    ui: RecordingUI = conversation.ui  # type: ignore[assignment]
    assert "".join(e["text"] for e in ui.of_type("text_delta")) == "The partial answer that was"
    assert [e["text"] for e in ui.of_type("notice")] == [
        f"Stopped: The model's answer was cut short ({CUT})."
    ]
    saved = [r for r in records(conversation) if r["type"] == "assistant_message"]
    assert [(r["text"], r["incomplete"], r["reason"]) for r in saved] == [
        ("The partial answer that was", True, CUT)
    ]
    assert records(conversation)[-1] == {**records(conversation)[-1], "type": "turn_end", "status": "limit"}
    assert turn(conversation, "Go on.").status == "completed"
    second = model.requests[1]
    assert roles(second) == ["user", "assistant", "user"]
    assert second["input"][1]["content"] == f"The partial answer that was\n\n{NOTE}"
    check_every_request(model)


def test_calls_in_a_cut_off_response_never_run(
    model: ScriptedModel, conversation: Conversation, workdir: Path
) -> None:
    call = {"name": "bash", "arguments": {"command": "echo ran > witness.txt"}}
    model.add({"text": "Running it", "calls": [call], "incomplete": CUT})
    outcome = turn(conversation, "run it")
    assert outcome.status == "limit" and outcome.text == "Running it"
    assert not (workdir / "witness.txt").exists()
    assert not any(r["type"] == "tool_call" for r in records(conversation))


def test_a_cut_off_answer_without_text_saves_nothing_and_the_next_request_alternates(
    model: ScriptedModel, conversation: Conversation
) -> None:
    model.add({"incomplete": CUT}, {"text": "ok"})
    assert turn(conversation, "one").status == "limit"
    assert not any(r["type"] == "assistant_message" for r in records(conversation))
    assert turn(conversation, "two").status == "completed"
    assert model.requests[1]["input"] == [{"type": "message", "role": "user", "content": "one\n\ntwo"}]
    check_every_request(model)


def test_a_failed_turn_merges_with_the_next_and_an_interrupted_one_stands_alone(
    model: ScriptedModel, conversation: Conversation
) -> None:
    """A turn that failed before any answer merges with the next user message (version 2); one the
    person interrupted is followed by the line saying so, and the next message is its own."""
    model.add({"status": 401, "error": "bad key"})
    assert turn(conversation, "failed").status == "failed"
    cancel = CancelToken()
    cancel.cancel()
    assert conversation.run_turn("interrupted", cancel).status == "interrupted"
    model.add({"text": "answer"})
    assert turn(conversation, "third").status == "completed"
    assert model.requests[1]["input"] == [
        {"type": "message", "role": "user", "content": "failed\n\ninterrupted"},
        {"type": "message", "role": "assistant", "content": INTERRUPTED_NOTE},
        {"type": "message", "role": "user", "content": "third"},
    ]
    # The log keeps every record as it was.
    users = [r["text"] for r in records(conversation) if r["type"] == "user_message"]
    assert users == ["failed", "interrupted", "third"]
    check_every_request(model)


def test_the_front_item_meets_an_assistant_message_as_one_message(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    """The memory index is an assistant message: a history that starts with an assistant message
    (here a log written that way) must not make two in a row."""
    memory = mino_home / "memory"
    memory.mkdir(parents=True, mode=0o700)
    (memory / "uses-pnpm.md").write_text(render_memory("uses-pnpm", "project", "Uses pnpm.", ""))
    conversation = make_conversation(model.base_url, workdir, RecordingUI())
    conversation.open()
    try:
        assert conversation.log is not None
        conversation.log.append("assistant_message", "0" * 16, text="An answer from before.")
        model.add({"text": "ok"})
        assert turn(conversation, "hello").status == "completed"
    finally:
        conversation.close()
    body = model.requests[0]
    assert roles(body) == ["assistant", "user"]
    front = body["input"][0]["content"]
    assert front.startswith(INDEX_LABEL) and front.endswith("\n\nAn answer from before.")
    check_every_request(model)


def test_every_way_to_end_a_turn_still_alternates_through_compaction(
    model: ScriptedModel, conversation: Conversation
) -> None:
    """Failed, interrupted, cut short, tool calls with no final text, a limit: then /compact and a
    turn after it. The strict scripted model refuses any request with two same-role messages."""
    bash = {"name": "bash", "arguments": {"command": "echo hi"}}
    model.add({"status": 400, "error": "no"})
    assert turn(conversation, "t1 fails").status == "failed"
    model.add({"text": "cut", "incomplete": CUT})
    assert turn(conversation, "t2 cut short").status == "limit"
    model.add({"calls": [bash]}, {"status": 400, "error": "no"})
    assert turn(conversation, "t3 call, then fails").status == "failed"
    model.add(*[{"calls": [bash]}] * 8)
    assert turn(conversation, "t4 runs out of requests").status == "limit"
    cancel = CancelToken()
    cancel.cancel()
    assert conversation.run_turn("t5 interrupted", cancel).status == "interrupted"
    model.add({"text": "t6 answer"})
    assert turn(conversation, "t6").status == "completed"
    model.add({"status": 400, "error": "no"})
    assert turn(conversation, "t7 fails").status == "failed"
    model.add({"require": "Summarise the conversation", "text": "SUMMARY"})
    assert command(conversation, "/compact")[0].startswith("Compacted")
    model.add({"require": "SUMMARY", "text": "after"})
    assert turn(conversation, "t8").status == "completed"
    check_every_request(model)
    summary_request, last = model.requests[-2], model.requests[-1]
    assert roles(summary_request)[-1] == "user" and "t5 interrupted" in json.dumps(summary_request)
    assert roles(last) == ["assistant", "user", "assistant", "user"]
    assert last["input"][-1]["content"] == "t7 fails\n\nt8"


def test_alternating_merges_only_adjacent_messages_of_one_role() -> None:
    call = {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"}
    items = [
        {"type": "message", "role": "assistant", "content": "index"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "old"}]},
        {"type": "message", "role": "user", "content": "a"},
        {"role": "user", "content": [{"type": "input_image", "image_url": "data:,"}]},
        {"type": "message", "role": "assistant", "content": "calling"},
        call,
        {"type": "message", "role": "assistant", "content": "after the call"},
    ]
    merged = alternating(items)
    assert merged == [
        {"type": "message", "role": "assistant", "content": "index\n\nold"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "a"},
                {"type": "input_image", "image_url": "data:,"},
            ],
        },
        {"type": "message", "role": "assistant", "content": "calling"},
        call,
        {"type": "message", "role": "assistant", "content": "after the call"},
    ]
    assert items[0]["content"] == "index"  # the caller's items are not changed


def test_a_cut_off_summary_is_not_saved(model: ScriptedModel, conversation: Conversation) -> None:
    for i in range(3):
        model.add({"text": f"a{i}"})
        turn(conversation, f"q{i}")
    model.add({"text": "SUMMARY that was", "incomplete": CUT})
    out = command(conversation, "/compact")
    assert out == [f"Compaction failed: the summary was cut short ({CUT}); history is unchanged."]
    assert not any(r["type"] == "compaction" for r in records(conversation))


# ---- 3. errors in any body -------------------------------------------------------------------


def _failure(base_url: str) -> str:
    """The error one request to the service at `base_url` ends with."""
    client = ModelClient(base_url, None, "m", max_retries=0)
    try:
        with pytest.raises(ModelError) as info:
            client.stream({"input": []}, lambda _d: None, CancelToken())
    finally:
        client.close()
    return str(info.value)


@pytest.mark.parametrize("shape", ["sse", "json", "text"])
def test_the_services_message_is_one_clean_line_whatever_the_body(model: ScriptedModel, shape: str) -> None:
    model.add({"status": 500, "error": "Error processing stream start", "error_format": shape})
    assert _failure(model.base_url) == "Model request failed: HTTP 500: Error processing stream start"


SSE = "text/event-stream"


@pytest.mark.parametrize(
    "status,content_type,body,expected",
    [
        (
            500,
            SSE,
            b'event: error\ndata: {"error": {"message": "Error processing\\nstream start"}}\n\ndata: [DONE]\n\n',
            "HTTP 500: Error processing stream start",
        ),
        (502, SSE, b"data: upstream went away\n\n", "HTTP 502: upstream went away"),
        (422, "application/json", b'{"detail": [{"msg": "Input should be a valid string"}]}', "HTTP 422: "),
        (500, "text/plain", b"  Internal\n  error  ", "HTTP 500: Internal error"),
        (503, "text/html", b"<html><body>busy</body></html>", "HTTP 503: Service Unavailable"),
        # A 200 stream whose first event is a bare error object, with no type.
        (
            200,
            SSE,
            b'data: {"error": {"message": "backend crashed"}}\n\n',
            "Model request failed: backend crashed",
        ),
        (200, SSE, b'data: {"type": "error", "error": {"message": "overloaded"}}\n\n', "failed: overloaded"),
        (200, "application/json", b'{"error": {"message": "no such model"}}', "failed: no such model"),
    ],
    ids=["sse-500", "sse-text", "fastapi-422", "text", "html", "typeless-event", "error-event", "json-200"],
)
def test_error_bodies_from_proxies(status: int, content_type: str, body: bytes, expected: str) -> None:
    server = FixedAnswerServer(body, content_type, status)  # what some proxies send
    try:
        message = _failure(server.base_url)
    finally:
        server.close()
    assert expected in message and "\n" not in message and "data:" not in message, message
    if status == 422:
        assert message.endswith("Input should be a valid string")


# ---- 4. exit status of a piped run -----------------------------------------------------------


@pytest.mark.parametrize(
    "replies,code",
    [
        ([{"text": "one"}, {"text": "two"}], 0),
        ([{"status": 500, "error": "Error processing stream start", "error_format": "sse"}] * 4, 1),
        ([{"text": "cut", "incomplete": CUT}, {"text": "two"}], 1),
    ],
    ids=["all-completed", "every-turn-failed", "cut-short"],
)
def test_a_piped_run_exits_non_zero_when_a_turn_did_not_complete(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, replies: list[dict], code: int
) -> None:
    model.add(*replies)
    stdin = "hello\n" if code and len(replies) == 4 else "hello\nagain\n"
    proc = piped(mino_env, workdir, stdin)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    if len(replies) == 4:
        errors = [x for x in proc.stderr.splitlines() if x.strip()]
        expected = "Error: Model request failed: HTTP 500: Error processing stream start (after 4 attempts)"
        assert errors == [expected]
    if code and len(replies) == 2:
        assert (
            "Assistant> cut\n\nStopped: The model's answer was cut short (max_output_tokens)." in proc.stdout
        )


def test_a_piped_line_with_no_session_selected_is_unanswered(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    sessions = mino_home / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    for sid in ("a" * 32, "b" * 32):  # two sessions, none selected: no session at start-up
        (sessions / f"{sid}.jsonl").write_text("")
    proc = piped(mino_env, workdir, "hello\n")
    assert "No session is selected." in proc.stdout
    assert proc.returncode == 1 and model.requests == []


# ---- 5. usage: 0s and absence mean unknown ------------------------------------------------


@pytest.mark.parametrize(
    "usage,reported",
    [
        (None, None),
        ({"input_tokens": 0, "output_tokens": 0}, None),
        ({"input_tokens": 0, "output_tokens": 7}, {"output_tokens": 7, "total_tokens": 7}),
        (
            {"input_tokens": 40, "output_tokens": 2},
            {"input_tokens": 40, "output_tokens": 2, "total_tokens": 42},
        ),
    ],
    ids=["absent", "zeros", "no-input-count", "counted"],
)
def test_usage_zeros_and_absence_are_unknown(model: ScriptedModel, usage: Any, reported: Any) -> None:
    model.add({"text": "hi", "usage": usage})
    client = ModelClient(model.base_url, None, "m")
    try:
        response = client.stream({"input": []}, lambda _d: None, CancelToken())
    finally:
        client.close()
    assert response.usage == reported


@pytest.mark.parametrize("usage", [None, {"input_tokens": 0, "output_tokens": 0}], ids=["absent", "zeros"])
def test_no_calibration_from_unknown_usage(
    model: ScriptedModel, conversation: Conversation, usage: Any
) -> None:
    before = conversation.budget.tokens_per_char
    model.add({"text": "hi", "usage": usage})
    assert turn(conversation, "hello").status == "completed"
    assert conversation.budget.tokens_per_char == before
    model.add({"text": "hi", "usage": {"input_tokens": 1_000_000}})
    assert turn(conversation, "hello").status == "completed"
    assert conversation.budget.tokens_per_char == 1.0  # a real count still calibrates (capped)


def test_a_count_of_only_part_of_the_input_does_not_calibrate(
    model: ScriptedModel, conversation: Conversation
) -> None:
    """LiteLLM's bridge, when the backend counts nothing, reports its own count of the messages alone
    (14 input tokens for a request of about 8,100 characters, in the recorded run): taken as a count of
    the whole request, it would shrink the estimate to a fifth and compaction would come too late."""
    before = conversation.budget.tokens_per_char
    model.add({"text": "hi", "usage": {"input_tokens": 14, "output_tokens": 20}})
    assert turn(conversation, "Hello! Who are you?").status == "completed"
    assert conversation.budget.tokens_per_char == before


def test_parse_reply_checks_the_new_keys() -> None:
    assert parse_reply({"text": "x", "incomplete": CUT})["incomplete"] == CUT
    assert parse_reply({"usage": None}) == {"usage": None}
    assert parse_reply({"status": 500, "error_format": "sse"})["error_format"] == "sse"
    for reply, problem in [
        ({"incomplete": ""}, "'incomplete' must be the reason"),
        ({"incomplete": CUT, "fail": "x"}, "'incomplete' cannot be combined with 'fail'"),
        ({"error_format": "sse"}, "'error_format' needs 'status'"),
        ({"status": 500, "error_format": "xml"}, "'error_format' must be one of json, sse, text"),
        ({"usage": 3}, "'usage' must be a mapping"),
    ]:
        with pytest.raises(ValueError, match=problem):
            parse_reply(reply)


def test_the_incomplete_stream_shape(model: ScriptedModel) -> None:
    import httpx

    model.add({"text": "partial", "incomplete": CUT, "usage": None})
    content = json.dumps({"input": [{"role": "user", "content": "hi"}]}).encode()
    with httpx.stream("POST", f"{model.base_url}/responses", content=content) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    last = events[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["status"] == "incomplete" and last["response"]["incomplete_details"] == {
        "reason": CUT
    }
    assert last["response"]["usage"] is None
    assert last["response"]["output"][0]["status"] == "incomplete"
    assert "response.completed" not in [e["type"] for e in events]


def test_an_empty_answer_is_said_not_silent(model: ScriptedModel, workdir: Path) -> None:
    """A strict chat template behind LiteLLM comes back as a completed, empty answer: say so."""
    from helpers import RecordingUI, make_conversation, turn

    from mino_server.core.turn import EMPTY_ANSWER

    model.add({"text": ""}, {"text": "fine"})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    first = turn(conversation, "hello")
    turn(conversation, "again")
    conversation.close()
    assert first.status == "completed" and first.text == ""
    assert [n["text"] for n in ui.of_type("notice")] == [EMPTY_ANSWER]
