"""The caches behind the per-turn numbers in bench/ never change what Mino sees."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import make_conversation, turn

from mino_server.core import memory
from mino_server.testing.scripted_model import ScriptedModel


def _write(directory: Path, name: str, summary: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(memory.render_memory(name, "user", summary), encoding="utf-8")
    return path


def _summaries(directory: Path) -> list[str]:
    entries, _ = memory.load_memories(directory)
    return [e.summary for e in entries]


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written now count as settled (as if the scan ran a minute later)."""
    real = time.time_ns
    monkeypatch.setattr(memory.time, "time_ns", lambda: real() + 60_000_000_000)


def test_unchanged_memory_files_are_not_parsed_again(
    tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        _write(tmp_path, f"fact-{i}", f"summary {i}")
    assert _summaries(tmp_path) == ["summary 0", "summary 1", "summary 2"]
    reads: list[Path] = []
    real = memory.read_memory_file
    monkeypatch.setattr(memory, "read_memory_file", lambda p: reads.append(p) or real(p))
    assert _summaries(tmp_path) == ["summary 0", "summary 1", "summary 2"]
    assert reads == []


def test_same_size_edit_with_another_mtime_is_seen(tmp_path: Path, settled: None) -> None:
    path = _write(tmp_path, "fact", "summary A")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert _summaries(tmp_path) == ["summary A"]
    path.write_text(memory.render_memory("fact", "user", "summary B"), encoding="utf-8")
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    assert _summaries(tmp_path) == ["summary B"]


def test_replaced_file_is_seen(tmp_path: Path, settled: None) -> None:
    path = _write(tmp_path, "fact", "summary A")
    st = os.stat(path)
    assert _summaries(tmp_path) == ["summary A"]
    memory.save_memory(tmp_path, "fact", "user", "summary B", None, memory.memory_file_state(path))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old times: a new inode
    assert _summaries(tmp_path) == ["summary B"]


def test_fresh_files_are_always_read_again(tmp_path: Path) -> None:
    # Two writes within one timestamp tick may leave every stat field equal: the clock decides.
    path = _write(tmp_path, "fact", "summary A")
    assert _summaries(tmp_path) == ["summary A"]
    path.write_text(memory.render_memory("fact", "user", "summary B"), encoding="utf-8")
    assert _summaries(tmp_path) == ["summary B"]


def test_broken_and_removed_files(tmp_path: Path, settled: None) -> None:
    good = _write(tmp_path, "good", "fine")
    bad = tmp_path / "bad.md"
    bad.write_text("no front matter", encoding="utf-8")
    assert memory.load_memories(tmp_path)[1] == [("bad.md", memory.BAD_FRONT_MATTER)]
    assert memory.load_memories(tmp_path)[1] == [("bad.md", memory.BAD_FRONT_MATTER)]
    good.unlink()
    assert memory.load_memories(tmp_path) == ([], [("bad.md", memory.BAD_FRONT_MATTER)])
    os.link(bad, tmp_path / "other.txt")  # a second hard link: refused, even if parsed before
    _write(tmp_path, "good", "fine")
    link = tmp_path / "twin.md"
    os.link(tmp_path / "good.md", link)
    entries, problems = memory.load_memories(tmp_path)
    assert entries == [] and [f for f, _ in problems] == ["bad.md", "good.md", "twin.md"]


def test_session_log_keeps_replay_and_call_ids_as_a_full_scan_would(tmp_path: Path) -> None:
    from mino_server.core.sessions.log import REPLAYABLE, SessionLog

    path = tmp_path / f"{'a' * 32}.jsonl"
    path.touch()
    log = SessionLog.open(path)

    def scanned(log: SessionLog) -> list[dict]:
        compactions = [r for r in log.read_records() if r["type"] == "compaction"]
        through = compactions[-1]["through_seq"] if compactions else 0
        return [r for r in log.read_records() if r["seq"] > through and r["type"] in REPLAYABLE]

    log.append("session_skills", skills=[])
    before = log.replay_records()
    for t in range(6):
        log.append("user_message", f"t{t}", text="q")
        log.append("tool_call", f"t{t}", call_id=f"c{t}", name="bash", arguments="{}")
        log.append("tool_result", f"t{t}", call_id=f"c{t}", status="completed", output="x")
        log.append("assistant_message", f"t{t}", text="a")
        log.append("turn_end", f"t{t}", status="completed")
        if t == 2:
            log.append("compaction", summary="s1", through_seq=12)
        if t == 4:
            log.append("compaction", summary="s2", through_seq=7)  # an earlier point than the last one
        assert log.replay_records() == scanned(log)
    assert before == []  # a snapshot, not a view
    reopened = SessionLog.open(path)
    assert reopened.replay_records() == scanned(reopened) == log.replay_records()
    assert reopened.call_ids() == log.call_ids() == {f"c{t}" for t in range(6)}
    assert (
        reopened.latest_compaction() == log.latest_compaction() and log.latest_compaction()["summary"] == "s2"
    )
    assert reopened.session_skills() == log.session_skills() == next(log.read_records())
    log.close()
    reopened.close()


def test_editor_state_after_a_turn_keeps_the_memory_status_cached(
    model: ScriptedModel, workdir: Path, mino_home: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # usage changes after every turn that reported one: the editor server's state() says the new one
    # without reading and parsing the memory folder again, which has not changed.
    import io

    from mino_server.core.conversation import Conversation
    from mino_server.server.app import MinoServer
    from mino_server.server.transport import FrameWriter

    _write(mino_home / "memory", "fact", "a summary")
    model.add({"text": "hi", "usage": {"input_tokens": 1000, "output_tokens": 5}})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    try:
        server = MinoServer(None, FrameWriter(io.BytesIO()))
        server._conversation = conversation  # what the start-up thread sets
        before = server.state()
        assert before.usage is None and before.memory.count == 1
        reads: list[object] = []
        real = Conversation.state
        monkeypatch.setattr(Conversation, "state", lambda self: reads.append(self) or real(self))
        assert turn(conversation, "hello").status == "completed"
        after = server.state()
        assert after.usage is not None and after.usage.inputTokens == 1000
        assert after.memory.count == 1 and not after.busy
        assert reads == []
        _write(mino_home / "memory", "other", "another summary")  # a changed folder is read again
        assert server.state().memory.count == 2 and len(reads) == 1
    finally:
        conversation.close()
