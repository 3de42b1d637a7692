"""The tool set. Adding a tool is adding one module and one line here."""

from __future__ import annotations

from typing import Any

from .base import Tool


def default_tools() -> dict[str, Tool]:
    # Imported here, not at module level: `mino --version` and the server's initialize need none of them.
    from .bash import BashTool
    from .files import EditFileTool, ReadFileTool, WriteFileTool
    from .memory_tools import MemorySaveTool, MemoryViewTool
    from .skill_view import SkillViewTool

    tools: list[Tool] = [
        ReadFileTool(),
        BashTool(),
        WriteFileTool(),
        EditFileTool(),
        SkillViewTool(),
        MemoryViewTool(),
        MemorySaveTool(),
    ]
    return {t.name: t for t in tools}


def tool_schemas(tools: dict[str, Tool]) -> list[dict[str, Any]]:
    """Function tools for the Responses API request."""
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
        for t in tools.values()
    ]
