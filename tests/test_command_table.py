"""A slash command is one row of one table (core/commands.py COMMAND_TABLE): the CLI's and the editor
server's /help, the editor server's "must run alone" rule and ACP's offer and /help derive from it.
These tests read every front end's view back from the table, so a second list anywhere would show."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mino_server.acp import mapping
from mino_server.core import commands
from mino_server.server import handlers

ROOT = Path(__file__).resolve().parent.parent


def test_help_lists_every_row_in_table_order() -> None:
    listed = [line.split()[0] for line in commands.HELP[1:-1]]
    assert listed == [c.name for c in commands.COMMAND_TABLE]
    for row in commands.COMMAND_TABLE:
        assert commands.COMMANDS[row.name] is row
        assert row.usage.split()[0] == row.name


def test_the_editor_servers_exclusivity_comes_from_the_rows() -> None:
    for row in commands.COMMAND_TABLE:
        params = SimpleNamespace(line=f"  {row.name} some args")
        assert handlers.command_exclusive(params) == row.alone, row.name
        assert handlers.command_shows_busy(params) == row.shows_busy, row.name
    unknown = SimpleNamespace(line="/no-such-command")
    assert handlers.command_exclusive(unknown) is None and not handlers.command_shows_busy(unknown)


def test_acp_offers_the_rows_with_thread_help_and_answers_the_others_with_their_sentence() -> None:
    offered = mapping.available_commands_update()["availableCommands"]
    rows = [c for c in commands.THREAD_COMMANDS]
    assert [o["name"] for o in offered] == [c.name.lstrip("/") for c in rows]
    for row, item in zip(rows, offered, strict=True):
        assert row.threads is not None
        assert item["description"] == row.threads.description
        assert item.get("input") == ({"hint": row.threads.hint} if row.threads.hint else None)
    assert [line.split()[0] for line in commands.THREAD_HELP[1:-1]] == [c.name for c in rows]
    for row in commands.COMMAND_TABLE:
        # every row is either offered to a client whose threads are sessions or answered with a sentence
        assert (row.threads is None) != (row.instead is None), row.name


def test_no_front_end_keeps_its_own_command_list() -> None:
    """The walk-through of docs/ARCHITECTURE.md, "A slash command": only core/commands.py names them."""
    names = [c.name for c in commands.COMMAND_TABLE if c.name not in ("/help", "/clear")]
    for path in (ROOT / "mino_server").rglob("*.py"):
        if path.name == "commands.py" and path.parent.name == "core":
            continue
        text = path.read_text()
        for name in names:
            assert f'"{name}"' not in text, f"{path.relative_to(ROOT)} names {name} itself"
