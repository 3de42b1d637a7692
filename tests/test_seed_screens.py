"""The seed chapters' screens, reproduced exactly (docs/BEHAVIOUR.md, "Departures from the seed
chapters", lists every place Mino deliberately shows something else, and why).

Chapter 13's memory_save confirmation: `[Tool: memory_save]`, Memory, Directory, Mode, Type, Summary
(then Details, when there are any), the warning, `Approve this operation? [y/N]`, in that order,
through a real pty; the editor protocol's `mino/approve` carries the same fields in the same order
and the same question.
"""

from __future__ import annotations

from pathlib import Path

import pexpect
from cli_driver import spawn

from mino_server.core.display import approval_fields
from mino_server.testing.scripted_model import ScriptedModel

SUMMARY = "这个用户的项目都用 pnpm 安装依赖，从不用 npm 或 yarn。"
SAVE = {
    "calls": [
        {
            "name": "memory_save",
            "arguments": {"name": "uses-pnpm", "type": "project", "summary": SUMMARY, "mode": "create"},
        }
    ]
}
WARNING = (
    "Saved memories are shown to the model in every later session and project; approval applies only "
    "to this content."
)


def chapter_13_screen(memory_dir: Path) -> list[str]:
    return [
        "[Tool: memory_save]",
        'Memory: "uses-pnpm"',
        f'Directory: "{memory_dir}"',
        'Mode: "Create a new memory"',
        'Type: "project"',
        f'Summary: "{SUMMARY}"',
        WARNING,
        "Approve this operation? [y/N] ",
    ]


def test_the_memory_save_screen_is_chapter_13s_through_the_pty(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    model.add(SAVE, {"text": "已保存。之后的会话里我会使用 pnpm。"})
    child = spawn(mino_env, workdir, "--mode", "manual")
    child.expect_exact("You> ")
    child.sendline("请在以后的会话里记住：我的项目都用 pnpm 安装依赖，从不用 npm。")
    child.expect_exact("[Tool: memory_save]")
    child.expect_exact("Approve this operation? [y/N] ")
    block = "[Tool: memory_save]" + child.before + "Approve this operation? [y/N] "
    lines = [line.rstrip("\r") for line in block.split("\n")]
    assert lines == chapter_13_screen(mino_home / "memory")
    child.sendline("y")
    child.expect_exact("[Tool result: completed]")
    child.expect_exact("Saved memory uses-pnpm. Its summary appears in the memory index from the next turn.")
    child.expect_exact("Assistant> 已保存。")
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    assert (mino_home / "memory" / "uses-pnpm.md").is_file()


def test_details_follow_the_summary_and_overwrite_says_replace() -> None:
    # The order is the tool's own (as_given), never the deciding-fields-last sort other tools get.
    fields = [
        ("Memory", "m"),
        ("Directory", "/h/memory"),
        ("Mode", "Replace the existing memory"),
        ("Type", "user"),
        ("Summary", "s"),
        ("Details", "d"),
    ]
    shown, _ = approval_fields(fields, WARNING, as_given=True)
    assert [label for label, _ in shown] == ["Memory", "Directory", "Mode", "Type", "Summary", "Details"]
    # Without as_given, the deciding fields go last: the seed screen must not depend on that sort.
    sorted_shown, _ = approval_fields(fields, WARNING)
    assert [label for label, _ in sorted_shown][-1] != "Details"
