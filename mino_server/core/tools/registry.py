"""The tool set. Adding a tool is adding one module and one line here.

Everything a front end needs to know about a tool comes from its class (name, category, description,
parameters), read here: the eval cases' tool names, ACP's tool kinds, whether a turn ran commands
(a rewind says it cannot undo them). tests/test_tool_registry.py
fails when a registered tool lacks any of it."""

from __future__ import annotations

import functools
from typing import Any

from ..contract import ToolCategory
from .base import Tool


def default_tools() -> dict[str, Tool]:
    # Imported here, not at module level: `mino --version` and the server's initialize need none of them.
    from .bash import BashTool
    from .files import EditFileTool, ReadFileTool, WriteFileTool
    from .memory_tools import MemorySaveTool, MemoryViewTool
    from .plan import ExitPlanModeTool
    from .skill_view import SkillViewTool

    tools: list[Tool] = [
        ReadFileTool(),
        BashTool(),
        WriteFileTool(),
        EditFileTool(),
        SkillViewTool(),
        MemoryViewTool(),
        MemorySaveTool(),
        ExitPlanModeTool(),
    ]
    return {t.name: t for t in tools}


def tool_schemas(tools: dict[str, Tool], plan: bool = False) -> list[dict[str, Any]]:
    """Function tools for the Responses API request; a tool marked `plan_only` (exit_plan_mode) only
    when `plan`, so the list other modes send is the same as before plan mode existed."""
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
        for t in tools.values()
        if plan or not getattr(t, "plan_only", False)
    ]


@functools.cache
def tool_categories() -> dict[str, ToolCategory]:
    """Each tool's name and category, in the registry's order (imports every tool module once)."""
    return {name: tool.category for name, tool in default_tools().items()}


def tool_names() -> tuple[str, ...]:
    return tuple(tool_categories())


def runs_commands(name: str) -> bool:
    """Whether the tool of this name runs commands (its category is `execute`): what it did is
    outside Mino's files, so a rewind cannot undo it and says so."""
    return tool_categories().get(name) == "execute"
