"""Grading one finished case run against its `expect` block.

Each check returns failure lines written so that the case or the code can be fixed from the line:
which expectation, what was expected, what happened instead (values cut to a readable length).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.contract import ToolResultEvent
from ..testing.scripted_model import contains_text, string_values
from .schema import LIVE_KEYS, Case, FileCheck, ItemCheck, RequestCheck

SHOW = 160  # characters of a value quoted in a failure line


def show(value: str, limit: int = SHOW) -> str:
    """A value quoted on one line: repr escapes newlines and invisible characters."""
    if len(value) > limit:
        return repr(value[:limit]) + f"…(+{len(value) - limit} chars)"
    return repr(value)


@dataclass
class Turn:
    number: int
    text: str  # after placeholders
    command: bool
    status: str  # a TurnOutcome status; "completed" for commands, "stopped" when storage failed
    answer: str  # the model's text, or the command's output
    error: str | None = None


@dataclass
class Run:
    """Everything a case run produced, gathered before its temporary folders are removed."""

    home: Path
    workspace: Path
    turns: list[Turn] = field(default_factory=list)
    results: list[ToolResultEvent] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  # tools an approval was asked for, in order
    output: list[str] = field(default_factory=list)  # start-up lines, command output, notices
    requests: list[dict[str, Any]] = field(default_factory=list)
    final_session: str | None = None
    substitute: Callable[[str], str] = str


def request_text(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The raw JSON text of a request body and every string value inside it (decoded)."""
    return json.dumps(body, ensure_ascii=False), list(string_values(body))


def item_text(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "message":
        content = item.get("content", [])
        if isinstance(content, str):  # text-only messages are sent as strings
            return content
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if kind == "function_call":
        return f"{item.get('name', '')} {item.get('arguments', '')}"
    if kind == "function_call_output":
        return str(item.get("output", ""))
    return json.dumps(item, ensure_ascii=False)


def describe_item(item: dict[str, Any]) -> str:
    kind = item.get("type", "?")
    if kind == "message":
        return f"{item.get('role', '?')} message {show(item_text(item))}"
    if kind == "function_call":
        return f"function_call {item.get('name', '?')} {show(str(item.get('arguments', '')))}"
    if kind == "function_call_output":
        return f"function_call_output {show(item_text(item))}"
    return show(json.dumps(item, ensure_ascii=False))


def describe_request(body: dict[str, Any]) -> str:
    """What a request carried, in a few words: enough to write the reply the script is missing."""
    items = body.get("input")
    if not isinstance(items, list) or not items:
        return "a request without input items"
    tools = body.get("tools")
    offered = f", {len(tools)} tools" if isinstance(tools, list) and tools else ", no tools"
    return f"{len(items)} input items{offered}, ending with {describe_item(items[-1])}"


def _in_order(text: str, needles: tuple[str, ...]) -> str | None:
    """The first needle missing from `text` when looked for in order after the previous one."""
    at = 0
    for needle in needles:
        found = text.find(needle, at)
        if found < 0:
            return needle
        at = found + len(needle)
    return None


# ---- the checks ----------------------------------------------------------------------------------


def grade(case: Case, run: Run, live: bool) -> list[str]:
    exp = case.expect
    sub = run.substitute
    keys = set(exp.keys) if not live else set(exp.keys) & set(LIVE_KEYS)
    failures: list[str] = []
    failures += _turn_statuses(case, run)
    model_turns = [t for t in run.turns if not t.command]

    def answer_of(number: int, key: str) -> Turn | None:
        if number == 0:
            if not model_turns:
                failures.append(f"{key}: no turn was sent to the model")
                return None
            return model_turns[-1]
        for t in run.turns:
            if t.number == number:
                return t
        failures.append(f"{key}: turn {number} did not run")
        return None

    fold = (lambda s: s.casefold()) if live else (lambda s: s)  # a real model's casing varies
    for key, wanted in (("answer_contains", True), ("answer_not_contains", False)):
        if key not in keys:
            continue
        for number, needles in getattr(exp, key).items():
            turn = answer_of(number, key)
            if turn is None:
                continue
            for needle in map(sub, needles):
                if (fold(needle) in fold(turn.answer)) != wanted:
                    verb = "does not contain" if wanted else "contains"
                    failures.append(
                        f"{key}: turn {turn.number} ({show(turn.text, 60)}) {verb} {show(needle)}; "
                        f"it was {show(turn.answer)}"
                    )
    if "output_contains" in keys:
        shown = "\n".join(run.output)
        for needle in map(sub, exp.output_contains):
            if needle not in shown:
                failures.append(
                    f"output_contains: nothing shown contains {show(needle)}; shown: {show(shown, 300)}"
                )
    called = [r.tool for r in run.results]
    calls = ", ".join(called) or "none"
    for tool in exp.tools_called if "tools_called" in keys else ():
        if tool not in called:
            failures.append(f"tools_called: {tool} was not called (calls: {calls})")
    for tool in exp.tools_not_called if "tools_not_called" in keys else ():
        if tool in called:
            failures.append(f"tools_not_called: {tool} was called (calls: {calls})")
    if "statuses" in keys:
        failures += _statuses(exp.statuses, run)
    for tool, needles in exp.tool_output_contains.items() if "tool_output_contains" in keys else ():
        outputs = [r.text for r in run.results if r.tool == tool]
        if not outputs:
            failures.append(f"tool_output_contains: {tool} was not called (calls: {calls})")
            continue
        for needle in map(sub, needles):
            if not any(needle in o for o in outputs):
                failures.append(
                    f"tool_output_contains: no {tool} result contains {show(needle)}; got {show(outputs[-1])}"
                )
    if "asked" in keys and exp.asked is not None and list(exp.asked) != run.asked:
        failures.append(
            f"asked: approval was asked for {run.asked or 'nothing'}, expected {list(exp.asked) or 'nothing'}"
        )
    if "questions" in keys and exp.questions is not None and exp.questions != len(run.asked):
        failures.append(
            f"questions: {len(run.asked)} approval questions were asked, expected {exp.questions}"
        )
    if "request_count" in keys and exp.request_count != len(run.requests):
        failures.append(
            f"request_count: {len(run.requests)} requests were sent, expected {exp.request_count}"
        )
    for number, check in exp.requests.items() if "requests" in keys else ():
        if number > len(run.requests):
            failures.append(f"requests.{number}: only {len(run.requests)} requests were sent")
            continue
        failures += _request(f"request {number}", run.requests[number - 1], check, sub)
    if "last_request" in keys and exp.last_request is not None:
        if not run.requests:
            failures.append("last_request: no request was sent")
        else:
            failures += _request(
                f"last request (#{len(run.requests)})", run.requests[-1], exp.last_request, sub
            )
    for key, base in (
        ("files", run.workspace),
        ("home_files", run.home),
        ("memory_files", run.home / "memory"),
    ):
        for rel, fcheck in getattr(exp, key).items() if key in keys else ():
            failures += _file(key, rel, base / rel, fcheck, sub)
    if "memory_count" in keys:
        names = _memory_files(run.home / "memory")
        if len(names) != exp.memory_count:
            failures.append(
                f"memory_count: {len(names)} memory files ({', '.join(names) or 'none'}), expected {exp.memory_count}"
            )
    if "session_count" in keys:
        count = len(list((run.home / "sessions").glob("*.jsonl")))
        if count != exp.session_count:
            failures.append(f"session_count: {count} session files, expected {exp.session_count}")
    if "active_session" in keys and exp.active_session is not None:
        session = sub(exp.active_session)
        if run.final_session != session:
            failures.append(f"active_session: {run.final_session} is selected, expected {session}")
    return failures


def _turn_statuses(case: Case, run: Run) -> list[str]:
    """Every turn must end as expected: `completed` unless turn_status says otherwise."""
    failures = []
    for turn in run.turns:
        if turn.command:
            if turn.status == "stopped":
                failures.append(f"turn {turn.number} ({turn.text}): the chat stopped: {turn.answer}")
            continue
        wanted = case.expect.turn_status.get(turn.number, case.expect.turn_status.get(0, "completed"))
        if turn.status != wanted and "scripted model: " in (turn.error or ""):
            continue  # a script violation, already reported with what was sent
        if turn.status != wanted:
            why = f": {turn.error}" if turn.error else ""
            failures.append(
                f"turn_status: turn {turn.number} ({show(turn.text, 60)}) ended {turn.status}{why}; expected {wanted}"
            )
    return failures


def _statuses(wanted: dict[str, str] | tuple[str, ...] | None, run: Run) -> list[str]:
    if wanted is None:
        return []
    if isinstance(wanted, tuple):
        got = [r.status for r in run.results]
        if got != list(wanted):
            pairs = ", ".join(f"{r.tool}={r.status}" for r in run.results) or "no tool results"
            return [f"statuses: got [{pairs}], expected {list(wanted)}"]
        return []
    failures = []
    for tool, status in wanted.items():
        mine = [r for r in run.results if r.tool == tool]
        if not mine:
            calls = ", ".join(r.tool for r in run.results) or "none"
            failures.append(f"statuses: {tool} was not called (calls: {calls}), expected {status}")
        for r in mine:
            if r.status != status:
                failures.append(
                    f"statuses: {tool} ended {r.status}, expected {status} (result: {show(r.text)})"
                )
    return failures


def _request(label: str, body: dict[str, Any], check: RequestCheck, sub: Callable[[str], str]) -> list[str]:
    failures = []
    raw, strings = request_text(body)
    for needle in map(sub, check.contains):
        if not contains_text(needle, raw, strings):
            failures.append(f"{label} does not contain {show(needle)} ({describe_request(body)})")
    for needle in map(sub, check.not_contains):
        if contains_text(needle, raw, strings):
            failures.append(f"{label} contains {show(needle)} (in {_where(needle, body)})")
    instructions = found if isinstance(found := body.get("instructions"), str) else ""
    for needle in map(sub, check.instructions_contains):
        if needle not in instructions:
            failures.append(
                f"{label}: instructions do not contain {show(needle)}; they end {show(instructions[-200:])}"
            )
    for needle in map(sub, check.instructions_not_contains):
        if needle in instructions:
            failures.append(f"{label}: instructions contain {show(needle)}")
    tools = found if isinstance(found := body.get("tools"), list) else []
    if check.tools is True and not tools:
        failures.append(f"{label} offers no tools, expected some")
    if check.tools is False and tools:
        names = ", ".join(str(t.get("name")) for t in tools if isinstance(t, dict))
        failures.append(f"{label} offers tools ({names}), expected none")
    items = found if isinstance(found := body.get("input"), list) else []
    if check.input_count is not None and len(items) != check.input_count:
        failures.append(f"{label} has {len(items)} input items, expected {check.input_count}")
    for number, icheck in check.items.items():
        index = number - 1 if number > 0 else len(items) + number
        if not 0 <= index < len(items):
            failures.append(f"{label} has {len(items)} input items; there is no item {number}")
            continue
        failures += _item(f"{label} item {number}", items[index], icheck, sub)
    return failures


def _item(label: str, item: dict[str, Any], check: ItemCheck, sub: Callable[[str], str]) -> list[str]:
    failures = []
    if check.type is not None and item.get("type") != check.type:
        failures.append(f"{label} is {describe_item(item)}, expected a {check.type}")
    if check.role is not None and item.get("role") != check.role:
        failures.append(f"{label} is {describe_item(item)}, expected role {check.role}")
    text = item_text(item)
    missing = _in_order(text, tuple(map(sub, check.contains)))
    if missing is not None:
        order = " (after the texts before it)" if len(check.contains) > 1 else ""
        failures.append(f"{label} does not contain {show(missing)}{order}; it is {show(text, 300)}")
    for needle in map(sub, check.not_contains):
        if needle in text:
            failures.append(f"{label} contains {show(needle)}")
    return failures


def _where(needle: str, body: dict[str, Any]) -> str:
    """Which part of a request holds a text, so an unwanted text can be traced to its source."""
    if isinstance(body.get("instructions"), str) and needle in body["instructions"]:
        return "the instructions"
    for i, item in enumerate(body.get("input") or [], 1):
        if isinstance(item, dict) and (
            needle in item_text(item) or needle in json.dumps(item, ensure_ascii=False)
        ):
            return f"input item {i}: {describe_item(item)}"
    return "the tools or other fields"


def _file(key: str, rel: str, path: Path, check: FileCheck, sub: Callable[[str], str]) -> list[str]:
    label = f"{key}: {rel}"
    exists = path.exists() or path.is_symlink()
    if check.exists is False:
        return [f"{label} exists, expected it not to"] if exists else []
    if not exists:
        return [f"{label} does not exist"]
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        return [f"{label} cannot be read: {exc.strerror or exc}"]
    failures = []
    if check.equals is not None and text != sub(check.equals):
        failures.append(f"{label} is {show(text)}, expected {show(sub(check.equals))}")
    for needle in map(sub, check.contains):
        if needle not in text:
            failures.append(f"{label} does not contain {show(needle)}; it is {show(text)}")
    for needle in map(sub, check.not_contains):
        if needle in text:
            failures.append(f"{label} contains {show(needle)}")
    return failures


def _memory_files(directory: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(directory) if n.endswith(".md") and not n.startswith("."))
    except OSError:
        return []
