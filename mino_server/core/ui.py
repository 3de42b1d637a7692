"""The small interface between the core and a front end (CLI, editor server, eval runner).

The core never prints and never reads a terminal: it sends events, asks for approval and asks
for confirmation through this interface. Events are plain dicts shaped like PROTOCOL.md's
`mino/event` params ({"turnId", "type", ...}).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .cancel import CancelToken

APPROVAL_QUESTION = "Approve this operation?"
TURN_RUNNING = "A turn is running; wait for it to end or interrupt it first."


@dataclass(frozen=True)
class ApprovalRequest:
    turn_id: str
    call_id: str
    tool: str
    fields: list[tuple[str, str]]  # (label, value) — values already escaped for display
    warning: str | None
    workdir: str


class UI(Protocol):
    def event(self, event: dict[str, Any]) -> None:
        """A turn event: text_delta, assistant_message, tool_call, tool_result, approval_resolved, notice, turn_end."""

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        """Ask the person; False on no, on cancel, on error and when no person can answer."""

    def confirm(self, kind: str, session_id: str, message: str) -> bool:
        """A yes/no confirmation outside a turn (kind "recovery"); False when no person can answer."""

    def memory_problems(self, directory: str, problems: list[tuple[str, str]]) -> None:
        """Memory files that were not loaded, as (file name, reason)."""
