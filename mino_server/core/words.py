"""The sentences a person sees about sessions, modes and start-up, defined once for every front end.

The core returns data (contract.py); front ends word it with these, so the
terminal, the editor and ACP clients say the same thing. Exact strings: docs/BEHAVIOUR.md."""

from __future__ import annotations

from .contract import Mode, OpenElsewhere, Startup

CANNOT_RESTORE = "Cannot restore the active session: "
RESTORE_HINT = (
    "Use /sessions to list the sessions, then /resume <id> to choose one, or /new to start a new one."
)
NO_SESSION = "No session is selected. Use /sessions, then /resume <id>, or /new."
TURN_RUNNING = "A turn is running; wait for it to end or interrupt it first."


def mode_line(mode: Mode) -> str:
    return f"Permission mode: {mode}. Use /mode to change it."


def session_line(session_id: str) -> str:
    return f"Session: {session_id}"


def context_line(input_tokens: int, context_window: int) -> str:
    """How full the context was at the latest request, e.g. "Context: 41% full (52,480 of 128,000 tokens)"."""
    percent = round(100 * input_tokens / context_window) if context_window > 0 else 0
    return f"Context: {percent}% full ({input_tokens:,} of {context_window:,} tokens)"


def restore_problem_line(problem: str) -> str:
    return CANNOT_RESTORE + problem


def _where(other: OpenElsewhere) -> str:
    pid = other.pid if other.pid is not None else "unknown"
    return f"pid {pid}, in {other.workdir or 'an unknown folder'}"


def session_in_use(other: OpenElsewhere) -> str:
    """/resume or /clear of a session another conversation has open: refused, nothing changed."""
    return (
        f"Session {other.session_id} is open in another Mino ({_where(other)}); a session can be open in "
        "one place at a time. Nothing was changed."
    )


def started_new_session(other: OpenElsewhere) -> str:
    """Start-up picked a session another conversation has open, so this one started a new session."""
    return (
        f"Session {other.session_id} is open in another Mino ({_where(other)}), so a new session was started."
    )


def open_elsewhere_mark(other: OpenElsewhere) -> str:
    """What /sessions adds to the line of a session open elsewhere."""
    return f"  (open elsewhere: {_where(other)})"


def startup_lines(startup: Startup) -> list[str]:
    """What the terminal prints at start-up, in order (the editor logs the same lines)."""
    lines = [started_new_session(startup.open_elsewhere)] if startup.open_elsewhere else []
    lines += startup.notices
    if startup.session_id is not None:
        lines += [session_line(startup.session_id), mode_line(startup.mode)]
    else:
        lines += [restore_problem_line(startup.restore_problem or ""), RESTORE_HINT, mode_line(startup.mode)]
    lines.append(startup.sandbox_line)
    lines.extend(startup.warnings)
    if startup.setup is not None:
        lines.append(startup.setup.message)
    return lines
