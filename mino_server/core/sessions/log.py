"""One session: a JSONL log of records (SPEC §4, chapters 02, 04, 05).

Each record: {"seq", "type", "turn_id"?, "at", ...}; seq is 1, 2, 3 … contiguous per file, and the
file name is the session's identity (no session_id field). Appends are fsynced before they return.

Loading (chapter 04): a torn last line (a crash mid-append, or a tail of NUL bytes) is kept in a
recovery copy beside the file and cut off; damage anywhere else means the log cannot be loaded.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..durable import append_line, atomic_write, fsync_dir

RECORD_TYPES = frozenset(
    {
        "user_message",
        "assistant_message",
        "tool_call",
        "tool_result",
        "turn_end",
        "compaction",
        "session_skills",
        "recovery",
        "recovery_ack",
    }
)
REPLAYABLE = frozenset({"user_message", "assistant_message", "tool_call", "tool_result"})
UNKNOWN_RESULT_TEXT = "The result of this call was never recorded: the command may or may not have run."


class LogError(Exception):
    """The session log cannot be loaded; the message says why."""


def utc_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def _open_regular(path: Path, flags: int) -> int:
    """Open a session file, refusing symlinks and special files."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symlink
            raise LogError(f"{path.name} is a symbolic link; Mino only loads regular session files") from None
        raise LogError(f"cannot open {path.name}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise LogError(f"{path.name} is not a regular file")
    return fd


@dataclass
class Pending:
    """A tool call whose result was never recorded."""

    call_id: str
    name: str
    arguments: str
    turn_id: str | None


class SessionLog:
    def __init__(self, path: Path, records: list[dict[str, Any]], fd: int) -> None:
        self.path = path
        self.id = path.name[: -len(".jsonl")]
        self.records = records
        self._fd = fd
        self.notices: list[str] = []
        # Kept up to date by append(), so a turn costs the same on a 100-record and a 100k-record log.
        self._compaction: dict[str, Any] | None = None
        self._skills: dict[str, Any] | None = None
        self._call_ids: set[str] = set()
        for r in records:
            t = r["type"]
            if t == "tool_call":
                self._call_ids.add(r["call_id"])
            elif t == "compaction":
                self._compaction = r
            elif t == "session_skills":
                self._skills = r
        self._replay = self._select_replay()

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path) -> SessionLog:
        fd = _open_regular(path, os.O_RDWR | os.O_APPEND)
        try:
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            data = b"".join(chunks)
            del chunks  # not a second copy of the file in memory while it is parsed (61 MB at 100k records)
            records, cut_at = _parse(data, path.name)
            log = cls(path, records, fd)
            if cut_at is not None:
                try:
                    log._cut_torn_tail(data, cut_at)
                except OSError as exc:  # e.g. no room for the recovery copy: refuse, one line, no traceback
                    raise LogError(
                        f"{path.name} ends in an incomplete record that could not be repaired: "
                        f"{exc.strerror or exc}"
                    ) from None
            return log
        except BaseException:
            os.close(fd)
            raise

    def _cut_torn_tail(self, data: bytes, cut_at: int) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        copy = self.path.with_name(f"{self.path.name}.recovery-{stamp}")
        n = 1
        while copy.exists():
            n += 1
            copy = self.path.with_name(f"{self.path.name}.recovery-{stamp}-{n}")
        atomic_write(copy, data)
        os.ftruncate(self._fd, cut_at)
        os.fsync(self._fd)
        fsync_dir(self.path.parent)
        self.notices.append(
            f"Session {self.id}: its last record was incomplete (an interrupted write) and was removed; "
            f"the original file is kept as {copy.name}."
        )

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # ---- appending -----------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        return len(self.records) + 1

    def append(self, type_: str, turn_id: str | None = None, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"seq": self.next_seq, "type": type_}
        if turn_id is not None:
            record["turn_id"] = turn_id
        record["at"] = utc_now()
        record.update(fields)
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        append_line(self._fd, line.encode("utf-8"))
        self.records.append(record)
        if type_ in REPLAYABLE:
            self._replay.append(record)  # its seq is past every compaction's through_seq
            if type_ == "tool_call":
                self._call_ids.add(record["call_id"])
        elif type_ == "compaction":
            self._compaction = record
            self._replay = self._select_replay()
        elif type_ == "session_skills":
            self._skills = record
        return record

    # ---- recovery (chapter 04) -----------------------------------------------------------
    def pending_calls(self) -> list[Pending]:
        done = {r.get("call_id") for r in self.records if r["type"] == "tool_result"}
        return [
            Pending(r["call_id"], r.get("name", ""), r.get("arguments", ""), r.get("turn_id"))
            for r in self.records
            if r["type"] == "tool_call" and r["call_id"] not in done
        ]

    def recover(self) -> None:
        """Mark every call without a result as unknown and close turns that never ended. Never re-runs."""
        for p in self.pending_calls():
            self.append("recovery", p.turn_id, call_id=p.call_id, name=p.name)
            self.append(
                "tool_result", p.turn_id, call_id=p.call_id, status="unknown", output=UNKNOWN_RESULT_TEXT
            )
        ended = {r.get("turn_id") for r in self.records if r["type"] == "turn_end"}
        open_turns = []
        for r in self.records:
            tid = r.get("turn_id")
            if tid and tid not in ended and tid not in open_turns:
                open_turns.append(tid)
        for tid in open_turns:
            self.append("turn_end", tid, status="interrupted", reason="Mino stopped before this turn ended")

    def unacknowledged(self) -> list[dict[str, Any]]:
        """`recovery` records the user has not yet confirmed."""
        acked: set[str] = set()
        for r in self.records:
            if r["type"] == "recovery_ack":
                acked.update(r.get("call_ids", []))
        # One per call: a crash during recovery (after `recovery`, before the unknown result) makes
        # the next start write a second `recovery` for the same call; the question counts calls.
        pending: dict[str, dict[str, Any]] = {}
        for r in self.records:
            if r["type"] == "recovery" and r["call_id"] not in acked:
                pending.setdefault(r["call_id"], r)
        return list(pending.values())

    # ---- replay --------------------------------------------------------------------------
    def latest_compaction(self) -> dict[str, Any] | None:
        return self._compaction

    def session_skills(self) -> dict[str, Any] | None:
        return self._skills

    def call_ids(self) -> set[str]:
        """Every call_id of a `tool_call` record (a copy)."""
        return set(self._call_ids)

    def replay_records(self) -> list[dict[str, Any]]:
        """Messages and call/result records after the latest compaction (the rest is bookkeeping)."""
        return list(self._replay)

    def _select_replay(self) -> list[dict[str, Any]]:
        through = self._compaction["through_seq"] if self._compaction else 0
        return [r for r in self.records if r["seq"] > through and r["type"] in REPLAYABLE]


def replay_items(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses-API input items for replayable records. Every call gets exactly one output, right after it."""
    results = {r["call_id"]: r for r in records if r["type"] == "tool_result"}
    items: list[dict[str, Any]] = []
    for r in records:
        t = r["type"]
        if t == "user_message":
            items.append(user_item(r["text"], r.get("context")))
        elif t == "assistant_message":
            text = r["text"]
            if r.get("incomplete"):  # the model sees what the person saw: the text, and that it was cut
                text = "\n\n".join(t for t in (text, cut_short_note(r.get("reason"))) if t)
            items.append(assistant_item(text))
        elif t == "tool_call":
            result = results.get(r["call_id"])
            if result is None:
                continue  # a call without a result is never sent (recovery gives every call one)
            items.append(call_item(r["call_id"], r["name"], r["arguments"]))
            items.append(output_item(r["call_id"], result_text(result["status"], result["output"])))
    return items


# Text-only messages carry string content (valid Responses input): chat-completions bridges pass it
# through, where a list of parts was dropped or refused (llama-cpp-python behind LiteLLM).
def user_item(text: str, context: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A user message; with context items (a user_message record's `context`), the typed text and
    one `input_text` part per item: context needs parts, so a message with any is never a string."""
    if not context:
        return {"type": "message", "role": "user", "content": text}
    from ..context import context_part, from_record

    parts = [text, *(context_part(from_record(rec)) for rec in context)]
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": p} for p in parts]}


def assistant_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def cut_short_note(reason: object) -> str:
    """What the model is told after an answer the service cut short (e.g. at max_output_tokens)."""
    why = reason if isinstance(reason, str) and reason else "incomplete"
    return f"[This answer was cut short by the model service ({why}).]"


def call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output_item(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def result_text(status: str, output: str) -> str:
    """What the model receives for a result: the status first, so a denial is never mistaken for output."""
    return f"[status: {status}]\n{output}" if output else f"[status: {status}]"


def _parse(data: bytes, name: str) -> tuple[list[dict[str, Any]], int | None]:
    """Parse a whole log. Returns the records and, for a torn tail, the byte offset to cut at."""
    records: list[dict[str, Any]] = []
    pos = 0
    size = len(data)
    line_no = 0
    while pos < size:
        end = data.find(b"\n", pos)
        line = data[pos:] if end < 0 else data[pos:end]
        line_no += 1
        problem = None
        if end < 0:
            problem = "torn"  # no newline: the append never finished
        else:
            try:
                rec = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                problem = "not valid JSON"
            else:
                problem = _record_problem(rec, len(records) + 1)
        if problem is None:
            records.append(rec)
            pos = end + 1
            continue
        rest = data[pos:]
        # A torn tail: the last line, or only NUL bytes / newlines from here on.
        if end < 0 or not rest.strip(b"\x00\n"):
            return records, pos
        raise LogError(f"{name} line {line_no}: {problem}")
    return records, None


def _record_problem(rec: Any, expected_seq: int) -> str | None:
    if not isinstance(rec, dict):
        return "not a JSON object"
    seq = rec.get("seq")
    if type(seq) is not int:
        return "missing 'seq'"
    if seq != expected_seq:
        return f"seq {seq} where {expected_seq} was expected"
    t = rec.get("type")
    if t not in RECORD_TYPES:
        return f"unknown record type {t!r}"
    # Recovery puts turn_id and call_ids in sets: a list there would crash start-up, so it is damage.
    if "turn_id" in rec and not isinstance(rec["turn_id"], str):
        return "turn_id must be a string"
    if t == "recovery_ack" and not (
        isinstance(rec.get("call_ids"), list) and all(isinstance(c, str) for c in rec["call_ids"])
    ):
        return "recovery_ack needs a list of call_id strings"
    if t in ("user_message", "assistant_message") and not isinstance(rec.get("text"), str):
        return f"{t} without text"
    if t == "user_message" and "context" in rec:  # replayed as parts: checked like the rest
        from ..context import record_problem

        problem = record_problem(rec["context"])
        if problem is not None:
            return problem
    if t == "tool_call" and not (
        isinstance(rec.get("call_id"), str)
        and isinstance(rec.get("name"), str)
        and isinstance(rec.get("arguments"), str)
    ):
        return "tool_call needs string call_id, name and arguments"
    if t == "tool_result" and not (
        isinstance(rec.get("call_id"), str)
        and isinstance(rec.get("status"), str)
        and isinstance(rec.get("output"), str)
    ):
        return "tool_result needs string call_id, status and output"
    if t == "compaction" and not (
        isinstance(rec.get("summary"), str) and type(rec.get("through_seq")) is int
    ):
        return "compaction needs summary and through_seq"
    if t == "recovery" and not isinstance(rec.get("call_id"), str):
        return "recovery needs call_id"
    return None
