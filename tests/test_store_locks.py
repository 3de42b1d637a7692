"""The store's locks in-process: several conversations on one Store (as an ACP process holds them),
two Stores on one home, the short store lock's timeout, stale notes, and the change watcher
(docs/BEHAVIOUR.md, "The store lock")."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

import pytest
from helpers import RecordingUI, command, make_conversation, turn

from mino_server.core import opening
from mino_server.core.config import load_config
from mino_server.core.conversation import Conversation
from mino_server.core.errors import CommandError, SessionOpenElsewhere, StoreLocked
from mino_server.core.sessions import store as store_mod
from mino_server.core.sessions.store import SessionStore
from mino_server.core.store import Store, Watcher
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel


def shared_store(model: ScriptedModel) -> Store:
    env = dict(os.environ, MINO_BASE_URL=model.base_url, MINO_API_KEY="test-key")
    return Store(load_config(env=env))


def selection(home: Path) -> str:
    return json.loads((home / "sessions" / "active-session.json").read_text())["session_id"]  # type: ignore[no-any-return]


def test_two_conversations_of_one_store_never_share_a_session(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    store = shared_store(model)
    one = Conversation(store, workdir, RecordingUI())
    one.open()
    first = one.session_id
    assert first is not None
    two = Conversation(store, workdir, RecordingUI())
    startup = two.open()
    second = two.session_id
    assert second not in (None, first)
    assert startup.open_elsewhere is not None and startup.open_elsewhere.session_id == first
    assert startup.open_elsewhere.pid == os.getpid()
    assert startup_lines(startup)[0] == (
        f"Session {first} is open in another Mino (pid {os.getpid()}, in {workdir.resolve()}), "
        "so a new session was started."
    )
    with pytest.raises(SessionOpenElsewhere) as refused:
        opening.resume(two, first)
    assert refused.value.other.session_id == first and two.session_id == second
    assert selection(mino_home) == second  # unchanged by the refusal
    out = command(two, "/sessions")
    assert any(line.endswith(f"(open elsewhere: pid {os.getpid()}, in {workdir.resolve()})") for line in out)
    assert any(line.startswith(f"* {second}") and "elsewhere" not in line for line in out)
    one.close()
    assert opening.resume(two, first) == [] and two.session_id == first
    assert selection(mino_home) == first
    assert store.holder(second) is None  # released when `two` switched
    two.close()
    assert store.holders() == {}


def test_two_stores_of_one_process_exclude_each_other_too(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    one = make_conversation(model.base_url, workdir)
    one.open()
    two = make_conversation(model.base_url, workdir)
    two.open()
    assert two.session_id != one.session_id  # two descriptors: flock keeps them apart
    assert one.session_id is not None
    assert "open in another Mino" in command(two, f"/resume {one.session_id}")[0]
    one.close()
    two.close()


def test_a_one_process_life_is_unchanged_and_releases_everything(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    model.add({"text": "a"})
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    sid = conversation.session_id
    assert sid is not None and lines[0] == f"Session: {sid}"
    turn(conversation, "hi")
    note = (mino_home / "sessions" / f"{sid}.lock").read_text().splitlines()[0]
    assert json.loads(note) == {"pid": os.getpid(), "workdir": str(workdir.resolve())}
    assert (mino_home / "sessions" / f"{sid}.lock").stat().st_mode & 0o777 == 0o600
    out = command(conversation, "/sessions")
    assert out[0].startswith(f"* {sid}  ") and out[0].endswith(" UTC") and len(out) == 1
    conversation.close()
    probe = SessionStore(mino_home / "sessions")
    with probe.exclusive():
        assert probe.holder(sid) is None and probe.holders() == {}
    assert (mino_home / "sessions" / f"{sid}.lock").read_text().splitlines()[0] == ""  # no stale note


def test_a_stale_note_of_a_dead_process_is_harmless(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    sid = conversation.session_id
    conversation.close()
    # A killed Mino leaves its note behind; its flock went with it.
    note = json.dumps({"pid": 2**22 + 12345, "workdir": "/gone"}) + "\n"
    (mino_home / "sessions" / f"{sid}.lock").write_text(note)
    again = make_conversation(model.base_url, workdir)
    startup = again.open()
    assert again.session_id == sid and startup.open_elsewhere is None
    again.close()


def test_clear_makes_the_cleared_session_the_selection(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    one = make_conversation(model.base_url, workdir, RecordingUI())
    one.open()
    two = make_conversation(model.base_url, workdir, RecordingUI())
    two.open()
    first = one.session_id
    assert first is not None and selection(mino_home) == two.session_id
    assert opening.clear(one, first)
    assert selection(mino_home) == first  # the session most recently cleared
    one.close()
    two.close()


def test_a_store_lock_that_stays_taken_is_one_line_and_changes_nothing(
    model: ScriptedModel, workdir: Path, mino_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_mod, "STORE_LOCK_WAIT_S", 0.3)
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    sid = conversation.session_id
    lock = mino_home / "sessions" / "sessions.lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        os.pwrite(fd, b"4242\n", 0)  # what a Mino that holds the lock for its whole run writes
        fcntl.flock(fd, fcntl.LOCK_EX)  # a second descriptor: this process's own flock conflicts
        started = time.monotonic()
        out = command(conversation, "/new")
        # It waited its 0.3 s, then gave up with the lock still held (ours, until `finally`): no
        # upper bound, a hang is pytest-timeout's.
        assert time.monotonic() - started >= 0.3
        assert out == [
            f"The session store {mino_home / 'sessions'} stayed locked for 0.3 s by another Mino process "
            "(pid 4242); an older Mino holds the lock for its whole run. Close it first."
        ]
        assert conversation.session_id == sid and not conversation.stopped
        other = make_conversation(model.base_url, workdir)
        with pytest.raises(StoreLocked) as locked:
            other.open()
        assert locked.value.pid == 4242
        other.close()
    finally:
        os.close(fd)
    assert command(conversation, "/new")[0].startswith("Session: ")
    conversation.close()


def test_the_watcher_reports_other_stores_changes_not_its_own(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    mine = make_conversation(model.base_url, workdir)
    mine.open()
    heard = threading.Event()
    # The change counter each report was made at (the watcher sets it before it reports): a report
    # made for its own changes would be at a value they reached, however late the watcher looked.
    reported_at: list[int] = []
    watchers: list[Watcher] = []

    def report() -> None:
        reported_at.append(watchers[0]._seen)
        heard.set()

    watcher = mine.store.watch(report, interval=0.05)
    watchers.append(watcher)
    try:
        opening.new_session(mine)
        sid = mine.session_id
        assert sid is not None and opening.clear(mine, sid)
        own = mine.store.sessions.read_changes()
        other = make_conversation(model.base_url, workdir)
        other.open()  # another store creates and opens a session
        assert heard.wait(60)  # a hang guard: it is heard at the next look, 0.05 s later
        assert reported_at and all(v > own for v in reported_at)  # its own changes are not news
        other.close()
        # It sleeps on an Event, so stop() ends it at once: a watcher that would next look in an
        # hour has ended when stop() returns (a sleeping one would still be alive; no latency asserted).
        idle = mine.store.watch(heard.set, interval=3600)
        idle.stop()
        idle._thread.join(60)  # stop() waits 2 s at most; on a loaded machine, wait for the event
        assert not idle._thread.is_alive()
    finally:
        watcher.stop()
        mine.close()


def test_a_second_claim_in_one_conversation_store_is_refused_before_the_flock(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    store = shared_store(model)
    conv = Conversation(store, workdir, RecordingUI())
    conv.open()
    sid = conv.session_id
    assert sid is not None
    with pytest.raises(store_mod.SessionInUse) as refused:
        store.claim(sid, "/elsewhere")
    assert refused.value.holder.pid == os.getpid() and refused.value.holder.claim is not None
    with pytest.raises(CommandError):
        opening.resume(Conversation(store, workdir, RecordingUI()), sid)
    conv.close()


def test_the_lock_note_is_exactly_one_line_after_a_longer_one(mino_home: Path) -> None:
    # A shorter note written over a longer one used to keep the longer one's tail: a reader of the
    # whole file (the editor's end-to-end test did) saw two JSON objects run together.
    store = SessionStore(mino_home / "sessions")
    sid = "a" * 32
    lock = mino_home / "sessions" / f"{sid}.lock"
    with store.exclusive():
        long = store.claim(sid, "/" + "x" * 300)
    long.release()
    assert lock.read_text() == "\n"
    with store.exclusive():
        short = store.claim(sid, "/w")
    try:
        assert lock.read_text() == json.dumps({"pid": os.getpid(), "workdir": "/w"}) + "\n"
    finally:
        short.release()
