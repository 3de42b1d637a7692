"""Model-server faults and a misbehaving model: one clear line, a consistent log, and the next turn works.

In-process through the core Conversation against the scripted Responses-API server (real HTTP on loopback), plus
one real `mino` with piped stdin going through every fault in a row, for the lines a person sees.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from cli_driver import piped
from faults import Fault, inject
from helpers import Conversation, FixedAnswerServer, RecordingUI, make_conversation, turn
from invariants import log_consistency, read_log, request_consistency
from tally import TALLY, whole

from mino_server.core.cancel import CancelToken
from mino_server.testing.scripted_model import ScriptedModel

LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"


def bash(command: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "bash", "arguments": {"command": command}}
    if call_id is not None:
        call["call_id"] = call_id
    return call


def retry(reply: dict[str, Any], times: int = 4) -> list[dict[str, Any]]:
    return [reply] * times  # the client makes 1 + 3 attempts


# name -> (replies of the failing turn, expected status, text the one line must hold)
FAULTS: dict[str, tuple[list[dict[str, Any]], str, str]] = {
    "429-retry-after": (
        retry({"status": 429, "error": "Rate limit reached", "headers": {"Retry-After": "0"}}),
        "failed",
        "HTTP 429: Rate limit reached (after 4 attempts)",
    ),
    "500": (
        retry({"status": 500, "error": "boom", "headers": {"Retry-After": "0"}}),
        "failed",
        "HTTP 500: boom",
    ),
    "401": ([{"status": 401, "error": "Incorrect API key provided"}], "failed", "HTTP 401"),
    # LiteLLM's proxy answers a streamed request that fails before it starts with SSE lines.
    "500-sse-body": (
        retry(
            {
                "status": 500,
                "error": "Error processing stream start",
                "error_format": "sse",
                "headers": {"Retry-After": "0"},
            }
        ),
        "failed",
        "Model request failed: HTTP 500: Error processing stream start (after 4 attempts)",
    ),
    "502-text-body": (
        retry(
            {
                "status": 502,
                "error": "upstream connect error",
                "error_format": "text",
                "headers": {"Retry-After": "0"},
            }
        ),
        "failed",
        "Model request failed: HTTP 502: upstream connect error (after 4 attempts)",
    ),
    "malformed": ([{"text": LONG, "malformed": True}], "failed", "malformed data"),
    "cut-mid-text": ([{"text": LONG, "cut_after": 6}], "failed", "ended before the response completed"),
    "cut-mid-call": (
        # created, in_progress, item added, first argument delta: the cut lands inside the call.
        [{"calls": [bash("echo cut >> witness.txt")], "cut_after": 4}],
        "failed",
        "ended before the response completed",
    ),
    "response-failed": ([{"text": "partial", "fail": "the model crashed"}], "failed", "the model crashed"),
    "stall": ([{"text": LONG, "stall": 5}], "failed", "timed out after 0.5 s"),
    "cut-after-a-call-ran": (
        [{"calls": [bash("echo ran >> witness.txt")]}, {"text": LONG, "cut_after": 5}],
        "failed",
        "ended before the response completed",
    ),
}


def check_turn(
    conversation: Conversation, model: ScriptedModel, outcome: Any, status: str, line: str
) -> None:
    assert outcome.status == status, outcome
    assert outcome.error and "\n" not in outcome.error and "Traceback" not in outcome.error, outcome.error
    assert line in outcome.error, outcome.error
    assert conversation.log is not None
    view = read_log(conversation.log.path)
    problems = log_consistency(view)
    whole(not problems, f"model fault: {problems}")
    assert view.records[-1]["type"] == "turn_end" and view.records[-1]["status"] == status
    # The next turn works and sends a history where every call has exactly one output.
    model.add({"text": "back to normal"})
    after = turn(conversation, "next")
    assert after.status == "completed" and after.text == "back to normal", after
    for body in model.requests:
        if "input" in body:
            assert request_consistency(body) == []


@pytest.mark.parametrize("name", list(FAULTS))
def test_model_fault_is_one_line_and_the_log_stays_consistent(
    model: ScriptedModel, workdir: Path, mino_home: Path, name: str
) -> None:
    replies, status, line = FAULTS[name]
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text("request_timeout_s: 0.5\n")
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    model.add(*replies)
    outcome = turn(conversation, "go")
    TALLY.model_faults += 1
    check_turn(conversation, model, outcome, status, line)
    ran = (workdir / "witness.txt").read_text().splitlines() if (workdir / "witness.txt").exists() else []
    assert ran == (["ran"] if name == "cut-after-a-call-ran" else [])  # a cut call never runs
    conversation.close()


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"], ids=["NEL", "LS", "PS"])
def test_unicode_line_separators_in_the_stream_are_just_text(
    model: ScriptedModel, workdir: Path, mino_home: Path, char: str
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    args = {"path": "sep.txt", "content": f"a{char}b", "mode": "create"}
    model.add({"calls": [{"name": "write_file", "arguments": args}]}, {"text": f"one{char}two"})
    outcome = turn(conversation, "go")
    TALLY.model_faults += 1
    assert outcome.status == "completed" and outcome.text == f"one{char}two", outcome
    assert (workdir / "sep.txt").read_text() == f"a{char}b"
    conversation.close()


# A Responses-API stream that sends an emoji as two UTF-16 halves in two deltas, as some proxies do.
# Not ScriptedModel: it writes its events as UTF-8 JSON (ensure_ascii=False), which cannot carry a
# lone surrogate; these are sent as \ud83d escapes (json.dumps), as such a proxy does.
HALVES = [
    {"type": "response.created", "response": {}},
    {"type": "response.output_text.delta", "delta": "A\ud83d"},
    {"type": "response.output_text.delta", "delta": "\ude00B\udc00"},
    {
        "type": "response.completed",
        "response": {
            "output": [
                {"type": "message", "content": [{"type": "output_text", "text": "A\U0001f600B\udc00"}]}
            ]
        },
    },
]


def test_utf16_halves_and_lone_surrogates_in_the_stream(workdir: Path, mino_home: Path) -> None:
    server = FixedAnswerServer(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in HALVES))
    try:
        ui = RecordingUI()
        conversation = make_conversation(server.base_url, workdir, ui)
        conversation.open()
        outcome = turn(conversation, "hi")
        conversation.close()
    finally:
        server.close()
    TALLY.model_faults += 1
    assert outcome.status == "completed", outcome
    assert outcome.text == "A\U0001f600B\ufffd"
    assert "".join(e["text"] for e in ui.of_type("text_delta")) == "A\U0001f600B\ufffd"


def test_429_then_success_is_retried_without_showing_text_twice(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui, mode="bypass")
    conversation.open()
    model.add({"status": 429, "headers": {"Retry-After": "0"}}, {"text": "Recovered."})
    outcome = turn(conversation, "hi")
    TALLY.model_faults += 1
    assert outcome.status == "completed" and outcome.text == "Recovered."
    assert "".join(e["text"] for e in ui.of_type("text_delta")) == "Recovered."
    conversation.close()


@pytest.mark.parametrize("where", ["slow-stream", "running-bash"])
def test_cancel_interrupts_and_the_next_turn_works(
    model: ScriptedModel, workdir: Path, mino_home: Path, where: str
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    if where == "slow-stream":
        model.add({"text": LONG, "delay": 0.2})
    else:
        model.add({"calls": [bash("echo started >> witness.txt; sleep 20")]})
    cancel = CancelToken()
    timer = threading.Timer(0.6, cancel.cancel)
    timer.start()
    outcome = conversation.run_turn("go", cancel)
    timer.join()
    TALLY.model_faults += 1
    check_turn(conversation, model, outcome, "interrupted", "Interrupted.")
    conversation.close()


# ---- a model that misbehaves -------------------------------------------------------------------


def test_reused_call_ids_never_borrow_another_calls_result(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    """Some compatible servers number calls per response (call_0 every time) or send none at all."""
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    sid = conversation.session_id
    model.add({"calls": [bash("echo first", "call_0")]}, {"text": "one"})
    assert turn(conversation, "first").status == "completed"
    model.add({"calls": [bash("echo second >> witness.txt", "call_0")]})
    # The second call runs, then its result cannot be saved: the chat stops with the call unanswered.
    with pytest.MonkeyPatch.context() as mp:
        inject(mp, Fault("write", 5, path=".jsonl", record="tool_result"))
        assert turn(conversation, "second").status == "failed"
    conversation.close()
    TALLY.model_faults += 1
    ui = RecordingUI(confirms=[True])
    with ScriptedModel([{"text": "ok"}]) as fresh:
        conversation = make_conversation(fresh.base_url, workdir, ui, mode="bypass")
        conversation.open()
        assert conversation.session_id == sid
        assert turn(conversation, "what happened?").status == "completed"
        conversation.close()
        body = fresh.requests[0]
    asked = len(ui.confirm_messages) == 1 and "echo second" in ui.confirm_messages[0]
    whole(
        asked,
        f"a call without a result was taken as answered by an earlier call with the same call_id: "
        f"{ui.confirm_messages}",
    )
    assert request_consistency(body) == []
    outputs = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 2 and "first" in outputs[0] and "[status: unknown]" in outputs[1], outputs


def test_repeated_call_ids_in_one_response_are_each_answered(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    calls = [bash("echo a", "x"), bash("echo b", "x"), bash("echo c", "y"), bash("echo d", "x")]
    model.add({"calls": calls}, {"text": "done"}, {"text": "again"})
    assert turn(conversation, "go").status == "completed"
    assert turn(conversation, "again").status == "completed"
    TALLY.model_faults += 1
    conversation.close()
    for body in model.requests[1:]:
        assert request_consistency(body) == []
        outputs = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
        assert [o.splitlines()[1] for o in outputs] == ["a", "b", "c", "d"], outputs


@pytest.mark.parametrize(
    "calls",
    [
        [{"name": "no_such_tool", "arguments": {}}],
        [{"name": "bash", "arguments": "{not json"}],
        [{"name": "bash", "arguments": "[1, 2]"}],
        [{"name": "bash", "arguments": {"command": "x" * 200_000, "timeout_s": -1}}],
        [{"name": "read_file", "arguments": {"path": "../../etc/passwd"}}],
        [{"name": "write_file", "arguments": {"path": "/etc/mino-test", "content": "x", "mode": "create"}}],
        [
            {
                "name": "memory_save",
                "arguments": {"name": "../x", "type": "user", "summary": "s", "mode": "create"},
            }
        ],
    ],
    ids=[
        "unknown-tool",
        "bad-json",
        "not-an-object",
        "huge-and-invalid",
        "path-escape",
        "abs-path",
        "mem-path",
    ],
)
def test_hostile_calls_get_a_result_and_the_turn_goes_on(
    model: ScriptedModel, workdir: Path, mino_home: Path, calls: list[dict[str, Any]]
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    model.add({"calls": calls}, {"text": "handled"})
    outcome = turn(conversation, "go")
    TALLY.model_faults += 1
    assert outcome.status == "completed", outcome
    assert conversation.log is not None
    results = [r for r in conversation.log.read_records() if r["type"] == "tool_result"]
    assert [r["status"] for r in results] in (["failed"], ["invalid_arguments"]), results
    assert len(results[0]["output"]) < 1000  # a clear message, not an echo of the input
    assert not log_consistency(read_log(conversation.log.path))
    assert not Path("/etc/mino-test").exists()
    conversation.close()


def test_limits_end_the_turn_with_a_consistent_log(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    model.add({"calls": [bash(f"echo {i}") for i in range(20)]})
    outcome = turn(conversation, "go")
    TALLY.model_faults += 1
    check_turn(conversation, model, outcome, "limit", "limit of 16 tool calls")
    conversation.close()


# ---- the same through a real `mino`: what a person sees ----------------------------------------


def test_cli_shows_one_error_line_per_failed_turn_and_goes_on(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text("request_timeout_s: 0.5\n")
    names = [n for n in FAULTS if n != "cut-after-a-call-ran"]
    lines = []
    for name in names:
        model.add(*FAULTS[name][0], {"text": f"fine after {name}"})
        lines += [f"break {name}", f"recover {name}"]
    proc = piped(mino_env, workdir, "\n".join(lines) + "\n", "--mode", "bypass", timeout=60)
    TALLY.model_faults += len(names)
    assert proc.returncode == 1, proc.stderr  # piped, and turns failed: scripts can tell
    errors = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(errors) == len(names), errors
    for error, name in zip(errors, names, strict=True):
        assert error.startswith("Error: ") and FAULTS[name][2] in error, (name, error)
    for name in names:
        assert f"Assistant> fine after {name}" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not os.path.exists(workdir / "witness.txt")
