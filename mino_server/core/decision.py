"""The permission decision (docs/BEHAVIOUR.md, "Permission decision"): one table, one function."""

from __future__ import annotations

from .contract import MODES as MODES  # re-exported: the table's columns
from .contract import Decision, Kind, Mode

# Rows in the order of docs/BEHAVIOUR.md, "Permission decision": read-only, project file write,
# bash inside the sandbox, anything else, a tool config.yaml allows (an MCP server's `allow`),
# exit_plan_mode.
# Plan mode runs only what cannot change anything (bash: in a sandbox whose whole file system is
# read-only, tools/sandbox.py) and refuses the rest without asking; leaving it is the person's yes.
TABLE: dict[Kind, dict[Mode, Decision]] = {
    "read_only": {"manual": "run", "accept-edits": "run", "bypass": "run", "plan": "run"},
    "project_write": {"manual": "ask", "accept-edits": "show", "bypass": "show", "plan": "refuse"},
    "sandboxed": {"manual": "ask", "accept-edits": "show", "bypass": "show", "plan": "show"},
    "other": {"manual": "ask", "accept-edits": "ask", "bypass": "show", "plan": "refuse"},
    "allowed": {"manual": "ask", "accept-edits": "show", "bypass": "show", "plan": "refuse"},
    "plan_exit": {"manual": "ask", "accept-edits": "ask", "bypass": "ask", "plan": "ask"},
}


def decide(kind: Kind, mode: Mode) -> Decision:
    return TABLE[kind][mode]


# The modes where remembered decisions (core/rules.py) count: bypass needs none; a mode that must
# not let allow rules run anything (planning) leaves itself out of ALLOW_RULE_MODES.
ALLOW_RULE_MODES: tuple[Mode, ...] = ("manual", "accept-edits")
DENY_RULE_MODES: tuple[Mode, ...] = ("manual", "accept-edits")
