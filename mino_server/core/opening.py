"""Choosing and opening a conversation's session: the start-up table's pick restored, a new
session, /resume, /clear, /sessions and who else has a session open (docs/BEHAVIOUR.md, "Start-up
selection", "Sessions"). startup.py decides the pick and recovers a log; this module opens the
session and makes it the conversation's active one.

Functions of the conversation, as rewind.py's are: the conversation keeps the session it holds
(its log and claim, `activate`, `close`); these choose which one that is. They see it as a
`SessionHolder`, so this module does not import conversation.py (which calls `at_startup`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from . import startup
from .config import Config
from .contract import OpenElsewhere
from .errors import (
    CommandError,
    RecoveryRefused,
    SelectionError,
    SessionOpenElsewhere,
    StorageError,
    StoreLocked,
)
from .sessions.log import LogError, SessionLog
from .sessions.store import ID_RE, SessionClaim, SessionInfo, SessionInUse, SessionStore
from .store import Store
from .ui import UI
from .words import NO_SESSION


class SessionHolder(Protocol):
    """What choosing a session needs of a conversation (conversation.py)."""

    store: Store
    sessions: SessionStore
    config: Config
    workdir: Path
    ui: UI
    log: SessionLog | None
    claim: SessionClaim | None
    restore_problem: str | None

    def check_idle(self) -> None: ...

    def activate(self, log: SessionLog, claim: SessionClaim | None) -> None: ...

    def drop_checkpoints(self) -> None: ...


def at_startup(
    conv: SessionHolder, wanted: str | None, wait_s: float
) -> tuple[list[str], OpenElsewhere | None]:
    """The start-up table's pick (startup.select), restored; notices and who has the session
    the table picked when a new one was started instead."""
    pick = startup.select(conv.store, conv.workdir, wanted, wait_s, lambda: new_session_locked(conv))
    if pick.problem is not None:
        conv.restore_problem = pick.problem
    if pick.session_id is None:
        return [], pick.elsewhere
    return _restore(conv, pick.session_id, pick.claim, pick.what, pick.save), None


def _restore(conv: SessionHolder, sid: str, claim: SessionClaim | None, what: str, save: bool) -> list[str]:
    """Load, recover and activate `sid` at start-up; a log that cannot be loaded is the restore problem."""
    try:
        log = conv.sessions.open_log(sid)
    except LogError as exc:
        conv.store.release(claim)
        conv.restore_problem = f"{what} cannot be loaded: {exc}"
        return []
    with _dropped_on_failure(conv, claim, log):
        notices = startup.recover(log, conv.ui) + startup.image_notices(conv.config.home, log)
        if save:
            with conv.store.locked():
                conv.sessions.save_selection(sid)
    conv.activate(log, claim)
    return notices


@contextlib.contextmanager
def _dropped_on_failure(
    conv: SessionHolder, claim: SessionClaim | None, log: SessionLog | None = None
) -> Iterator[None]:
    """Whatever fails in the block closes `log` and releases `claim`: a session that does not
    become the active one is not left open, and other conversations may have it."""
    try:
        yield
    except BaseException:
        if log is not None:
            log.close()
        conv.store.release(claim)
        raise


@contextlib.contextmanager
def _command_lock(conv: SessionHolder) -> Iterator[None]:
    """The store lock for a command: if it stays taken, the command is refused and nothing changed."""
    try:
        with conv.store.locked():
            yield
    except StoreLocked as exc:
        raise CommandError(str(exc)) from None


def new_session(conv: SessionHolder, select: bool = True) -> str:
    """A new session; `select=False` leaves the selection (active-session.json) as it is (`mino -p`)."""
    conv.check_idle()
    with _command_lock(conv):
        return new_session_locked(conv, select)


def new_session_locked(conv: SessionHolder, select: bool = True) -> str:
    sid = conv.sessions.create()
    claim = conv.store.claim(sid, str(conv.workdir))
    with _dropped_on_failure(conv, claim):
        log = conv.sessions.open_log(sid)
    with _dropped_on_failure(conv, claim, log):
        if select:
            conv.sessions.save_selection(sid)  # saved before the new selection is shown
    conv.activate(log, claim)
    return sid


def resume(conv: SessionHolder, session_id: str, select: bool = True) -> list[str]:
    """Switch to a complete, existing session ID. Raises CommandError (SessionOpenElsewhere when
    another conversation has it open); the selection stays on failure, and with `select=False`
    (`mino -p --resume`) on success too."""
    conv.check_idle()
    if not ID_RE.fullmatch(session_id):
        raise CommandError(
            f"Not a complete session ID: {session_id!r}. Session IDs are 32 lowercase hexadecimal "
            "characters; use /sessions to list them."
        )
    with _command_lock(conv):
        if not conv.sessions.exists(session_id):
            check_not_elsewhere(conv, session_id)  # "in use" comes before every other refusal
            raise CommandError(f"No session with ID {session_id}. Use /sessions to list them.")
        if conv.log is not None and conv.log.id == session_id:
            return []
        try:
            claim = conv.store.claim(session_id, str(conv.workdir))
        except SessionInUse as exc:
            raise SessionOpenElsewhere(startup.elsewhere(exc.session_id, exc.holder)) from None
    # Loading and the recovery question run outside the store lock (nobody waits on a person),
    # under this conversation's claim: no other conversation can open the session meanwhile.
    with _dropped_on_failure(conv, claim):
        try:
            log = conv.sessions.open_log(session_id)
        except LogError as exc:
            raise CommandError(f"Cannot resume session {session_id}: {exc}") from None
    with _dropped_on_failure(conv, claim, log):
        try:
            notices = startup.recover(log, conv.ui) + startup.image_notices(conv.config.home, log)
        except RecoveryRefused as exc:
            raise CommandError(f"{exc} The selection is unchanged.") from None
        if select:
            with _command_lock(conv):
                conv.sessions.save_selection(session_id)
    conv.activate(log, claim)
    return notices


def clear(conv: SessionHolder, typed_id: str | None) -> bool:
    """Clear the current session when `typed_id`, trimmed, equals its ID exactly."""
    conv.check_idle()
    if conv.log is None:
        raise CommandError(NO_SESSION)
    sid = conv.log.id
    check_not_elsewhere(conv, sid)  # never: this conversation has it open (kept as the rule's check)
    if typed_id is None or typed_id.strip() != sid:
        return False
    with _command_lock(conv):
        conv.sessions.clear(sid)
        from . import checkpoints

        conv.drop_checkpoints()
        checkpoints.remove(conv.config.home, sid)  # the files' earlier states go with the history
        from . import images

        images.remove(conv.config.home, sid)  # and so do its messages' images
        try:
            selected = conv.sessions.read_selection()
        except SelectionError:
            selected = None
        if selected != sid:  # the selection names the session most recently cleared
            conv.sessions.save_selection(sid)
        conv.store.changed()
    conv.log.close()
    conv.log = None
    try:
        conv.activate(conv.sessions.open_log(sid), conv.claim)
    except LogError as exc:
        raise StorageError(f"Session {sid} was cleared but could not be reopened: {exc}") from None
    return True


def open_elsewhere(conv: SessionHolder, session_id: str) -> OpenElsewhere | None:
    """Who has `session_id` open, when it is not this conversation."""
    with _command_lock(conv):
        holder = conv.store.holder(session_id)
    if holder is None or (holder.claim is not None and holder.claim is conv.claim):
        return None
    return startup.elsewhere(session_id, holder)


def check_not_elsewhere(conv: SessionHolder, session_id: str) -> None:
    other = open_elsewhere(conv, session_id)
    if other is not None:
        raise SessionOpenElsewhere(other)


def list_sessions(conv: SessionHolder) -> list[tuple[SessionInfo, OpenElsewhere | None]]:
    """Every session, newest first, with who else has it open (None: nobody, or this conversation)."""
    with _command_lock(conv):
        sessions = conv.sessions.list()
        holders = conv.store.holders()
    out = []
    for info in sessions:
        holder = holders.get(info.id)
        mine = holder is not None and holder.claim is not None and holder.claim is conv.claim
        out.append((info, startup.elsewhere(info.id, holder) if holder is not None and not mine else None))
    return out
