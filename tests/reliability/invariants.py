"""What "nothing lost, nothing corrupted" means on disk, checked without Mino's own loader.

These readers are deliberately independent of mino_server.core.sessions.log: a bug in the loader must not
also blind the check. Every function returns a list of problems (empty when all is well).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mino_server.core.frontmatter import FrontMatterError, parse

# The session ID and the record types as docs/BEHAVIOUR.md, "Session records" states them. Copied on
# purpose, not imported from mino_server.core.sessions.log (RECORD_TYPES): a type the loader accepts
# but that section does not name must fail these checks, not widen them.
ID_LEN = 32
HEX = set("0123456789abcdef")
KNOWN_TYPES = {
    "user_message",
    "assistant_message",
    "tool_call",
    "tool_result",
    "turn_end",
    "compaction",
    "session_skills",
    "recovery",
    "recovery_ack",
    "rewind",
    "interrupted",
}


@dataclass
class LogView:
    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    torn: bool = False  # a torn last line (allowed: Mino repairs it with a recovery copy)
    problem: str | None = None  # damage Mino must refuse to load


def is_session_name(name: str) -> bool:
    stem = name.removesuffix(".jsonl")
    return name.endswith(".jsonl") and len(stem) == ID_LEN and set(stem) <= HEX


def read_log(path: Path) -> LogView:
    view = LogView(path)
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: empty, or a record whose append never finished
    for i, line in enumerate(lines):
        rest = b"\n".join(lines[i:]) + b"\n" + tail
        try:
            rec = json.loads(line)
        except ValueError:
            if not rest.strip(b"\x00\n"):  # a tail of NUL bytes is a torn tail too
                view.torn = True
                return view
            view.problem = f"line {i + 1} is not JSON"
            return view
        if not isinstance(rec, dict) or rec.get("seq") != len(view.records) + 1:
            view.problem = (
                f"line {i + 1}: seq {rec.get('seq') if isinstance(rec, dict) else '?'} breaks 1, 2, 3…"
            )
            return view
        if rec.get("type") not in KNOWN_TYPES:
            view.problem = f"line {i + 1}: unknown type {rec.get('type')!r}"
            return view
        view.records.append(rec)
    view.torn = tail != b""
    return view


def pair_calls(records: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """Each tool_call's result, by position: a result answers the oldest open call with its call_id.

    Returns ({seq of call: result record}, calls without a result). Positional on purpose: a model
    may reuse a call_id, and a later call must never borrow an earlier call's result.
    """
    open_calls: dict[str, list[dict[str, Any]]] = {}
    results: dict[int, dict[str, Any]] = {}
    for r in records:
        if r["type"] == "tool_call":
            open_calls.setdefault(r.get("call_id", ""), []).append(r)
        elif r["type"] == "tool_result":
            waiting = open_calls.get(r.get("call_id", ""))
            if waiting:
                results[waiting.pop(0)["seq"]] = r
    pending = sorted((c for calls in open_calls.values() for c in calls), key=lambda c: c["seq"])
    return results, pending


def log_consistency(view: LogView) -> list[str]:
    """A log Mino has finished with: whole (no damage, no torn tail), every call has exactly one
    result, every turn a turn_end. Takes the whole view: the records read before a damaged line must
    not pass for the log."""
    if view.problem or view.torn:
        return [f"{view.path.name}: {view.problem or 'torn last line'}"]
    records = view.records
    problems = []
    results, pending = pair_calls(records)
    for call in pending:
        problems.append(f"tool_call {call.get('call_id')} (seq {call['seq']}) has no tool_result")
    orphans = sum(1 for r in records if r["type"] == "tool_result") - len(results)
    if orphans:
        problems.append(f"{orphans} tool_result record(s) answer no call")
    ended = {r.get("turn_id") for r in records if r["type"] == "turn_end"}
    for tid in dict.fromkeys(r.get("turn_id") for r in records if r.get("turn_id")):
        if tid not in ended:
            problems.append(f"turn {tid} has no turn_end")
    return problems


def request_consistency(body: dict[str, Any], strict_ids: bool = True) -> list[str]:
    """A request Mino sent: every function_call has exactly one output, right after its call.

    strict_ids: no call_id twice (Mino never writes such a log; a hand-made one may hold them).
    """
    problems = []
    items = body.get("input", [])
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.get("type") == "function_call":
            cid = item.get("call_id")
            if strict_ids and cid in seen:
                problems.append(f"call_id {cid} sent twice in one request")
            seen.add(cid)
            nxt = items[i + 1] if i + 1 < len(items) else None
            if not nxt or nxt.get("type") != "function_call_output" or nxt.get("call_id") != cid:
                problems.append(f"function_call {cid} is not followed by its output")
        elif item.get("type") == "function_call_output":
            prev = items[i - 1] if i else None
            if not prev or prev.get("type") != "function_call" or prev.get("call_id") != item.get("call_id"):
                problems.append(f"function_call_output {item.get('call_id')} follows no call")
    return problems


def session_files(home: Path) -> list[Path]:
    d = home / "sessions"
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if is_session_name(p.name))


def read_selection(home: Path) -> tuple[str | None, str | None]:
    """(selected id, problem). No file: (None, None)."""
    path = home / "sessions" / "active-session.json"
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, None
    except ValueError:
        return None, "active-session.json is not JSON (half-written?)"
    sid = data.get("session_id") if isinstance(data, dict) else None
    if not isinstance(sid, str) or len(sid) != ID_LEN or not set(sid) <= HEX:
        return None, f"active-session.json holds no valid ID: {data!r}"
    return sid, None


def store_problems(home: Path) -> list[str]:
    """Every session loads (a torn tail is allowed), the selection names one of them."""
    problems = []
    files = session_files(home)
    for path in files:
        view = read_log(path)
        if view.problem:
            problems.append(f"{path.name}: {view.problem}")
    sid, problem = read_selection(home)
    if problem:
        problems.append(problem)
    elif sid is None:
        if len(files) > 1:
            problems.append(f"no selection but {len(files)} sessions")
    elif not (home / "sessions" / f"{sid}.jsonl").is_file():
        problems.append(f"the selection {sid} is not one of the sessions")
    return problems


def memory_problems(memory_dir: Path) -> list[str]:
    """Every memory file (not a dot file) parses whole: none is half-written."""
    problems = []
    if not memory_dir.is_dir():
        return problems
    for path in sorted(memory_dir.iterdir()):
        if path.name.startswith(".") or not path.name.endswith(".md"):
            continue
        if not stat.S_ISREG(os.lstat(path).st_mode):
            continue
        try:
            doc = parse(path.read_bytes(), ("name", "type", "summary"))
        except FrontMatterError as exc:
            problems.append(f"memory {path.name} does not parse: {exc.reason}")
            continue
        if doc.fields["name"] != path.name[:-3]:
            problems.append(f"memory {path.name} names {doc.fields['name']!r}")
    return problems


def tree_snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under root: file bytes, or a marker for links, folders and special files."""
    out: dict[str, bytes | str] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[rel] = p.read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            else:
                out[rel] = f"special:{stat.S_IFMT(st.st_mode):o}"
    return out
