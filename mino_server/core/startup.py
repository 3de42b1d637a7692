"""Opening a conversation: the start-up table's pick, recovery of a session log, what the last turn
reported, and the working directory's warnings (docs/BEHAVIOUR.md, "Start-up selection",
"Recovery").

opening.py calls these for a conversation and keeps the result (`at_startup`, `resume`); they hold no
state of their own. What a person is asked goes through the front end's UI (`confirm`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from .contract import Confirmation, ContextUsage, OpenElsewhere
from .errors import RecoveryRefused, SelectionError, StorageError
from .sessions.log import SessionLog
from .sessions.store import ID_RE, Holder, SessionClaim, SessionInUse
from .store import Store
from .ui import UI
from .values import Frozen, frozen

USAGE_TAIL_BYTES = 64 * 1024


@frozen
class Pick(Frozen):
    """What the start-up table chose. `session_id` None: nothing to restore (a new session was
    made, or `problem` says why none could be chosen). `claim`: the session is open here."""

    session_id: str | None = None
    claim: SessionClaim | None = None
    what: str = ""  # how the restore problem names it: "session ID", "the only session ID"
    save: bool = False  # it becomes the selection once restored
    problem: str | None = None
    elsewhere: OpenElsewhere | None = None  # the pick was open elsewhere, so a new session was made


def select(
    store: Store, workdir: Path, wanted: str | None, wait_s: float, new_session: Callable[[], str]
) -> Pick:
    """The start-up table. `wanted`: the session an editor window showed before a reload, waited
    for up to `wait_s`; `new_session` makes and selects one (called under the store lock)."""
    sessions = store.sessions
    if wanted is not None and ID_RE.fullmatch(wanted) and sessions.exists(wanted):
        claim = claim_waiting(store, wanted, workdir, wait_s)
        if claim is not None:  # counts as a resume: it becomes the selection
            return Pick(wanted, claim, f"session {wanted}", save=True)
    with store.locked():  # the table's read and the new session's selection: no race
        listed = sessions.list()
        try:
            selected = sessions.read_selection()
        except SelectionError as exc:
            return Pick(problem=str(exc))
        if selected is None and not listed:
            new_session()
            return Pick()
        if selected is None and len(listed) > 1:
            return Pick(
                problem=f"{len(listed)} sessions exist but none is selected (sessions/active-session.json is missing)"
            )
        if selected is None:
            # The upgrade path: adopt the lone file in place; only active-session.json is added.
            pick, what, save = listed[0].id, f"the only session {listed[0].id}", True
        else:
            pick, what, save = selected, f"session {selected}", False
        claim = None
        if sessions.exists(pick):  # one that does not is the restore problem
            try:
                claim = store.claim(pick, str(workdir))
            except SessionInUse as exc:
                new_session()
                return Pick(elsewhere=elsewhere(exc.session_id, exc.holder))
    return Pick(pick, claim, what, save)


def claim_waiting(store: Store, session_id: str, workdir: Path, wait_s: float) -> SessionClaim | None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return store.claim(session_id, str(workdir))
        except SessionInUse:
            if time.monotonic() >= deadline:
                return None
        time.sleep(0.05)


def elsewhere(session_id: str, holder: Holder) -> OpenElsewhere:
    return OpenElsewhere(session_id=session_id, pid=holder.pid, workdir=holder.workdir)


def recover(log: SessionLog, ui: UI) -> list[str]:
    """Mark unknown results, then ask before the session becomes active (docs/BEHAVIOUR.md,
    "Recovery"); the log's notices. Closes the log on RecoveryRefused and StorageError."""
    try:
        log.recover()
    except OSError as exc:
        log.close()
        raise StorageError(f"Could not write recovery records to session {log.id}: {exc.strerror}") from None
    notices = list(log.notices)
    pending = log.unacknowledged()
    if pending:
        described = []
        for rec in pending:
            call = log.tool_call(rec["call_id"]) or {}
            described.append(f"  {call.get('name', '?')}: {_short(call.get('arguments', ''))}")
        message = (
            f"Session {log.id} has {len(pending)} tool call(s) whose result was never recorded "
            "(Mino stopped while they ran):\n" + "\n".join(described) + "\n"
            "They may or may not have run. Mino never runs a command from history again.\n"
            "Do you understand that the command may have run?"
        )
        if not ui.confirm(Confirmation(kind="recovery", session_id=log.id, message=message)):
            log.close()
            raise RecoveryRefused(
                f"Session {log.id} was not activated: the possible run of its last command was not confirmed."
            )
        try:
            log.append("recovery_ack", call_ids=[r["call_id"] for r in pending])
        except OSError as exc:
            log.close()
            raise StorageError(
                f"Could not save the confirmation in session {log.id}: {exc.strerror}"
            ) from None
    return notices


def recorded_usage(log: SessionLog, context_window: int) -> ContextUsage | None:
    """The usage saved on the session's last turn_end, read from the file's tail.

    A turn ends with its turn_end, so it sits in the last records; a tail without one (a turn
    running, a huge last record) just means unknown."""
    try:
        with open(log.path, "rb") as f:
            f.seek(0, 2)
            start = max(0, f.tell() - USAGE_TAIL_BYTES)
            f.seek(start)
            lines = f.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines[1:] if start else lines):
        if b'"turn_end"' not in line:
            continue
        try:
            usage = json.loads(line).get("usage")
            tokens = usage["input_tokens"]
        except (ValueError, AttributeError, KeyError, TypeError):
            return None
        if type(tokens) is not int or tokens <= 0:
            return None
        return ContextUsage(inputTokens=tokens, contextWindow=context_window)
    return None


def workdir_warnings(workdir: Path, home: Path) -> list[str]:
    """Start-up warnings for a working directory that gives tools more reach than a project should.

    File tools refuse MINO_HOME and the sandbox keeps it read-only or hidden, but a person should still know when their
    settings, sessions and memories sit inside the folder the model works in (Mino started in ~)."""
    warnings = []
    home = home.resolve()
    if workdir == Path(workdir.anchor):
        warnings.append(
            f"Warning: the working directory is {workdir}, the whole file system: tools can read and "
            "(with your approval) change any file in it. Start Mino in a project folder instead."
        )
    if home == workdir or workdir in home.parents:
        warnings.append(
            f"Warning: the working directory {workdir} contains Mino's home {home}. File tools will not "
            "read or write there and sandboxed commands cannot change it, but consider starting Mino in a "
            "project folder."
        )
    return warnings


def _short(text: str, limit: int = 200) -> str:
    """A call's arguments in the recovery question: escaped, cut with a mark saying how much is not shown."""
    from .words import preview_line  # only when a call is described: display is not on start-up's path

    return preview_line(text, limit)


def image_notices(home: Path, log: SessionLog) -> list[str]:
    """A line for each image the session's next request would send whose kept bytes are missing or
    changed (core/images.py). Only a session with an image folder pays for the look: when the whole
    folder is gone, the first request says so instead (Turn's notices)."""
    if not (home / "images" / log.id).is_dir():  # images.folder, without importing it at start-up
        return []
    records = [r for r in log.replay_records() if r["type"] == "user_message" and r.get("images")]
    if not records:
        return []
    from .images import load_problems
    from .words import image_not_sent

    return [image_not_sent(line) for line in load_problems(home, log.id, records)]
