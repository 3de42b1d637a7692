"""What every tool is: the contract between the turn loop and one tool module.

A call goes through four steps, each with its own rule:
1. `validate(args)`   — pure: no disk, no network (it is repeated on replay). Raise ArgumentError.
2. `prepare(args, ctx)` — may read disk: capture the state the user will approve (a file's hash,
   whether it exists), build the approval display. Raise ToolFailure to end the call before asking.
3. the decision (decision.decide(prepared.kind or tool.kind(ctx), mode)) and, if needed, the question.
4. `run(args, ctx, prepared)` — do it; check the state captured in prepare is unchanged first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from ..cancel import CancelToken

# The result statuses, re-exported for the tool modules (defined in contract.py).
from ..contract import COMPLETED as COMPLETED
from ..contract import DENIED as DENIED
from ..contract import FAILED as FAILED
from ..contract import INVALID_ARGUMENTS as INVALID_ARGUMENTS
from ..contract import UNKNOWN as UNKNOWN
from ..contract import FileDiff, Kind, Mode, ToolCategory, ToolStatus
from ..errors import ArgumentError as ArgumentError
from ..errors import ToolFailure as ToolFailure
from ..values import Frozen, Mutable, frozen, mutable
from .project_files import DISK, ProjectFiles

if TYPE_CHECKING:
    from ..rules import Subject
    from .sandbox import Sandbox

A = TypeVar("A")  # a tool's validated arguments: validate() makes them, prepare() and run() take them
S = TypeVar("S")  # the state a tool captures in prepare() and checks again in run()


INTERRUPTED = "Interrupted by the user while running."


@frozen
class ToolResult(Frozen):
    status: ToolStatus
    output: str
    # A line the person must see even when the output is folded away (the turn sends it as a Notice
    # after the result); the output already holds it for the model.
    notice: str | None = None


@mutable
class Prepared(Generic[S], Mutable):
    """What the user sees (raw values; front ends escape them) and what the run is bound to."""

    fields: list[tuple[str, str]]
    warning: str | None = None
    state: S = None  # type: ignore[assignment]  # S is None for tools that bind nothing; e.g. a file's sha256
    # Set when the arguments decide the row of the decision table (a write into .git/, bash asking to
    # run outside the sandbox); None means tool.kind(ctx).
    kind: Kind | None = None
    # write_file and edit_file: the whole file before and after, for an editor's diff view.
    diff: FileDiff | None = None
    # The question when this call asks, naming its risk (contract.py); None: APPROVAL_QUESTION.
    question: str | None = None
    # What the model is told when the person says no; None: the turn's general denial.
    denied: str | None = None
    # Shown in the order given, not with the deciding fields moved last: memory_save, whose screen
    # (Memory, Directory, Mode, Type, Summary, Details) is reproduced exactly as the user-memory
    # chapter shows it. Every value is still one escaped, quoted line, so none can pass for a field.
    as_given: bool = False
    # What of this call a rule may cover (core/rules.py); None: no rule reaches it (memory saves,
    # commands outside the sandbox or without one, writes into protected folders).
    subject: Subject | None = None


@mutable
class ToolContext(Mutable):
    workdir: Path  # resolved, fixed at start-up
    home: Path  # MINO_HOME
    memory_dir: Path
    cancel: CancelToken
    sandbox: Sandbox | None = None
    skills: dict[str, Path] = field(default_factory=dict)  # name -> SKILL.md of the session catalogue
    # name -> sha256 of the SKILL.md bytes the person accepted this session (skills scanned this
    # session; a catalogue taken from a session record has none): skill_view returns only those.
    skill_digests: dict[str, str] = field(default_factory=dict)
    # Where the file tools open, read and write project files: the disk, or a client doing it for Mino.
    files: ProjectFiles = DISK
    # Environment variables commands never see: Mino's own model API key must not be one `echo` away.
    hidden_env: frozenset[str] = frozenset({"MINO_API_KEY", "OPENAI_API_KEY"})
    # The call is made in plan mode (set by the turn before each call): bash runs in a sandbox whose
    # whole file system is read-only, the working directory too.
    plan: bool = False
    # Plan mode ends (exit_plan_mode, once the person said yes): the conversation goes back to the
    # mode it had before and returns it. None: nothing can end plan mode here.
    leave_plan: Callable[[], Mode] | None = None


class ToolOf(Protocol[A, S]):
    """A tool whose validated arguments are A and whose prepare() binds state S."""

    name: ClassVar[str]
    category: ClassVar[ToolCategory]  # what it does, as a client groups tool calls (read, edit, execute, …)
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]  # JSON Schema of the arguments object

    def kind(self, ctx: ToolContext) -> Kind: ...

    def validate(self, args: dict[str, Any]) -> A: ...  # `args`: the model's JSON object, unchecked

    def prepare(self, args: A, ctx: ToolContext) -> Prepared[S]: ...

    def run(self, args: A, ctx: ToolContext, prepared: Prepared[S]) -> ToolResult: ...


# A tool as the turn loop holds it: it hands validate()'s result and prepare()'s Prepared back to
# the same tool, so their types need not be known there.
Tool = ToolOf[Any, Any]


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A strict JSON Schema object for a tool's arguments."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def require_str(
    args: dict[str, Any], key: str, *, optional: bool = False, allow_empty: bool = False
) -> str | None:
    """Fetch a string argument or raise ArgumentError naming it."""
    if key not in args or args[key] is None:
        if optional:
            return None
        raise ArgumentError(f"missing required argument '{key}'")
    value = args[key]
    if not isinstance(value, str):
        raise ArgumentError(f"argument '{key}' must be a string")
    if not allow_empty and value == "":
        raise ArgumentError(f"argument '{key}' must not be empty")
    if not value.isascii():
        try:  # JSON can carry a lone surrogate ("\ud800"): it cannot be written, run or shown as text
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ArgumentError(
                f"argument '{key}' is not valid Unicode text (it has a lone surrogate)"
            ) from None
    return value


def reject_unknown(args: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(args) - allowed)
    if extra:
        raise ArgumentError(f"unknown argument(s): {', '.join(extra)}")
