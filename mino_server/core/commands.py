"""Slash commands: one table (`COMMANDS`) for every front end.

See docs/BEHAVIOUR.md, "Slash commands". A command is one `cmd_NAME` function and one row: the CLI's
and the editor server's /help, the editor server's "must run alone" rule, and what an ACP client is
offered (`available_commands_update`, its /help) all derive from the row.

Commands are recognised before anything reaches the model; they are never saved as user messages
and never sent. Unknown slash commands are errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from . import opening
from .cancel import CancelToken
from .contract import MODE_HELP, MODES
from .conversation import Conversation
from .errors import CommandError, StorageError
from .values import Frozen, Mutable, frozen, mutable
from .words import (
    COMPACT_RUNNING,
    REWIND_RUNNING,
    SESSION_CHANGING,
    mode_line,
    open_elsewhere_mark,
    session_line,
)

CLEAR_QUESTION = (
    "Clear this session's saved history? This does not undo executed commands or delete recovery copies "
    "or manual backups."
)
CLEAR_PROMPT = "Type the complete session ID to clear it: "
NOT_CLEARED = "Session was not cleared."
NOTHING_TO_CLEAR = "No session is selected, so there is nothing to clear."


@mutable
class CommandResult(Mutable):
    stop: bool = False  # storage failed: the chat stops


def is_command(line: str) -> bool:
    return line.lstrip().startswith("/")


def utc(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def run_command(
    conversation: Conversation,
    line: str,
    out: Callable[[str], None],
    ask_text: Callable[[str], str | None],
    cancel: CancelToken | None = None,
) -> CommandResult:
    """Run one slash-command line, writing what it shows through `out`."""
    parts = line.strip().split()
    name, args = parts[0], parts[1:]
    try:
        command = COMMANDS.get(name)
        if command is None:
            out(f"Unknown command: {name}. Type /help for the list of commands.")
            return CommandResult()
        command.run(conversation, args, out, ask_text, cancel or CancelToken())
    except CommandError as exc:
        out(str(exc))
    except StorageError as exc:
        conversation.stopped = str(exc)
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
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    for line in HELP:
        out(line)


def cmd_new(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/new", args)
    sid = opening.new_session(conversation)
    out(session_line(sid))
    out(mode_line(conversation.mode))


def cmd_resume(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    if len(args) != 1:
        raise CommandError("Usage: /resume <id> — the complete 32-character session ID (see /sessions).")
    for notice in opening.resume(conversation, args[0]):
        out(notice)
    out(session_line(conversation.session_id or ""))
    out(mode_line(conversation.mode))


def cmd_sessions(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/sessions", args)
    sessions = opening.list_sessions(conversation)
    if not sessions:
        out("No sessions yet.")
        return
    for s, other in sessions:
        mark = "*" if s.id == conversation.session_id else " "
        out(f"{mark} {s.id}  {utc(s.mtime)}" + (open_elsewhere_mark(other) if other else ""))


def cmd_clear(
    conversation: Conversation,
    args: list[str],
    out: Callable[[str], None],
    ask_text: Callable[[str], str | None],
    cancel: CancelToken,
) -> None:
    _no_args("/clear", args)
    conversation.check_idle()  # before the question, not after the answer
    sid = conversation.session_id
    if sid is None:
        raise CommandError(NOTHING_TO_CLEAR)
    out("")
    out(session_line(sid))
    out(CLEAR_QUESTION)
    typed = ask_text(CLEAR_PROMPT)
    if typed is None:
        out(NOT_CLEARED + " (Clearing needs the ID typed by a person at an interactive terminal.)")
        return
    if opening.clear(conversation, typed):
        out(f"Cleared session: {sid}")
    else:
        out(NOT_CLEARED)


def cmd_mode(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    if len(args) > 1:
        raise CommandError(f"Usage: /mode [NAME] — one of {', '.join(MODES)}.")
    if args:
        conversation.set_mode(args[0])
        out(mode_line(conversation.mode))
        return
    out(mode_line(conversation.mode))
    for m in MODES:
        out(f"  {m}: {MODE_HELP[m]}")


def cmd_compact(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/compact", args)
    _done, message = conversation.compact(cancel)
    out(message)


def cmd_rewind(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    """/rewind lists the turns that changed files; /rewind N takes back turn N and later (docs/BEHAVIOUR.md, "Rewind")."""
    from . import checkpoints, rewind
    from .words import NOTHING_TO_REWIND, checkpoint_size_line, rewind_turn_line

    if len(args) > 1 or (args and not (args[0].isascii() and args[0].isdigit())):
        raise CommandError("Usage: /rewind [N] — N is a turn's number from the /rewind list.")
    conversation.check_idle()
    if conversation.log is None:
        raise CommandError("No session is selected, so there is nothing to rewind.")
    sid = conversation.log.id
    if args:
        rewind.rewind(conversation, int(args[0]), cancel, out)
        return
    turns = rewind.checkpoint_turns(conversation)
    if not turns:
        out(NOTHING_TO_REWIND)
    for t in turns:
        out(rewind_turn_line(t.n, t.at, len(t.files), t.text, t.bash))
    size = checkpoints.size_of(conversation.config.home, sid)
    if size:
        out(checkpoint_size_line(size, str(checkpoints.folder(conversation.config.home, sid))))


@frozen
class InThreads(Frozen):
    """How a client whose threads are sessions (ACP) offers a command: its /help line, and the
    command in its list (`description`, `hint` for the input). `rank` orders that list."""

    usage: str
    help: str
    description: str
    rank: int
    hint: str | None = None


@frozen
class Command(Frozen):
    name: str  # with its slash: "/mode"
    usage: str  # the /help column: "/mode [NAME]"
    help: str
    run: Handler
    # It must run alone in an editor connection: what another request is told while it runs (busy),
    # and whether the editor shows it as busy (State.busy) meanwhile.
    alone: str | None = None
    shows_busy: bool = False
    # It waits on the model: a front end runs it where a cancel reaches it (the CLI: on a worker,
    # like a turn, so Ctrl-C cancels it).
    waits_on_model: bool = False
    # A client whose threads are sessions (ACP): how it is offered there, or, when its threads do it
    # (a new thread, the thread history), the sentence it answers instead.
    threads: InThreads | None = None
    instead: str | None = None


def cmd_mcp(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    _no_args("/mcp", args)
    from .mcp import status_lines

    for line in status_lines(conversation.mcp):
        out(line)


def cmd_rules(
    conversation: Conversation, args: list[str], out: Callable[[str], None], ask: object, cancel: CancelToken
) -> None:
    from .words import NO_RULES, rule_line

    store = conversation.store.rules
    if args and args[0] == "delete" and len(args) == 2 and args[1].isdigit():
        rules, _ = store.load()
        n = int(args[1])
        if not 1 <= n <= len(rules):
            raise CommandError(f"There is no rule {n}; /rules lists them.")
        chosen = rules[n - 1]
        try:
            store.delete(chosen.id)
        except OSError as exc:
            raise CommandError(f"The rule was not deleted: {exc.strerror or exc}.") from None
        out(f"Deleted: {rule_line(n, chosen.effect, chosen.text, chosen.project)}")
        return
    if args:
        raise CommandError("Usage: /rules, or /rules delete N (N from the list).")
    rules, problems = store.load()
    for line in problems:
        out(line)
    if not rules:
        out(NO_RULES)
    for n, rule in enumerate(rules, 1):
        out(rule_line(n, rule.effect, rule.text, rule.project))


COMMAND_TABLE: tuple[Command, ...] = (
    Command(
        "/new",
        "/new",
        "start a new session and select it",
        cmd_new,
        alone=SESSION_CHANGING,
        instead="In an editor, start a new thread instead of /new: each thread is its own Mino session.",
    ),
    Command(
        "/resume",
        "/resume <id>",
        "select the session with this complete 32-character ID",
        cmd_resume,
        alone=SESSION_CHANGING,
        instead="In an editor, open the session from the thread history instead of /resume.",
    ),
    Command(
        "/sessions",
        "/sessions",
        "list sessions, newest first (* marks the current one)",
        cmd_sessions,
        threads=InThreads(
            "/sessions",
            "list sessions, newest first (* marks this one)",
            "List Mino's sessions, newest first (* marks this one)",
            rank=3,
        ),
    ),
    Command(
        "/clear",
        "/clear",
        "clear the current session's saved history (asks for its complete ID)",
        cmd_clear,
        alone=SESSION_CHANGING,
        threads=InThreads(
            "/clear ID",
            "clear this session's saved history (type its complete 32-character ID)",
            "Clear this session's saved history (type its complete ID)",
            rank=5,
            hint="the complete session ID",
        ),
    ),
    Command(
        "/mode",
        "/mode [NAME]",
        f"show or set the permission mode: {', '.join(MODES)}",
        cmd_mode,
        threads=InThreads(
            "/mode [NAME]",
            f"show or set the permission mode: {', '.join(MODES)}",
            f"Show or set the permission mode: {', '.join(MODES)}",
            rank=2,
            hint="mode name (optional)",
        ),
    ),
    Command(
        "/compact",
        "/compact",
        "summarise older history to save context",
        cmd_compact,
        alone=COMPACT_RUNNING,
        shows_busy=True,
        waits_on_model=True,
        threads=InThreads(
            "/compact",
            "summarise older history to save context",
            "Summarise older history to save context",
            rank=1,
        ),
    ),
    Command(
        "/rewind",
        "/rewind [N]",
        "list the turns that changed files, or take back turn N and later (asks first)",
        cmd_rewind,
        alone=REWIND_RUNNING,
        threads=InThreads(
            "/rewind [N]",
            "list the turns that changed files, or take back turn N and later (asks first)",
            "List the turns that changed files, or take back turn N and later (asks first)",
            rank=6,
            hint="turn number (optional)",
        ),
    ),
    Command(
        "/mcp",
        "/mcp",
        "list the MCP servers with their state and tools",
        cmd_mcp,
        threads=InThreads(
            "/mcp",
            "list the MCP servers with their state and tools",
            "List the MCP servers and their tools",
            rank=7,
        ),
    ),
    Command(
        "/rules",
        "/rules",
        "list the remembered decisions (always answers); /rules delete N removes one",
        cmd_rules,
        threads=InThreads(
            "/rules [delete N]",
            "list the remembered decisions (always answers), or delete rule N",
            "List the remembered decisions, or delete one",
            rank=8,
            hint="delete N (optional)",
        ),
    ),
    Command(
        "/help",
        "/help",
        "show this list",
        cmd_help,
        threads=InThreads("/help", "show this list", "Show the commands", rank=4),
    ),
)
COMMANDS: dict[str, Command] = {c.name: c for c in COMMAND_TABLE}
# What a client whose threads are sessions offers, in its order.
THREAD_COMMANDS: tuple[Command, ...] = tuple(
    sorted(
        (c for c in COMMAND_TABLE if c.threads is not None), key=lambda c: c.threads.rank if c.threads else 0
    )
)


def _help_line(usage: str, text: str) -> str:
    return f"  {usage:<16}{text}"


HELP = [
    "Commands:",
    *(_help_line(c.usage, c.help) for c in COMMAND_TABLE),
    "Anything else you type is sent to the model. Ctrl-C interrupts a turn; Ctrl-D exits.",
]
THREAD_HELP = [
    "Commands:",
    *(_help_line(c.threads.usage, c.threads.help) for c in THREAD_COMMANDS if c.threads),
    "A new thread in the editor starts a new session; its thread history opens an earlier one.",
]


def command_name(line: str) -> str:
    """The command a line names ("" for a line of blanks)."""
    words = line.split()
    return words[0] if words else ""
