"""Every registered tool has what each front end needs, read from its class (core/tools/registry.py):
a name the model and the eval cases use, a category ACP shows as its tool kind, a description and a
JSON Schema for the model, a row in docs/BEHAVIOUR.md's tool list. A new tool that lacks any of it
fails here, naming the tool and what is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mino_server.acp import mapping
from mino_server.core.contract import TOOL_CATEGORIES
from mino_server.core.tools.registry import default_tools, tool_categories, tool_names, tool_schemas
from mino_server.evals.schema import CaseError, _tool

ROOT = Path(__file__).resolve().parent.parent
NAMES = tuple(default_tools())


def test_the_registry_lists_each_tool_once_under_its_own_name() -> None:
    tools = default_tools()
    assert NAMES, "no tools registered"
    for name, tool in tools.items():
        assert tool.name == name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
    assert tool_names() == NAMES
    assert [s["name"] for s in tool_schemas(tools, plan=True)] == list(NAMES)
    # exit_plan_mode is offered in plan mode only: every other mode's tool list is as before it.
    assert [s["name"] for s in tool_schemas(tools)] == [n for n in NAMES if n != "exit_plan_mode"]


@pytest.mark.parametrize("name", NAMES)
def test_a_tool_has_what_every_front_end_needs(name: str) -> None:
    tool = default_tools()[name]
    assert tool.category in TOOL_CATEGORIES, f"{name}: category {tool.category!r}"
    assert tool.description.strip(), f"{name}: no description for the model"
    params = tool.parameters
    assert params.get("type") == "object" and isinstance(params.get("properties"), dict), name
    assert mapping.tool_kind(name) == tool.category == tool_categories()[name]
    assert _tool(name, "expect.tools_called") == name  # eval cases may name it
    behaviour = (ROOT / "docs" / "BEHAVIOUR.md").read_text()
    assert f"`{name}`" in behaviour, f"{name}: docs/BEHAVIOUR.md does not describe it"


def test_an_unknown_tool_is_other_for_acp_and_refused_in_an_eval_case() -> None:
    assert mapping.tool_kind("no_such_tool") == "other"
    with pytest.raises(CaseError):
        _tool("no_such_tool", "expect.tools_called")


def test_a_new_tool_is_its_module_and_a_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk-through of docs/ARCHITECTURE.md, "A tool": a `web_fetch` class added to the registry
    is offered to the model, accepted by eval cases and shown by ACP with its kind, with no other
    file touched."""
    from mino_server.core.tools import registry
    from mino_server.core.tools.base import schema

    class WebFetchTool:
        name = "web_fetch"
        category = "fetch"
        description = "Fetch a web page."
        parameters = schema({"url": {"type": "string"}}, ["url"])

    real = registry.default_tools
    monkeypatch.setattr(registry, "default_tools", lambda: {**real(), "web_fetch": WebFetchTool()})
    registry.tool_categories.cache_clear()
    try:
        assert "web_fetch" in [s["name"] for s in tool_schemas(registry.default_tools())]
        assert mapping.tool_kind("web_fetch") == "fetch"
        assert _tool("web_fetch", "expect.tools_called") == "web_fetch"
    finally:
        registry.tool_categories.cache_clear()
