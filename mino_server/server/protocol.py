"""The Mino editor protocol, defined once: method names, params, results, notifications, State.

Everything the server reads from the client is validated against these classes (`parse`), and
everything it writes is produced from them (`dump`). `docs/PROTOCOL.md` and
`docs/protocol.schema.json` are generated from them:

    python -m mino_server.server.docgen --write    # regenerate them
    python -m mino_server.server.docgen --check    # exit 1 when they are out of date

JSON field names are the attribute names (camelCase, as on the wire). A field marked `optional`
may be absent (it is omitted when None); every other field is always present, `null` included.
Receivers ignore fields they do not know, so adding optional fields never breaks a peer.

This module is imported on the start-up path, so it uses the standard library only.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

from .. import PROTOCOL_VERSION  # noqa: F401  (defined beside the package version: `mino doctor` reads it)
from ..core.contract import dump  # noqa: F401  (the core's: `mino -p`'s stream-json writes the same payloads)
from ..jsonrpc import (  # noqa: F401  (re-exported: the protocol's names for the shared codes)
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REFUSED,
    REQUEST_CANCELLED,
    SESSION_IN_USE,
    STORAGE_FAILED,
    UNAVAILABLE,
    one_line,
)
from ..jsonrpc import RpcError as ProtocolError  # noqa: F401  (the server's name for an error answer)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a message body larger than this is skipped with an error
MAX_HEADER_LINE_BYTES = 8 * 1024
MAX_FILE_RESULTS = 50  # mino/files answers at most this many paths (core/workspace_files.py)

# ---- error codes: the JSON-RPC layer's (mino_server/jsonrpc.py) and this protocol's -32002 -------
NOT_INITIALIZED = -32002

ERROR_CODES: list[tuple[int, str, str]] = [
    (
        PARSE_ERROR,
        "parse error",
        "The message is not valid JSON, or its header has no usable `Content-Length`. Answered with "
        "`id: null`; the server reads on.",
    ),
    (
        INVALID_REQUEST,
        "invalid request",
        "Not a JSON-RPC 2.0 request object (batches are not supported), a body over the size limit "
        "(skipped unread), a second `initialize`, or a request after `shutdown`.",
    ),
    (METHOD_NOT_FOUND, "method not found", "No such method in this protocol version."),
    (
        INVALID_PARAMS,
        "invalid params",
        "The params do not match the method's type; the message names the field and what is wrong.",
    ),
    (
        INTERNAL_ERROR,
        "internal error",
        "A bug in the server: one line here, the traceback on the server's stderr only. Out of file "
        "descriptors: the line a turn ends with too (`Too many open files (...)`; docs/BEHAVIOUR.md).",
    ),
    (
        BUSY,
        "busy",
        'Message `"busy"`. A turn, a compaction or a session change is running; `data.detail` says which '
        "and what to do, `data.running` names the method.",
    ),
    (NOT_INITIALIZED, "not initialized", "A request before `initialize`."),
    (
        UNAVAILABLE,
        "unavailable",
        "The server started but cannot serve: the session store stayed locked (`sessions.lock` held "
        "for more than 10 s, e.g. by a Mino older than protocol version 2, which holds it for its whole "
        'run: `data: {kind: "storeLocked", pid}`), the configuration is bad (`data.kind: "config"`), the '
        'store cannot be opened or written (`data.kind: "storage"`), or start-up failed '
        '(`data.kind: "startup"`). Every request gets this error; the message is the line to show. '
        "Restart the server once the cause is fixed.",
    ),
    (
        REFUSED,
        "refused",
        "A valid request that cannot be done now (no such session, no session selected, the "
        "recovery question was answered no, …). Nothing changed; the message says why.",
    ),
    (
        STORAGE_FAILED,
        "storage failed",
        "Saving the selection, clearing or appending to the log failed, and the chat stopped (the CLI "
        "exits there): every later request except mino/state, mino/history, mino/sessions/list and "
        "mino/memory/list gets this error with the same message.",
    ),
    (
        SESSION_IN_USE,
        "session in use",
        "`mino/sessions/resume` or `mino/sessions/clear` of a session that is open in another "
        "connection (another window, a terminal `mino`, an ACP session), checked before any other "
        "refusal. The message names that connection's working directory and pid; `data: {sessionId, "
        "pid, workdir}` (`pid` and `workdir` null when they could not be read). Nothing changed.",
    ),
    (
        REQUEST_CANCELLED,
        "request cancelled",
        "LSP's code, for a request cancelled before it started. A cancelled `mino/turn` is not an "
        'error: it answers with `status: "interrupted"`.',
    ),
]


def internal_error_message(exc: BaseException) -> str:
    """The INTERNAL_ERROR message: one line naming the failure (the traceback goes to stderr only);
    out of file descriptors, the core's line for it."""
    from ..core.words import too_many_files

    out_of_files = too_many_files(exc)
    if out_of_files is not None:
        return out_of_files
    return f"Internal error in the Mino server: {exc.__class__.__name__}: {one_line(exc) or 'no details'}"


# ---- vocabularies, events and shared shapes: defined once in the core (core/contract.py) -------
from ..core.contract import (  # noqa: E402, F401  (re-exported: the protocol's names for the core's classes)
    APPROVAL_QUESTION,
    AlwaysOffer,
    ApprovalField,
    ApprovalRequest,
    ApprovalResolved,
    AssistantMessage,
    CheckpointTurn,
    ConfirmFile,
    ContextItem,
    Decision,
    Effect,
    Effort,
    Event,
    FileDiff,
    HistoryItem,
    ImageItem,
    KeptFile,
    MemoryProblem,
    MemoryStatus,
    MemoryType,
    Mode,
    Notice,
    Outcome,
    Role,
    RuleKind,
    State,
    TextDelta,
    ToolCall,
    ToolResultEvent,
    ToolStatus,
    TurnEnd,
    TurnResult,
    TurnStatus,
    doc,
    optional,
)

ApproveParams = ApprovalRequest  # the server sends the core's question as it is

SESSION_ID_PATTERN = r"^[0-9a-f]{32}$"
SESSION_ID_HINT = (
    "must be a complete session ID: 32 lowercase hexadecimal characters (mino/sessions/list gives them)"
)


# ---- shared shapes -----------------------------------------------------------------------------
@dataclass(kw_only=True)
class Empty:
    """No parameters: `{}` (or params left out)."""


# ---- lifecycle ---------------------------------------------------------------------------------
@dataclass(kw_only=True)
class WorkspaceFolder:
    uri: str = doc("a file:// URI")
    name: str = doc("shown nowhere; any string")


@dataclass(kw_only=True)
class InitializationOptions:
    mode: Mode | None = optional("the start-up permission mode; overrides config.yaml and --mode")
    sessionId: str | None = optional(
        "the session this window showed before a reload: restored when it exists and is not open "
        "elsewhere (a resume: it becomes the selection), else the start-up table decides; anything that "
        "is not a complete session ID is ignored"
    )


@dataclass(kw_only=True)
class InitializeParams:
    """The LSP `initialize` params; only these fields are read, the rest are ignored."""

    processId: int | None = optional()
    rootUri: str | None = optional("used when there is no workspace folder")
    workspaceFolders: list[WorkspaceFolder] | None = optional("the first one is the working directory")
    initializationOptions: InitializationOptions | None = optional()


@dataclass(kw_only=True)
class ServerInfo:
    name: str = doc('"mino"')
    version: str


@dataclass(kw_only=True)
class MinoCapabilities:
    protocolVersion: int = doc("4")
    maxMessageBytes: int = doc(f"{MAX_MESSAGE_BYTES}: larger message bodies are skipped with an error")


@dataclass(kw_only=True)
class ExperimentalCapabilities:
    mino: MinoCapabilities


@dataclass(kw_only=True)
class ServerCapabilities:
    experimental: ExperimentalCapabilities


@dataclass(kw_only=True)
class InitializeResult:
    serverInfo: ServerInfo
    capabilities: ServerCapabilities


@dataclass(kw_only=True)
class CancelParams:
    id: int | str = doc("the id of the request to cancel")


# ---- client → server requests ------------------------------------------------------------------
@dataclass(kw_only=True)
class FilesParams:
    prefix: str = doc("what follows the `@` typed so far (may be empty); matched ignoring case")


@dataclass(kw_only=True)
class FileList:
    paths: list[str] = doc(
        f'at most {MAX_FILE_RESULTS} files, relative to the working directory, "/"-separated: those whose '
        "path starts with the prefix, then those whose name does, shallow ones first; git-ignored and "
        "hidden files left out"
    )


@dataclass(kw_only=True)
class TurnParams:
    text: str = doc(
        "what the user typed, sent as typed; not empty, not a slash command (those go to mino/command). "
        "`@path` and `@path:A-B` in it (at the start or after white space) naming a file inside the "
        "working directory attach that file or those lines, after the items of `context`",
        nonblank=True,
    )
    context: list[ContextItem] | None = optional(
        "files or lines to attach (a selection, an open file): the model gets each after the text; "
        "every item is checked before anything is sent or logged (-32602 naming the item)"
    )
    images: list[ImageItem] | None = optional(
        "images to attach (pasted or chosen in the chat panel), at most 8: the model gets each as an "
        "`input_image` part after the text and context; each is checked before anything is sent or "
        "logged (-32602 naming `params.images[i]`)"
    )


@dataclass(kw_only=True)
class CommandParams:
    line: str = doc("a slash-command line as typed in the chat box, e.g. `/mode bypass`")


@dataclass(kw_only=True)
class CommandResult:
    output: list[str] = doc("the lines the CLI prints for the same command")
    state: State


@dataclass(kw_only=True)
class SessionInfo:
    id: str
    updatedAt: str = doc('last change, UTC, "YYYY-MM-DDTHH:MM:SSZ"')
    active: bool
    openElsewhere: bool = doc(
        "open in another connection (window, terminal, ACP session): resuming or clearing it gets -32006"
    )


@dataclass(kw_only=True)
class SessionList:
    sessions: list[SessionInfo] = doc("newest first")


@dataclass(kw_only=True)
class ResumeParams:
    id: str = doc("a complete session ID", pattern=SESSION_ID_PATTERN, hint=SESSION_ID_HINT)


@dataclass(kw_only=True)
class ClearParams:
    id: str = doc("the active session's ID", pattern=SESSION_ID_PATTERN, hint=SESSION_ID_HINT)
    typedId: str = doc("what the person typed; the session is cleared only when it, trimmed, equals id")


@dataclass(kw_only=True)
class ClearResult:
    cleared: bool
    state: State


@dataclass(kw_only=True)
class ModeParams:
    mode: Mode


@dataclass(kw_only=True)
class ReasoningParams:
    effort: Effort | None = doc("null: send no reasoning settings (the model's default)")


@dataclass(kw_only=True)
class Checkpoints:
    turns: list[CheckpointTurn] = doc(
        "the active session's turns that changed files and were not rewound, newest first"
    )


@dataclass(kw_only=True)
class RewindParams:
    turnId: str = doc(
        "a turn from mino/checkpoints (or a rewound one: a second rewind finishes an interrupted one)"
    )


@dataclass(kw_only=True)
class RewindResult:
    rewound: list[str] = doc("paths put back or deleted; empty when the person said no")
    kept: list[KeptFile] = doc("paths left as they are, each with why")
    confirmed: bool = doc("false when the person said no: nothing changed")
    state: State


@dataclass(kw_only=True)
class CompactResult:
    compacted: bool
    message: str = doc('the line the CLI prints, e.g. "Nothing to compact."')


@dataclass(kw_only=True)
class MemoryInfo:
    name: str
    type: MemoryType
    summary: str
    details: bool = doc("the file has details after its front matter")
    path: str = doc("absolute path of the memory file")


@dataclass(kw_only=True)
class MemoryList:
    dir: str
    memories: list[MemoryInfo] = doc("sorted by name; the ones in the index")
    problems: list[MemoryProblem] = doc("files that were not loaded")


@dataclass(kw_only=True)
class HistoryParams:
    """`{}` asks for the latest page; `before` walks back from there."""

    before: int | None = optional("only items whose seq is below this (default: no bound)")
    limit: int | None = optional(
        "items per page: default 200, at most 1000 (larger is capped, below 1 counts as 1)"
    )


@dataclass(kw_only=True)
class History:
    items: list[HistoryItem] = doc("the latest `limit` items with seq below `before`, oldest first")
    more: bool = doc("earlier items exist: ask again with `before` = the first item's seq")


@dataclass(kw_only=True)
class RuleInfo:
    id: str = doc("stable for as long as the rule is unchanged: what mino/rules/delete takes")
    kind: RuleKind = doc("bash: a command's first words; mcp: SERVER/TOOL; write: a path glob in the project")
    pattern: str = doc("the words, SERVER/TOOL or glob, as written in the rules file (not escaped)")
    effect: Effect = doc("allow: runs without asking; deny: refused without asking")
    project: str = doc("the project's real path the rule holds in")


@dataclass(kw_only=True)
class RuleList:
    rules: list[RuleInfo] = doc("every rule under MINO_HOME/rules, numbered as /rules numbers them (1 first)")
    problems: list[str] = doc("one line for each rules file that does not parse and is ignored")


@dataclass(kw_only=True)
class RuleDeleteParams:
    id: str = doc("a rule's id from mino/rules")


@dataclass(kw_only=True)
class RuleDeleteResult:
    deleted: bool = doc("false when no rule has this id (it changed or was deleted meanwhile)")
    rules: list[RuleInfo] = doc("the rules after the delete, as mino/rules lists them")


# ---- server → client ---------------------------------------------------------------------------
@dataclass(kw_only=True)
class ApproveResult:
    approved: bool
    always: bool | None = optional(
        "only when the request offered `always`: true keeps its rules for the project, allowing them "
        "with `approved: true` (the panel's Always in this project), denying them with false"
    )


ConfirmKind = Literal["recovery", "skills", "rewind", "instructions", "elicitation"]
CONFIRM_KINDS: tuple[ConfirmKind, ...] = typing.get_args(ConfirmKind)


@dataclass(kw_only=True)
class ConfirmParams:
    kind: ConfirmKind = doc(
        "recovery: a session's calls whose result was never recorded; skills: project skills not "
        "accepted before (new or changed), asked at a session's first turn (a no loads none); "
        "rewind: /rewind N or mino/rewind, with the files' diffs; "
        "instructions: AGENTS.md content not accepted before (new or changed), asked at a turn before "
        "it is sent (a no sends none for the rest of the session); elicitation: an MCP server's "
        "elicitation/create during its tool call, with its message and requested fields (a yes sends "
        "the defaults shown, a no declines)"
    )
    sessionId: str
    message: str = doc(
        "several lines ending with the question: the calls whose result was never recorded, the "
        "skills' names and descriptions, a rewind's `restore`/`delete`/`keep` lines, or the AGENTS.md "
        "paths and first lines (escaped)"
    )
    diffs: list[FileDiff] | None = optional(
        "kind rewind: each file as it is now (`before`) and as the rewind leaves it (`after`, empty "
        "when deleted); shown in the editor's diff view before the question"
    )
    files: list[ConfirmFile] | None = optional(
        "kind instructions: each AGENTS.md, root first, with the whole text the model would get"
    )


@dataclass(kw_only=True)
class ConfirmResult:
    confirmed: bool


@dataclass(kw_only=True)
class ShowMessageParams:
    """LSP `window/showMessage` / `window/logMessage`."""

    type: int = doc("1 error, 2 warning, 3 info, 4 log")
    message: str


# ShowMessageParams.type (LSP's MessageType)
MESSAGE_ERROR, MESSAGE_WARNING, MESSAGE_INFO, MESSAGE_LOG = 1, 2, 3, 4


# ---- the method table --------------------------------------------------------------------------
@dataclass(frozen=True)
class Method:
    name: str
    sender: Literal["client", "server"]
    params: Any  # a dataclass, the Event union, or None (no params)
    result: Any  # a dataclass, None (result null), or NOTIFICATION
    summary: str


NOTIFICATION = "notification"

LIFECYCLE: list[Method] = [
    Method(
        "initialize",
        "client",
        InitializeParams,
        InitializeResult,
        "The working directory is the first workspace folder (else `rootUri`, else the server's cwd); "
        "it must be an existing folder.",
    ),
    Method(
        "initialized",
        "client",
        Empty,
        NOTIFICATION,
        "Opens the session store and restores a session: `initializationOptions.sessionId` when it "
        "exists and is not open elsewhere, else the one the start-up table picks (when that one is open "
        "elsewhere, a new session, said with `window/showMessage` Info); then `mino/stateChanged`. A "
        "`mino/*` request that arrives first starts this too, and waits for it.",
    ),
    Method(
        "shutdown",
        "client",
        None,
        None,
        "Interrupts a turn in flight (its log is left consistent), waits for it, and closes the session "
        "(other connections get `mino/sessionsChanged`).",
    ),
    Method(
        "exit",
        "client",
        None,
        NOTIFICATION,
        "The process exits: code 0 after shutdown, else 1. EOF on stdin is an exit.",
    ),
    Method(
        "$/cancelRequest",
        "client",
        CancelParams,
        NOTIFICATION,
        "Interrupts a running `mino/turn` or `mino/compact`; ignored for other requests.",
    ),
]

CLIENT_REQUESTS: list[Method] = [
    Method("mino/state", "client", Empty, State, "The current State."),
    Method(
        "mino/turn",
        "client",
        TurnParams,
        TurnResult,
        "Runs one turn; `mino/event` notifications stream while it runs. One at a time.",
    ),
    Method(
        "mino/command",
        "client",
        CommandParams,
        CommandResult,
        "The same command table and the same lines the CLI prints. `/clear` cannot be typed here "
        "(it needs the ID typed in its own box: use mino/sessions/clear).",
    ),
    Method(
        "mino/sessions/list",
        "client",
        Empty,
        SessionList,
        "Newest first, UTC; marks sessions open elsewhere.",
    ),
    Method("mino/sessions/new", "client", Empty, State, "Creates a session and selects it."),
    Method(
        "mino/sessions/resume",
        "client",
        ResumeParams,
        State,
        "Complete 32-hex ID only; -32006 when it is open elsewhere; may send `mino/confirm` first (a no: "
        "error -32004, selection unchanged).",
    ),
    Method(
        "mino/sessions/clear",
        "client",
        ClearParams,
        ClearResult,
        "Clears the active session's saved history; `cleared` only when `typedId`, trimmed, equals `id` "
        "exactly; -32006 when `id` is open elsewhere.",
    ),
    Method("mino/mode", "client", ModeParams, State, "Sets the permission mode (allowed during a turn)."),
    Method(
        "mino/reasoning",
        "client",
        ReasoningParams,
        State,
        "Sets the reasoning effort of this conversation's next requests (allowed during a turn).",
    ),
    Method("mino/compact", "client", Empty, CompactResult, "Summarises older history; cancellable."),
    Method(
        "mino/checkpoints",
        "client",
        Empty,
        Checkpoints,
        "The turns /rewind lists, each with its files and what a rewind to before it does with each.",
    ),
    Method(
        "mino/rewind",
        "client",
        RewindParams,
        RewindResult,
        '/rewind N for the turn `turnId`: sends `mino/confirm {kind: "rewind"}` first; on yes puts '
        "the files back and leaves turns N and later out of every later request.",
    ),
    Method("mino/memory/list", "client", Empty, MemoryList, "The memory files, as loaded now."),
    Method("mino/rules", "client", Empty, RuleList, "The remembered decisions (/rules), read now."),
    Method(
        "mino/rules/delete",
        "client",
        RuleDeleteParams,
        RuleDeleteResult,
        "Removes one rule (/rules delete N) by its id; later calls it covered ask again.",
    ),
    Method(
        "mino/files",
        "client",
        FilesParams,
        FileList,
        "Workspace files for `@` completion in the chat box; answers from a cached list (refreshed in "
        "the background every few seconds), so it is quick in a large tree. Works during a turn.",
    ),
    Method(
        "mino/history",
        "client",
        HistoryParams,
        History,
        "What the chat panel shows for the active session, a page at a time; `{}` is the latest page.",
    ),
]

SERVER_MESSAGES: list[Method] = [
    Method(
        "mino/approve",
        "server",
        ApproveParams,
        ApproveResult,
        "Ask the person. An error response, or a client without this method, has denied. When the "
        "turn is interrupted the server sends `$/cancelRequest` for it and treats it as denied.",
    ),
    Method(
        "mino/confirm",
        "server",
        ConfirmParams,
        ConfirmResult,
        "Recovery question before a session with an unrecorded result becomes active (start-up, "
        "resume); skills question at a session's first turn, before project skills not accepted "
        "before are loaded; rewind question (/rewind N, mino/rewind); instructions question at a turn, "
        "before AGENTS.md content not accepted before is sent (`files` carries each file's whole text); "
        "elicitation question when an MCP server asks the person during its tool call; "
        "the skills, instructions and elicitation questions are sent with `$/cancelRequest` when the "
        "turn is interrupted. Only `{confirmed: true}` is a yes.",
    ),
    Method("mino/event", "server", Event, NOTIFICATION, "A turn event; `type` says which."),
    Method(
        "mino/stateChanged", "server", State, NOTIFICATION, "After every change of session, mode or busy."
    ),
    Method(
        "mino/sessionsChanged",
        "server",
        Empty,
        NOTIFICATION,
        "Another connection on this MINO_HOME created, cleared, opened or closed a session (one that "
        "exits, or is killed, closes its session): refresh session lists. Sent within about a second.",
    ),
    Method(
        "window/showMessage",
        "server",
        ShowMessageParams,
        NOTIFICATION,
        "Memory files that were not loaded, recovery notices, why the server is unavailable.",
    ),
    Method(
        "window/logMessage",
        "server",
        ShowMessageParams,
        NOTIFICATION,
        "The start-up lines the CLI prints (session, permission mode, sandbox) and server warnings.",
    ),
]

ALL_METHODS: list[Method] = LIFECYCLE + CLIENT_REQUESTS + SERVER_MESSAGES
BY_NAME: dict[str, Method] = {m.name: m for m in ALL_METHODS}


# ---- validation and serialisation --------------------------------------------------------------
class ValidationError(ValueError):
    """Params that do not match their class; the message names the field and the problem."""


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    cached = _HINTS.get(cls)
    if cached is None:
        cached = _HINTS[cls] = typing.get_type_hints(cls)
    return cached


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"the string {shown!r}"
    if isinstance(value, list):
        return "an array"
    return "an object"


def union_args(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (Union, types.UnionType):
        return typing.get_args(tp)
    return None


def parse(cls: Any, value: Any, where: str = "params", *, strict: bool = False) -> Any:
    """Check `value` (decoded JSON) against `cls` and build it. Raises ValidationError.

    `strict` also rejects fields the class does not define (used by tests on what the server sends)."""
    return _value(cls, value, where, {}, strict)


def _value(tp: Any, value: Any, where: str, meta: Any, strict: bool) -> Any:
    if tp is Any:
        return value
    args = union_args(tp)
    if args is not None:
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _value(options[0], value, where, meta, strict)
        return _union(options, value, where, meta, strict)
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed or isinstance(value, bool):
            choices = ", ".join(f'"{a}"' for a in allowed)
            raise ValidationError(f"{where} must be one of {choices}; got {_describe(value)}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ValidationError(f"{where} must be an array; got {_describe(value)}")
        (item,) = typing.get_args(tp)
        return [_value(item, v, f"{where}[{i}]", {}, strict) for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        return _object(tp, value, where, strict)
    if tp is bool:
        if not isinstance(value, bool):
            raise ValidationError(f"{where} must be true or false; got {_describe(value)}")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValidationError(f"{where} must be a whole number; got {_describe(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ValidationError(f"{where} must be a string; got {_describe(value)}")
        pattern = meta.get("pattern")
        if pattern and not re.fullmatch(pattern, value):  # `$` alone lets a trailing newline by
            raise ValidationError(f"{where} {meta.get('hint', 'has the wrong form')}; got {_describe(value)}")
        if meta.get("nonblank") and not value.strip():
            raise ValidationError(f"{where} must not be empty")
        return value
    raise TypeError(f"protocol.py cannot check values of type {tp!r}")  # a bug in this module


def _union(options: list[Any], value: Any, where: str, meta: Any, strict: bool) -> Any:
    # Unions of objects are told apart by their `type` literal (the events); others by trying each.
    if all(dataclasses.is_dataclass(o) for o in options) and isinstance(value, dict):
        kinds = {typing.get_args(hints(o)["type"])[0]: o for o in options if "type" in hints(o)}
        if len(kinds) == len(options):
            chosen = kinds.get(value.get("type"))
            if chosen is None:
                names = ", ".join(f'"{k}"' for k in kinds)
                raise ValidationError(
                    f"{where}.type must be one of {names}; got {_describe(value.get('type'))}"
                )
            return _object(chosen, value, where, strict)
    problems = []
    for option in options:
        try:
            return _value(option, value, where, meta, strict)
        except ValidationError as exc:
            problems.append(str(exc))
    raise ValidationError(" or ".join(problems))


def _object(cls: Any, value: Any, where: str, strict: bool) -> Any:
    if not isinstance(value, dict):
        raise ValidationError(f"{where} must be an object; got {_describe(value)}")
    types_ = hints(cls)
    kwargs: dict[str, Any] = {}
    fields = dataclasses.fields(cls)
    for f in fields:
        if f.name not in value:
            if f.metadata.get("optional"):
                continue
            raise ValidationError(f"{where} is missing the field '{f.name}'")
        kwargs[f.name] = _value(types_[f.name], value[f.name], f"{where}.{f.name}", f.metadata, strict)
    if strict:
        extra = sorted(set(value) - {f.name for f in fields})
        if extra:
            raise ValidationError(f"{where} has fields the protocol does not define: {', '.join(extra)}")
    return cls(**kwargs)
