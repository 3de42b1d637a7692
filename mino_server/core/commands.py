"""Slash commands: one implementation for the CLI and the editor server.

See docs/BEHAVIOUR.md, "Slash commands".

Commands are recognised before anything reaches the model; they are never saved as user messages
and never sent. Unknown slash commands are errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .cancel import CancelToken
from .contract import MODES
from .conversation import CommandError, Conversation
from .sessions.store import StorageError
from .values import Mutable
from .words import mode_line, open_elsewhere_mark, session_line

CLEAR_QUESTION = (
    "Clear this session's saved history? This does not undo executed commands or delete recovery copies "
    "or manual backups."
)
CLEAR_PROMPT = "Type the complete session ID to clear it: "
NOT_CLEARED = "Session was not cleared."
NOTHING_TO_CLEAR = "No session is selected, so there is nothing to clear."

MODE_HELP = {
    "manual": "asks before every command, file change and memory save",
    "accept-edits": "runs project file edits and sandboxed commands without asking; asks for the rest",
    "bypass": "runs everything without asking, showing each call",
}

HELP = [
    "Commands:",
    "  /new            start a new session and select it",
    "  /resume <id>    select the session with this complete 32-character ID",
    "  /sessions       list sessions, newest first (* marks the current one)",
    "  /clear          clear the current session's saved history (asks for its complete ID)",
    "  /mode [NAME]    show or set the permission mode: manual, accept-edits, bypass",
    "  /compact        summarise older history to save context",
    "  /help           show this list",
    "Anything else you type is sent to the model. Ctrl-C interrupts a turn; Ctrl-D exits.",
]


@dataclass(eq=False, repr=False)
class CommandResult(Mutable):
    stop: bool = False  # storage failed: the chat stops


def is_command(line: str) -> bool:
    return line.lstrip().startswith("/")


def utc(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def run_command(
    agent: Conversation,
    line: str,
    out: Callable[[str], None],
    ask_text: Callable[[str], str | None],
    cancel: CancelToken | None = None,
) -> CommandResult:
    """Run one slash-command line, writing what it shows through `out`."""
    parts = line.strip().split()
    name, args = parts[0], parts[1:]
    try:
        handler = COMMANDS.get(name)
        if handler is None:
            out(f"Unknown command: {name}. Type /help for the list of commands.")
            return CommandResult()
        handler(agent, args, out, ask_text, cancel or CancelToken())
    except CommandError as exc:
        out(str(exc))
    except StorageError as exc:
        agent.stopped = str(exc)
        out(str(exc))
        return CommandResult(stop=True)
    return CommandResult()


Handler = Callable[
    [Conversation, list[str], Callable[[str], None], Callable[[str], str | None], CancelToken], None
]


def _no_args(name: str, args: list[str]) -> None:
    if args:
        raise CommandError(f"{name} takes no arguments.")


def cmd_help(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    for line in HELP:
        out(line)


def cmd_new(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/new", args)
    sid = agent.new_session()
    out(session_line(sid))
    out(mode_line(agent.mode))


def cmd_resume(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    if len(args) != 1:
        raise CommandError("Usage: /resume <id> — the complete 32-character session ID (see /sessions).")
    for notice in agent.resume(args[0]):
        out(notice)
    out(session_line(agent.session_id or ""))
    out(mode_line(agent.mode))


def cmd_sessions(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/sessions", args)
    sessions = agent.list_sessions()
    if not sessions:
        out("No sessions yet.")
        return
    for s, other in sessions:
        mark = "*" if s.id == agent.session_id else " "
        out(f"{mark} {s.id}  {utc(s.mtime)}" + (open_elsewhere_mark(other) if other else ""))


def cmd_clear(
    agent: Conversation,
    args: list[str],
    out: Callable[[str], None],
    ask_text: Callable[[str], str | None],
    cancel: CancelToken,
) -> None:
    _no_args("/clear", args)
    agent.check_idle()  # before the question, not after the answer
    sid = agent.session_id
    if sid is None:
        raise CommandError(NOTHING_TO_CLEAR)
    out("")
    out(session_line(sid))
    out(CLEAR_QUESTION)
    typed = ask_text(CLEAR_PROMPT)
    if typed is None:
        out(NOT_CLEARED + " (Clearing needs the ID typed by a person at an interactive terminal.)")
        return
    if agent.clear(typed):
        out(f"Cleared session: {sid}")
    else:
        out(NOT_CLEARED)


def cmd_mode(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    if len(args) > 1:
        raise CommandError(f"Usage: /mode [NAME] — one of {', '.join(MODES)}.")
    if args:
        agent.set_mode(args[0])
        out(mode_line(agent.mode))
        return
    out(mode_line(agent.mode))
    for m in MODES:
        out(f"  {m}: {MODE_HELP[m]}")


def cmd_compact(
    agent: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/compact", args)
    _done, message = agent.compact(cancel)
    out(message)


COMMANDS: dict[str, Handler] = {
    "/help": cmd_help,
    "/new": cmd_new,
    "/resume": cmd_resume,
    "/sessions": cmd_sessions,
    "/clear": cmd_clear,
    "/mode": cmd_mode,
    "/compact": cmd_compact,
}
