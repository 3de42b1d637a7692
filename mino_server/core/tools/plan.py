"""exit_plan_mode (docs/BEHAVIOUR.md, "Plan mode"): the model's plan, shown to the person with one
question; yes ends plan mode.

Offered to the model only in plan mode (registry.tool_schemas), so the tool list of every other mode
stays as it was. It asks in every mode (the "plan_exit" row of the decision table): leaving plan mode
is the person's yes, never the model's. Piped input and `mino -p` cannot answer, so they deny.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..contract import PLAN_QUESTION, Kind, Mode, ToolCategory
from .base import (
    COMPLETED,
    ArgumentError,
    Prepared,
    ToolContext,
    ToolFailure,
    ToolOf,
    ToolResult,
    reject_unknown,
    require_str,
    schema,
)

MAX_PLAN_CHARS = 64 * 1024  # a plan is read by a person before answering

# What the model is told (the end of the instructions) while the session is in plan mode.
PLAN_INSTRUCTIONS = (
    "# Plan mode\n"
    "You are in plan mode: you are planning, not changing anything. Explore with read_file, "
    "memory_view, skill_view and read-only bash commands (the sandbox's whole file system is "
    "read-only, the working directory too, and there is no network). Writing files, editing, saving "
    "memories, MCP tools and commands outside the sandbox are refused without asking the user. When "
    "the plan is ready, call exit_plan_mode with it: the user reads it and decides whether you carry "
    "it out. Only the user's yes ends plan mode; typing /mode in your answer does nothing."
)
# A call plan mode does not run: the tool result (the person sees the call and this result).
PLAN_REFUSED = (
    "Plan mode refused this call without asking the user: only reading, read-only commands in the "
    "sandbox and exit_plan_mode run in plan mode. Finish the plan and call exit_plan_mode."
)
NOT_IN_PLAN_MODE = (
    "exit_plan_mode is only for plan mode, and the session is not in plan mode; nothing was asked."
)
PLAN_DENIED = (
    "The user did not approve the plan; the session stays in plan mode and nothing was changed. "
    "Ask the user what to change in the plan."
)


def plan_approved(mode: Mode) -> str:
    return (
        f"The user approved the plan. Plan mode has ended; the permission mode is now {mode}. "
        "Carry out the plan now."
    )


class ExitPlanModeTool(ToolOf[str, None]):
    name: ClassVar[str] = "exit_plan_mode"
    category: ClassVar[ToolCategory] = "think"
    plan_only: ClassVar[bool] = True  # offered to the model in plan mode only
    description: ClassVar[str] = (
        "Plan mode only: present your finished plan to the user and ask to carry it out. The user "
        "sees the plan and answers yes or no. Yes ends plan mode (edits and commands are then "
        "possible, as the user's mode allows) and you carry out the plan in this same turn; no keeps "
        "plan mode: ask the user what to change. Write the plan as short, concrete steps (files to "
        "change, commands to run)."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {"plan": {"type": "string", "description": "The plan, as the user should read it (Markdown)."}},
        ["plan"],
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "plan_exit"

    def validate(self, args: dict[str, Any]) -> str:
        reject_unknown(args, {"plan"})
        plan = require_str(args, "plan") or ""
        if len(plan) > MAX_PLAN_CHARS:
            raise ArgumentError(f"argument 'plan' is over {MAX_PLAN_CHARS} characters; shorten it")
        return plan

    def prepare(self, args: str, ctx: ToolContext) -> Prepared[None]:
        if not ctx.plan or ctx.leave_plan is None:  # nothing to leave: no question for the person
            raise ToolFailure(NOT_IN_PLAN_MODE)
        return Prepared(fields=[("Plan", args)], question=PLAN_QUESTION, denied=PLAN_DENIED)

    def run(self, args: str, ctx: ToolContext, prepared: Prepared[None]) -> ToolResult:
        assert ctx.leave_plan is not None  # prepare() refused otherwise
        return ToolResult(COMPLETED, plan_approved(ctx.leave_plan()))
