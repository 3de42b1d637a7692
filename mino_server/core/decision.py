"""The permission decision (docs/BEHAVIOUR.md, "Permission decision"): one table, one function."""

from __future__ import annotations

from typing import Literal

Mode = Literal["manual", "accept-edits", "bypass"]
Kind = Literal["read_only", "project_write", "sandboxed", "other"]
Decision = Literal["run", "ask", "show"]

MODES: tuple[Mode, ...] = ("manual", "accept-edits", "bypass")

# Rows in the order of docs/BEHAVIOUR.md, "Permission decision": read-only, project file write,
# bash inside the sandbox, anything else.
TABLE: dict[Kind, dict[Mode, Decision]] = {
    "read_only": {"manual": "run", "accept-edits": "run", "bypass": "run"},
    "project_write": {"manual": "ask", "accept-edits": "show", "bypass": "show"},
    "sandboxed": {"manual": "ask", "accept-edits": "show", "bypass": "show"},
    "other": {"manual": "ask", "accept-edits": "ask", "bypass": "show"},
}


def decide(kind: Kind, mode: Mode) -> Decision:
    return TABLE[kind][mode]
