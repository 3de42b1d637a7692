"""The port between the core and a front end (CLI, editor server, ACP, eval runner).

The core never prints and never reads a terminal: it sends typed events (contract.py), asks for
approval and asks for confirmation through this interface; each front end implements it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .cancel import CancelToken
from .contract import ApprovalRequest, ConfirmFile, Event, FileDiff, MemoryProblem


class UI(Protocol):
    def event(self, event: Event) -> None:
        """A turn event (or a notice outside a turn); see contract.Event."""

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        """Ask the person; False on no, on cancel, on error and when no person can answer."""

    def confirm(
        self,
        kind: str,
        session_id: str,
        message: str,
        cancel: CancelToken | None = None,
        diffs: list[FileDiff] | None = None,
        files: Sequence[ConfirmFile] = (),
    ) -> bool:
        """A yes/no confirmation: kind "recovery" (outside a turn), "skills" (project skills not
        accepted before, at a session's first turn, which `cancel` may end), "rewind" (/rewind N,
        with the files as they are and as the rewind leaves them in `diffs`, for an editor's diff
        view) or "instructions" (AGENTS.md content not accepted before, at a turn, with `files` in
        full); False when no person can answer."""

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        """Memory files that were not loaded."""
