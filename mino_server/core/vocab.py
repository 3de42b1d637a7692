"""The core's vocabularies, defined once: each Literal is the type, each tuple the run-time list.

`contract.py` re-exports them with the events and requests that use them; this module is apart so a
front end can read a list (ACP's modes, the eval cases' statuses) before the core has loaded: it
imports nothing but `typing`.
"""

from __future__ import annotations

import typing
from typing import Literal

Mode = Literal["manual", "accept-edits", "bypass", "plan"]
MODES: tuple[Mode, ...] = typing.get_args(Mode)
# What each mode is called where a client shows a name, and what it does (`/mode`, ACP's modes).
MODE_NAMES: dict[Mode, str] = {
    "manual": "Manual",
    "accept-edits": "Accept edits",
    "bypass": "Bypass",
    "plan": "Plan",
}
MODE_HELP: dict[Mode, str] = {
    "manual": "asks before every command, file change and memory save",
    "accept-edits": "runs project file edits and sandboxed commands without asking; asks for the rest",
    "bypass": "runs everything without asking, showing each call",
    "plan": "reads and runs read-only sandboxed commands without asking, refuses every change; "
    "exit_plan_mode asks to carry out the plan",
}
# The mode a session goes back to when the person approves a plan and none was set before plan mode.
MODE_AFTER_PLAN: Mode = "manual"

# How hard a reasoning model is asked to think (config.yaml reasoning_effort; ACP's thought_level).
Effort = Literal["minimal", "low", "medium", "high"]
EFFORTS: tuple[Effort, ...] = typing.get_args(Effort)
# Which API the model server answers (config.yaml wire_api).
WireApi = Literal["responses", "chat"]
WIRE_APIS: tuple[WireApi, ...] = typing.get_args(WireApi)

# The rows of the permission decision table (mino_server/core/decision.py; docs/BEHAVIOUR.md).
# "allowed": a tool config.yaml lets run without asking in accept-edits (an MCP server's `allow`).
# "plan_exit": exit_plan_mode, the person's yes to a plan: asked in every mode.
Kind = Literal["read_only", "project_write", "sandboxed", "other", "allowed", "plan_exit"]
KINDS: tuple[Kind, ...] = typing.get_args(Kind)

# run: quietly; ask: the person answers first; show: runs without asking, shown; refuse: not run and
# not asked (plan mode, or a deny rule), the model is told why.
Decision = Literal["run", "ask", "show", "refuse"]
# The answers to an approval besides yes and no: keep a rule (core/rules.py) and answer with it.
Always = Literal["allow_always", "reject_always"]
ALLOW_ALWAYS: Always = "allow_always"
REJECT_ALWAYS: Always = "reject_always"
# A remembered decision (core/rules.py): what it covers and what it decides.
RuleKind = Literal["bash", "mcp", "write"]
RULE_KINDS: tuple[RuleKind, ...] = typing.get_args(RuleKind)
Effect = Literal["allow", "deny"]
EFFECTS: tuple[Effect, ...] = typing.get_args(Effect)

# What a tool does, as a client groups tool calls (an icon, a title): each tool names its own
# (`category` on its class). The values are the Agent Client Protocol's tool kinds.
ToolCategory = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
TOOL_CATEGORIES: tuple[ToolCategory, ...] = typing.get_args(ToolCategory)

ToolStatus = Literal["completed", "denied", "failed", "invalid_arguments", "unknown"]
TOOL_STATUSES: tuple[ToolStatus, ...] = typing.get_args(ToolStatus)
COMPLETED: ToolStatus = "completed"
DENIED: ToolStatus = "denied"
FAILED: ToolStatus = "failed"
INVALID_ARGUMENTS: ToolStatus = "invalid_arguments"
UNKNOWN: ToolStatus = "unknown"

# Something missing that fails every turn before a request is sent (contract.SetupProblem).
SetupKind = Literal["no-api-key"]

TurnStatus = Literal["completed", "limit", "interrupted", "failed"]
TURN_STATUSES: tuple[TurnStatus, ...] = typing.get_args(TurnStatus)

McpState = Literal["starting", "ready", "failed"]  # an MCP server's (core/mcp.py)
Outcome = Literal["approved", "denied", "cancelled"]
Role = Literal["user", "assistant", "tool"]
RewindAction = Literal["restore", "delete", "keep"]  # what /rewind does with a file (core/rewind.py)

MemoryType = Literal["user", "feedback", "project", "reference"]
MEMORY_TYPES: tuple[MemoryType, ...] = typing.get_args(MemoryType)
