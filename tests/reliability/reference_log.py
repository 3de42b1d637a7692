"""The session loader as it was before the index: the oracle for "damage detection stays exactly as
strict" (tests/reliability/test_log_index_fuzz.py).

A frozen copy of the whole-file loader and the scans over every record that recovery, replay and
the chat panel used, with the log held whole in memory. The streaming loader and its index beside
the log must give exactly these answers, errors word for word, on any bytes. What one record must
hold is the loader's own rule (`_record_problem`, tested in tests/test_sessions.py and free to grow):
this oracle is about what the whole-file loader made of those answers.
"""

from __future__ import annotations

import json
from typing import Any

from mino_server.core.sessions.log import _record_problem

REPLAYABLE = frozenset({"user_message", "assistant_message", "tool_call", "tool_result", "interrupted"})


class RefLogError(Exception):
    pass


def parse(data: bytes, name: str) -> tuple[list[dict[str, Any]], int | None]:
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
        raise RefLogError(f"{name} line {line_no}: {problem}")
    return records, None


# ---- the scans over every record ----------------------------------------------------------------


def pending_calls(records: list[dict[str, Any]]) -> list[tuple[str, str, str, str | None]]:
    done = {r.get("call_id") for r in records if r["type"] == "tool_result"}
    return [
        (r["call_id"], r.get("name", ""), r.get("arguments", ""), r.get("turn_id"))
        for r in records
        if r["type"] == "tool_call" and r["call_id"] not in done
    ]


def open_turns(records: list[dict[str, Any]]) -> list[str]:
    ended = {r.get("turn_id") for r in records if r["type"] == "turn_end"}
    out: list[str] = []
    for r in records:
        tid = r.get("turn_id")
        if tid and tid not in ended and tid not in out:
            out.append(tid)
    return out


def recover(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records recovery appends (without `seq` and `at`)."""
    added: list[dict[str, Any]] = []
    for call_id, name, _args, turn_id in pending_calls(records):
        head = {"turn_id": turn_id} if turn_id is not None else {}
        added.append({"type": "recovery", **head, "call_id": call_id, "name": name})
        added.append({"type": "tool_result", **head, "call_id": call_id, "status": "unknown"})
    everything = records + added
    for tid in open_turns(everything):
        added.append({"type": "turn_end", "turn_id": tid, "status": "interrupted"})
    return added


def unacknowledged(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    acked: set[str] = set()
    for r in records:
        if r["type"] == "recovery_ack":
            acked.update(r.get("call_ids", []))
    pending: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["type"] == "recovery" and r["call_id"] not in acked:
            pending.setdefault(r["call_id"], r)
    return list(pending.values())


def latest(records: list[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    found = [r for r in records if r["type"] == type_]
    return found[-1] if found else None


def rewound(records: list[dict[str, Any]]) -> set[str]:
    """turn_ids a `rewind` record took back: later requests leave them out, the history marks them."""
    return {t for r in records if r["type"] == "rewind" for t in r["turns"]}


def replay(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    comp = latest(records, "compaction")
    through = comp["through_seq"] if comp else 0
    gone = rewound(records)
    return [
        r for r in records if r["seq"] > through and r["type"] in REPLAYABLE and r.get("turn_id") not in gone
    ]


def call_ids(records: list[dict[str, Any]]) -> set[str]:
    return {r["call_id"] for r in records if r["type"] == "tool_call"}


def tool_calls(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """call_id → its latest tool_call (what the recovery question describes)."""
    return {r["call_id"]: r for r in records if r["type"] == "tool_call"}


def history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything the chat panel showed in one answer, each item with its seq."""
    items: list[dict[str, Any]] = []
    calls: dict[str, str] = {}
    gone = rewound(records)
    for r in records:
        t = r["type"]
        if t == "user_message":
            items.append({"seq": r["seq"], "turnId": r.get("turn_id"), "role": "user", "text": r["text"]})
        elif t == "assistant_message":
            items.append(
                {"seq": r["seq"], "turnId": r.get("turn_id"), "role": "assistant", "text": r["text"]}
            )
            if r.get("interrupted"):  # the text streamed before the person interrupted the turn
                items[-1]["interrupted"] = True
        elif t == "tool_call":
            calls[r["call_id"]] = r["name"]
        elif t == "tool_result":
            items.append(
                {
                    "seq": r["seq"],
                    "turnId": r.get("turn_id"),
                    "role": "tool",
                    "text": r["output"],
                    "tool": calls.get(r["call_id"], "?"),
                    "status": r["status"],
                }
            )
        if items and items[-1]["seq"] == r["seq"] and r.get("turn_id") in gone:
            items[-1]["rewound"] = True
    return items
