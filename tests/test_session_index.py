"""Long sessions: the log is streamed, not held whole, and its checked index never loosens a check.

The index beside the log (`<id>.jsonl.idx`) lets a load skip parsing bytes it has already checked;
these tests change those bytes behind its back and expect exactly the answers of a load without
it (tests/reliability/test_log_index_fuzz.py does the same on fuzzed logs against the old loader).
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from mino_server.core.history import MAX_LIMIT, history_page
from mino_server.core.sessions import log as log_mod
from mino_server.core.sessions.log import INDEX_SUFFIX, LogError, SessionLog

SID = "a" * 32
AT = "2026-10-21T10:00:00.000Z"


def turn_records(start: int, turn: int, text: str = "q", calls: int = 1) -> list[dict[str, Any]]:
    tid = f"{turn:016x}"
    out: list[dict[str, Any]] = [{"type": "user_message", "turn_id": tid, "text": f"{text} {turn}"}]
    for c in range(calls):
        cid = f"call_{turn}_{c}"
        out.append(
            {"type": "tool_call", "turn_id": tid, "call_id": cid, "name": f"tool{c}", "arguments": "{}"}
        )
        out.append(
            {"type": "tool_result", "turn_id": tid, "call_id": cid, "status": "completed", "output": "x"}
        )
    out.append({"type": "assistant_message", "turn_id": tid, "text": f"answer {turn}"})
    out.append({"type": "turn_end", "turn_id": tid, "status": "completed"})
    return [
        {"seq": start + i, **{k: v for k, v in r.items() if k == "type"}, **r, "at": AT}
        for i, r in enumerate(out)
    ]


def session(turns: int, text: str = "q") -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"seq": 1, "type": "session_skills", "at": AT, "skills": []}]
    for t in range(turns):
        records += turn_records(len(records) + 1, t, text, calls=t % 3)
    return records


def write(path: Path, records: list[dict[str, Any]]) -> bytes:
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    path.write_bytes(data)
    return data


@pytest.fixture
def always_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Write the index on every load and close, whatever the size (normally above 1 MiB unindexed)."""
    monkeypatch.setattr(log_mod, "INDEX_MIN_BYTES", 0)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / f"{SID}.jsonl"


def answers(log: SessionLog) -> dict[str, Any]:
    """Everything a conversation asks of a loaded log."""
    items: list[Any] = []
    before = None
    while True:
        page, more = history_page(log, before, 7)
        items = page + items
        if not more:
            break
        before = page[0].seq
    return {
        "next": log.next_seq,
        "replay": log.replay_records(),
        "calls": log.call_ids(),
        "pending": log.pending_calls(),
        "unacked": log.unacknowledged(),
        "compaction": log.latest_compaction(),
        "skills": log.session_skills(),
        "history": items,
        "records": list(log.read_records()),
    }


def opened(path: Path) -> tuple[dict[str, Any], int]:
    """(answers, how many records the load checked)."""
    checked = 0
    real = log_mod._record_problem

    def counting(rec: Any, expected: int) -> str | None:
        nonlocal checked
        checked += 1
        return real(rec, expected)

    log_mod._record_problem = counting
    try:
        log = SessionLog.open(path)
    finally:
        log_mod._record_problem = real
    try:
        return answers(log), checked
    finally:
        log.close()


def test_the_index_saves_the_parse_and_changes_no_answer(path: Path, always_index: None) -> None:
    records = session(40)
    write(path, records)
    cold, checked = opened(path)
    assert checked == len(records)
    assert (path.parent / (path.name + INDEX_SUFFIX)).is_file()
    warm, checked = opened(path)
    assert checked == 0  # nothing parsed again: every record is covered by the index
    assert warm == cold
    assert cold["records"] == records and cold["next"] == len(records) + 1
    assert [i.seq for i in cold["history"]] == [r["seq"] for r in records if r["type"] in log_mod.SHOWN]


def test_appends_after_the_index_are_checked_and_indexed_at_close(path: Path, always_index: None) -> None:
    write(path, session(10))
    log = SessionLog.open(path)
    log.append("user_message", "t9", text="more")
    log.append("tool_call", "t9", call_id="late", name="bash", arguments="{}")
    log.close()
    with path.open("ab") as f:  # another writer's record, after the index was saved
        f.write(
            json.dumps(
                {"seq": log.next_seq, "type": "turn_end", "turn_id": "t9", "at": AT, "status": "failed"}
            ).encode()
            + b"\n"
        )
    got, checked = opened(path)
    assert checked == 1
    assert [p.call_id for p in got["pending"]] == ["late"]
    assert got["records"][-1]["status"] == "failed"


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda line: b"not json" + line[8:], "line 5: not valid JSON"),
        (lambda line: line.replace(b'"seq":5', b'"seq":9'), "line 5: seq 9 where 5 was expected"),
        (
            lambda line: line.replace(b'"user_message"', b'"user_massage"'),
            "line 5: unknown record type 'user_massage'",
        ),
    ],
)
def test_damage_inside_indexed_bytes_is_found_as_without_an_index(
    path: Path, always_index: None, damage: Any, message: str
) -> None:
    write(path, session(6))
    SessionLog.open(path).close()  # the index now covers every byte
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[4])["type"] == "user_message"
    lines[4] = damage(lines[4])
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogError) as with_index:
        SessionLog.open(path)
    os.unlink(path.parent / (path.name + INDEX_SUFFIX))
    with pytest.raises(LogError) as without:
        SessionLog.open(path)
    assert str(with_index.value) == str(without.value) == f"{path.name} {message}"


def test_an_edit_that_stays_valid_is_read_not_remembered(path: Path, always_index: None) -> None:
    write(path, session(6))
    SessionLog.open(path).close()
    path.write_bytes(path.read_bytes().replace(b'"answer 3"', b'"ANSWER 3"'))  # same length, still valid
    got, checked = opened(path)
    assert checked == len(got["records"])  # the changed bytes no longer match the index: parsed again
    assert "ANSWER 3" in [i.text for i in got["history"]]


def test_a_torn_tail_after_the_index_is_repaired_as_always(path: Path, always_index: None) -> None:
    whole = write(path, session(5))
    SessionLog.open(path).close()
    with path.open("ab") as f:
        f.write(b'{"seq": 99, "type": "user_mes')
    log = SessionLog.open(path)
    assert len(log.notices) == 1 and "incomplete" in log.notices[0]
    log.close()
    assert path.read_bytes() == whole
    copies = list(path.parent.glob(f"{path.name}.recovery-*"))
    assert len(copies) == 1 and copies[0].read_bytes().endswith(b"user_mes")


def test_a_shorter_or_cleared_log_ignores_its_old_index(path: Path, always_index: None) -> None:
    records = session(8)
    write(path, records)
    SessionLog.open(path).close()
    write(path, records[:10])
    got, checked = opened(path)
    assert checked == 10 and got["records"] == records[:10]
    path.write_bytes(b"")  # what /clear leaves
    got, _ = opened(path)
    assert got["records"] == [] and got["history"] == [] and got["next"] == 1


@pytest.mark.parametrize("how", ["garbage", "flipped", "cut", "empty", "directory", "symlink", "other log"])
def test_a_damaged_or_foreign_index_is_ignored(
    path: Path, tmp_path: Path, always_index: None, how: str
) -> None:
    write(path, session(12))
    expected, _ = opened(path)  # also writes the index
    index = path.parent / (path.name + INDEX_SUFFIX)
    data = index.read_bytes()
    if how == "garbage":
        index.write_bytes(os.urandom(len(data)))
    elif how == "flipped":
        index.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif how == "cut":
        index.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        index.write_bytes(b"")
    elif how == "directory":
        index.unlink()
        index.mkdir()
    elif how == "symlink":
        index.unlink()
        index.symlink_to(tmp_path / "elsewhere")
    else:  # a valid index of another log: its hash cannot match these bytes
        other = tmp_path / "other" / f"{'b' * 32}.jsonl"
        other.parent.mkdir()
        write(other, session(12, text="different"))
        SessionLog.open(other).close()
        index.write_bytes((other.parent / (other.name + INDEX_SUFFIX)).read_bytes())
    got, checked = opened(path)
    assert got == expected and checked == len(got["records"])


def test_history_pages_have_no_gaps_no_overlaps_and_name_tools_across_pages(path: Path) -> None:
    records = session(30)
    write(path, records)
    log = SessionLog.open(path)
    try:
        shown = [r for r in records if r["type"] in log_mod.SHOWN]
        names = {r["call_id"]: r["name"] for r in records if r["type"] == "tool_call"}
        for limit in (1, 2, 3, 50, 10_000):
            seen: list[int] = []
            before = None
            while True:
                page, more = history_page(log, before, limit)
                assert 0 < len(page) <= min(limit, MAX_LIMIT)
                assert [i.seq for i in page] == sorted(i.seq for i in page)
                assert before is None or page[-1].seq < before
                seen = [i.seq for i in page] + seen
                for item in page:
                    if item.role == "tool":
                        rec = records[item.seq - 1]
                        assert item.tool == names[rec["call_id"]] and item.status == "completed"
                if not more:
                    break
                before = page[0].seq
            assert seen == [r["seq"] for r in shown]
        assert history_page(log, 1, 10) == ([], False)
        assert history_page(log, -5, 10) == ([], False)
        last, more = history_page(log, 10**9, 0)  # below 1 counts as 1; a far `before` is no bound
        assert [i.seq for i in last] == [shown[-1]["seq"]] and more
        assert history_page(None) == ([], False)
    finally:
        log.close()


def test_a_result_whose_call_is_unknown_shows_a_question_mark(path: Path) -> None:
    write(
        path,
        [
            {
                "seq": 1,
                "type": "tool_result",
                "turn_id": "t",
                "at": AT,
                "call_id": "x",
                "status": "unknown",
                "output": "?",
            },
            {
                "seq": 2,
                "type": "tool_call",
                "turn_id": "t",
                "at": AT,
                "call_id": "x",
                "name": "late",
                "arguments": "{}",
            },
            {
                "seq": 3,
                "type": "tool_result",
                "turn_id": "t",
                "at": AT,
                "call_id": "x",
                "status": "completed",
                "output": "!",
            },
        ],
    )
    log = SessionLog.open(path)
    page, more = history_page(log)
    log.close()
    assert [(i.tool, i.text) for i in page] == [("?", "?"), ("late", "!")] and not more


def test_loading_keeps_neither_the_file_nor_its_records_in_memory(path: Path) -> None:
    big = "word " * 400  # ~2 KB a message: about 8 MB of log
    records = [{"seq": 1, "type": "session_skills", "at": AT, "skills": []}]
    for t in range(3000):
        records += turn_records(len(records) + 1, t, big, calls=1)
    # Compacted, as a session this long is: a turn replays what came after the latest summary.
    records.append(
        {
            "seq": len(records) + 1,
            "type": "compaction",
            "at": AT,
            "summary": "s",
            "through_seq": len(records) - 12,
        }
    )
    records += turn_records(len(records) + 1, 3000, big, calls=1)
    size = len(write(path, records))
    del records
    assert size > 7_000_000
    for load in ("first, without an index", "again, with it"):
        tracemalloc.start()
        log = SessionLog.open(path)
        log.replay_records()
        history_page(log)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        log.close()
        # Whole-file loading held the bytes and every record (~3x the file); streaming holds a chunk.
        assert peak < 4_000_000, f"{load}: {peak:,} bytes at the peak for a {size:,}-byte log"
