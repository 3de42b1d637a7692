"""Eval case files: loading and validating one YAML case (the schema is documented in evals/README.md).

Every problem is a `CaseError(field, problem)`, reported as `FAIL file.yaml: field: problem`: a case
author must be able to fix the file from that line alone, so nothing here lets a traceback through.
Indices in field names are 1-based, like request and turn numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from ..core.config import CONFIG_KEYS as CONFIG_FILE_KEYS
from ..core.contract import MODES, TOOL_STATUSES, TURN_STATUSES
from ..core.tools.registry import tool_names

T = TypeVar("T")

# Tool names are the registry's (docs/BEHAVIOUR.md, "Tools"), checked so that a typo in
# tools_not_called cannot make an expectation pass vacuously.
CAPABILITIES = ("sandbox",)
ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")
MAX_MEMORIES = 32
# wire_api: chat sends `messages`, not `input`: request checks read the Responses wire's input items.
_RUNNER = "is set by the runner (cases talk to the scripted model, or the configured one with --live)"
# config.yaml's keys (core/config.py) a case may not set in its `config`, each with why; a case may
# set every other one, so a new config key is open to cases unless it is listed here.
CONFIG_KEYS_NOT_IN_CASES = {
    "base_url": _RUNNER,
    "api_key_env": _RUNNER,
    "mode": "is the case's own field: write `mode:` beside `config`",
    "models": "is read only by ACP clients' model picker; a case sets `model`",
    "mcp_servers": "is not supported in cases: a case's tools are Mino's own",
}
CONFIG_KEYS = tuple(key for key in CONFIG_FILE_KEYS if key not in CONFIG_KEYS_NOT_IN_CASES)

CASE_KEYS = (
    "name",
    "description",
    "live",
    "mode",
    "approve",
    "confirm_recovery",
    "confirm_clear",
    "requires",
    "soul",
    "memory",
    "files",
    "skills",
    "config",
    "turns",
    "script",
    "expect",
)
EXPECT_KEYS = (
    "answer_contains",
    "answer_not_contains",
    "turn_status",
    "output_contains",
    "tools_called",
    "tools_not_called",
    "statuses",
    "tool_output_contains",
    "asked",
    "requests",
    "last_request",
    "request_count",
    "questions",
    "files",
    "home_files",
    "memory_files",
    "memory_count",
    "session_count",
    "active_session",
)
# What depends on the script (the questions asked, the requests sent): not graded under --live.
SCRIPTED_KEYS = ("asked", "requests", "last_request", "request_count", "questions")
LIVE_KEYS = tuple(k for k in EXPECT_KEYS if k not in SCRIPTED_KEYS)
REQUEST_KEYS = (
    "contains",
    "not_contains",
    "instructions_contains",
    "instructions_not_contains",
    "tools",
    "input_count",
    "first_item",
    "items",
)
ITEM_KEYS = ("type", "role", "contains", "not_contains")
FILE_KEYS = ("exists", "equals", "contains", "not_contains")
PLACEHOLDER_RE = re.compile(r"\{(workspace|home|python|port|session(?::(\d+))?)\}")


class CaseError(Exception):
    """An invalid case file: which field, and what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class MemorySeed:
    name: str
    type: str
    summary: str
    details: str = ""


@dataclass(frozen=True)
class FileCheck:
    exists: bool | None = None
    equals: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()


@dataclass(frozen=True)
class ItemCheck:
    type: str | None = None
    role: str | None = None
    contains: tuple[str, ...] = ()  # in this order
    not_contains: tuple[str, ...] = ()


@dataclass(frozen=True)
class RequestCheck:
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    instructions_contains: tuple[str, ...] = ()
    instructions_not_contains: tuple[str, ...] = ()
    tools: bool | None = None
    input_count: int | None = None
    items: dict[int, ItemCheck] = field(default_factory=dict)  # 1-based; negative counts from the end


@dataclass
class Expect:
    # Turn-keyed checks: key 0 means "the last turn sent to the model".
    answer_contains: dict[int, tuple[str, ...]] = field(default_factory=dict)
    answer_not_contains: dict[int, tuple[str, ...]] = field(default_factory=dict)
    turn_status: dict[int, str] = field(default_factory=dict)  # key 0: every model turn
    output_contains: tuple[str, ...] = ()
    tools_called: tuple[str, ...] = ()
    tools_not_called: tuple[str, ...] = ()
    statuses: dict[str, str] | tuple[str, ...] | None = None
    tool_output_contains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    asked: tuple[str, ...] | None = None
    requests: dict[int, RequestCheck] = field(default_factory=dict)
    last_request: RequestCheck | None = None
    request_count: int | None = None
    questions: int | None = None  # approval questions asked in the whole case
    files: dict[str, FileCheck] = field(default_factory=dict)
    home_files: dict[str, FileCheck] = field(default_factory=dict)
    memory_files: dict[str, FileCheck] = field(default_factory=dict)
    memory_count: int | None = None
    session_count: int | None = None
    active_session: str | None = None
    keys: tuple[str, ...] = ()  # the keys the case file set, for --live grading


@dataclass
class Case:
    file: str
    name: str
    description: str = ""
    live: bool = False
    mode: str = "manual"
    # "all" | "none" | "always" (yes, and `a` wherever a rule is offered) | tool names
    approve: str | tuple[str, ...] = "none"
    confirm_recovery: bool = True
    confirm_clear: bool = False
    requires: tuple[str, ...] = ()
    soul: str | None = None
    memory: list[MemorySeed] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    skills: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (description, body)
    config: dict[str, Any] = field(default_factory=dict)
    turns: list[str] = field(default_factory=list)
    script: list[dict[str, Any]] = field(default_factory=list)  # validated raw replies
    expect: Expect = field(default_factory=Expect)


# ---- small validators: each names the field it rejects ------------------------------------------


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _str(value: object, where: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise CaseError(where, f"must be a string, got {_type_name(value)}")
    if not empty and value == "":
        raise CaseError(where, "must not be empty")
    return value


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise CaseError(where, f"must be true or false, got {value!r}")
    return value


def _int(value: object, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CaseError(where, f"must be a whole number >= {minimum}, got {value!r}")
    return value


def _texts(value: object, where: str) -> tuple[str, ...]:
    """A string or a list of non-empty strings."""
    if isinstance(value, str):
        return (_str(value, where),)
    if not isinstance(value, list) or not value:
        raise CaseError(where, "must be a string or a non-empty list of strings")
    return tuple(_str(v, f"{where}[{i}]") for i, v in enumerate(value, 1))


def _mapping(value: object, where: str, known: tuple[str, ...] | None = None) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise CaseError(where, f"must be a mapping, got {_type_name(value)}")
    if known is not None:
        for key in value:
            if key not in known:
                raise CaseError(
                    f"{where}.{key}" if where else str(key), f"unknown field (known: {', '.join(known)})"
                )
    return value


def _one_of(value: object, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise CaseError(where, f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _tool(value: object, where: str) -> str:
    return _one_of(_str(value, where), where, tool_names())


def _tools(value: object, where: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    if allow_empty and value == []:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise CaseError(where, "must be a tool name or a non-empty list of tool names")
    return tuple(_tool(v, f"{where}[{i}]") for i, v in enumerate(value, 1))


def _rel_path(value: object, where: str) -> str:
    """A path inside the workspace (or home): relative, no `..`, so a case cannot touch the host."""
    text = _str(value, where)
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or "\\" in text or "\x00" in text:
        raise CaseError(where, f"must be a relative path without '..', got {text!r}")
    if str(path) in ("", "."):
        raise CaseError(where, f"must name a file, got {text!r}")
    return str(path)


def _placeholders(text: str, where: str, *, sessions: bool) -> None:
    for m in PLACEHOLDER_RE.finditer(text):
        if m.group(1).startswith("session") and not sessions:
            raise CaseError(
                where, f"{m.group(0)} is only known while the case runs (use it in turns or expect)"
            )
        if m.group(2) is not None and int(m.group(2)) < 1:
            raise CaseError(where, f"{m.group(0)}: sessions are numbered from 1")


def _turn_keyed(value: object, where: str, turns: int, parse: Callable[[object, str], T]) -> dict[int, T]:
    """A value for the last model turn, or a mapping {turn number: value}."""
    if isinstance(value, dict):
        out: dict[int, T] = {}
        for key, item in value.items():
            if isinstance(key, bool) or not isinstance(key, int) or not 1 <= key <= turns:
                raise CaseError(f"{where}.{key}", f"keys are turn numbers from 1 to {turns}")
            out[key] = parse(item, f"{where}.{key}")
        return out
    return {0: parse(value, where)}


# ---- sections ------------------------------------------------------------------------------------


def _memory(value: object) -> list[MemorySeed]:
    from ..core import memory

    if not isinstance(value, list):
        raise CaseError("memory", f"must be a list of memories, got {_type_name(value)}")
    if len(value) > MAX_MEMORIES:
        raise CaseError("memory", f"has {len(value)} entries; at most {MAX_MEMORIES}")
    seeds: list[MemorySeed] = []
    for i, item in enumerate(value, 1):
        where = f"memory[{i}]"
        _mapping(item, where, ("name", "type", "summary", "details"))
        for key in ("name", "type", "summary"):
            if key not in item:
                raise CaseError(f"{where}.{key}", "is required")
        name = _str(item["name"], f"{where}.name")
        type_ = _str(item["type"], f"{where}.type")
        summary = _str(item["summary"], f"{where}.summary")
        details = _str(item.get("details", ""), f"{where}.details", empty=True)
        # The same rules as memory files, so the seeded memories load as the case author meant.
        for key, problem in (
            ("name", memory.name_problem(name)),
            ("type", memory.type_problem(type_)),
            ("summary", memory.summary_problem(summary)),
            ("details", memory.details_problem(details)),
        ):
            if problem:
                raise CaseError(f"{where}.{key}", problem)
        if any(s.name == name for s in seeds):
            raise CaseError(f"{where}.name", f"{name!r} appears twice")
        seeds.append(MemorySeed(name, type_, summary, details))
    return seeds


def _skills(value: object) -> dict[str, tuple[str, str]]:
    from ..core import frontmatter
    from ..core.skills import description_problem

    out: dict[str, tuple[str, str]] = {}
    for name, spec in _mapping(value, "skills").items():
        where = f"skills.{name}"
        if not isinstance(name, str) or not frontmatter.valid_name(name):
            raise CaseError(where, f"skill names are {frontmatter.NAME_RULE}")
        _mapping(spec, where, ("description", "body"))
        if "description" not in spec:
            raise CaseError(f"{where}.description", "is required")
        description = _str(spec["description"], f"{where}.description")
        problem = description_problem(description)
        if problem:
            raise CaseError(f"{where}.description", problem)
        out[name] = (description, _str(spec.get("body", ""), f"{where}.body", empty=True))
    return out


def _config(value: object) -> dict[str, Any]:
    config = _mapping(value, "config")
    for key in config:
        if key not in CONFIG_KEYS:
            why = CONFIG_KEYS_NOT_IN_CASES.get(str(key), f"unknown field (known: {', '.join(CONFIG_KEYS)})")
            raise CaseError(f"config.{key}", why)
    return dict(config)


def _script(value: object) -> list[dict[str, Any]]:
    from ..testing.scripted_model import parse_reply

    if not isinstance(value, list):
        raise CaseError("script", f"must be a list of replies, got {_type_name(value)}")
    for i, reply in enumerate(value, 1):
        where = f"script[{i}]"
        try:
            parse_reply(reply, where)
        except ValueError as exc:
            problem = str(exc)
            raise CaseError(where, problem.removeprefix(f"{where}: ")) from None
        for text in _strings(reply):
            _placeholders(text, where, sessions=False)
    return list(value)


def _file_check(value: object, where: str) -> FileCheck:
    if isinstance(value, str):
        return FileCheck(exists=True, equals=value)
    spec = _mapping(value, where, FILE_KEYS)
    if not spec:
        raise CaseError(where, f"needs at least one of {', '.join(FILE_KEYS)}")
    exists = _bool(spec["exists"], f"{where}.exists") if "exists" in spec else None
    check = FileCheck(
        exists=exists,
        equals=_str(spec["equals"], f"{where}.equals", empty=True) if "equals" in spec else None,
        contains=_texts(spec["contains"], f"{where}.contains") if "contains" in spec else (),
        not_contains=_texts(spec["not_contains"], f"{where}.not_contains") if "not_contains" in spec else (),
    )
    if exists is False and (check.equals is not None or check.contains or check.not_contains):
        raise CaseError(where, "exists: false cannot be combined with content checks")
    return check


def _file_checks(value: object, where: str) -> dict[str, FileCheck]:
    out: dict[str, FileCheck] = {}
    for path, check in _mapping(value, where).items():
        key = _rel_path(path, f"{where}.{path}")
        out[key] = _file_check(check, f"{where}.{path}")
    return out


def _item_check(value: object, where: str) -> ItemCheck:
    spec = _mapping(value, where, ITEM_KEYS)
    return ItemCheck(
        type=_one_of(spec["type"], f"{where}.type", ITEM_TYPES) if "type" in spec else None,
        role=_one_of(spec["role"], f"{where}.role", ("user", "assistant")) if "role" in spec else None,
        contains=_texts(spec["contains"], f"{where}.contains") if "contains" in spec else (),
        not_contains=_texts(spec["not_contains"], f"{where}.not_contains") if "not_contains" in spec else (),
    )


def _request_check(value: object, where: str) -> RequestCheck:
    spec = _mapping(value, where, REQUEST_KEYS)
    if not spec:
        raise CaseError(where, f"needs at least one of {', '.join(REQUEST_KEYS)}")
    items: dict[int, ItemCheck] = {}
    if "first_item" in spec:
        items[1] = _item_check(spec["first_item"], f"{where}.first_item")
    if "items" in spec:
        for key, check in _mapping(spec["items"], f"{where}.items").items():
            if isinstance(key, bool) or not isinstance(key, int) or key == 0:
                raise CaseError(
                    f"{where}.items.{key}", "keys are input item numbers: 1, 2, … or -1 for the last"
                )
            items[key] = _item_check(check, f"{where}.items.{key}")

    def texts(key: str) -> tuple[str, ...]:
        return _texts(spec[key], f"{where}.{key}") if key in spec else ()

    return RequestCheck(
        contains=texts("contains"),
        not_contains=texts("not_contains"),
        instructions_contains=texts("instructions_contains"),
        instructions_not_contains=texts("instructions_not_contains"),
        tools=_bool(spec["tools"], f"{where}.tools") if "tools" in spec else None,
        input_count=_int(spec["input_count"], f"{where}.input_count") if "input_count" in spec else None,
        items=items,
    )


def _expect(value: object, turns: int) -> Expect:
    spec = _mapping(value, "expect", EXPECT_KEYS)
    exp = Expect(keys=tuple(spec))
    if "answer_contains" in spec:
        exp.answer_contains = _turn_keyed(spec["answer_contains"], "expect.answer_contains", turns, _texts)
    if "answer_not_contains" in spec:
        exp.answer_not_contains = _turn_keyed(
            spec["answer_not_contains"], "expect.answer_not_contains", turns, _texts
        )
    if "turn_status" in spec:
        exp.turn_status = _turn_keyed(
            spec["turn_status"], "expect.turn_status", turns, lambda v, w: _one_of(v, w, TURN_STATUSES)
        )
    if "output_contains" in spec:
        exp.output_contains = _texts(spec["output_contains"], "expect.output_contains")
    if "tools_called" in spec:
        exp.tools_called = _tools(spec["tools_called"], "expect.tools_called")
    if "tools_not_called" in spec:
        exp.tools_not_called = _tools(spec["tools_not_called"], "expect.tools_not_called")
    if "statuses" in spec:
        raw = spec["statuses"]
        if isinstance(raw, list):
            exp.statuses = tuple(
                _one_of(v, f"expect.statuses[{i}]", TOOL_STATUSES) for i, v in enumerate(raw, 1)
            )
        else:
            exp.statuses = {
                _tool(k, f"expect.statuses.{k}"): _one_of(v, f"expect.statuses.{k}", TOOL_STATUSES)
                for k, v in _mapping(raw, "expect.statuses").items()
            }
    if "tool_output_contains" in spec:
        exp.tool_output_contains = {
            _tool(k, f"expect.tool_output_contains.{k}"): _texts(v, f"expect.tool_output_contains.{k}")
            for k, v in _mapping(spec["tool_output_contains"], "expect.tool_output_contains").items()
        }
    if "asked" in spec:
        exp.asked = _tools(spec["asked"], "expect.asked", allow_empty=True)
    if "requests" in spec:
        for key, check in _mapping(spec["requests"], "expect.requests").items():
            if isinstance(key, bool) or not isinstance(key, int) or key < 1:
                raise CaseError(f"expect.requests.{key}", "keys are request numbers from 1")
            exp.requests[key] = _request_check(check, f"expect.requests.{key}")
    if "last_request" in spec:
        exp.last_request = _request_check(spec["last_request"], "expect.last_request")
    for key in ("request_count", "questions", "memory_count", "session_count"):
        if key in spec:
            setattr(exp, key, _int(spec[key], f"expect.{key}"))
    for key in ("files", "home_files", "memory_files"):
        if key in spec:
            setattr(exp, key, _file_checks(spec[key], f"expect.{key}"))
    if "active_session" in spec:
        exp.active_session = _str(spec["active_session"], "expect.active_session")
    for text in _strings(spec):
        _placeholders(text, "expect", sessions=True)
    return exp


def _strings(obj: object) -> list[str]:
    """Every string inside a YAML value (keys included)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in _strings(k) + _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


# ---- the case ------------------------------------------------------------------------------------


def parse_case(data: object, file: str) -> Case:
    """Validate one parsed YAML document. Raises CaseError."""
    if not isinstance(data, dict):
        raise CaseError("(file)", f"must be a mapping of case fields, got {_type_name(data)}")
    _mapping(data, "", CASE_KEYS)
    stem = Path(file).stem
    case = Case(file=file, name=_str(data.get("name", stem), "name"))
    if case.name.splitlines() != [case.name]:
        raise CaseError("name", "must be one line")
    if "description" in data:
        case.description = _str(data["description"], "description", empty=True)
    if "live" in data:
        case.live = _bool(data["live"], "live")
    if "mode" in data:
        case.mode = _one_of(data["mode"], "mode", MODES)
    if "approve" in data:
        raw = data["approve"]
        if isinstance(raw, str) and raw not in ("all", "none", "always"):
            raise CaseError("approve", f"must be all, always, none or a list of tool names, got {raw!r}")
        case.approve = raw if raw in ("all", "none", "always") else _tools(raw, "approve")
    for key in ("confirm_recovery", "confirm_clear"):
        if key in data:
            setattr(case, key, _bool(data[key], key))
    if "requires" in data:
        raw = data["requires"]
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list):
            raise CaseError("requires", "must be a capability or a list of them (sandbox)")
        case.requires = tuple(_one_of(v, f"requires[{i}]", CAPABILITIES) for i, v in enumerate(items, 1))
    if "soul" in data:
        case.soul = _str(data["soul"], "soul")
    if "memory" in data:
        case.memory = _memory(data["memory"])
    if "files" in data:
        for path, content in _mapping(data["files"], "files").items():
            case.files[_rel_path(path, f"files.{path}")] = _str(content, f"files.{path}", empty=True)
    if "skills" in data:
        case.skills = _skills(data["skills"])
    if "config" in data:
        case.config = _config(data["config"])
    if "turns" not in data:
        raise CaseError("turns", "is required: a list of user lines (lines starting with / are commands)")
    turns = data["turns"]
    if not isinstance(turns, list) or not turns:
        raise CaseError("turns", "must be a non-empty list of user lines")
    for i, line in enumerate(turns, 1):
        text = _str(line, f"turns[{i}]")
        if text.strip() == "":
            raise CaseError(f"turns[{i}]", "must not be blank")
        _placeholders(text, f"turns[{i}]", sessions=True)
        case.turns.append(text)
    if "script" in data:
        case.script = _script(data["script"])
    if "expect" in data:
        case.expect = _expect(data["expect"], len(case.turns))
    return case


def load_case(path: Path) -> Case:
    """Read and validate one case file. Raises CaseError (field "yaml" for a file that does not parse)."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CaseError("(file)", "is not UTF-8 text") from None
    except OSError as exc:
        raise CaseError("(file)", f"cannot be read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CaseError("yaml", f"{where}{' '.join(str(problem).split())}") from None
    return parse_case(data, path.name)
