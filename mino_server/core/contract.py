"""What the core tells a front end, defined once: vocabularies, events, approval requests, outcomes, state.

Every front end consumes these classes: the CLI and the eval runner match on their types, the
editor server sends them as JSON (mino_server/server/protocol.py puts them in its method table),
and the extension's TypeScript types are generated from them (docgen.py). Field names are the wire
names (camelCase), so the server serialises an object as it is and nothing is mapped by hand.

Standard library only: this module is on every start-up path.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import field
from typing import Any, Literal, Union

from .values import Frozen, Mutable, frozen, mutable

# The vocabularies (core/vocab.py), with the events and requests that use them. The tool names are
# the registry's (core/tools/registry.py).
from .vocab import ALLOW_ALWAYS as ALLOW_ALWAYS
from .vocab import COMPLETED as COMPLETED
from .vocab import DENIED as DENIED
from .vocab import EFFORTS as EFFORTS
from .vocab import FAILED as FAILED
from .vocab import INVALID_ARGUMENTS as INVALID_ARGUMENTS
from .vocab import KINDS as KINDS
from .vocab import MEMORY_TYPES as MEMORY_TYPES
from .vocab import MODE_AFTER_PLAN as MODE_AFTER_PLAN
from .vocab import MODE_HELP as MODE_HELP
from .vocab import MODE_NAMES as MODE_NAMES
from .vocab import MODES as MODES
from .vocab import REJECT_ALWAYS as REJECT_ALWAYS
from .vocab import TOOL_CATEGORIES as TOOL_CATEGORIES
from .vocab import TOOL_STATUSES as TOOL_STATUSES
from .vocab import TURN_STATUSES as TURN_STATUSES
from .vocab import UNKNOWN as UNKNOWN
from .vocab import Always as Always
from .vocab import Decision as Decision
from .vocab import Effect as Effect
from .vocab import Effort as Effort
from .vocab import Kind as Kind
from .vocab import McpState as McpState
from .vocab import MemoryType as MemoryType
from .vocab import Mode as Mode
from .vocab import Outcome as Outcome
from .vocab import RewindAction as RewindAction
from .vocab import Role as Role
from .vocab import RuleKind as RuleKind
from .vocab import SetupKind as SetupKind
from .vocab import ToolCategory as ToolCategory
from .vocab import ToolStatus as ToolStatus
from .vocab import TurnStatus as TurnStatus

# ---- field helpers (their metadata feeds the generated docs, schema and TypeScript) -------------


# Both return Any, as dataclasses.field() does without a default: the value stands for any field's type.
def optional(doc: str = "") -> Any:
    """A field that may be absent on the wire (omitted when None)."""
    return field(default=None, metadata={"optional": True, "doc": doc})


_NO_DEFAULT = object()


def doc(text: str, default: object = _NO_DEFAULT, **meta: object) -> Any:
    """A required field with a comment for the generated documentation (and optional checks).

    `default` only spares the core from passing a constant; on the wire the field is still required."""
    if default is _NO_DEFAULT:
        return field(metadata={"doc": text, **meta})
    return field(default=default, metadata={"doc": text, **meta})


APPROVAL_QUESTION = "Approve this operation?"
# Questions that name the risk, for the calls that ask in every mode but bypass (the last line a
# person reads before answering; docs/BEHAVIOUR.md, "Approval display").
OUTSIDE_SANDBOX_QUESTION = "Run OUTSIDE the sandbox?"
NO_SANDBOX_QUESTION = "Run without a sandbox, with your rights?"
PLAN_QUESTION = "Carry out this plan?"  # exit_plan_mode: yes ends plan mode


def protected_question(folder: str) -> str:
    """A write into .git, .mino or .vscode (`folder`: that folder's name, escaped, e.g. `.git`)."""
    return f"Write into {folder}/, where files run or instruct later?"


# ---- approvals ----------------------------------------------------------------------------------
DIFF_MAX_BYTES = 1024 * 1024  # a write carries its diff when the file before and after are at most this


@frozen(kw_only=True)
class FileDiff(Frozen):
    """A write_file or edit_file call's whole file before and after, for an editor's diff view.

    Raw text, as the file holds it (not escaped for display): show it in an editor, never in a
    terminal. Taken from the same bytes the approval is bound to."""

    path: str = doc("the absolute path the write lands on (symbolic links resolved)")
    before: str | None = doc("the file's text now; null for a new file")
    after: str = doc("the file's text once the call runs")


@frozen(kw_only=True)
class ApprovalField(Frozen):
    """One line of an approval display: `Label: "value"`."""

    label: str
    value: str = doc(
        "already escaped for display (docs/BEHAVIOUR.md, approval display): show it as is, in quotes"
    )


@frozen(kw_only=True)
class AlwaysOffer(Frozen):
    """The rules an `always` answer keeps (docs/BEHAVIOUR.md, "Rules")."""

    rules: list[str] = doc('what is kept, e.g. ["bash git status"]; escaped like a field value')
    project: str = doc("the project they hold in: its working directory's real path, escaped")


@frozen(kw_only=True)
class ApprovalRequest(Frozen):
    """A question for the person about one tool call; the answer is yes or no, or `always` when
    `always` is offered."""

    turnId: str
    callId: str
    tool: str
    fields: list[ApprovalField]
    warning: str | None
    question: str = doc(
        'what to answer, naming the risk: "Run OUTSIDE the sandbox?", "Run without a sandbox, with '
        'your rights?", "Write into .git/, where files run or instruct later?" (any protected folder), '
        '"Carry out this plan?" (exit_plan_mode, whose one field is the plan), else "Approve this operation?" (memory_save too: its screen is the one the user-memory '
        "chapter shows)",
        default=APPROVAL_QUESTION,
    )
    workdir: str
    diff: FileDiff | None = optional(
        "write_file and edit_file: the whole file before and after, when both are UTF-8 text of at "
        "most 1 MiB (absent otherwise); the file on disk is untouched until approved"
    )
    always: AlwaysOffer | None = optional(
        "where a rule can cover this call: the rules an `always` answer keeps for this project "
        "(allow with a yes, deny with a no); absent where no rule can"
    )


# ---- editor context -----------------------------------------------------------------------------
@frozen(kw_only=True)
class ContextItem(Frozen):
    """A file, or lines of it, attached to a turn (docs/BEHAVIOUR.md, "Editor context")."""

    path: str = doc(
        "absolute, or relative to the working directory; it must resolve (symbolic links included) "
        "inside the working directory"
    )
    startLine: int | None = optional("the first line (1-based); absent: from the first line")
    endLine: int | None = optional("the last line, inclusive; absent: to the end")
    text: str | None = optional(
        "what the editor shows (a selection, possibly unsaved; the file need not exist); over 64 KiB "
        "in UTF-8 the model gets the first 64 KiB and a note, and a notice says so; absent: the server "
        "reads the file or the lines with read_file's limits (a file whose bytes are a PNG, JPEG, GIF "
        "or WebP image is attached as an image)"
    )


@frozen(kw_only=True)
class ImageItem(Frozen):
    """An image attached to a turn (docs/BEHAVIOUR.md, "Images"): checked by its bytes before
    anything is sent or logged."""

    mimeType: str = doc("image/png, image/jpeg, image/gif or image/webp; the bytes must agree")
    data: str = doc("the image's bytes in base64, at most 5 MiB decoded")
    name: str | None = optional("how the history names it (a file name); absent: `image N`")


# ---- turn events --------------------------------------------------------------------------------
@frozen(kw_only=True)
class TextDelta(Frozen):
    """Streamed text, as it arrives."""

    type: Literal["text_delta"] = "text_delta"
    turnId: str
    text: str


@frozen(kw_only=True)
class AssistantMessage(Frozen):
    """A whole assistant message (after its deltas)."""

    type: Literal["assistant_message"] = "assistant_message"
    turnId: str
    text: str


@frozen(kw_only=True)
class ToolCall(Frozen):
    """A tool call, displayed exactly as its approval would be."""

    type: Literal["tool_call"] = "tool_call"
    turnId: str
    callId: str
    tool: str
    fields: list[ApprovalField]
    warning: str | None = doc("shown after the fields (e.g. memory_save's warning)")
    decision: Decision = doc(
        "run: read-only, shown quietly; ask: a mino/approve follows; show: runs without asking; "
        "refuse: refused without asking, by plan mode or by a deny rule (its `Rule` field says "
        "which); a denied tool_result follows"
    )
    diff: FileDiff | None = optional(
        "write_file and edit_file: as in mino/approve, also when no one is asked"
    )
    arguments: Any = optional(
        "the call's arguments as the model sent them (the parsed JSON object): data for a client, "
        "never escaped; what a person reads is `fields`"
    )


@frozen(kw_only=True)
class ToolResultEvent(Frozen):
    """A tool call's result."""

    type: Literal["tool_result"] = "tool_result"
    turnId: str
    callId: str
    tool: str
    status: ToolStatus
    text: str


@frozen(kw_only=True)
class ApprovalResolved(Frozen):
    """A pending approval ended (answer, cancel or turn end): dismiss it everywhere."""

    type: Literal["approval_resolved"] = "approval_resolved"
    turnId: str
    callId: str
    outcome: Outcome


@frozen(kw_only=True)
class Notice(Frozen):
    """A line to show in the chat (limits reached, compaction, skipped skills)."""

    type: Literal["notice"] = "notice"
    turnId: str | None = doc("null for notices outside a turn")
    text: str


@frozen(kw_only=True)
class TurnEnd(Frozen):
    """The last event of a turn."""

    type: Literal["turn_end"] = "turn_end"
    turnId: str
    status: TurnStatus


@frozen(kw_only=True)
class Usage(Frozen):
    """What the service counted for the request just answered; sent only when it reported a count."""

    type: Literal["usage"] = "usage"
    turnId: str
    inputTokens: int = doc("the whole input of the request: how full the context is")
    outputTokens: int
    contextWindow: int = doc("the configured budget (config.yaml context_window)")
    cachedTokens: int | None = optional("input tokens the service read from its prompt cache, when reported")
    reasoningTokens: int | None = optional("output tokens spent on reasoning, when reported")


@frozen(kw_only=True)
class Thinking(Frozen):
    """What the model was thinking (a reasoning summary): shown apart from the answer, never as it."""

    type: Literal["thinking"] = "thinking"
    turnId: str
    text: str


@frozen(kw_only=True)
class ModeChanged(Frozen):
    """The permission mode changed during a turn: the person approved a plan (exit_plan_mode), which
    ends plan mode. Sent after the call's approval_resolved, before its tool_result."""

    type: Literal["mode_changed"] = "mode_changed"
    turnId: str
    mode: Mode = doc("the mode now: the one the session had before plan mode (manual if none)")


Event = Union[  # noqa: UP007  (a runtime union: docgen and the protocol parser read its members)
    TextDelta,
    AssistantMessage,
    ToolCall,
    ToolResultEvent,
    ApprovalResolved,
    Notice,
    TurnEnd,
    Usage,
    ModeChanged,
    Thinking,
]
EVENT_TYPES: tuple[type, ...] = typing.get_args(Event)


# ---- outcomes and views -------------------------------------------------------------------------
@mutable(kw_only=True)
class TurnResult(Mutable):
    """How a turn ended."""

    turnId: str = doc('"" when the turn never started (no session selected, or the chat stopped)')
    status: TurnStatus
    text: str = doc("the assistant's messages of this turn, joined by blank lines")
    error: str | None = optional("why the turn did not complete (absent when completed)")


@frozen(kw_only=True)
class MemoryProblem(Frozen):
    """A memory file that was not loaded, and why."""

    file: str
    reason: str


@mutable(kw_only=True)
class MemoryStatus(Mutable):
    dir: str = doc("MINO_HOME/memory")
    count: int = doc("memories in the index")
    problems: list[MemoryProblem]


@frozen(kw_only=True)
class McpServerStatus(Frozen):
    """One MCP server of the conversation (config.yaml's `mcp_servers`, and an ACP client's)."""

    name: str = doc("the server's name (a client's server whose name clashes is suffixed: `git-2`)")
    state: McpState = doc(
        '"starting" until its tools are listed (within its start_timeout_s, 10 s unless set), then "ready" or "failed"'
    )
    tools: int = doc("how many of its tools the model is offered (0 unless ready)")
    error: str | None = optional("why it failed or stopped, one line (outside text: escape it)")


@frozen(kw_only=True)
class ProjectInstructions(Frozen):
    """One AGENTS.md that applies to the working directory (the repository root's first)."""

    path: str = doc("the file's absolute path")
    accepted: bool = doc(
        "the person accepted this content (as it is now): it is sent with every request; false: not "
        "sent, and the next turn asks (a piped or `-p` run leaves it out)"
    )


@frozen(kw_only=True)
class ConfirmFile(Frozen):
    """A file whose content a confirmation is about, shown in full (mino/confirm kind "instructions")."""

    path: str = doc("absolute path")
    text: str = doc("the text the model would get (cut at the 32 KiB limit), as it is: show it as plain text")


@frozen(kw_only=True)
class Confirmation(Frozen):
    """A yes/no question that is not a tool's approval (ui.UI.confirm): kind "recovery" (outside a
    turn), "skills" (project skills not accepted before, at a session's first turn), "rewind"
    (/rewind N, with the files as they are and as the rewind leaves them in `diffs`, for an
    editor's diff view) or "instructions" (AGENTS.md content not accepted before, at a turn, with
    `files` in full). A new kind adds a field here, not a parameter to every front end."""

    kind: str
    session_id: str
    message: str  # several lines ending with the question; project text in it is escaped already
    diffs: list[FileDiff] | None = None
    files: tuple[ConfirmFile, ...] = ()
    asks_last: bool = False  # the message's last line is the question itself (a terminal asks on it)


@frozen(kw_only=True)
class ContextUsage(Frozen):
    """How full the context was at the latest request that reported usage."""

    inputTokens: int
    contextWindow: int


@frozen(kw_only=True)
class SetupProblem(Frozen):
    """Something missing that fails every turn before a request is sent (docs/BEHAVIOUR.md, "First run")."""

    problem: SetupKind = doc('"no-api-key": the base URL is OpenAI\'s and no key is set')
    message: str = doc("one line for the person: what to set, and where the README explains it")
    variable: str = doc("the environment variable to set (config.yaml api_key_env, default OPENAI_API_KEY)")
    baseUrl: str = doc("the base URL that needs the key")
    readme: str | None = optional(
        'Mino\'s README.md (its "First run" section says what to set), when installed from a checkout'
    )


@mutable(kw_only=True)
class State(Mutable):
    """What a conversation is working on; sent as `mino/stateChanged` after every change of session, mode or busy."""

    sessionId: str | None = doc("the active session; null in the command-only state")
    restoreProblem: str | None = doc(
        'why no session is active, as one line starting "Cannot restore the active session: "; '
        "fixed by mino/sessions/resume or mino/sessions/new"
    )
    mode: Mode
    workdir: str = doc("where tools act; fixed at initialize")
    model: str
    reasoningEffort: Effort | None = doc(
        "what the requests ask of a reasoning model (mino/reasoning; config.yaml reasoning_effort); "
        "null: no reasoning settings are sent",
        default=None,
    )
    busy: bool = doc("a turn or a compaction is running")
    sandbox: str | None = doc('"bwrap" or "sandbox-exec"; null when commands run unsandboxed')
    memory: MemoryStatus
    usage: ContextUsage | None = doc(
        "the latest request of the current session that reported usage (restored on resume); null "
        "when none did",
        default=None,
    )
    setup: SetupProblem | None = optional(
        "present when every turn would fail before a request is sent (e.g. no API key for OpenAI's "
        "endpoint): show it with a way to fix it; absent when nothing is missing"
    )
    checkpointBytes: int = doc(
        "bytes the active session's checkpoint store (the files' states before Mino's writes, for "
        "/rewind) holds under MINO_HOME/checkpoints; /clear deletes them",
        default=0,
    )
    instructions: list[ProjectInstructions] | None = optional(
        "the AGENTS.md files that apply to the working directory, root first (empty: none); sent to the "
        "model only when accepted"
    )
    mcp: list[McpServerStatus] | None = optional(
        "the conversation's MCP servers and their state (empty: none configured); a server's tools are "
        "offered from the first turn after it is ready"
    )


@mutable(kw_only=True)
class HistoryItem(Mutable):
    """One entry of what a chat panel shows for a session."""

    seq: int = doc("the log record this item shows; ask for the page before it with `before` = this seq")
    turnId: str | None
    role: Role
    text: str
    tool: str | None = optional("role tool: the tool's name")
    status: ToolStatus | None = optional("role tool: the result status")
    rewound: bool | None = optional("true when /rewind took this turn back: later requests no longer send it")
    interrupted: bool | None = optional(
        "role assistant: true when the person interrupted this answer; the text is what was streamed before"
    )


@frozen(kw_only=True)
class CheckpointFile(Frozen):
    """A file a turn changed, and what a rewind to before that turn would do with it."""

    path: str = doc("relative to the working directory")
    action: RewindAction = doc(
        "restore: back to its state before the turn; delete: Mino created it in that turn or later; "
        "keep: changed since Mino wrote it (or no longer reachable), left alone"
    )
    reason: str | None = optional("action keep: why")


@mutable(kw_only=True)
class CheckpointTurn(Mutable):
    """A turn of the active session that changed files and can be rewound."""

    n: int = doc("the turn's number in the session (1 is its first request): /rewind N")
    turnId: str
    at: str = doc("when the request was sent, UTC (ISO 8601)")
    text: str = doc("the request's first line, escaped for display")
    bash: bool = doc("the turn also ran bash commands, which a rewind does not undo")
    files: list[CheckpointFile]


@frozen(kw_only=True)
class KeptFile(Frozen):
    path: str
    reason: str


@frozen
class OpenElsewhere(Frozen):
    """A session another conversation has open (another window, terminal or ACP session): who, for
    the lines that name it (words.py); `pid` and `workdir` are None when its note could not be read."""

    session_id: str
    pid: int | None
    workdir: str | None


@mutable(kw_only=True)
class Startup(Mutable):
    """What opening a conversation found; front ends word it (words.startup_lines)."""

    session_id: str | None  # None: the command-only state, `restore_problem` says why
    restore_problem: str | None
    mode: Mode
    sandbox_line: str  # "Sandbox: bwrap" or "Sandbox: unavailable (why)"
    notices: list[str] = field(default_factory=list)  # e.g. a torn last line was cut off (a copy kept)
    warnings: list[str] = field(default_factory=list)  # e.g. the working directory holds MINO_HOME
    # The session start-up picked was open elsewhere, so `session_id` is a new one (said in one line).
    open_elsewhere: OpenElsewhere | None = None
    setup: SetupProblem | None = None  # every turn would fail before a request: said at start-up


def dump(value: Any) -> Any:
    """A contract value (an event, a request, State ...) as JSON-ready data; `optional` fields that
    are None are left out. The editor protocol writes its payloads with it, `mino -p` its stream-json."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if item is None and f.metadata.get("optional"):
                continue
            out[f.name] = dump(item)
        return out
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value
