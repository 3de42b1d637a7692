"""Shared fixtures: every test gets its own MINO_HOME, working directory and HOME.

No test reads or writes a real ~/.mino: MINO_HOME and HOME point into tmp_path for the whole test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mino_server.testing.scripted_model import ScriptedModel

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "mino-home"
    monkeypatch.setenv("MINO_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for var in ("MINO_MODEL", "MINO_BASE_URL", "MINO_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def mino_home(isolated_home: Path) -> Path:
    return isolated_home


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "work"
    wd.mkdir()
    return wd


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as m:
        yield m


@pytest.fixture
def mino_env(mino_home: Path, model: ScriptedModel) -> dict[str, str]:
    """Environment for a `mino` subprocess talking to the scripted model."""
    env = dict(os.environ)
    env.update(
        {
            "MINO_HOME": str(mino_home),
            "MINO_BASE_URL": model.base_url,
            "MINO_API_KEY": "test-key",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def agent_factory(model: ScriptedModel, workdir: Path) -> Iterator[Any]:
    """`make(ui=None, mode=None)`: an opened conversation on the scripted model, closed after the test."""
    from helpers import Conversation, RecordingUI, make_conversation

    agents: list[Conversation] = []

    def make(ui: RecordingUI | None = None, mode: str | None = None) -> Conversation:
        a = make_conversation(model.base_url, workdir, ui, mode=mode)
        a.open()
        agents.append(a)
        return a

    yield make
    for a in agents:
        a.close()
