"""memory_view and memory_save: validation, approval display, binding, limits.

See docs/BEHAVIOUR.md, "memory_view and memory_save", "Approval binding" and "Memory index"."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mino_server.core import memory
from mino_server.core.cancel import CancelToken
from mino_server.core.decision import decide
from mino_server.core.tools.base import (
    COMPLETED,
    FAILED,
    INVALID_ARGUMENTS,
    ArgumentError,
    ToolContext,
    ToolFailure,
)
from mino_server.core.tools.memory_tools import MemorySaveTool, MemoryViewTool

PNPM = "这个用户的项目都用 pnpm 安装依赖，从不用 npm 或 yarn。"
WARNING = (
    "Saved memories are shown to the model in every later session and project; approval applies only to "
    "this content."
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    home = tmp_path / "home"
    return ToolContext(workdir=tmp_path / "work", home=home, memory_dir=home / "memory", cancel=CancelToken())


def save_args(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"name": "uses-pnpm", "type": "project", "summary": PNPM, "mode": "create"}
    args.update(over)
    return args


def do_save(ctx: ToolContext, **over: Any) -> str:
    tool = MemorySaveTool()
    args = tool.validate(save_args(**over))
    prepared = tool.prepare(args, ctx)
    return tool.run(args, ctx, prepared).output


# ---- memory_save --------------------------------------------------------------------------------


def test_save_display_fields_and_warning_are_exact(ctx: ToolContext) -> None:
    tool = MemorySaveTool()
    args = tool.validate(save_args())
    prepared = tool.prepare(args, ctx)
    assert prepared.fields == [
        ("Memory", "uses-pnpm"),
        ("Directory", str(ctx.memory_dir)),
        ("Mode", "Create a new memory"),
        ("Type", "project"),
        ("Summary", PNPM),
    ]
    assert prepared.warning == WARNING
    assert prepared.state is None
    assert not ctx.memory_dir.exists()  # nothing written before the run
    result = tool.run(args, ctx, prepared)
    assert (result.status, result.output) == (
        COMPLETED,
        "Saved memory uses-pnpm. Its summary appears in the memory index from the next turn.",
    )
    assert (ctx.memory_dir / "uses-pnpm.md").read_text() == (
        f"---\nname: uses-pnpm\ntype: project\nsummary: {PNPM}\n---\n"
    )
    entries, problems = memory.load_memories(ctx.memory_dir)
    assert [e.summary for e in entries] == [PNPM] and problems == []


def test_save_decision_asks_except_in_bypass(ctx: ToolContext) -> None:
    kind = MemorySaveTool().kind(ctx)
    assert [decide(kind, m) for m in ("manual", "accept-edits", "bypass")] == ["ask", "ask", "show"]
    view = MemoryViewTool().kind(ctx)
    assert [decide(view, m) for m in ("manual", "accept-edits", "bypass")] == ["run", "run", "run"]


def test_create_vs_overwrite(ctx: ToolContext) -> None:
    do_save(ctx, details="step 1\n")
    with pytest.raises(ToolFailure) as exc:
        MemorySaveTool().prepare(MemorySaveTool().validate(save_args()), ctx)
    assert exc.value.status == FAILED and "already exists" in str(exc.value)
    with pytest.raises(ToolFailure) as exc:
        MemorySaveTool().prepare(MemorySaveTool().validate(save_args(name="other", mode="overwrite")), ctx)
    assert exc.value.status == FAILED and "no memory named other" in str(exc.value)

    tool = MemorySaveTool()
    args = tool.validate(save_args(mode="overwrite", summary="now with yarn", type="user"))
    prepared = tool.prepare(args, ctx)
    assert ("Mode", "Replace the existing memory") in prepared.fields
    assert prepared.state == memory.memory_file_state(ctx.memory_dir / "uses-pnpm.md")
    tool.run(args, ctx, prepared)
    (entry,), _ = memory.load_memories(ctx.memory_dir)
    assert (entry.type, entry.summary, entry.details) == ("user", "now with yarn", "")


def test_create_refuses_an_existing_broken_file(ctx: ToolContext) -> None:
    ctx.memory_dir.mkdir(parents=True)
    (ctx.memory_dir / "uses-pnpm.md").write_text("hand-written notes")
    with pytest.raises(ToolFailure, match="already exists"):
        do_save(ctx)
    assert (ctx.memory_dir / "uses-pnpm.md").read_text() == "hand-written notes"


def test_overwrite_refuses_a_symlink_or_fifo(ctx: ToolContext, tmp_path: Path) -> None:
    ctx.memory_dir.mkdir(parents=True)
    (tmp_path / "target.md").write_text("x")
    (ctx.memory_dir / "uses-pnpm.md").symlink_to(tmp_path / "target.md")
    os.mkfifo(ctx.memory_dir / "pipe.md")
    for name in ("uses-pnpm", "pipe"):
        with pytest.raises(ToolFailure, match="not a regular file"):
            do_save(ctx, name=name, mode="overwrite")
    assert (tmp_path / "target.md").read_text() == "x"


def test_hand_edit_between_prepare_and_run_is_left_untouched(ctx: ToolContext) -> None:
    do_save(ctx)
    path = ctx.memory_dir / "uses-pnpm.md"
    tool = MemorySaveTool()
    args = tool.validate(save_args(mode="overwrite", summary="model's version"))
    prepared = tool.prepare(args, ctx)
    hand = memory.render_memory("uses-pnpm", "project", "edited by the user while the question was open")
    path.write_text(hand)
    with pytest.raises(ToolFailure) as exc:
        tool.run(args, ctx, prepared)
    assert str(exc.value) == "Memory changed after approval; nothing was written."
    assert exc.value.status == FAILED
    assert path.read_text() == hand


def test_create_when_file_appears_meanwhile_writes_nothing(ctx: ToolContext) -> None:
    tool = MemorySaveTool()
    args = tool.validate(save_args())
    prepared = tool.prepare(args, ctx)
    ctx.memory_dir.mkdir(parents=True)
    (ctx.memory_dir / "uses-pnpm.md").write_text("mine")
    with pytest.raises(ToolFailure, match=r"^Memory changed after approval; nothing was written\.$"):
        tool.run(args, ctx, prepared)
    assert (ctx.memory_dir / "uses-pnpm.md").read_text() == "mine"


def test_full_index_is_refused_before_asking(ctx: ToolContext) -> None:
    for i in range(200):
        memory.save_memory(ctx.memory_dir, f"m{i:03d}", "user", "s", None, None)
    with pytest.raises(ToolFailure) as exc:
        MemorySaveTool().prepare(MemorySaveTool().validate(save_args()), ctx)
    assert exc.value.status == INVALID_ARGUMENTS
    assert "200 memories" in str(exc.value) and "Merge" in str(exc.value)
    assert not (ctx.memory_dir / "uses-pnpm.md").exists()
    # Replacing one of them keeps the count: allowed.
    do_save(ctx, name="m000", mode="overwrite", summary="t")


def test_index_text_limit_is_refused_before_asking(ctx: ToolContext) -> None:
    filler = "x" * 150
    line = len(b"\n- [user] m000: ") + len(filler)
    i = 0
    while memory.index_bytes(memory.load_memories(ctx.memory_dir)[0]) + line <= memory.MAX_INDEX_BYTES:
        memory.save_memory(ctx.memory_dir, f"m{i:03d}", "user", filler, None, None)
        i += 1
    room = memory.MAX_INDEX_BYTES - memory.index_bytes(memory.load_memories(ctx.memory_dir)[0])
    if room < 30:
        (ctx.memory_dir / f"m{i - 1:03d}.md").unlink()
        room += line
    exact = room - len(b"\n- [project] uses-pnpm: ")  # a summary that fills the index exactly
    with pytest.raises(ToolFailure) as exc:
        do_save(ctx, summary="y" * (exact + 1))
    assert exc.value.status == INVALID_ARGUMENTS
    assert "16 KiB" in str(exc.value) and "shorten" in str(exc.value)
    assert not (ctx.memory_dir / "uses-pnpm.md").exists()
    do_save(ctx, summary="y" * exact)
    entries, problems = memory.load_memories(ctx.memory_dir)
    assert problems == [] and "uses-pnpm" in [e.name for e in entries]
    assert memory.index_bytes(entries) == memory.MAX_INDEX_BYTES
    text = memory.render_index(entries)
    assert text is not None and len(text.encode()) == memory.MAX_INDEX_BYTES


def test_a_folder_already_over_the_limit_refuses_new_saves(ctx: ToolContext) -> None:
    for i in range(201):  # written by hand: one is skipped by the loader
        memory.save_memory(ctx.memory_dir, f"m{i:03d}", "user", "s", None, None)
    with pytest.raises(ToolFailure) as exc:
        do_save(ctx, name="a-first")
    assert exc.value.status == INVALID_ARGUMENTS


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"name": "Uses_PNPM"}, "naming rule"),
        ({"name": "../etc/passwd"}, "naming rule"),
        ({"name": "x" * 65}, "naming rule"),
        ({"name": 3}, "must be a string"),
        ({"type": "secret"}, "not one of user, feedback, project, reference"),
        ({"summary": ""}, "must not be empty"),
        ({"summary": "  "}, "summary is empty"),
        ({"summary": "a\nb"}, "one line"),
        ({"summary": "a\u2028b"}, "one line"),
        ({"summary": "é" * 101}, "202 bytes"),
        ({"details": "x" * (16 * 1024 + 1)}, "16 KiB"),
        ({"details": 5}, "must be a string"),
        ({"mode": "append"}, "create or overwrite"),
        ({"summary": "\ud800"}, "not valid Unicode"),
        ({"extra": 1}, "unknown argument"),
    ],
)
def test_invalid_arguments(over: dict[str, Any], needle: str) -> None:
    with pytest.raises(ArgumentError, match=needle):
        MemorySaveTool().validate(save_args(**over))


def test_missing_arguments() -> None:
    for key in ("name", "type", "summary", "mode"):
        args = save_args()
        del args[key]
        with pytest.raises(ArgumentError, match=key):
            MemorySaveTool().validate(args)


def test_validate_touches_no_disk(ctx: ToolContext) -> None:
    args = MemorySaveTool().validate(save_args(details="", summary="é" * 100))
    assert args.details is None and not ctx.home.exists()


def test_details_preview(ctx: ToolContext) -> None:
    tool = MemorySaveTool()
    short = "line 1\nline 2\n"
    prepared = tool.prepare(tool.validate(save_args(details=short)), ctx)
    assert prepared.fields[-1] == ("Details", short)

    long = "".join(f"line {i}\n" for i in range(1, 31))
    value = dict(tool.prepare(tool.validate(save_args(details=long)), ctx).fields)["Details"]
    assert value.startswith("line 1\n") and "line 20\n" in value and "line 21" not in value
    shown = "".join(f"line {i}\n" for i in range(1, 21))
    assert (
        value
        == shown
        + f"[Preview cut: showing 20 of 30 lines ({len(shown)} bytes of {len(long)} bytes). All of it will be saved.]"
    )

    wide = "中" * 1000  # one line of 3000 bytes: cut at 2 KiB on a character boundary
    value = dict(tool.prepare(tool.validate(save_args(details=wide)), ctx).fields)["Details"]
    head = value.split("\n")[0]
    assert head == "中" * 682 and len(head.encode()) <= 2048
    assert "(2.0 KiB of 2.9 KiB). All of it will be saved.]" in value

    do_save(ctx, details=long)
    assert (ctx.memory_dir / "uses-pnpm.md").read_text().endswith(long)  # the whole text is saved


def test_descriptions_warn_about_secrets_and_scope() -> None:
    d = MemorySaveTool.description
    assert "Never save secrets" in d and "API keys" in d and "tokens" in d and "passwords" in d
    assert "every later session" in d and "only when the user asks" in d
    assert "not instructions" in MemoryViewTool.description
    assert MemorySaveTool.parameters["required"] == ["name", "type", "summary", "mode"]
    assert MemorySaveTool.parameters["additionalProperties"] is False


# ---- memory_view --------------------------------------------------------------------------------


def test_view_returns_the_whole_file(ctx: ToolContext) -> None:
    do_save(ctx, name="release-steps", type="reference", summary="tag after check.sh", details="1. run\n")
    tool = MemoryViewTool()
    name = tool.validate({"name": "release-steps"})
    result = tool.run(name, ctx, tool.prepare(name, ctx))
    assert result.status == COMPLETED
    assert result.output == (ctx.memory_dir / "release-steps.md").read_text()
    assert result.output.endswith("---\n1. run\n")


def test_view_validates_the_name_without_disk() -> None:
    tool = MemoryViewTool()
    for bad in ("../x", "/etc/passwd", "x.md", "A", ""):
        with pytest.raises(ArgumentError):
            tool.validate({"name": bad})
    with pytest.raises(ArgumentError, match="unknown"):
        tool.validate({"name": "a", "path": "/x"})


def test_view_missing_or_unloadable_memory_fails_with_a_reason(ctx: ToolContext) -> None:
    tool = MemoryViewTool()
    with pytest.raises(ToolFailure, match="No memory named nothing") as exc:
        tool.run("nothing", ctx, tool.prepare("nothing", ctx))
    assert exc.value.status == FAILED
    ctx.memory_dir.mkdir(parents=True)
    (ctx.memory_dir / "broken.md").write_text("no front matter")
    with pytest.raises(ToolFailure) as exc:
        tool.run("broken", ctx, tool.prepare("broken", ctx))
    assert str(exc.value) == (
        "Memory broken could not be loaded: memory file needs YAML front matter with string fields name, "
        "type, and summary."
    )
    os.mkfifo(ctx.memory_dir / "pipe.md")
    with pytest.raises(ToolFailure, match="not a regular file"):
        tool.run("pipe", ctx, tool.prepare("pipe", ctx))


def test_memory_dir_that_is_a_file_fails_cleanly(ctx: ToolContext) -> None:
    ctx.home.mkdir(parents=True)
    ctx.memory_dir.write_text("not a folder")
    with pytest.raises(ToolFailure, match="Cannot read .*nothing was saved"):
        do_save(ctx)
    tool = MemoryViewTool()
    with pytest.raises(ToolFailure, match="No memory named uses-pnpm"):
        tool.run("uses-pnpm", ctx, tool.prepare("uses-pnpm", ctx))
