"""skill_view (docs/BEHAVIOUR.md, "Skills"): the SKILL.md of one skill in the session's catalogue, by name."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from .. import frontmatter, skills
from ..contract import Kind, ToolCategory
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


class SkillViewTool(ToolOf[str, None]):
    name: ClassVar[str] = "skill_view"
    category: ClassVar[ToolCategory] = "read"
    description: ClassVar[str] = (
        "Read the full SKILL.md of one project skill listed in the skills catalogue of the instructions. "
        "The argument is the skill's name exactly as listed, not a path."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {"name": {"type": "string", "description": "The skill's name as listed in the catalogue."}}, ["name"]
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "read_only"

    def validate(self, args: dict[str, Any]) -> str:
        reject_unknown(args, {"name"})
        name = require_str(args, "name")
        assert name is not None
        if not frontmatter.valid_name(name):
            raise ArgumentError(f"name {name!r} does not follow the naming rule ({frontmatter.NAME_RULE})")
        return name

    def prepare(self, args: str, ctx: ToolContext) -> Prepared[None]:
        return Prepared(fields=[("Skill", args)])

    def run(self, args: str, ctx: ToolContext, prepared: Prepared[None]) -> ToolResult:
        path = ctx.skills.get(args)
        if path is None:
            # Only the session's catalogue counts: a skill added since is not offered mid-session.
            listed = ", ".join(sorted(ctx.skills)) or "none"
            raise ToolFailure(f"No skill named {args} in this session's catalogue (skills: {listed}).")
        try:
            text = skills.read_skill_file(path)
        except skills.SkillError as exc:
            raise ToolFailure(f"Skill {args} could not be read: {exc.reason}.") from None
        accepted = ctx.skill_digests.get(args)
        if accepted is not None and hashlib.sha256(text.encode("utf-8")).hexdigest() != accepted:
            # Bound to what the person accepted: a changed body is not handed to the model.
            raise ToolFailure(
                f"Skill {args} changed since it was accepted for this session; it was not read. "
                "A new session (/new) shows the skills again."
            )
        return ToolResult(COMPLETED, text)
