"""Finding 4 (start-up part): a working directory that holds MINO_HOME, or `/`, is named at start-up.

File tools refuse MINO_HOME and the sandbox hides it (their own tests), but the person should still
learn that their settings, sessions and memories sit inside the folder the model works in."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_driver import piped

from mino_server.core.conversation import workdir_warnings
from mino_server.testing.scripted_model import ScriptedModel


def test_cli_started_in_the_folder_holding_mino_home_warns(
    tmp_path: Path, model: ScriptedModel, mino_env: dict[str, str]
) -> None:
    user_home = tmp_path / "user-home"
    mino_home = user_home / ".mino"
    user_home.mkdir(exist_ok=True)
    env = dict(mino_env, MINO_HOME=str(mino_home))
    done = piped(env, user_home, "")
    assert f"Warning: the working directory {user_home.resolve()} contains Mino's home" in done.stdout


def test_a_project_folder_gets_no_warning(tmp_path: Path, workdir: Path) -> None:
    assert workdir_warnings(workdir.resolve(), tmp_path / "mino-home") == []


@pytest.mark.parametrize("home", ["mino-home", "."])
def test_home_below_or_equal_to_the_workdir_warns(tmp_path: Path, home: str) -> None:
    (warning,) = workdir_warnings(tmp_path.resolve(), tmp_path / home)
    assert "contains Mino's home" in warning


def test_the_root_folder_warns(tmp_path: Path) -> None:
    warnings = workdir_warnings(Path("/"), tmp_path / "mino-home")
    assert any("the whole file system" in w for w in warnings)
