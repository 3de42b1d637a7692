"""Finding 5 (the sandbox part): files that run later.

A sandboxed command set core.fsmonitor in .git/config, which ran outside the sandbox at the
person's next `git status`. Now the working directory's `.git` (a folder, or the file of a worktree
or submodule), `.mino` and `.vscode` are read-only in the sandbox. A command that must write there
(git commit) asks to run outside the sandbox with a reason: "bash without sandbox" in the decision
table (asks in every mode except bypass). Limit: a protected folder that does not exist yet is not
mounted (that would create it in the person's project); from the next command on, it is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import RecordingUI, make_conversation, turn
from tool_helpers import SANDBOX, git, needs_bwrap, run_bash, workdir_ctx

from mino_server.core.decision import MODES, decide
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.bash import BashTool
from mino_server.testing.scripted_model import ScriptedModel

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
FSMONITOR = "git config core.fsmonitor 'touch /tmp/pwned'"


def _ctx(workdir: Path, sandbox: object = None) -> ToolContext:
    return workdir_ctx(workdir, sandbox)


@pytest.fixture
def repo(workdir: Path) -> Path:
    git("init", "-q", cwd=workdir)
    (workdir / "a.txt").write_text("a\n")
    return workdir


@needs_bwrap
@needs_git
def test_git_config_cannot_be_changed_in_the_sandbox(repo: Path) -> None:
    before = (repo / ".git" / "config").read_text()
    result = run_bash({"command": FSMONITOR}, _ctx(repo, SANDBOX))
    assert "could not lock config file" in result.output or "Read-only file system" in result.output
    assert not result.output.endswith("[exit code: 0]")
    assert (repo / ".git" / "config").read_text() == before
    assert "fsmonitor" not in git("config", "--list", "--local", cwd=repo)


@needs_bwrap
def test_protected_folders_are_read_only_and_cannot_be_replaced(workdir: Path) -> None:
    for name in (".git", ".mino", ".vscode"):
        (workdir / name).mkdir()
        (workdir / name / "f").write_text("original\n")
    command = (
        "for d in .git .mino .vscode; do echo x >> $d/f; echo x > $d/new; mv $d $d-moved; rm -rf $d; done; "
        "mkdir .git-new && mv .git-new .git; echo ok > elsewhere; echo done"
    )
    result = run_bash({"command": command}, _ctx(workdir, SANDBOX))
    assert result.output.endswith("done\n[exit code: 0]")
    for name in (".git", ".mino", ".vscode"):
        assert (workdir / name / "f").read_text() == "original\n"
        assert sorted(p.name for p in (workdir / name).iterdir()) == ["f"]
        assert not (workdir / f"{name}-moved").exists()
    assert (workdir / "elsewhere").read_text() == "ok\n"  # the rest stays writable


@needs_bwrap
def test_a_git_file_of_a_worktree_is_read_only(workdir: Path) -> None:
    (workdir / ".git").write_text("gitdir: ../elsewhere/.git/worktrees/w\n")
    result = run_bash({"command": "echo 'gitdir: /tmp/evil' > .git; cat .git"}, _ctx(workdir, SANDBOX))
    assert "Read-only file system" in result.output
    assert (workdir / ".git").read_text() == "gitdir: ../elsewhere/.git/worktrees/w\n"


@needs_bwrap
def test_a_symlinked_git_folder_inside_the_project_is_read_only(workdir: Path) -> None:
    (workdir / "gitdir").mkdir()
    (workdir / "gitdir" / "config").write_text("[core]\n")
    (workdir / ".git").symlink_to("gitdir")
    result = run_bash({"command": "echo '[core] fsmonitor = x' >> .git/config"}, _ctx(workdir, SANDBOX))
    assert "Read-only file system" in result.output
    assert (workdir / "gitdir" / "config").read_text() == "[core]\n"


@needs_bwrap
@needs_git
def test_git_commit_needs_to_run_outside_the_sandbox(repo: Path) -> None:
    commit = "git add a.txt && git -c user.name=t -c user.email=t@t commit -q -m first && git log --format=%s"
    inside = run_bash({"command": commit}, _ctx(repo, SANDBOX))
    assert not inside.output.endswith("[exit code: 0]")
    outside = run_bash(
        {"command": commit, "outside_sandbox": True, "reason": "commit the change"}, _ctx(repo, SANDBOX)
    )
    assert outside.output == "first\n[exit code: 0]"


@needs_bwrap
def test_outside_sandbox_asks_in_every_mode_but_bypass_and_shows_the_reason(workdir: Path) -> None:
    tool = BashTool()
    ctx = _ctx(workdir, SANDBOX)
    args = tool.validate({"command": "git commit -am x", "outside_sandbox": True, "reason": "write .git"})
    prepared = tool.prepare(args, ctx)
    assert prepared.fields == [
        ("Command", "git commit -am x"),
        ("Directory", str(ctx.workdir)),
        ("Sandbox", "none (requested)"),
        ("Reason", "write .git"),
    ]
    assert prepared.kind == "other"
    assert [decide(prepared.kind or tool.kind(ctx), m) for m in MODES] == ["ask", "ask", "show", "refuse"]
    plain = tool.prepare(tool.validate({"command": "ls"}), ctx)
    assert plain.kind is None and tool.kind(ctx) == "sandboxed"
    assert ("Sandbox", "bwrap") in plain.fields


def test_without_a_sandbox_the_argument_changes_only_the_fields(workdir: Path) -> None:
    tool = BashTool()
    ctx = _ctx(workdir)
    args = tool.validate({"command": "echo hi", "outside_sandbox": True, "reason": "r"})
    prepared = tool.prepare(args, ctx)
    assert ("Sandbox", "none (requested)") in prepared.fields and ("Reason", "r") in prepared.fields
    assert (prepared.kind or tool.kind(ctx)) == "other" == tool.kind(ctx)
    assert tool.run(args, ctx, prepared).output == "hi\n[exit code: 0]"


def test_the_description_tells_the_model_how() -> None:
    text = BashTool.description
    assert ".git, .mino and .vscode folders are read-only" in text
    assert "set outside_sandbox to true and give a short reason" in text
    assert "the user is asked to approve it, seeing the reason" in text


@needs_bwrap
def test_through_the_agent_accept_edits_asks_for_outside_sandbox(model: ScriptedModel, workdir: Path) -> None:
    (workdir / ".git").mkdir()
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": "echo in > .git/x"}}]},
        {
            "calls": [
                {
                    "name": "bash",
                    "arguments": {
                        "command": "echo out > .git/x",
                        "outside_sandbox": True,
                        "reason": "needs .git",
                    },
                }
            ]
        },
        {"text": "done"},
    )
    ui = RecordingUI(approvals=[True])
    conversation = make_conversation(model.base_url, workdir, ui, mode="accept-edits")
    try:
        conversation.open()
        turn(conversation, "write into .git")
    finally:
        conversation.close()
    assert len(ui.asked) == 1  # the sandboxed call ran unasked (and failed); the other asked
    assert ("Reason", "needs .git") in ui.asked[0].fields
    assert ("Sandbox", "none (requested)") in ui.asked[0].fields
    assert (workdir / ".git" / "x").read_text() == "out\n"
