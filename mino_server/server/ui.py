"""The core's UI interface (mino_server/core/ui.py) spoken over JSON-RPC to the editor.

It knows the server only through `Editor` below (app.MinoServer builds it with itself)."""

from __future__ import annotations

from typing import Any, Protocol

from ..core.cancel import CancelToken
from ..core.contract import (
    ALLOW_ALWAYS,
    REJECT_ALWAYS,
    Always,
    ApprovalRequest,
    Confirmation,
    Event,
    MemoryProblem,
    ModeChanged,
)
from . import protocol as P


class Editor(Protocol):
    """What ServerUI needs from the server: the client's side of the connection."""

    def notify(self, method: str, params: Any) -> None: ...

    def ask(self, method: str, params: dict[str, Any], cancel: CancelToken | None) -> Any:
        """A request to the client; its result, or None on error, cancel or exit."""
        ...

    def show_message(self, kind: int, text: str) -> None: ...

    def log_message(self, text: str, kind: int = ...) -> None: ...

    def state_changed(self, force: bool = False) -> None: ...


class ServerUI:
    def __init__(self, server: Editor) -> None:
        self.server = server

    def event(self, event: Event) -> None:
        self.server.notify("mino/event", P.dump(event))
        if isinstance(event, ModeChanged):  # an approved plan ended plan mode: the mode picker follows now
            self.server.state_changed()

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool | Always:
        answer = self.server.ask("mino/approve", P.dump(request), cancel)  # the core's question, as it is
        # Only an explicit yes approves: an error, a cancel or a malformed answer has denied.
        approved = isinstance(answer, dict) and answer.get("approved") is True
        if request.always is not None and isinstance(answer, dict) and answer.get("always") is True:
            return ALLOW_ALWAYS if approved else REJECT_ALWAYS
        return approved

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        kind = question.kind
        if kind not in P.CONFIRM_KINDS:
            self.server.log_message(f"unexpected confirmation kind {kind!r}; not asked")
            return False
        params = P.ConfirmParams(
            kind=kind,
            sessionId=question.session_id,
            message=question.message,
            diffs=question.diffs,
            files=list(question.files) or None,
        )
        answer = self.server.ask("mino/confirm", P.dump(params), cancel)
        return isinstance(answer, dict) and answer.get("confirmed") is True

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        from ..core.memory import format_problems

        lines = format_problems(directory, [(p.file, p.reason) for p in problems])
        if lines:
            self.server.show_message(P.MESSAGE_WARNING, "\n".join(lines))
