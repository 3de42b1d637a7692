"""Both wires of the one model port against the scripted model over loopback HTTP: Chat Completions
(`wire_api: chat`, core/chat_client.py) and Responses with reasoning items (`reasoning_effort`),
through the client alone and through whole turns, restarts and `mino -p --resume`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_driver import MINO
from helpers import RecordingUI, make_conversation, mino_env, quiet_home, session_records, turn
from image_files import data_url, png

from mino_server.core import images
from mino_server.core.cancel import CancelToken
from mino_server.core.chat_client import ChatClient
from mino_server.core.model_client import ModelClient, ModelError, ModelResponse
from mino_server.testing.scripted_model import ScriptedModel, chat_problems, image_urls

BODY = {
    "instructions": "Be brief.",
    "input": [{"type": "message", "role": "user", "content": "hello"}],
    "tools": [
        {"type": "function", "name": "read_file", "description": "Read.", "parameters": {"type": "object"}}
    ],
    "prompt_cache_key": "abc",
}


def stream(
    client: ModelClient, body: dict[str, Any] | None = None
) -> tuple[ModelResponse, list[str], list[str]]:
    deltas: list[str] = []
    thoughts: list[str] = []
    try:
        return client.stream(body or BODY, deltas.append, CancelToken(), thoughts.append), deltas, thoughts
    finally:
        client.close()


def chat(model: ScriptedModel, **options: Any) -> ChatClient:
    return ChatClient(model.base_url, "sk-test", "m", timeout_s=5.0, backoff_s=0.01, **options)


# ---- Chat Completions: the client ------------------------------------------------------------------


def test_chat_streams_text_and_assembles_tool_calls_from_pieces(model: ScriptedModel) -> None:
    model.add(
        {
            "text": "Reading two files, one after the other, as asked.",
            "calls": [
                {"name": "read_file", "arguments": {"path": "README.md"}, "call_id": "call_a"},
                {"name": "read_file", "arguments": {"path": "docs/ü.md"}},
            ],
            "usage": {"input_tokens": 900, "output_tokens": 40, "cached_tokens": 512, "reasoning_tokens": 7},
        }
    )
    response, deltas, _ = stream(chat(model))
    assert len(deltas) >= 3 and "".join(deltas) == response.text
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in response.calls] == [
        ("call_a", "read_file", {"path": "README.md"}),
        ("call_2", "read_file", {"path": "docs/ü.md"}),
    ]
    assert response.usage == {
        "input_tokens": 900,
        "output_tokens": 40,
        "total_tokens": 940,
        "cached_tokens": 512,
        "reasoning_tokens": 7,
    }
    assert model.paths == ["/v1/chat/completions"] and model.errors == []
    sent = model.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read.", "parameters": {"type": "object"}},
        }
    ]
    # Responses-only fields never reach a chat server; no reasoning setting unless configured.
    assert not {"input", "instructions", "store", "prompt_cache_key", "reasoning_effort"} & set(sent)


def test_chat_length_is_a_cut_off_answer_without_calls(model: ScriptedModel) -> None:
    model.add({"text": "A long answer that", "calls": [{"name": "bash", "arguments": {}}], "incomplete": "x"})
    response, deltas, _ = stream(chat(model))
    assert response.incomplete == "length" and response.calls == []
    assert response.text == "".join(deltas) == "A long answer that"


def test_chat_errors_are_one_line(model: ScriptedModel) -> None:
    model.add({"status": 400, "error": "context too long"}, {"fail": "the backend crashed"})
    for expected in ("HTTP 400: context too long", "the backend crashed"):
        with pytest.raises(ModelError) as info:
            stream(chat(model, max_retries=0))
        assert expected in str(info.value) and "\n" not in str(info.value)
    # A stream cut before finish_reason and [DONE] is not taken as a whole answer.
    model.add({"text": "half of it and more words here", "cut_after": 3})
    with pytest.raises(ModelError, match="ended before the response completed"):
        stream(chat(model, max_retries=0))


def test_chat_reasoning_effort_and_reasoning_text_as_thinking(model: ScriptedModel) -> None:
    model.add({"reasoning": "The user greets; answer briefly.", "text": "Hi."})
    response, deltas, thoughts = stream(chat(model, reasoning_effort="low"))
    assert model.requests[0]["reasoning_effort"] == "low"
    assert thoughts == ["The user greets; answer briefly."]
    assert response.text == "".join(deltas) == "Hi." and response.reasoning == []


def test_a_responses_server_404_names_wire_api_chat(workdir: Path) -> None:
    from helpers import FixedAnswerServer

    server = FixedAnswerServer(b'{"error": {"message": "Not Found"}}', "application/json", 404)
    try:
        client = ModelClient(server.base_url, None, "m", max_retries=0)
        with pytest.raises(ModelError) as info:
            stream(client)
    finally:
        server.close()
    assert "wire_api: chat" in str(info.value)


# ---- Responses: reasoning items ----------------------------------------------------------------------


def test_responses_reasoning_request_and_items(model: ScriptedModel) -> None:
    model.add({"reasoning": "Think first.", "text": "Done.", "usage": {"reasoning_tokens": 30}})
    client = ModelClient(model.base_url, None, "m", reasoning_effort="high")
    response, deltas, thoughts = stream(client)
    sent = model.requests[0]
    assert sent["reasoning"] == {"effort": "high", "summary": "auto"}
    assert sent["include"] == ["reasoning.encrypted_content"] and sent["store"] is False
    assert sent["prompt_cache_key"] == "abc"
    assert thoughts == ["Think first."] and response.text == "".join(deltas) == "Done."
    [item] = response.reasoning
    assert item["type"] == "reasoning" and item["encrypted_content"].startswith("gAAAAB")
    assert response.usage is not None and response.usage["reasoning_tokens"] == 30
    # Without reasoning_effort nothing about reasoning is sent.
    model.add({"text": "ok"})
    stream(ModelClient(model.base_url, None, "m"))
    assert not {"reasoning", "include"} & set(model.requests[1])


# ---- whole turns -------------------------------------------------------------------------------------


def _config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text('sandbox: "off"\n' + text)


def test_reasoning_items_round_trip_across_calls_turns_and_restarts(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    _config(mino_home, "reasoning_effort: medium\n")
    (workdir / "notes.txt").write_text("seven\n")
    model.add(
        {
            "reasoning": "I should read the notes.",
            "calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        },
        {"reasoning": "The notes say seven.", "text": "It says seven."},
        {"text": "Still seven."},
        {"reasoning": "After a restart.", "text": "Seven."},
    )
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    assert turn(conversation, "what do the notes say?").status == "completed"
    thinking = [e["text"] for e in ui.of_type("thinking")]
    assert thinking == ["I should read the notes.", "The notes say seven."]
    answer = "".join(e["text"] for e in ui.of_type("text_delta"))
    assert answer == "It says seven." and "notes" not in answer  # never as the answer
    # The reasoning item went back before its call, in place, in the same turn.
    second = [i.get("type", "message") for i in model.requests[1]["input"]]
    assert second[-3:] == ["reasoning", "function_call", "function_call_output"]
    turn(conversation, "and now?")
    kinds = [i.get("type", "message") for i in model.requests[2]["input"]]
    assert kinds.count("reasoning") == 2
    sid = conversation.session_id
    assert sid is not None
    conversation.close()
    again = make_conversation(model.base_url, workdir)  # a restart: the items come from the log
    again.open()
    assert again.session_id == sid
    turn(again, "once more")
    again.close()
    assert model.errors == []  # every item sent back was one the server returned, unchanged, in place
    assert [i for i in model.requests[3]["input"] if i.get("type") == "reasoning"] == [
        i for i in model.requests[2]["input"] if i.get("type") == "reasoning"
    ]
    records = session_records(mino_home, sid)
    assert [r["type"] for r in records if r["type"] == "reasoning"] == ["reasoning"] * 3
    for request in model.requests:
        assert request["prompt_cache_key"] == sid
        assert request["reasoning"] == {"effort": "medium", "summary": "auto"}


def test_a_chat_session_with_tools_and_an_image_and_a_switch_of_wire(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    (workdir / "a.txt").write_text("alpha\n")
    _config(mino_home, "reasoning_effort: low\n")  # Responses first, with reasoning items in the log
    model.add({"reasoning": "Look at it.", "text": "A picture."})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    picture = images.check(png(seed=3), None, "shot.png", "image[0]")
    assert conversation.run_turn("what is this?", CancelToken(), (), [picture]).status == "completed"
    sid = conversation.session_id
    conversation.close()
    _config(mino_home, "wire_api: chat\n")  # the same session, now on the chat wire
    model.add(
        {"require": "A picture.", "calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"require": "alpha", "text": "It holds alpha.", "chunk": 4},
    )
    ui = RecordingUI()
    again = make_conversation(model.base_url, workdir, ui)
    again.open()
    assert again.session_id == sid
    assert turn(again, "read a.txt").status == "completed"
    again.close()
    assert model.errors == [] and model.paths[1:] == ["/v1/chat/completions"] * 2
    messages = model.requests[2]["messages"]
    assert chat_problems(model.requests[2]) == []
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert image_urls(model.requests[2]) == [data_url(png(seed=3))]
    assert messages[4]["tool_calls"][0]["function"]["name"] == "read_file"
    assert (
        messages[5]["tool_call_id"] == messages[4]["tool_calls"][0]["id"]
        and "alpha" in messages[5]["content"]
    )
    assert [e["text"] for e in ui.of_type("assistant_message")] == ["It holds alpha."]
    # The log is the same on both wires: no record says which one answered.
    types = [r["type"] for r in session_records(mino_home, str(sid))]
    assert types.count("tool_call") == 1 and types.count("reasoning") == 1


def test_config_rejects_unknown_wire_and_effort(mino_home: Path, workdir: Path) -> None:
    from mino_server.core.config import load_config
    from mino_server.core.errors import ConfigError

    for text, word in (
        ("wire_api: grpc\n", "'wire_api' must be one of responses, chat"),
        ("reasoning_effort: max\n", "'reasoning_effort'"),
    ):
        _config(mino_home, text)
        with pytest.raises(ConfigError, match=word):
            load_config()
    _config(mino_home, "")
    with pytest.raises(ConfigError, match="--reasoning-effort must be one of"):
        load_config(reasoning_effort="huge")


# ---- the prefix stays byte-stable --------------------------------------------------------------------


def _dumped(items: list[Any]) -> list[str]:
    return [json.dumps(i, ensure_ascii=False) for i in items]


def prefix_report(requests: list[dict[str, Any]]) -> tuple[int, int, list[int]]:
    """(consecutive pairs, pairs where the next request extends the previous one, bytes per request)."""
    pairs = extended = 0
    for before, after in zip(requests, requests[1:], strict=False):
        pairs += 1
        a, b = _dumped(before["input"]), _dumped(after["input"])
        same = before["instructions"] == after["instructions"] and json.dumps(before["tools"]) == json.dumps(
            after["tools"]
        )
        extended += same and b[: len(a)] == a
    return pairs, extended, [len(json.dumps(r, ensure_ascii=False).encode()) for r in requests]


def test_consecutive_requests_extend_the_previous_one(
    model: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = quiet_home(tmp_path)
    with (home / "config.yaml").open("a") as f:
        f.write("reasoning_effort: low\nmode: bypass\n")
    (home / "memory").mkdir()
    (home / "memory" / "uses-pnpm.md").write_text(
        "---\nname: uses-pnpm\ntype: project\nsummary: the project uses pnpm\n---\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    # The first turn carries an image (a front end's), the rest are `mino -p --resume` runs.
    model.add({"reasoning": "An image.", "text": "A tiny PNG."})
    env = mino_env(home, model.base_url)
    monkeypatch.setenv("MINO_HOME", str(home))
    conversation = make_conversation(model.base_url, work)
    conversation.open()
    conversation.run_turn("look", CancelToken(), (), [images.check(png(seed=5), None, "s.png", "image[0]")])
    sid = str(conversation.session_id)
    conversation.close()

    def run_p(prompt: str, *more: str) -> str:
        """One `mino -p` turn of the session; its answer."""
        done = subprocess.run(
            [*MINO, "-p", prompt, "--resume", sid, *more],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    for n in range(4):
        model.add(
            {
                "reasoning": f"Read it ({n}).",
                "calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
            },
            {"reasoning": f"Answer ({n}).", "text": f"alpha {n}"},
        )
        assert run_p(f"turn {n}") == f"alpha {n}\n"  # the thinking is never the answer
    assert model.errors == []
    pairs, extended, sizes = prefix_report(model.requests)
    assert (pairs, extended) == (8, 8), sizes
    assert all(r["prompt_cache_key"] == sid for r in model.requests)
    assert "uses-pnpm" in json.dumps(model.requests[-1]["input"][0])  # the memory index leads the input
    assert sum(1 for i in model.requests[-1]["input"] if i.get("type") == "reasoning") == 8  # 1 + 3 * 2 + 1
    # Plan mode changes the instructions and the tools (exit_plan_mode): the request after the switch
    # starts a new prefix, and the plan-mode requests after it extend each other again.
    before = len(model.requests)
    for n in range(2):
        model.add(
            {"reasoning": f"Plan ({n}).", "calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"reasoning": f"Planned ({n}).", "text": f"plan {n}"},
        )
        run_p(f"plan {n}", "--mode", "plan")
    assert model.errors == []
    plan = model.requests[before:]
    assert plan[0]["instructions"] != model.requests[before - 1]["instructions"]
    assert prefix_report(plan)[:2] == (3, 3)


# ---- thinking in the terminal and in mino -p ---------------------------------------------------------

HOSTILE = "Plan \x1b[31mred\x1b]0;pwned\x07 done\nsecond line"


def test_terminal_shows_thinking_dim_and_sanitised(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    import pexpect
    from cli_driver import spawn

    _config(mino_home, "reasoning_effort: high\n")
    model.add({"reasoning": HOSTILE, "text": "The answer."})
    child = spawn(mino_env, workdir)
    child.expect_exact("Use /mode to change it.")
    child.expect_exact("You> ")
    child.sendline("think")
    child.expect_exact("The answer.")
    shown = child.before or ""
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    assert "\x1b[2mThinking: Plan " in shown and "Thinking: second line" in shown
    assert "\x1b[31m" not in shown and "\x1b]0;" not in shown and "\x07" not in shown
    assert shown.index("Thinking:") < shown.index("Assistant>")


def test_print_streams_thinking_apart_from_the_answer(model: ScriptedModel, tmp_path: Path) -> None:
    home = quiet_home(tmp_path)
    with (home / "config.yaml").open("a") as f:
        f.write("reasoning_effort: minimal\n")
    work = tmp_path / "work"
    work.mkdir()
    env = mino_env(home, model.base_url)
    model.add(
        {"reasoning": "Short.", "text": "Hi.", "usage": {"cached_tokens": 64, "reasoning_tokens": 5}},
        {"reasoning": "Short.", "text": "Hi."},
    )
    run = [*MINO, "-p", "hello", "--output-format"]
    done = subprocess.run(
        [*run, "stream-json"], env=env, cwd=work, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    thinking = [e for e in events if e.get("type") == "thinking"]
    assert [e["text"] for e in thinking] == ["Short."]
    usage = next(e for e in events if e.get("type") == "usage")
    assert usage["cachedTokens"] == 64 and usage["reasoningTokens"] == 5
    done = subprocess.run([*run, "json"], env=env, cwd=work, capture_output=True, text=True, timeout=60)
    result = json.loads(done.stdout)
    assert result["text"] == "Hi." and "Short." not in done.stdout
    assert model.requests[1]["reasoning"] == {"effort": "minimal", "summary": "auto"}


def test_reasoning_effort_flag(model: ScriptedModel, tmp_path: Path) -> None:
    home = quiet_home(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    env = mino_env(home, model.base_url)
    model.add({"text": "ok"})
    done = subprocess.run(
        [*MINO, "-p", "hi", "--reasoning-effort", "high"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert model.requests[0]["reasoning"] == {"effort": "high", "summary": "auto"}
    for args, line in (
        (
            ["-p", "hi", "--reasoning-effort=huge"],
            "--reasoning-effort must be one of minimal, low, medium, high",
        ),
        (["--stdio", "--reasoning-effort", "low"], "--reasoning-effort is chosen in the editor's picker"),
    ):
        done = subprocess.run([*MINO, *args], env=env, cwd=work, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and line in done.stderr and "Traceback" not in done.stderr


def _sse(*chunks: dict[str, Any], done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _served(body: bytes, content_type: str = "text/event-stream") -> ModelResponse:
    from helpers import FixedAnswerServer

    server = FixedAnswerServer(body, content_type)
    try:
        return stream(ChatClient(server.base_url, None, "m", max_retries=0))[0]
    finally:
        server.close()


def test_chat_servers_quirks_tool_calls_without_index_and_a_whole_answer() -> None:
    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

    # Pieces without `index` (some servers): a new id starts a call, a piece without one continues it.
    response = _served(
        _sse(
            delta({"tool_calls": [{"id": "a", "function": {"name": "read_file", "arguments": '{"pa'}}]}),
            delta({"tool_calls": [{"function": {"arguments": 'th": "x"}'}}]}),
            delta({"tool_calls": [{"id": "b", "function": {"name": "bash", "arguments": "{}"}}]}),
            delta({}, "stop"),  # llama.cpp may say stop after calls: they still run
        )
    )
    assert [(c.call_id, c.name, c.arguments) for c in response.calls] == [
        ("a", "read_file", '{"path": "x"}'),
        ("b", "bash", "{}"),
    ]
    # A server that ignored stream: true.
    whole = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Whole.", "tool_calls": None},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    response = _served(json.dumps(whole).encode(), "application/json")
    assert (response.text, response.incomplete, response.usage) == (
        "Whole.",
        "length",
        {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    )
    # No finish_reason and no [DONE]: cut, not a whole answer.
    with pytest.raises(ModelError, match="ended before the response completed"):
        _served(_sse(delta({"content": "half"}), done=False))


def test_reasoning_items_without_encrypted_content_are_not_kept(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    """Without reasoning_effort nothing asks for the encrypted reasoning: a reasoning model's items
    then cannot be sent back (store: false keeps nothing), so none is logged or sent."""
    _config(mino_home, "")
    model.add({"reasoning": "Hidden.", "text": "One."}, {"text": "Two."})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    turn(conversation, "first")
    turn(conversation, "second")
    sid = str(conversation.session_id)
    conversation.close()
    assert model.errors == [] and "include" not in model.requests[0]
    assert not [i for i in model.requests[1]["input"] if i.get("type") == "reasoning"]
    assert "reasoning" not in [r["type"] for r in session_records(mino_home, sid)]
    assert [e["text"] for e in ui.of_type("thinking")] == ["Hidden."]  # a summary is still shown
