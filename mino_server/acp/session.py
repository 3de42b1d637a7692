"""One ACP session as `mino --acp` holds it: its conversation, the turn running in it, and the
core's UI port for it (events become `session/update`, questions `session/request_permission`).

It knows the connection (app.AcpAgent) only through `Agent` below. A capability the client offers
for a session's tools belongs here too, beside the UI that asks it the session's questions:
`ClientFiles`, the core's project-files port (core/tools/project_files.py) through ACP's
fs/read_text_file and fs/write_text_file, so the editor's unsaved buffers count and its undo sees
Mino's writes.
"""

from __future__ import annotations

import io
import logging
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from ..core.cancel import CancelToken
from ..jsonrpc import BUSY, Cancels, ClientError, RpcError, one_line
from . import mapping as M

if TYPE_CHECKING:
    from ..core.contract import Always, ApprovalRequest, Confirmation, Event
    from ..core.conversation import Conversation
    from ..core.tools.paths import Target
    from ..core.tools.project_files import BeforeWrite, FileBytes

log = logging.getLogger("mino.acp")


class Unanswered(Exception):
    """A request to the client was given up: the turn was cancelled, or the process is stopping."""


class NotAnswered(Unanswered):
    """A request to the client was given up because it was not answered in the time allowed."""


class Agent(Protocol):
    """What a session needs of the connection (app.AcpAgent)."""

    cancels: Cancels

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    def ask(self, method: str, params: dict[str, Any], cancel: CancelToken | None) -> Any:
        """A request to the client; its result, or None on an error answer, cancel or exit."""
        ...

    def call(
        self, method: str, params: dict[str, Any], cancel: CancelToken | None, timeout: float | None = None
    ) -> Any:
        """A request to the client; its result. ClientError for an error answer, Unanswered on
        cancel or exit, NotAnswered after `timeout` seconds without an answer."""
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
        ui.config_options = self.config_options
        self._running = threading.Lock()
        self.cancel: CancelToken | None = None
        self.closed = False

    def config_options(self) -> list[dict[str, Any]]:
        conversation = self.conversation
        return M.config_options(
            conversation.mode,
            conversation.model,
            conversation.config.model_choices,
            conversation.reasoning_effort,
        )

    def close_when_idle(self, timeout: float) -> bool:
        """Take the session from its turn for good (cancelled by the caller) and close it; False
        when the turn did not end within `timeout` (the session stays as it was)."""
        if not self._running.acquire(timeout=timeout):
            return False
        self.closed = True  # the lock stays taken: a prompt that still finds this session is busy
        self.close()
        return True

    def begin(self) -> CancelToken:
        from ..core.words import TURN_RUNNING

        if not self._running.acquire(blocking=False):
            if self.closed:
                raise RpcError(M.NOT_FOUND, "This session was closed; send session/load or session/resume.")
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
        # The session's config options as they are now (AcpSession.config_options), once it exists.
        self.config_options: Callable[[], list[dict[str, Any]]] | None = None

    def update(self, update: dict[str, Any]) -> None:
        if self.session_id is not None:
            self.agent.notify("session/update", {"sessionId": self.session_id, "update": update})

    # ---- the UI protocol -------------------------------------------------------------------------
    def event(self, event: Event) -> None:
        from ..core.contract import (
            ApprovalResolved,
            ModeChanged,
            Notice,
            TextDelta,
            Thinking,
            ToolCall,
            ToolResultEvent,
            TurnEnd,
            Usage,
        )

        if isinstance(event, TextDelta):
            self.update(M.text_chunk(event.text))
        elif isinstance(event, Thinking):
            self.update(M.thought_chunk(event.text))
        elif isinstance(event, ToolCall):
            self._announced.add(event.callId)
            self.update(
                M.tool_call_start(
                    event.callId,
                    event.tool,
                    event.fields,
                    event.warning,
                    self.workdir,
                    event.diff,
                    event.arguments,
                )
            )
            if event.decision in ("run", "show"):  # asked: after the yes; refused: its result follows
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
        elif isinstance(event, Usage):
            self.update(M.usage_update(event.inputTokens, event.contextWindow))
        elif isinstance(event, TurnEnd):
            self._announced.clear()
        elif isinstance(event, ModeChanged):  # an approved plan ended plan mode: both views of the mode
            self.update(M.current_mode_update(event.mode))
            if self.config_options is not None:
                self.update(M.config_option_update(self.config_options()))
        # AssistantMessage repeats the deltas already sent.

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool | Always:
        if self.session_id is None:
            return False
        always = request.always is not None
        params = {
            "sessionId": self.session_id,
            "toolCall": M.permission_tool_call(
                request.callId,
                request.tool,
                request.fields,
                request.warning,
                request.workdir,
                request.diff,
                request.question,
                request.always,
            ),
            "options": M.PERMISSION_OPTIONS + (M.ALWAYS_OPTIONS if always else []),
        }
        return M.answer(self.agent.ask("session/request_permission", params, cancel), always)

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


class ClientFiles:
    """The project-files port (core/tools/project_files.py) through the client: reads through
    fs/read_text_file when it offers `readTextFile` (so unsaved buffers count), writes through
    fs/write_text_file when it offers `writeTextFile` (so the editor's buffer and undo see them);
    the disk for what it does not offer.

    Mino's own rules stay on the core's side: the path was judged before this sees it, and the file
    is opened on disk first (absent, a folder or a device is decided there, never by the client). A
    write reads the file again through the same way as the approval did and writes nothing unless
    its sha256 is still the approved one. Nothing is cached: every read asks again, so after a bash
    command the tools see what the editor holds then. A client that answers with an error, with
    something other than text, or not within `timeout` seconds (config.yaml client_timeout_s) fails
    the one tool call with a line naming the method; the turn goes on. A write not answered in time
    counts as done when the file on disk now holds exactly the approved bytes (the editor wrote it
    and never said so). The transport bounds an answer's size (32 MiB)."""

    def __init__(self, agent: Agent, ui: SessionUI, reads: bool, writes: bool, timeout: float) -> None:
        self.agent = agent
        self.ui = ui
        self.reads = reads
        self.writes = writes
        self.timeout = timeout

    # ---- the port --------------------------------------------------------------------------------
    def open(self, target: Target) -> BinaryIO | None:
        from ..core.tools.project_files import DISK

        if not self.reads:  # streamed from disk, as read_file reads any file: never loaded whole
            return DISK.open(target)
        found = self.read(target)
        return None if found is None else io.BytesIO(found.data)

    def read(self, target: Target) -> FileBytes | None:
        from ..core.errors import ToolFailure
        from ..core.tools.project_files import DISK, FileBytes

        if not self.reads:
            return DISK.read(target)
        on_disk = DISK.open(target)  # absent, a folder, a device: decided on disk, by Mino
        if on_disk is None:
            return None
        with on_disk:
            mode = stat.S_IMODE(os.fstat(on_disk.fileno()).st_mode) & 0o777
        answer = self._ask("fs/read_text_file", target, {}, "read")
        content = answer.get("content") if isinstance(answer, dict) else None
        if not isinstance(content, str):
            raise ToolFailure(f"The editor's answer for {target.rel} is not text; nothing was read.")
        try:
            return FileBytes(content.encode("utf-8"), mode)
        except UnicodeEncodeError:  # a lone surrogate ("\ud800") in the JSON string
            raise ToolFailure(
                f"The editor's text of {target.rel} is not valid Unicode; nothing was read."
            ) from None

    def write(
        self, target: Target, data: bytes, expected: str | None, before_write: BeforeWrite | None = None
    ) -> str | None:
        from ..core.errors import ToolFailure
        from ..core.tools.project_files import CHANGED_AFTER_APPROVAL, DISK, sha256
        from ..core.words import WROTE_WITHOUT_ANSWER, client_no_answer

        found = self.read(target)  # the same way the approval read it
        if (None if found is None else sha256(found.data)) != expected:
            raise ToolFailure(CHANGED_AFTER_APPROVAL)
        if not self.writes:  # approved against the editor's text, written to disk as it is now
            now = DISK.read(target)
            return DISK.write(target, data, None if now is None else sha256(now.data), before_write)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(
                f"The new content of {target.rel} is not UTF-8 text, which the editor cannot take; "
                "nothing was written."
            ) from None
        if before_write is not None:
            before_write(found)
        try:
            self._ask("fs/write_text_file", target, {"content": text}, "write", late=True)
        except NotAnswered:
            try:
                now = DISK.read(target)
            except ToolFailure:
                now = None
            if now is not None and now.data == data:
                return WROTE_WITHOUT_ANSWER
            raise ToolFailure(
                client_no_answer("fs/write_text_file", self.timeout, target.rel, "nothing was written")
            ) from None
        return None

    # ---- asking the client -----------------------------------------------------------------------
    def _ask(self, method: str, target: Target, params: dict[str, Any], verb: str, late: bool = False) -> Any:
        """The client's answer; ToolFailure for anything else. `late`: NotAnswered is the caller's
        to judge (a write the editor may have done without answering)."""
        from ..core.display import terminal_text
        from ..core.errors import ToolFailure
        from ..core.words import client_no_answer

        sid = self.ui.session_id
        if sid is None:  # the tools run in a session's turn: it has an ID by then
            raise ToolFailure(f"Cannot {verb} {target.rel}: the session is not open.")
        try:
            return self.agent.call(
                method,
                {"sessionId": sid, "path": str(target.path), **params},
                self.agent.cancels.get(sid),
                self.timeout,
            )
        except NotAnswered:
            if late:
                raise
            raise ToolFailure(
                client_no_answer(method, self.timeout, target.rel, "nothing was read")
            ) from None
        except Unanswered:
            after = "; the editor may still write it" if verb == "write" else ""
            raise ToolFailure(
                f"Interrupted while waiting for the editor to {verb} {target.rel}{after}."
            ) from None
        except ClientError as exc:
            why = terminal_text(one_line(exc.message)[:300]) or f"error {exc.code}"
            done = "; nothing was written" if verb == "write" else ""
            raise ToolFailure(f"The editor could not {verb} {target.rel}: {why}{done}.") from None
