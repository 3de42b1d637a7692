"""The turn loop through the real tools, memory and compaction, against the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import Conversation, RecordingUI, command, make_conversation, texts, turn

from mino_server.core.cancel import CancelToken
from mino_server.core.contract import ApprovalRequest
from mino_server.core.memory import INDEX_LABEL, render_memory
from mino_server.testing.scripted_model import ScriptedModel


def call(tool: str, /, **arguments: Any) -> dict:
    return {"calls": [{"name": tool, "arguments": arguments}]}


def log_records(conversation: Conversation) -> list[dict]:
    assert conversation.log is not None
    return [json.loads(x) for x in conversation.log.path.read_text().splitlines()]


def seed_memory(home: Path, name: str, type_: str, summary: str, details: str = "") -> Path:
    d = home / "memory"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = d / f"{name}.md"
    path.write_text(render_memory(name, type_, summary, details))
    return path


# ---- limits and arguments ---------------------------------------------------------------------
def test_request_limit_of_eight_per_turn(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "f.txt").write_text("x\n")
    model.add(*[call("read_file", path="f.txt") for _ in range(8)])
    conversation = agent_factory()
    outcome = turn(conversation, "loop forever")
    assert outcome.status == "limit" and "8 model requests" in (outcome.error or "")
    assert len(model.requests) == 8 and model.errors == []
    assert (
        log_records(conversation)[-1]["type"] == "turn_end"
        and log_records(conversation)[-1]["status"] == "limit"
    )


def test_tool_call_limit_of_sixteen_per_turn(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "f.txt").write_text("x\n")
    many = {"calls": [{"name": "read_file", "arguments": {"path": "f.txt"}} for _ in range(10)]}
    model.add(many, many)
    conversation = agent_factory()
    outcome = turn(conversation, "read a lot")
    assert outcome.status == "limit" and "16 tool calls" in (outcome.error or "")
    records = log_records(conversation)
    calls = [r for r in records if r["type"] == "tool_call"]
    results = [r for r in records if r["type"] == "tool_result"]
    assert len(calls) == len(results) == 16
    assert len(model.requests) == 2


def test_invalid_arguments_are_not_asked(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    model.add(
        {"calls": [{"name": "write_file", "arguments": "{not json"}]},
        call("write_file", path="a.txt", content="x", mode="sideways"),
        call("no_such_tool", x=1),
        {"text": "ok"},
    )
    ui = RecordingUI(approvals=[True, True, True])
    conversation = agent_factory(ui)
    turn(conversation, "go")
    statuses = [r["status"] for r in log_records(conversation) if r["type"] == "tool_result"]
    assert statuses == ["invalid_arguments", "invalid_arguments", "failed"]
    assert ui.asked == []
    assert not (workdir / "a.txt").exists()


def test_every_call_in_input_has_exactly_one_output(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    (workdir / "f.txt").write_text("hello\n")
    model.add(
        {"text": "Reading.", "calls": [{"name": "read_file", "arguments": {"path": "f.txt"}}]},
        {"text": "It says hello."},
        {"text": "again"},
    )
    conversation = agent_factory()
    turn(conversation, "read f")
    turn(conversation, "and?")
    items = model.requests[2]["input"]
    call_ids = [i["call_id"] for i in items if i.get("type") == "function_call"]
    out_ids = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert call_ids == out_ids and len(call_ids) == 1
    # no two assistant items in a row anywhere in the input
    kinds = [(i.get("type"), i.get("role")) for i in items]
    assert all(not (a == b == ("message", "assistant")) for a, b in zip(kinds, kinds[1:], strict=False))


# ---- the decision through the loop -----------------------------------------------------------
@pytest.mark.parametrize(
    "mode, tool, asked",
    [
        ("manual", "write_file", True),
        ("accept-edits", "write_file", False),
        ("bypass", "write_file", False),
        ("manual", "memory_save", True),
        ("accept-edits", "memory_save", True),
        ("bypass", "memory_save", False),
    ],
)
def test_decision_rows_through_the_loop(
    model: ScriptedModel, agent_factory, tool: str, mode: str, asked: bool
) -> None:
    if tool == "write_file":
        model.add(call("write_file", path="n.txt", content="hi\n", mode="create"), {"text": "ok"})
    else:
        model.add(
            call("memory_save", name="uses-pnpm", type="project", summary="Uses pnpm.", mode="create"),
            {"text": "ok"},
        )
    ui = RecordingUI(approvals=[True])
    conversation = agent_factory(ui, mode=mode)
    turn(conversation, "do it")
    assert bool(ui.asked) is asked
    decision = ui.of_type("tool_call")[0]["decision"]
    assert decision == ("ask" if asked else "show")
    assert [r["status"] for r in log_records(conversation) if r["type"] == "tool_result"] == ["completed"]


def test_file_changed_after_approval_is_not_written(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    target = workdir / "notes.txt"
    target.write_text("original\n")

    class EditingUI(RecordingUI):
        def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
            target.write_text("edited by hand\n")  # the user changes the file while the question is open
            return True

    model.add(call("write_file", path="notes.txt", content="model text\n", mode="overwrite"), {"text": "ok"})
    conversation = agent_factory(EditingUI())
    turn(conversation, "overwrite notes")
    result = [r for r in log_records(conversation) if r["type"] == "tool_result"][0]
    assert result["status"] == "failed" and "changed after approval" in result["output"]
    assert target.read_text() == "edited by hand\n"


# ---- memory (docs/BEHAVIOUR.md, "User memory") -----------------------------------------------
def first_item_text(request: dict) -> str | None:
    item = request["input"][0]
    if item.get("role") == "assistant":
        return item["content"]
    return None


def test_empty_memory_folder_first_item_is_the_users_message(model: ScriptedModel, agent_factory) -> None:
    model.add({"text": "hi"})
    conversation = agent_factory()
    turn(conversation, "hello")
    assert model.requests[0]["input"][0]["role"] == "user"
    assert len(model.requests[0]["input"]) == 1


def test_index_rebuilt_each_turn_and_never_stored(
    model: ScriptedModel, agent_factory, mino_home: Path
) -> None:
    seed_memory(mino_home, "old-fact", "user", "The user likes tea.")
    model.add(
        call("memory_save", name="uses-pnpm", type="project", summary="Uses pnpm, never npm.", mode="create"),
        {"text": "Saved."},
        {"text": "pnpm install"},
    )
    conversation = agent_factory(RecordingUI(approvals=[True]))
    turn(conversation, "Remember that I use pnpm.")
    first, second = first_item_text(model.requests[0]), first_item_text(model.requests[1])
    assert first == second  # both requests of the turn start with the same (old) index
    assert first is not None and first.startswith(INDEX_LABEL)
    assert "- [user] old-fact: The user likes tea." in first and "uses-pnpm" not in first
    assert (
        "Saved memory uses-pnpm. Its summary appears in the memory index from the next turn."
        in json.dumps(model.requests[1], ensure_ascii=False)
    )
    turn(conversation, "How do I install deps?")
    third = first_item_text(model.requests[2])
    assert third is not None and "- [project] uses-pnpm: Uses pnpm, never npm." in third
    assert INDEX_LABEL not in conversation.log.path.read_text()  # type: ignore[union-attr]
    assert (mino_home / "memory" / "uses-pnpm.md").stat().st_mode & 0o777 == 0o600


def test_memory_view_does_not_ask(model: ScriptedModel, agent_factory, mino_home: Path) -> None:
    seed_memory(mino_home, "release-steps", "reference", "Run check.sh first.", "1. bash scripts/check.sh\n")
    model.add(call("memory_view", name="release-steps"), {"text": "ok"})
    ui = RecordingUI()
    conversation = agent_factory(ui, mode="manual")
    turn(conversation, "how do I release?")
    assert ui.asked == []
    assert "(+details)" in (first_item_text(model.requests[0]) or "")
    assert "bash scripts/check.sh" in model.requests[1]["input"][-1]["output"]


def test_broken_memory_reported_once_over_two_turns(
    model: ScriptedModel, agent_factory, mino_home: Path
) -> None:
    seed_memory(mino_home, "good", "user", "Good one.")
    (mino_home / "memory" / "broken.md").write_text("no front matter here\n")
    model.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    ui = RecordingUI()
    conversation = agent_factory(ui)
    turn(conversation, "one")
    turn(conversation, "two")
    assert len(ui.problems) == 1
    assert ui.problems[0] == [
        ("broken.md", "memory file needs YAML front matter with string fields name, type, and summary")
    ]
    assert "- [user] good: Good one." in (first_item_text(model.requests[1]) or "")
    command(conversation, "/new")  # a session switch shows it again at the next turn
    turn(conversation, "three")
    assert len(ui.problems) == 2


def test_memory_changed_after_approval(model: ScriptedModel, agent_factory, mino_home: Path) -> None:
    path = seed_memory(mino_home, "uses-pnpm", "project", "Uses pnpm.")

    class EditingUI(RecordingUI):
        def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
            path.write_text(render_memory("uses-pnpm", "project", "Edited by hand."))
            return True

    model.add(
        call("memory_save", name="uses-pnpm", type="project", summary="Uses yarn.", mode="overwrite"),
        {"text": "ok"},
    )
    conversation = agent_factory(EditingUI())
    turn(conversation, "change it")
    result = [r for r in log_records(conversation) if r["type"] == "tool_result"][0]
    assert result == {
        **result,
        "status": "failed",
        "output": "Memory changed after approval; nothing was written.",
    }
    assert "Edited by hand." in path.read_text()


# ---- compaction and skills (docs/BEHAVIOUR.md, "Compaction", "Skills") -----------------------
def three_turns(model: ScriptedModel, conversation: Conversation) -> None:
    for i in range(3):
        model.add({"text": f"answer {i}"})
        turn(conversation, f"question {i}")


def test_compact_request_shape_and_next_front_item(
    model: ScriptedModel, agent_factory, mino_home: Path
) -> None:
    seed_memory(mino_home, "uses-pnpm", "project", "Uses pnpm.")
    conversation = agent_factory()
    three_turns(model, conversation)
    model.add({"text": "The user asked question 0 and got answer 0."})
    assert command(conversation, "/compact") == [
        "Compacted the older history into a summary; the two most recent turns are kept as they are."
    ]
    summary_request = model.requests[3]
    assert "tools" not in summary_request
    assert INDEX_LABEL not in json.dumps(summary_request)
    assert "question 0" in json.dumps(summary_request) and "question 1" not in json.dumps(summary_request)
    model.add({"text": "next"})
    turn(conversation, "question 3")
    items = model.requests[4]["input"]
    front = items[0]
    assert front["role"] == "assistant"
    text = front["content"]
    assert text.startswith(INDEX_LABEL) and text.index("uses-pnpm") < text.index("The user asked question 0")
    assert items[1]["role"] == "user"  # one assistant item, then the kept turns verbatim
    assert texts(model.requests[4])[1:] == ["question 1", "answer 1", "question 2", "answer 2", "question 3"]


def test_nothing_to_compact(model: ScriptedModel, agent_factory) -> None:
    conversation = agent_factory()
    assert command(conversation, "/compact") == ["Nothing to compact."]
    model.add({"text": "a"}, {"text": "b"})
    turn(conversation, "one")
    turn(conversation, "two")
    assert command(conversation, "/compact") == ["Nothing to compact."]
    assert len(model.requests) == 2


def test_failed_summary_request_leaves_history(model: ScriptedModel, agent_factory) -> None:
    conversation = agent_factory()
    three_turns(model, conversation)
    model.add({"status": 400, "error": "context too long"})
    out = command(conversation, "/compact")
    assert out[0].startswith("Compaction failed: ") and out[0].endswith("history is unchanged.")
    assert not any(r["type"] == "compaction" for r in log_records(conversation))
    model.add({"text": "ok"})
    turn(conversation, "q")
    assert texts(model.requests[-1])[0] == "question 0"


def test_automatic_compaction_with_a_small_window(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text("context_window: 1000\n")
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    try:
        for i in range(3):
            model.add({"text": f"answer {i} " + "x" * 800})
            turn(conversation, f"question {i} " + "y" * 800)
        model.add({"text": "SUMMARY-OF-OLD"}, {"text": "fresh answer"})
        outcome = turn(conversation, "question 3")
        assert outcome.status == "completed"
    finally:
        conversation.close()
    summary_req, follow = model.requests[-2], model.requests[-1]
    assert "tools" not in summary_req and "question 0" in json.dumps(summary_req)
    assert "SUMMARY-OF-OLD" in follow["input"][0]["content"]
    joined = json.dumps(follow)
    assert (
        "question 0" not in joined
        and "question 1" in joined
        and "question 2" in joined
        and "question 3" in joined
    )


def write_skill(workdir: Path, name: str, description: str, body: str = "Do the thing.\n") -> None:
    d = workdir / ".mino" / "skills" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")


def test_skills_catalogue_same_after_resume_even_when_folder_changed(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    write_skill(workdir, "release", "How to cut a release.", "Run make release.\n")
    model.add({"text": "a"}, call("skill_view", name="release"), {"text": "b"})
    conversation = agent_factory(RecordingUI(confirms=[True]))  # yes to the project's skills
    sid = conversation.session_id
    turn(conversation, "hi")
    turn(conversation, "how to release?")
    assert "release: How to cut a release." in model.requests[0]["instructions"]
    assert "Run make release." in model.requests[2]["input"][-1]["output"]
    write_skill(workdir, "deploy", "How to deploy.")
    command(conversation, "/new")
    command(conversation, f"/resume {sid}")
    model.add({"text": "c"})
    turn(conversation, "again")
    assert "deploy" not in model.requests[3]["instructions"]
    assert model.requests[3]["instructions"] == model.requests[0]["instructions"]


def test_bash_does_not_see_the_model_api_key(
    model: ScriptedModel, agent_factory, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINO_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("UNRELATED_VAR", "visible")
    model.add(
        call("bash", command='echo "key=[$MINO_API_KEY][$OPENAI_API_KEY] $UNRELATED_VAR"'), {"text": "ok"}
    )
    conversation = agent_factory(mode="bypass")
    assert conversation.config.api_key == "test-key"
    turn(conversation, "print the key")
    output = [r for r in log_records(conversation) if r["type"] == "tool_result"][0]["output"]
    assert "key=[][] visible" in output and "test-key" not in output


def test_error_results_quoting_huge_arguments_are_cut(model: ScriptedModel, agent_factory) -> None:
    model.add(call("read_file", path="x" * 300_000), {"text": "ok"})
    conversation = agent_factory()
    turn(conversation, "read it")
    result = [r for r in log_records(conversation) if r["type"] == "tool_result"][0]
    assert result["status"] == "failed"
    assert len(result["output"]) < 2100 and result["output"].endswith("more characters cut]")
