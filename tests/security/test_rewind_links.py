"""A rewind writes only the path it recorded, never through a link swapped in since (docs/SECURITY.md,
"Writes on the person's behalf"): a file whose path changed kind is kept and named."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import RecordingUI, command, turn
from tool_helpers import needs_bwrap

from mino_server.testing.scripted_model import ScriptedModel

PAYLOAD = "[core]\n\tfsmonitor = touch /tmp/pwned-by-rewind\n"


def call(tool: str, /, **arguments: Any) -> dict:
    return {"calls": [{"name": tool, "arguments": arguments}]}


@needs_bwrap
def test_rewind_does_not_write_into_git_through_a_link(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    real = (workdir / ".git" / "config").read_text()
    ui = RecordingUI(confirms=[True, True, True])
    agent = agent_factory(ui, mode="accept-edits")
    model.add(
        call("write_file", path="g/config", content=PAYLOAD, mode="create"),
        {"text": "made"},
        call("write_file", path="g/config", content=real, mode="overwrite"),
        # one sandboxed command (shown, not asked, in accept-edits) swaps the folder for a link
        call("bash", command="rm -rf g && ln -s .git g"),
        {"text": "tidied"},
    )
    assert turn(agent, "make g/config").status == "completed"
    assert turn(agent, "tidy").status == "completed"
    assert os.path.islink(workdir / "g"), "the command did not run"
    assert ui.asked == []  # nothing asked: two project writes and one sandboxed command
    out = command(agent, "/rewind 2")
    question = ui.confirm_messages[-1]
    assert "restore g/config" not in question
    assert "keep g/config" in question and "path changed" in question
    assert (workdir / ".git" / "config").read_text() == real
    assert "Rewound 0 file(s)" in out[0]


def test_rewind_delete_does_not_follow_a_link(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    """A file Mino created, whose folder is now a link to another folder in the project: not deleted."""
    (workdir / "other").mkdir()
    ui = RecordingUI(confirms=[True])
    agent = agent_factory(ui, mode="bypass")
    model.add(call("write_file", path="d/x.txt", content="x\n", mode="create"), {"text": "ok"})
    turn(agent, "make d/x.txt")
    (workdir / "other" / "x.txt").write_text("x\n")
    os.rename(workdir / "d", workdir / "d-moved")
    os.symlink("other", workdir / "d")
    command(agent, "/rewind 1")
    assert (workdir / "other" / "x.txt").read_text() == "x\n"
    assert "keep d/x.txt" in ui.confirm_messages[-1]


def test_rewind_file_that_became_a_folder_is_kept(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\n")
    ui = RecordingUI(confirms=[True])
    agent = agent_factory(ui, mode="bypass")
    model.add(call("edit_file", path="a.txt", old_text="one", new_text="ONE"), {"text": "ok"})
    turn(agent, "edit")
    os.unlink(workdir / "a.txt")
    (workdir / "a.txt").mkdir()
    command(agent, "/rewind 1")
    assert (workdir / "a.txt").is_dir()
    assert "keep a.txt: its path changed" in ui.confirm_messages[-1]


def test_stores_under_home_do_not_follow_links(
    model: ScriptedModel, agent_factory, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    """MINO_HOME's checkpoint and consent folders swapped for links: nothing is written through them."""
    from mino_server.core import consent

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "checkpoints").symlink_to(elsewhere)
    ui = RecordingUI(confirms=[True])
    agent = agent_factory(ui, mode="bypass")
    model.add(call("write_file", path="a.txt", content="x\n", mode="create"), {"text": "ok"})
    turn(agent, "write")
    assert list(elsewhere.iterdir()) == []
    assert not (workdir / "a.txt").exists()  # no checkpoint, so nothing was written

    (mino_home / "consent").symlink_to(elsewhere)
    sha = "0" * 64
    try:
        consent.remember(mino_home, "skills", sha, "x")
    except OSError:
        pass
    assert list(elsewhere.iterdir()) == []
    (elsewhere / "skills").mkdir()
    (elsewhere / "skills" / sha).write_text("{}")
    assert not consent.accepted(mino_home, "skills", sha)


def test_a_rewind_names_the_protected_folder_it_writes_in(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    """A file Mino wrote in .vscode (asked then) is restored only after a question that says so."""
    (workdir / ".vscode").mkdir()
    (workdir / ".vscode" / "tasks.json").write_text("{}\n")
    ui = RecordingUI(approvals=[True], confirms=[True])
    agent = agent_factory(ui, mode="accept-edits")
    model.add(
        call("write_file", path=".vscode/tasks.json", content='{"x": 1}\n', mode="overwrite"), {"text": "ok"}
    )
    turn(agent, "edit the tasks")
    assert len(ui.asked) == 1  # the write asked, in accept-edits
    command(agent, "/rewind 1")
    assert "restore .vscode/tasks.json (in .vscode: files here can run commands" in ui.confirm_messages[-1]
    assert (workdir / ".vscode" / "tasks.json").read_text() == "{}\n"


def test_memory_and_image_stores_do_not_follow_links(mino_home: Path, tmp_path: Path) -> None:
    from image_files import png

    from mino_server.core import images, memory

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mino_home.mkdir(parents=True, exist_ok=True)
    for name in ("memory", "images"):
        (mino_home / name).symlink_to(elsewhere)
    try:
        memory.save_memory(mino_home / "memory", "note", "user", "a note", None, None)
    except OSError:
        pass
    try:
        images.save(mino_home, "s1", [images.check(png(seed=3), None, "shot.png", "w")])
    except OSError:
        pass
    assert list(elsewhere.iterdir()) == []


def test_the_editor_servers_rewind_keeps_a_file_behind_a_link(model: ScriptedModel, tmp_path: Path) -> None:
    """mino/checkpoints and mino/rewind go through the same rewind: the file is kept and named."""
    from helpers import quiet_home
    from server_client import servers

    home = quiet_home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    real = (ws / ".git" / "config").read_text()
    model.add(
        call("write_file", path="g/config", content=PAYLOAD, mode="create"),
        {"text": "made"},
        call("write_file", path="g/config", content=real, mode="overwrite"),
        {"text": "again"},
    )
    with servers(home, model.base_url, ws) as spawn:
        client = spawn(handlers={"mino/confirm": lambda params: {"confirmed": True}}, mode="bypass")
        client.request("mino/turn", {"text": "make"})
        second = client.request("mino/turn", {"text": "again"})
        os.rename(ws / "g", ws / "g-moved")
        os.symlink(".git", ws / "g")
        turns = client.request("mino/checkpoints")["turns"]
        assert turns[0]["files"][0]["action"] == "keep" and "path changed" in turns[0]["files"][0]["reason"]
        done = client.request("mino/rewind", {"turnId": second["turnId"]})
        assert done["rewound"] == [] and [k["path"] for k in done["kept"]] == ["g/config"]
    assert (ws / ".git" / "config").read_text() == real


def test_a_link_swapped_in_while_the_question_waits_is_not_written_through(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    """The question showed `restore g/config` (g was a folder then); g becomes a link to .git before
    the yes: the path is judged again before the write, and the file is kept and named."""
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    real = (workdir / ".git" / "config").read_text()

    class SwapWhileAsking(RecordingUI):
        def confirm(self, question: Any, cancel: Any = None) -> bool:
            os.rename(workdir / "g", workdir / "g-moved")
            os.symlink(".git", workdir / "g")
            return super().confirm(question, cancel)

    ui = SwapWhileAsking(confirms=[True])
    agent = agent_factory(ui, mode="bypass")
    model.add(
        call("write_file", path="g/config", content=PAYLOAD, mode="create"),
        {"text": "made"},
        call("write_file", path="g/config", content=real, mode="overwrite"),
        {"text": "again"},
    )
    turn(agent, "make")
    turn(agent, "again")
    out = command(agent, "/rewind 2")
    assert "restore g/config" in ui.confirm_messages[-1]  # true when asked
    assert (workdir / ".git" / "config").read_text() == real
    assert out[0].startswith("Rewound 0 file(s)")
    assert any(line.startswith("keep g/config: its path changed") for line in out[1:])
