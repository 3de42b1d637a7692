"""The editor server's start-up: its conversation opened on the store, or why it cannot serve.

Run on the mino-startup thread (app.MinoServer._startup). The outcome is data: app.py keeps the
conversation, or answers every request with -32003 `unavailable` and the reason's kind; the lines
here go to the server's log and, where a person should see them, to `window/showMessage`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.words import restore_problem_line, started_new_session, startup_lines
from . import protocol as P

if TYPE_CHECKING:
    from ..core.conversation import Conversation
    from ..core.ui import UI

SESSION_WAIT_S = 1.0  # a reloaded window's new server may start before the old one has let go of its session


@dataclass
class Opened:
    conversation: Conversation | None = None
    # (data.kind, the line to show, more data) when there is no conversation to serve
    unavailable: tuple[str, str, dict[str, Any]] | None = None
    # (message type, text, shown as window/showMessage rather than only logged), in order
    messages: list[tuple[int, str, bool]] = field(default_factory=list)


def open_conversation(mode: str | None, workdir: Path, ui: UI, session_hint: str | None) -> Opened:
    """Load the configuration, open the store and restore the window's session (or the start-up
    table's pick), asking the recovery question through `ui` when a log needs it."""
    from ..core.config import load_config
    from ..core.conversation import Conversation
    from ..core.errors import ConfigError, RecoveryRefused, StorageError, StoreLocked
    from ..core.store import Store

    try:
        config = load_config(mode=mode)
    except ConfigError as exc:
        return Opened(unavailable=("config", f"Mino cannot start: {exc}", {}))
    conversation = Conversation(Store(config), workdir, ui)
    startup = None
    try:
        startup = conversation.open(session_id=session_hint, wait_s=SESSION_WAIT_S if session_hint else 0.0)
    except StoreLocked as exc:  # only a Mino from before many windows holds it that long
        conversation.close()
        return Opened(unavailable=("storeLocked", str(exc), {"pid": exc.pid} if exc.pid is not None else {}))
    except RecoveryRefused as exc:
        conversation.restore_problem = str(exc)
    except StorageError as exc:  # the store cannot be opened or written: the CLI exits here
        conversation.close()
        return Opened(unavailable=("storage", str(exc), {}))
    opened = Opened(conversation)
    if startup is None:
        opened.messages.append(
            (P.MESSAGE_WARNING, restore_problem_line(conversation.restore_problem or ""), False)
        )
        return opened
    for line in startup_lines(startup):  # what the terminal prints, in the server's log
        opened.messages.append((P.MESSAGE_INFO, line, False))
    if startup.open_elsewhere is not None:  # the window's session is a new one: say why
        opened.messages.append((P.MESSAGE_INFO, started_new_session(startup.open_elsewhere), True))
    for line in startup.notices + startup.warnings:  # e.g. a torn last line was cut off (a copy kept)
        opened.messages.append((P.MESSAGE_WARNING, line, True))
    return opened
