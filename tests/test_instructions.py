"""Project instructions (AGENTS.md): found from the repository root down, asked once per content,
remembered under MINO_HOME, sent after SOUL.md; piped runs never ask (docs/BEHAVIOUR.md,
"Project instructions: AGENTS.md")."""

from __future__ import annotations

import os
from pathlib import Path

import pexpect
from acp_client import the_one_permission
from cli_driver import piped, spawn
from helpers import RecordingUI, command, make_conversation, mino_env, quiet_home, turn
from server_client import servers

from mino_server.core import instructions as ins
from mino_server.core import words
from mino_server.core.words import INSTRUCTIONS_NOT_SENT
from mino_server.testing.scripted_model import ScriptedModel

ROOT_TEXT = "Run the tests with make check.\nNever push to main.\n"
SUB_TEXT = "In this folder, use tabs.\n"
QUESTION = "This project gives the model instructions in AGENTS.md (3 lines). Send them?"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with AGENTS.md at its root and in the working directory `pkg/sub`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    (repo / "AGENTS.md").write_text(ROOT_TEXT)
    (sub / "AGENTS.md").write_text(SUB_TEXT)
    return repo, sub


# ---- finding the files ---------------------------------------------------------------------------


def test_files_from_the_root_down_root_first(tmp_path: Path) -> None:
    repo, sub = _project(tmp_path)
    (repo / "pkg" / "AGENTS.md").write_text("middle\n")
    found = ins.find(sub)
    assert [f.shown for f in found.files] == ["AGENTS.md", "pkg/AGENTS.md", "pkg/sub/AGENTS.md"]
    text = ins.render(found) or ""
    assert text.index("make check") < text.index("middle") < text.index("use tabs")
    assert text.startswith(ins.HEADING)


def test_without_git_only_the_working_directory_counts(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("above\n")
    work = tmp_path / "work"
    work.mkdir()
    assert ins.find(work).files == ()
    (work / "AGENTS.md").write_text("here\n")
    assert [f.text for f in ins.find(work).files] == ["here\n"]


def test_a_git_file_marks_the_root_too(tmp_path: Path) -> None:
    repo, sub = _project(tmp_path)
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: elsewhere\n")  # a worktree
    assert len(ins.find(sub).files) == 2


def test_past_32_kib_the_crossing_file_is_cut_and_later_ones_left_out(tmp_path: Path) -> None:
    repo, sub = _project(tmp_path)
    (repo / "AGENTS.md").write_text("x" * 100 + "\n" + ("line\n" * 8000))  # ~40 KiB
    found = ins.find(sub)
    (first,) = found.files
    assert first.cut and len(first.data) <= ins.MAX_BYTES and first.data.endswith(b"\n")
    assert found.left_out == ("pkg/sub/AGENTS.md",)
    text = ins.render(found) or ""
    assert "was cut here" in text and "Not sent, past the 32 KiB limit: pkg/sub/AGENTS.md" in text


def test_links_fifos_and_folders_named_agents_md_are_skipped(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("password\n")
    (work / "AGENTS.md").symlink_to(secret)
    assert ins.find(work).files == ()
    (work / "AGENTS.md").unlink()
    os.mkfifo(work / "AGENTS.md")  # a read would block forever
    assert ins.find(work).files == ()
    (work / "AGENTS.md").unlink()
    (work / "AGENTS.md").mkdir()
    assert ins.find(work).files == ()


# ---- the question, in the core -------------------------------------------------------------------


def test_asked_once_per_content_remembered_and_asked_again_when_changed(
    model: ScriptedModel, tmp_path: Path
) -> None:
    repo, sub = _project(tmp_path)
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, sub, ui)
    try:
        conversation.open()
        # no: not sent, a notice; the same session does not ask again
        model.add({"text": "a"}, {"text": "b"})
        turn(conversation, "hello")
        assert len(ui.confirm_messages) == 1 and QUESTION in ui.confirm_messages[0]
        assert "make check" not in model.requests[-1]["instructions"]
        assert INSTRUCTIONS_NOT_SENT in [n["text"] for n in ui.of_type("notice")]
        turn(conversation, "again")
        assert len(ui.confirm_messages) == 1 and "make check" not in model.requests[-1]["instructions"]
        assert [s.accepted for s in conversation.state().instructions or []] == [False, False]

        # the next session asks again; yes sends them after SOUL, and is remembered
        ui.confirms.append(True)
        command(conversation, "/new")
        model.add({"text": "c"}, {"text": "d"})
        turn(conversation, "hello")
        assert len(ui.confirm_messages) == 2
        sent = model.requests[-1]["instructions"]
        assert (
            sent.index(conversation.config.soul.strip()[:40])
            < sent.index(ins.HEADING)
            < sent.index("use tabs")
        )
        command(conversation, "/new")
        turn(conversation, "hello")
        assert len(ui.confirm_messages) == 2 and "use tabs" in model.requests[-1]["instructions"]
        state = conversation.state().instructions or []
        assert [(s.path, s.accepted) for s in state] == [
            (str(repo / "AGENTS.md"), True),
            (str(sub / "AGENTS.md"), True),
        ]

        # one byte changed: asked again at the next turn, in the same session
        (sub / "AGENTS.md").write_text(SUB_TEXT.replace("tabs", "Tabs"))
        model.add({"text": "e"})
        turn(conversation, "hello")
        assert len(ui.confirm_messages) == 3 and "Tabs" not in model.requests[-1]["instructions"]
    finally:
        conversation.close()
    assert len(list((conversation.config.home / "consent" / "instructions").iterdir())) == 1


def test_the_question_shows_paths_and_first_lines_escaped(model: ScriptedModel, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("Be nice.\x1b[2J\u202eevil\n" + "".join(f"rule {i}\n" for i in range(9)))
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, work, ui)
    try:
        conversation.open()
        model.add({"text": "a"})
        turn(conversation, "hello")
    finally:
        conversation.close()
    (message,) = ui.confirm_messages
    assert "\x1b" not in message and "\u202e" not in message
    assert f'"{work / "AGENTS.md"}" (10 lines):' in message
    assert "    | rule 3\n    … (5 more lines)" in message
    assert message.endswith("This project gives the model instructions in AGENTS.md (10 lines). Send them?")
    assert words.instructions_question_line(1).endswith("(1 lines). Send them?")  # the protocol's words


# ---- front ends ------------------------------------------------------------------------------------


def test_the_terminal_asks_on_one_line_and_yes_sends(model: ScriptedModel, tmp_path: Path) -> None:
    _, sub = _project(tmp_path)
    home = quiet_home(tmp_path)
    model.add({"text": "hi"})
    child = spawn(mino_env(home, model.base_url), sub)
    try:
        child.expect_exact("You> ")
        child.sendline("hello")
        child.expect_exact("    | Never push to main.")
        child.expect_exact(QUESTION + " [y/N] ")
        child.sendline("y")
        child.expect_exact("hi")
        child.expect_exact("You> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "Never push to main." in model.requests[0]["instructions"]


def test_the_terminal_enter_alone_is_no(model: ScriptedModel, tmp_path: Path) -> None:
    _, sub = _project(tmp_path)
    home = quiet_home(tmp_path)
    model.add({"text": "hi"})
    child = spawn(mino_env(home, model.base_url), sub)
    try:
        child.expect_exact("You> ")
        child.sendline("hello")
        child.expect_exact(QUESTION + " [y/N] ")
        child.sendline("")
        child.expect_exact(INSTRUCTIONS_NOT_SENT)
        child.expect_exact("You> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "Never push to main." not in model.requests[0]["instructions"]


def test_piped_input_never_asks_and_sends_only_accepted_content(model: ScriptedModel, tmp_path: Path) -> None:
    _, sub = _project(tmp_path)
    home = quiet_home(tmp_path)
    model.add({"text": "hi"})
    done = piped(mino_env(home, model.base_url), sub, "hello\n")
    assert QUESTION not in done.stdout and "[y/N]" not in done.stdout
    assert "were not sent: they were not accepted before" in done.stdout
    assert "Never push to main." not in model.requests[0]["instructions"]

    found = ins.find(sub)
    from mino_server.core import consent

    consent.remember(home, ins.CONSENT_KIND, found.digest, "test")
    model.add({"text": "hi"})
    done = piped(mino_env(home, model.base_url), sub, "hello\n")
    assert "not sent" not in done.stdout
    assert "Never push to main." in model.requests[1]["instructions"]


def test_the_editor_gets_mino_confirm_with_the_files_and_state(model: ScriptedModel, tmp_path: Path) -> None:
    repo, sub = _project(tmp_path)
    home = quiet_home(tmp_path)
    model.add({"text": "a"})
    with servers(home, model.base_url, sub) as make:
        client = make(handlers={"mino/confirm": lambda params: {"confirmed": True}})
        state = client.request("mino/state", {})
        assert state["instructions"] == [
            {"path": str(repo / "AGENTS.md"), "accepted": False},
            {"path": str(sub / "AGENTS.md"), "accepted": False},
        ]
        assert client.request("mino/turn", {"text": "hello"})["status"] == "completed"
        (asked,) = [r for r in client.incoming_requests if r["method"] == "mino/confirm"]
        params = asked["params"]
        assert params["kind"] == "instructions" and params["message"].endswith(QUESTION)
        assert params["files"] == [
            {"path": str(repo / "AGENTS.md"), "text": ROOT_TEXT},
            {"path": str(sub / "AGENTS.md"), "text": SUB_TEXT},
        ]
        assert all(i["accepted"] for i in client.request("mino/state", {})["instructions"])
        client.stop()
    assert "use tabs" in model.requests[0]["instructions"]


def test_acp_asks_with_a_permission_titled_project_instructions(model: ScriptedModel, tmp_path: Path) -> None:
    _, sub = _project(tmp_path)
    home = quiet_home(tmp_path)
    model.add({"text": "a"})
    call = the_one_permission(mino_env(home, model.base_url), sub, "reject_once")
    assert call["title"] == "Project instructions"
    assert QUESTION in call["content"][0]["content"]["text"]
    assert "use tabs" not in model.requests[0]["instructions"]
