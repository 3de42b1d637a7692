"""One ACP session as `mino --acp` holds it: its conversation, the turn running in it, and the
core's UI port for it (events become `session/update`, questions `session/request_permission`).

It knows the connection (app.AcpAgent) only through `Agent` below. A capability the client offers
for a session's tools (ACP's fs/read_text_file: a core/tools/project_files.ProjectFiles that asks
the client) belongs here too, beside the UI that asks it the session's questions.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.cancel import CancelToken
from ..jsonrpc import BUSY, Cancels, RpcError
from . import mapping as M

if TYPE_CHECKING:
    from ..core.contract import ApprovalRequest, Confirmation, Event
    from ..core.conversation import Conversation

log = logging.getLogger("mino.acp")


class Agent(Protocol):
    """What a session needs of the connection (app.AcpAgent)."""

    cancels: Cancels

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    def ask(self, method: str, params: dict[str, Any], cancel: CancelToken | None) -> Any:
        """A request to the client; its result, or None on an error answer, cancel or exit."""
        ...


class AcpSession:
    """One ACP session: a conversation, its UI, and the turn (or command) running in it."""

    def __init__(self, agent: Agent, conversation: Conversation, ui: SessionUI) -> None:
        self.agent = agent
        self.conversation = conversation
        self.ui = ui
        if conversation.session_id is None:  # made once session/new or session/load selected one
            raise ValueError("an ACP session needs a conversation with a selected session")
        self.id: str = conversation.session_id
        self._running = threading.Lock()
        self.cancel: CancelToken | None = None

    def begin(self) -> CancelToken:
        from ..core.words import TURN_RUNNING

        if not self._running.acquire(blocking=False):
            raise RpcError(BUSY, "busy", {"detail": TURN_RUNNING, "running": "session/prompt"})
        self.cancel = self.agent.cancels.start(self.id)
        return self.cancel

    def end(self) -> None:
        self.agent.cancels.end(self.id, self.cancel)
        self.cancel = None
        self._running.release()

    @property
    def busy(self) -> bool:
        return self._running.locked()

    def close(self) -> None:
        try:
            self.conversation.close()
        except Exception:
            log.exception("closing session %s failed", self.id)


class SessionUI:
    """The core's UI port for one ACP session: events become session/update, questions become
    session/request_permission."""

    def __init__(self, agent: Agent, workdir: Path) -> None:
        self.agent = agent
        self.workdir = str(workdir)
        self.session_id: str | None = None  # known once the conversation has its session
        self._announced: set[str] = set()  # tool calls of this session the client was shown

    def update(self, update: dict[str, Any]) -> None:
        if self.session_id is not None:
            self.agent.notify("session/update", {"sessionId": self.session_id, "update": update})

    # ---- the UI protocol -------------------------------------------------------------------------
    def event(self, event: Event) -> None:
        from ..core.contract import ApprovalResolved, Notice, TextDelta, ToolCall, ToolResultEvent, TurnEnd

        if isinstance(event, TextDelta):
            self.update(M.text_chunk(event.text))
        elif isinstance(event, ToolCall):
            self._announced.add(event.callId)
            self.update(
                M.tool_call_start(
                    event.callId, event.tool, event.fields, event.warning, self.workdir, event.diff
                )
            )
            if event.decision != "ask":
                self.update(M.in_progress(event.callId))
        elif isinstance(event, ApprovalResolved):
            if event.outcome == "approved":
                self.update(M.in_progress(event.callId))
        elif isinstance(event, ToolResultEvent):
            announced = event.callId in self._announced
            self._announced.discard(event.callId)
            self.update(M.tool_call_result(event.callId, event.tool, event.status, event.text, announced))
        elif isinstance(event, Notice):
            self.update(M.text_chunk(f"\n{event.text}\n"))
        elif isinstance(event, TurnEnd):
            self._announced.clear()
        # AssistantMessage repeats the deltas already sent; usage has no stable ACP update.

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        if self.session_id is None:
            return False
        params = {
            "sessionId": self.session_id,
            "toolCall": M.permission_tool_call(
                request.callId, request.tool, request.fields, request.warning, request.diff, request.question
            ),
            "options": M.PERMISSION_OPTIONS,
        }
        return M.granted(self.agent.ask("session/request_permission", params, cancel))

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        params = {
            "sessionId": question.session_id,
            "toolCall": M.confirm_tool_call(question),
            "options": M.PERMISSION_OPTIONS,
        }
        return M.granted(self.agent.ask("session/request_permission", params, cancel))

    def memory_problems(self, directory: str, problems: list[Any]) -> None:
        lines = [f"Some memory files in {directory} were not loaded:"]
        lines += [f"  {p.file}: {p.reason}" for p in problems]
        self.update(M.text_chunk("\n".join(lines) + "\n\n"))
