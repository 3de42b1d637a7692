"""The streaming loader and its checked index against the old whole-file loader, on fuzzed bytes.

Each case saves a sound log and its index, then changes things behind the index's back (records
appended, fuzzed or damaged; a byte changed inside the indexed part; the log cut short; the index
damaged; a different log put in place) and loads again. Every answer must be the old loader's
(reference_log.py): the same error word for word, or the same torn-tail cut, records, pending calls,
unacknowledged recoveries, call IDs, replay, compaction, skills record, recovery records and history
pages; then again after recovery, appends and a reload through the index written at close.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import reference_log as ref
from fuzz import SCALE, a_log, a_record, damaged, fuzz, sound_records
from hypothesis import given
from hypothesis import strategies as st
from tally import TALLY

from mino_server.core.history import history_page
from mino_server.core.sessions import log as log_mod
from mino_server.core.sessions.log import INDEX_SUFFIX, LogError, SessionLog

SID = "d" * 32
# `make soak` runs this suite longer than the others: a case here costs ~20 ms, a CLI case ~1 s.
LOG_SCALE = int(os.environ.get("MINO_LOG_FUZZ_SCALE", "1"))
HOWS = ["append", "append-damaged", "edit-inside", "truncate", "index-damaged", "no-index", "other-log"]


def encode(records: list[dict[str, Any]], ascii_: bool) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=ascii_).encode() + b"\n" for r in records)


def shown(item: Any) -> dict[str, Any]:
    d = dataclasses.asdict(item)
    return {
        k: v for k, v in d.items() if not (k in ("tool", "status", "rewound", "interrupted") and v is None)
    }


def same_answers(log: SessionLog, records: list[dict[str, Any]], draw: st.DrawFn) -> None:
    assert list(log.read_records()) == records
    assert log.next_seq == len(records) + 1
    pending = [(p.call_id, p.name, p.arguments, p.turn_id) for p in log.pending_calls()]
    assert pending == ref.pending_calls(records)
    assert log.unacknowledged() == ref.unacknowledged(records)
    assert log.call_ids() == ref.call_ids(records)
    assert log.replay_records() == ref.replay(records)
    assert log.latest_compaction() == ref.latest(records, "compaction")
    assert log.session_skills() == ref.latest(records, "session_skills")
    calls = ref.tool_calls(records)
    for cid in [*calls, "never-called"]:
        assert log.tool_call(cid) == calls.get(cid)
    expected = ref.history(records)
    limit = draw(st.integers(1, 4))
    walked: list[dict[str, Any]] = []
    before = None
    while True:
        page, more = history_page(log, before, limit)
        walked = [shown(i) for i in page] + walked
        if not more:
            break
        assert len(page) == limit
        before = page[0].seq
    assert walked == expected
    before = draw(st.integers(-1, len(records) + 2))
    page, more = history_page(log, before, limit)
    below = [i for i in expected if i["seq"] < before]
    assert [shown(i) for i in page] == below[-limit:] and more == (len(below) > limit)


def project(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: rec[k] for k in ("type", "turn_id", "call_id", "name", "status") if k in rec}


@pytest.mark.timeout(120 * SCALE * LOG_SCALE)
def test_index_and_streaming_load_answer_as_the_whole_file_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_mod, "INDEX_MIN_BYTES", 0)  # an index on every load and close
    counter = itertools.count()

    def load_and_compare(path: Path, draw: st.DrawFn) -> SessionLog | None:
        data = path.read_bytes()
        try:
            records, cut = ref.parse(data, path.name)
        except ref.RefLogError as exc:
            with pytest.raises(LogError) as got:
                SessionLog.open(path)
            assert str(got.value) == str(exc)
            assert path.read_bytes() == data  # an unloadable log is never rewritten
            return None
        log = SessionLog.open(path)
        if cut is not None:
            assert path.read_bytes() == data[:cut] and len(log.notices) == 1
        else:
            assert path.read_bytes() == data and log.notices == []
        same_answers(log, records, draw)
        return log

    def check(folder: Path, draw: st.DrawFn, how: str, ascii_: bool) -> None:
        path = folder / f"{SID}.jsonl"
        index = folder / (path.name + INDEX_SUFFIX)
        base = sound_records(draw, draw(st.integers(0, 25)))
        path.write_bytes(encode(base, ascii_))
        log = load_and_compare(path, draw)
        assert log is not None
        log.close()
        assert index.is_file()
        more = encode(sound_records(draw, draw(st.integers(0, 8)), len(base) + 1), ascii_)
        whole = path.read_bytes()
        if how == "append":
            whole += more
        elif how == "append-damaged":
            whole += damaged(draw, more)
        elif how == "edit-inside" and whole:
            at = draw(st.integers(0, len(whole) - 1))
            whole = whole[:at] + bytes([draw(st.integers(0, 255))]) + whole[at + 1 :] + more
        elif how == "truncate":
            whole = whole[: draw(st.integers(0, len(whole)))]
        elif how == "index-damaged":
            saved = index.read_bytes()
            at = draw(st.integers(0, len(saved) - 1))
            index.write_bytes(
                draw(st.sampled_from([saved[:at], saved[:at] + bytes([saved[at] ^ 0x40]) + saved[at + 1 :]]))
            )
            whole += more
        elif how == "no-index":
            index.unlink()
        elif how == "other-log":
            whole = draw(a_log())
        path.write_bytes(whole)
        log = load_and_compare(path, draw)
        if log is None:
            return
        try:
            records = list(log.read_records())
            log.recover()
            added = [project(r) for r in log.read_records(len(records) + 1)]
            assert added == ref.recover(records)
            for _ in range(draw(st.integers(0, 4))):
                rec = draw(a_record(noisy=False))
                fields = {k: v for k, v in rec.items() if k not in ("type", "turn_id", "at")}
                log.append(rec["type"], rec.get("turn_id"), **fields)
        finally:
            log.close()
        log = load_and_compare(path, draw)  # through the index written at close
        assert log is not None
        log.close()

    @fuzz(150 * LOG_SCALE)
    @given(data=st.data(), how=st.sampled_from(HOWS), ascii_=st.booleans())
    def case(data: st.DataObject, how: str, ascii_: bool) -> None:
        folder = tmp_path / f"case{next(counter)}"
        folder.mkdir()
        try:
            check(folder, data.draw, how, ascii_)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # a soak runs ~100,000 of these
        TALLY.fuzz_cases += 1  # when done: hypothesis drops some examples while they are drawn

    case()
