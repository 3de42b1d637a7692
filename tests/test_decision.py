"""The permission decision (docs/BEHAVIOUR.md, "Permission decision"): every cell, and each tool's kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from mino_server.core.cancel import CancelToken
from mino_server.core.decision import MODES, TABLE, decide
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.bash import BashTool
from mino_server.core.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from mino_server.core.tools.memory_tools import MemorySaveTool, MemoryViewTool
from mino_server.core.tools.registry import default_tools
from mino_server.core.tools.sandbox import Sandbox

# The decision table, written out cell by cell (not derived from TABLE, so a wrong TABLE fails here).
DECISION_CELLS = [
    ("read_only", "manual", "run"),
    ("read_only", "accept-edits", "run"),
    ("read_only", "bypass", "run"),
    ("project_write", "manual", "ask"),
    ("project_write", "accept-edits", "show"),
    ("project_write", "bypass", "show"),
    ("sandboxed", "manual", "ask"),
    ("sandboxed", "accept-edits", "show"),
    ("sandboxed", "bypass", "show"),
    ("other", "manual", "ask"),
    ("other", "accept-edits", "ask"),
    ("other", "bypass", "show"),
    ("allowed", "manual", "ask"),
    ("allowed", "accept-edits", "show"),
    ("allowed", "bypass", "show"),
    # Plan mode: reading and read-only sandboxed commands run, the rest is refused without asking.
    ("read_only", "plan", "run"),
    ("project_write", "plan", "refuse"),
    ("sandboxed", "plan", "show"),
    ("other", "plan", "refuse"),
    ("allowed", "plan", "refuse"),
    # exit_plan_mode: the person's yes, in every mode (it fails before asking outside plan mode).
    ("plan_exit", "manual", "ask"),
    ("plan_exit", "accept-edits", "ask"),
    ("plan_exit", "bypass", "ask"),
    ("plan_exit", "plan", "ask"),
]


@pytest.mark.parametrize(("kind", "mode", "expected"), DECISION_CELLS)
def test_every_cell(kind: str, mode: str, expected: str) -> None:
    assert decide(kind, mode) == expected  # type: ignore[arg-type]


def test_the_table_has_exactly_these_cells() -> None:
    assert MODES == ("manual", "accept-edits", "bypass", "plan")
    assert {(k, m) for k, row in TABLE.items() for m in row} == {(k, m) for k, m, _ in DECISION_CELLS}


# The memory tools beside the project-file edits, by the kind each tool has: memory_save asks even in
# accept-edits (docs/BEHAVIOUR.md, "Permission decision").
MEMORY_AND_FILE_ROWS = [
    ("memory_view", "read_only", ("run", "run", "run", "run")),
    ("memory_save", "other", ("ask", "ask", "show", "refuse")),
    ("write_file", "project_write", ("ask", "show", "show", "refuse")),
    ("edit_file", "project_write", ("ask", "show", "show", "refuse")),
    ("exit_plan_mode", "plan_exit", ("ask", "ask", "ask", "ask")),
]


def _ctx(sandbox: Sandbox | None) -> ToolContext:
    here = Path("/nonexistent")
    return ToolContext(workdir=here, home=here, memory_dir=here, cancel=CancelToken(), sandbox=sandbox)


@pytest.mark.parametrize(("tool", "kind", "expected"), MEMORY_AND_FILE_ROWS)
def test_decision_table_for_memory_and_file_tools(
    tool: str, kind: str, expected: tuple[str, str, str, str]
) -> None:
    assert default_tools()[tool].kind(_ctx(None)) == kind  # the row is the tool's, not only its kind's
    assert tuple(decide(kind, mode) for mode in MODES) == expected  # type: ignore[arg-type]


def test_project_tools_have_the_kinds_of_their_rows() -> None:
    plain, boxed = _ctx(None), _ctx(Sandbox("bwrap"))
    assert ReadFileTool().kind(plain) == "read_only"
    assert WriteFileTool().kind(plain) == "project_write"
    assert EditFileTool().kind(plain) == "project_write"
    assert BashTool().kind(boxed) == "sandboxed"
    assert BashTool().kind(plain) == "other"


def test_memory_tools_have_the_kinds_of_their_rows() -> None:
    ctx = _ctx(None)
    assert MemoryViewTool().kind(ctx) == "read_only"
    assert MemorySaveTool().kind(ctx) == "other"
