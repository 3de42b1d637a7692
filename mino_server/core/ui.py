"""The port between the core and a front end (CLI, editor server, ACP, eval runner).

The core never prints and never reads a terminal: it sends typed events (contract.py), asks for
approval and asks for confirmation through this interface; each front end implements it once.
"""

from __future__ import annotations

from typing import Protocol

from .cancel import CancelToken
from .contract import Always, ApprovalRequest, Confirmation, Event, MemoryProblem


class UI(Protocol):
    def event(self, event: Event) -> None:
        """A turn event (or a notice outside a turn); see contract.Event."""

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool | Always:
        """Ask the person; False on no, on cancel, on error and when no person can answer.
        With `request.always` offered, "allow_always" or "reject_always" also answers yes or no
        and keeps the offered rules."""

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        """A yes/no confirmation (contract.Confirmation), which `cancel` may end; False when no
        person can answer."""

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        """Memory files that were not loaded."""
