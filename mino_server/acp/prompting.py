"""session/prompt (docs/ACP.md): a turn, or a slash command, in one of the agent's sessions.

Functions of the agent (app.AcpAgent), seen as `Agent` below so this module does not import app.py
(which routes session/prompt here).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from ..core.cancel import CancelToken
from ..jsonrpc import INTERNAL_ERROR, RpcError
from . import mapping as M
from .session import AcpSession


class Agent(Protocol):
    """What a prompt needs of the agent (app.AcpAgent)."""

    def session_for(self, params: dict[str, Any]) -> AcpSession: ...

    def remember(
        self, session_id: str, workdir: Path, title: str | None = None, model: str | None = None
    ) -> None: ...

    def mode_changed(self, session: AcpSession) -> None: ...


def prompt(agent: Agent, params: dict[str, Any]) -> dict[str, Any]:
    session = agent.session_for(params)
    text, requests, images = M.parse_prompt(params.get("prompt"))
    is_command = text.lstrip().startswith("/")
    if is_command and (requests or images):
        raise M.ParamsError(
            "Invalid params: a slash command takes no image, resource or resource_link blocks."
        )
    if not text.strip() and not requests and not images:
        raise M.ParamsError("Invalid params: the prompt has no text and no context.")
    cancel = session.begin()
    try:
        if is_command:
            _command(agent, session, text.strip(), cancel)
            return {"stopReason": "cancelled" if cancel.cancelled else "end_turn"}
        return _turn(agent, session, text, requests, cancel, images)
    finally:
        session.end()


def _turn(
    agent: Agent, session: AcpSession, text: str, requests: list[Any], cancel: CancelToken, images: list[Any]
) -> dict[str, Any]:
    from ..core.attachments import attach
    from ..core.errors import ContextError
    from ..core.sessions import places

    conversation = session.conversation
    try:  # checked before anything is sent or logged; a resource_link to an image file is an image
        items, images = attach(conversation.workdir, conversation.config.home, requests, images)
    except ContextError as exc:
        raise M.ParamsError(f"Invalid params: {exc}") from None
    problem = conversation.config.setup_problem()
    if problem is not None:  # before anything is sent or logged; the client may offer authMethods
        raise RpcError(M.AUTH_REQUIRED, problem.message, {"kind": "setup", "problem": problem.problem})
    known = places.recall(conversation.config.sessions_dir, session.id)
    if known is None or known.title is None:  # the session's first message gives its title
        title = places.title_from(text)
        agent.remember(session.id, conversation.workdir, title or "")
        if title:
            session.ui.update(M.session_info_update(title, M.utc(time.time())))
    result = conversation.run_turn(text, cancel, items, images)
    if result.status == "completed":
        return {"stopReason": "end_turn"}
    if result.status == "limit":
        return {"stopReason": "max_turn_requests"}
    if result.status == "interrupted":
        return {"stopReason": "cancelled"}
    raise RpcError(INTERNAL_ERROR, result.error or "The turn failed.")


def _command(agent: Agent, session: AcpSession, line: str, cancel: CancelToken) -> None:
    from ..core.commands import COMMANDS, NOT_CLEARED, THREAD_HELP, run_command
    from ..core.words import session_line

    conversation = session.conversation
    lines: list[str] = []
    words = line.split()
    name, args = words[0], words[1:]
    mode_before = conversation.mode
    row = COMMANDS.get(name)
    if row is not None and row.instead is not None:  # the editor's threads do it
        lines.append(row.instead)
    elif name == "/help":
        lines.extend(THREAD_HELP if not args else ["/help takes no arguments."])
    elif name == "/clear" and len(args) != 1:
        lines += [session_line(session.id), NOT_CLEARED + f" Type /clear {session.id} to clear it."]
    elif name == "/clear":  # the ID typed after the command is the answer to "type the complete ID"
        run_command(conversation, "/clear", lines.append, lambda prompt: args[0], cancel)
    else:
        run_command(conversation, line, lines.append, lambda prompt: None, cancel)
    text = "\n".join(lines).strip("\n")
    if text:
        session.ui.update(M.text_chunk(text + "\n"))
    if conversation.mode != mode_before:
        agent.mode_changed(session)
