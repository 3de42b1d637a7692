"""What each request of the editor protocol does, and the route table that names it.

A handler is `NAME(server, params, cancel)`: the connection (`Connection`, below: what a handler
may use of app.MinoServer), the parsed params (server/protocol.py) and the request's CancelToken
(None unless the route is cancellable). It runs on a pool worker once start-up is done; app.py
checks each request (phase, params, busy) on the reading thread first, from its `Route`.

Imported on the start-up path (the server answers `initialize` before the core has loaded), so
the core is imported inside the handlers, which run after start-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..core import opening
from ..core.cancel import CancelToken
from ..core.words import COMPACT_RUNNING, REWIND_RUNNING, SESSION_CHANGING, TURN_RUNNING
from . import protocol as P

if TYPE_CHECKING:
    from ..core.conversation import Conversation
    from ..core.images import Image
    from ..core.workspace_files import WorkspaceFiles


class Connection(Protocol):
    """What a handler needs of the connection (app.MinoServer)."""

    @property
    def conversation(self) -> Conversation: ...

    def state(self) -> P.State: ...

    def state_changed(self, force: bool = False) -> None: ...

    def show_message(self, kind: int, text: str) -> None: ...

    def workspace_files(self) -> WorkspaceFiles: ...


# ---- the handlers -------------------------------------------------------------------------------
def state(server: Connection, params: P.Empty, cancel: None) -> P.State:
    return server.state()


def turn(server: Connection, params: P.TurnParams, cancel: CancelToken) -> P.TurnResult:
    from ..core.context import find_mentions, request_of
    from ..core.errors import ContextError

    conversation = server.conversation
    # The editor's items first, then what `@path` in the text names (the same parser as the CLI's).
    items = [request_of(item, f"params.context[{i}]") for i, item in enumerate(params.context or [])]
    try:
        pictures = _images(params.images) if params.images else []
        items += find_mentions(params.text, conversation.workdir, conversation.config.home)
        return conversation.run_turn(params.text, cancel, items, pictures)
    except ContextError as exc:  # checked before anything was sent or logged
        raise P.ProtocolError(P.INVALID_PARAMS, f"Invalid params: {exc}") from None


def _images(items: list[P.ImageItem]) -> list[Image]:
    """The turn's images, checked (core/images.py): the count before any is decoded."""
    from ..core import images

    images.too_many(len(items), f"params.images[{images.MAX_IMAGES}]")
    return [
        images.from_base64(item.data, item.mimeType, item.name or f"image {i + 1}", f"params.images[{i}]")
        for i, item in enumerate(items)
    ]


def command(server: Connection, params: P.CommandParams, cancel: CancelToken) -> P.CommandResult:
    from ..core.commands import run_command

    output: list[str] = []
    run_command(server.conversation, params.line, output.append, lambda prompt: None, cancel)
    server.state_changed()
    return P.CommandResult(output=output, state=server.state())


def sessions_list(server: Connection, params: P.Empty, cancel: None) -> P.SessionList:
    active = server.conversation.session_id
    return P.SessionList(
        sessions=[
            P.SessionInfo(
                id=s.id,
                updatedAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.mtime)),
                active=s.id == active,
                openElsewhere=other is not None,
            )
            for s, other in opening.list_sessions(server.conversation)
        ]
    )


def sessions_new(server: Connection, params: P.Empty, cancel: None) -> P.State:
    opening.new_session(server.conversation)
    server.state_changed()
    return server.state()


def sessions_resume(server: Connection, params: P.ResumeParams, cancel: None) -> P.State:
    for notice in opening.resume(server.conversation, params.id):
        server.show_message(P.MESSAGE_WARNING, notice)
    server.state_changed()
    return server.state()


def sessions_clear(server: Connection, params: P.ClearParams, cancel: None) -> P.ClearResult:
    from ..core.commands import NOTHING_TO_CLEAR
    from ..core.errors import CommandError

    opening.check_not_elsewhere(server.conversation, params.id)  # -32006 before any other refusal
    active = server.conversation.session_id
    if active is None:
        raise CommandError(NOTHING_TO_CLEAR)
    if params.id != active:
        raise CommandError(
            f"Only the active session can be cleared; the active session is {active}, not {params.id}."
        )
    cleared = opening.clear(server.conversation, params.typedId)
    if cleared:
        server.state_changed(force=True)  # same ID, but the chat panel must drop its history
    return P.ClearResult(cleared=cleared, state=server.state())


def mode(server: Connection, params: P.ModeParams, cancel: None) -> P.State:
    server.conversation.set_mode(params.mode)
    server.state_changed()
    return server.state()


def reasoning(server: Connection, params: P.ReasoningParams, cancel: None) -> P.State:
    server.conversation.set_reasoning_effort(params.effort)
    server.state_changed()
    return server.state()


def compact(server: Connection, params: P.Empty, cancel: CancelToken) -> P.CompactResult:
    compacted, message = server.conversation.compact(cancel)
    return P.CompactResult(compacted=compacted, message=message)


def files(server: Connection, params: P.FilesParams, cancel: None) -> P.FileList:
    return P.FileList(paths=server.workspace_files().complete(params.prefix, P.MAX_FILE_RESULTS))


def memory_list(server: Connection, params: P.Empty, cancel: None) -> P.MemoryList:
    entries, problems = server.conversation.briefing.memory_snapshot()
    return P.MemoryList(
        dir=str(server.conversation.config.memory_dir),
        memories=[
            P.MemoryInfo(name=e.name, type=e.type, summary=e.summary, details=e.has_details, path=str(e.path))
            for e in entries
        ],
        problems=[P.MemoryProblem(file=f, reason=r) for f, r in problems],
    )


def _rule_list(server: Connection) -> tuple[list[P.RuleInfo], list[str]]:
    rules, problems = server.conversation.store.rules.load()
    infos = [
        P.RuleInfo(id=r.id, kind=r.kind, pattern=r.pattern, effect=r.effect, project=r.project) for r in rules
    ]
    return infos, problems


def rules(server: Connection, params: P.Empty, cancel: None) -> P.RuleList:
    infos, problems = _rule_list(server)
    return P.RuleList(rules=infos, problems=problems)


def rules_delete(server: Connection, params: P.RuleDeleteParams, cancel: None) -> P.RuleDeleteResult:
    try:
        deleted = server.conversation.store.rules.delete(params.id)
    except OSError as exc:
        from ..core.errors import CommandError

        raise CommandError(f"The rule was not deleted: {exc.strerror or exc}.") from None
    infos, _ = _rule_list(server)
    return P.RuleDeleteResult(deleted=deleted is not None, rules=infos)


def checkpoints(server: Connection, params: P.Empty, cancel: None) -> P.Checkpoints:
    from ..core.rewind import checkpoint_turns

    return P.Checkpoints(turns=checkpoint_turns(server.conversation))


def rewind(server: Connection, params: P.RewindParams, cancel: CancelToken) -> P.RewindResult:
    from ..core.errors import CommandError
    from ..core.rewind import rewind_turn

    try:
        done = rewind_turn(server.conversation, params.turnId, cancel)
    except CommandError as exc:
        raise P.ProtocolError(P.INVALID_PARAMS, str(exc)) from None
    server.state_changed()
    rewound, kept = done if done is not None else ([], [])
    return P.RewindResult(rewound=rewound, kept=kept, confirmed=done is not None, state=server.state())


def history(server: Connection, params: P.HistoryParams, cancel: None) -> P.History:
    items, more = server.conversation.history(params.before, params.limit)
    return P.History(items=items, more=more)


# ---- the routes -----------------------------------------------------------------------------------
def _never(params: Any) -> str | None:
    return None


def _command_row(params: Any) -> Any:
    """The row of the slash-command table (core/commands.py) a mino/command names, or None."""
    from ..core.commands import COMMANDS, command_name

    return COMMANDS.get(command_name(params.line))


def command_exclusive(params: Any) -> str | None:
    row = _command_row(params)
    return row.alone if row is not None else None


def command_shows_busy(params: Any) -> bool:
    row = _command_row(params)
    return row is not None and row.shows_busy


def _no_slash(params: Any) -> None:
    # Slash commands never reach the model, and only slash commands reach the command table.
    if params.text.lstrip().startswith("/"):
        raise P.ProtocolError(
            P.INVALID_PARAMS,
            "Invalid params: params.text is a slash command; send it with mino/command, not mino/turn.",
        )


def _slash(params: Any) -> None:
    if not params.line.lstrip().startswith("/"):
        raise P.ProtocolError(
            P.INVALID_PARAMS,
            "Invalid params: params.line must start with / (a slash command such as /help); "
            "send other text with mino/turn.",
        )


Handler = Callable[[Connection, Any, Any], Any]


@dataclass(frozen=True)
class Route:
    params: Any
    handler: Handler
    exclusive: Callable[[Any], str | None] = _never  # what is running, when it must run alone
    shows_busy: Callable[[Any], bool] = lambda params: False  # exclusive and State.busy (notified at start)
    cancellable: bool = False
    read_only: bool = False  # still answered after a storage failure stopped the chat
    check: Callable[[Any], None] | None = None  # a check of the params beyond their type


ROUTES: dict[str, Route] = {
    "mino/state": Route(P.Empty, state, read_only=True),
    "mino/turn": Route(
        P.TurnParams, turn, lambda p: TURN_RUNNING, lambda p: True, cancellable=True, check=_no_slash
    ),
    "mino/command": Route(
        P.CommandParams, command, command_exclusive, command_shows_busy, cancellable=True, check=_slash
    ),
    "mino/sessions/list": Route(P.Empty, sessions_list, read_only=True),
    "mino/sessions/new": Route(P.Empty, sessions_new, lambda p: SESSION_CHANGING),
    "mino/sessions/resume": Route(P.ResumeParams, sessions_resume, lambda p: SESSION_CHANGING),
    "mino/sessions/clear": Route(P.ClearParams, sessions_clear, lambda p: SESSION_CHANGING),
    "mino/mode": Route(P.ModeParams, mode),
    "mino/reasoning": Route(P.ReasoningParams, reasoning),
    "mino/compact": Route(P.Empty, compact, lambda p: COMPACT_RUNNING, lambda p: True, cancellable=True),
    "mino/checkpoints": Route(P.Empty, checkpoints, read_only=True),
    "mino/rewind": Route(P.RewindParams, rewind, lambda p: REWIND_RUNNING, cancellable=True),
    "mino/memory/list": Route(P.Empty, memory_list, read_only=True),
    "mino/rules": Route(P.Empty, rules, read_only=True),
    "mino/rules/delete": Route(P.RuleDeleteParams, rules_delete),
    "mino/files": Route(P.FilesParams, files, read_only=True),
    "mino/history": Route(P.HistoryParams, history, read_only=True),
}
# Read-only requests answered before pygls has loaded (app.dispatch): what an editor asks first.
EARLY = frozenset({"mino/state", "mino/history"})
assert set(ROUTES) == {m.name for m in P.CLIENT_REQUESTS}, "protocol.py and ROUTES disagree"
