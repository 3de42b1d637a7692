"""Sessions: selection, the start-up table, /new /resume /sessions /clear, recovery.

See docs/BEHAVIOUR.md, "Sessions", "Start-up selection", "Slash commands" and "Recovery"."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import RecordingUI, command, command_result, make_conversation, texts, turn

from mino_server.core import durable
from mino_server.core.sessions.log import LogError, SessionLog
from mino_server.core.sessions.store import SessionStore
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

A = "a" * 32
B = "b" * 32


def sessions_dir(home: Path) -> Path:
    return home / "sessions"


def write_log(home: Path, sid: str, records: list[dict]) -> Path:
    d = sessions_dir(home)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def qa(question: str, answer: str, turn_id: str = "t1", start: int = 1) -> list[dict]:
    at = "2026-10-21T10:00:00.000Z"
    return [
        {"seq": start, "type": "user_message", "turn_id": turn_id, "at": at, "text": question},
        {"seq": start + 1, "type": "assistant_message", "turn_id": turn_id, "at": at, "text": answer},
        {"seq": start + 2, "type": "turn_end", "turn_id": turn_id, "at": at, "status": "completed"},
    ]


def test_a_b_a_story_on_request_bodies(model: ScriptedModel, workdir: Path, mino_home: Path) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    try:
        a = command(conversation, "/new")[0].removeprefix("Session: ")
        model.add({"text": "The word is pine."})
        turn(conversation, "Remember pine.")
        b = command(conversation, "/new")[0].removeprefix("Session: ")
        assert a != b
        model.add({"text": "You have not given me a word."})
        turn(conversation, "What word?")
        assert command(conversation, f"/resume {a}")[-2:] == [
            f"Session: {a}",
            "Permission mode: manual. Use /mode to change it.",
        ]
        model.add({"text": "You asked me to remember pine."})
        turn(conversation, "What word?")
        # /sessions, /help and the selection commands add no model request.
        command(conversation, "/sessions")
        command(conversation, "/help")
    finally:
        conversation.close()
    assert len(model.requests) == 3
    first_b = texts(model.requests[1])
    assert first_b == ["What word?"]
    resumed = texts(model.requests[2])
    assert resumed == ["Remember pine.", "The word is pine.", "What word?"]
    assert model.errors == []
    selection = json.loads((sessions_dir(mino_home) / "active-session.json").read_text())
    assert selection == {"session_id": a}


def test_records_have_contiguous_seq_turn_id_and_no_session_id(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    model.add({"text": "one"}, {"text": "two"})
    turn(conversation, "first")
    turn(conversation, "second")
    sid = conversation.session_id
    conversation.close()
    lines = (sessions_dir(mino_home) / f"{sid}.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all("session_id" not in r and r["at"].endswith("Z") for r in records)
    users = [r for r in records if r["type"] == "user_message"]
    assert users[0]["turn_id"] != users[1]["turn_id"]
    ends = [r for r in records if r["type"] == "turn_end"]
    assert [e["status"] for e in ends] == ["completed", "completed"]


def test_upgrade_adopts_a_lone_session_file_in_place(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    path = write_log(mino_home, A, qa("Remember pine.", "The word is pine."))
    before = path.read_bytes()
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    lines = startup_lines(conversation.open())
    assert lines[0] == f"Session: {A}"
    assert ui.confirm_messages == []  # no selection prompt
    conversation.close()
    assert path.read_bytes() == before  # bytes unchanged
    files = sorted(p.name for p in sessions_dir(mino_home).iterdir() if p.suffix == ".jsonl")
    assert files == [f"{A}.jsonl"]  # no second session file
    assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": A}
    # The history is loaded: the next request carries it.
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    model.add({"text": "pine"})
    turn(conversation, "What word?")
    conversation.close()
    assert texts(model.requests[0]) == ["Remember pine.", "The word is pine.", "What word?"]


def test_table_row_no_sessions_creates_and_selects(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    sid = conversation.session_id
    conversation.close()
    assert sid and lines[:2] == [f"Session: {sid}", "Permission mode: manual. Use /mode to change it."]
    assert (sessions_dir(mino_home) / f"{sid}.jsonl").exists()
    assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": sid}


def test_table_row_selection_restores(model: ScriptedModel, workdir: Path, mino_home: Path) -> None:
    write_log(mino_home, A, qa("q", "a"))
    write_log(mino_home, B, qa("q2", "a2"))
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": B}))
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    conversation.close()
    assert lines[0] == f"Session: {B}"


@pytest.mark.parametrize(
    "selection, expected",
    [
        (None, "2 sessions exist but none is selected"),
        ("{not json", "active-session.json is damaged"),
        (json.dumps({"session_id": "ABC"}), "does not hold a valid session ID"),
        (json.dumps({"session_id": "c" * 32}), "does not exist"),
    ],
)
def test_table_last_row_reports_and_accepts_only_commands(
    model: ScriptedModel, workdir: Path, mino_home: Path, selection: str | None, expected: str
) -> None:
    write_log(mino_home, A, qa("q", "a"))
    write_log(mino_home, B, qa("q2", "a2"))
    if selection is not None:
        (sessions_dir(mino_home) / "active-session.json").write_text(selection)
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    try:
        assert lines[0].startswith("Cannot restore the active session: ")
        assert expected in lines[0]
        assert conversation.session_id is None
        outcome = turn(conversation, "hello")
        assert outcome.status == "failed" and "/resume" in (outcome.error or "")
        assert model.requests == []  # never silently replaced by a blank conversation
        out = command(conversation, f"/resume {A}")
        assert out[-2] == f"Session: {A}"
        assert conversation.state().restoreProblem is None
    finally:
        conversation.close()


def test_unloadable_selected_log_is_not_replaced(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    path = write_log(mino_home, A, qa("q", "a"))
    with path.open("r+b") as f:  # damage in the middle: not a torn tail
        f.seek(5)
        f.write(b"XXXX")
    damaged = path.read_bytes()
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": A}))
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    conversation.close()
    assert lines[0].startswith(f"Cannot restore the active session: session {A} cannot be loaded")
    assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": A}
    assert path.read_bytes() == damaged  # left exactly as it was: no repair, no rewrite
    assert len(list(sessions_dir(mino_home).glob("*.jsonl"))) == 1


def test_resume_refuses_abbreviations_paths_and_unloadable(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    write_log(mino_home, A, qa("q", "a"))
    bad = write_log(mino_home, B, qa("q", "a"))
    bad.write_text('{"seq": 1}\ngarbage\n{"seq": 3}\n')
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": A}))
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    try:
        assert conversation.session_id == A
        for arg in ("aaaa", "A" * 32, f"sessions/{A}.jsonl", f"{A}.jsonl"):
            assert "Not a complete session ID" in command(conversation, f"/resume {arg}")[0]
        assert "No session with ID" in command(conversation, f"/resume {'c' * 32}")[0]
        assert f"Cannot resume session {B}" in command(conversation, f"/resume {B}")[0]
        assert conversation.session_id == A
        assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": A}
    finally:
        conversation.close()


def test_sessions_lists_newest_first_in_utc_with_star(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    pa = write_log(mino_home, A, qa("q", "a"))
    pb = write_log(mino_home, B, qa("q", "a"))
    os.utime(pa, (1_700_000_000, 1_700_000_000))
    os.utime(pb, (1_800_000_000, 1_800_000_000))
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": A}))
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    out = command(conversation, "/sessions")
    conversation.close()
    assert out == [f"  {B}  2027-01-15 08:00:00 UTC", f"* {A}  2023-11-14 22:13:20 UTC"]


def test_clear_refused_then_accepted_other_sessions_untouched(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    write_log(mino_home, A, qa("Remember pine.", "pine"))
    pb = write_log(mino_home, B, qa("other", "x"))
    b_bytes = pb.read_bytes()
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": A}))
    ui = RecordingUI(typed=["yes", "", A.upper(), B, f"  {A}  "])
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    try:
        for _ in range(4):
            out = command(conversation, "/clear")
            assert out == [
                "",
                f"Session: {A}",
                "Clear this session's saved history? This does not undo executed commands or delete recovery "
                "copies or manual backups.",
                "Session was not cleared.",
            ]
        assert (sessions_dir(mino_home) / f"{A}.jsonl").stat().st_size > 0
        out = command(conversation, "/clear")
        assert out[-1] == f"Cleared session: {A}"
        assert conversation.session_id == A
        model.add({"text": "I do not know."})
        turn(conversation, "What word?")
    finally:
        conversation.close()
    assert texts(model.requests[0]) == ["What word?"]
    assert pb.read_bytes() == b_bytes


def test_clear_without_a_person_does_not_clear(model: ScriptedModel, workdir: Path, mino_home: Path) -> None:
    write_log(mino_home, A, qa("q", "a"))
    conversation = make_conversation(model.base_url, workdir, RecordingUI(typed=[None]))
    conversation.open()
    out = command(conversation, "/clear")
    conversation.close()
    assert out[-1].startswith("Session was not cleared.")
    assert (sessions_dir(mino_home) / f"{A}.jsonl").stat().st_size > 0


def test_commands_are_never_saved_nor_sent_and_unknown_is_an_error(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    out = command(conversation, "/frobnicate now")
    assert out == ["Unknown command: /frobnicate. Type /help for the list of commands."]
    command(conversation, "/help")
    command(conversation, "/mode accept-edits")
    sid = conversation.session_id
    conversation.close()
    assert (sessions_dir(mino_home) / f"{sid}.jsonl").read_text() == ""
    assert model.requests == []


@pytest.mark.parametrize("fail_at", ["rename", "fsync_dir"])
def test_storage_failure_while_clearing_stops_the_chat(
    model: ScriptedModel, workdir: Path, mino_home: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str
) -> None:
    write_log(mino_home, A, qa("q", "a"))
    conversation = make_conversation(model.base_url, workdir, RecordingUI(typed=[A]))
    conversation.open()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    real_fsync = os.fsync

    def fsync_files_only(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            boom()
        real_fsync(fd)

    # The fault is injected at the system-call layer the store uses (rename, or the folder's fsync).
    if fail_at == "rename":
        monkeypatch.setattr(durable.os, "replace", boom)
    else:
        monkeypatch.setattr(durable.os, "fsync", fsync_files_only)
    result, out = command_result(conversation, "/clear")
    monkeypatch.undo()
    assert result.stop is True
    assert "Could not clear session" in out[-1] and "Cleared session" not in "\n".join(out)
    outcome = turn(conversation, "still there?")
    assert outcome.status == "failed" and model.requests == []
    conversation.close()


def test_storage_failure_while_saving_selection_stops_the_chat(
    model: ScriptedModel, workdir: Path, mino_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    old = conversation.session_id

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "replace", boom)
    result, out = command_result(conversation, "/new")
    monkeypatch.undo()
    assert result.stop is True
    assert out[-1].startswith("Could not save the session selection")
    assert not any(x.startswith("Session: ") for x in out)  # the new selection is never shown
    assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": old}
    conversation.close()


def test_torn_tail_is_copied_truncated_and_reported(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    path = write_log(mino_home, A, qa("q", "a"))
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(b'{"seq": 4, "type": "user_mess')
    conversation = make_conversation(model.base_url, workdir)
    lines = startup_lines(conversation.open())
    model.add({"text": "ok"})
    turn(conversation, "next")
    conversation.close()
    assert any("incomplete" in x and "recovery" in x for x in lines)
    copies = list(sessions_dir(mino_home).glob(f"{A}.jsonl.recovery-*"))
    assert len(copies) == 1 and copies[0].read_bytes().endswith(b"user_mess")
    records = [json.loads(x) for x in path.read_text().splitlines()]
    assert path.read_bytes().startswith(whole)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))


def test_nul_tail_is_a_torn_tail(mino_home: Path) -> None:
    path = write_log(mino_home, A, qa("q", "a"))
    with path.open("ab") as f:
        f.write(b"\x00" * 64)
    log = SessionLog.open(path)
    assert len(list(log.read_records())) == 3 and log.notices
    log.close()
    assert path.read_bytes().endswith(b"}\n")


def test_damage_in_the_middle_cannot_be_loaded(mino_home: Path) -> None:
    recs = qa("q", "a")
    path = write_log(mino_home, A, recs)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "not json\n" + lines[2])
    with pytest.raises(LogError, match="line 2"):
        SessionLog.open(path)
    recs[1]["seq"] = 7
    write_log(mino_home, A, recs)
    with pytest.raises(LogError, match="seq 7 where 2 was expected"):
        SessionLog.open(path)


def test_symlinked_and_special_session_files_are_refused(mino_home: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.jsonl"
    real.write_text("")
    d = sessions_dir(mino_home)
    d.mkdir(parents=True)
    (d / f"{A}.jsonl").symlink_to(real)
    store = SessionStore(d)
    with pytest.raises(LogError, match="symbolic link"):
        store.open_log(A)
    os.mkfifo(d / f"{B}.jsonl")
    with pytest.raises(LogError, match="not a regular file"):
        store.open_log(B)


def unknown_result_log(home: Path, witness: Path) -> Path:
    at = "2026-10-21T10:00:00.000Z"
    args = json.dumps({"command": f"echo ran >> {witness}"})
    return write_log(
        home,
        A,
        [
            {"seq": 1, "type": "user_message", "turn_id": "t1", "at": at, "text": "run it"},
            {
                "seq": 2,
                "type": "tool_call",
                "turn_id": "t1",
                "at": at,
                "call_id": "call_1",
                "name": "bash",
                "arguments": args,
            },
        ],
    )


def test_unknown_result_asks_and_saves_the_ack_and_runs_nothing(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    witness = tmp_path / "witness"
    path = unknown_result_log(mino_home, witness)
    ui = RecordingUI(confirms=[True])
    conversation = make_conversation(model.base_url, workdir, ui)
    lines = startup_lines(conversation.open())
    model.add({"text": "ok"})
    turn(conversation, "what happened?")
    conversation.close()
    assert lines[0] == f"Session: {A}"
    assert len(ui.confirm_messages) == 1 and "may or may not have run" in ui.confirm_messages[0]
    records = [json.loads(x) for x in path.read_text().splitlines()]
    types = [r["type"] for r in records]
    assert types[:6] == ["user_message", "tool_call", "recovery", "tool_result", "turn_end", "recovery_ack"]
    assert records[3]["status"] == "unknown"
    assert not witness.exists()  # never re-executed
    # The pair is replayed: the call has exactly one output.
    items = model.requests[0]["input"]
    calls = [i for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert len(calls) == len(outputs) == 1 and "may or may not have run" in outputs[0]["output"]
    # A second start-up does not ask again.
    ui2 = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui2)
    conversation.open()
    conversation.close()
    assert ui2.confirm_messages == []


def test_unknown_result_refused_on_resume_keeps_selection(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    unknown_result_log(mino_home, tmp_path / "witness")
    write_log(mino_home, B, qa("q", "a"))
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": B}))
    ui = RecordingUI(confirms=[False])
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    out = command(conversation, f"/resume {A}")
    assert conversation.session_id == B
    conversation.close()
    assert "selection is unchanged" in out[0]
    assert json.loads((sessions_dir(mino_home) / "active-session.json").read_text()) == {"session_id": B}
    # The target log may have had recovery records appended: that is allowed and loadable.
    log = SessionLog.open(sessions_dir(mino_home) / f"{A}.jsonl")
    assert any(r["type"] == "recovery" for r in log.read_records())
    assert not any(r["type"] == "recovery_ack" for r in log.read_records())
    log.close()


def test_a_crash_after_an_interrupted_turn_still_loads_and_replays_it(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    """An interrupted turn (partial answer, `interrupted`), then a turn torn by a crash: the load
    cuts the torn tail, recovery ends the open turn, and the next request still carries the
    interrupted turn as separate messages with the interruption line."""
    from mino_server.core.sessions.log import INTERRUPTED_NOTE

    at = "2026-10-21T10:00:00.000Z"
    records = [
        {"seq": 1, "type": "user_message", "turn_id": "t1", "at": at, "text": "Please be SLOW."},
        {
            "seq": 2,
            "type": "assistant_message",
            "turn_id": "t1",
            "at": at,
            "text": "slow",
            "interrupted": True,
        },
        {"seq": 3, "type": "interrupted", "turn_id": "t1", "at": at},
        {
            "seq": 4,
            "type": "turn_end",
            "turn_id": "t1",
            "at": at,
            "status": "interrupted",
            "reason": "Interrupted.",
        },
        {"seq": 5, "type": "user_message", "turn_id": "t2", "at": at, "text": "then this"},
    ]
    path = write_log(mino_home, A, records)
    with path.open("ab") as f:
        f.write(b'{"seq": 6, "type": "assistant_mess')
    (sessions_dir(mino_home) / "active-session.json").write_text(json.dumps({"session_id": A}))
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    model.add({"text": "hello"})
    assert turn(conversation, "Say hello.").status == "completed"
    conversation.close()
    sent = [(m["role"], m["content"]) for m in model.requests[-1]["input"] if m.get("type") == "message"]
    assert sent[-3:] == [
        ("user", "Please be SLOW."),
        ("assistant", f"slow\n\n{INTERRUPTED_NOTE}"),
        ("user", "then this\n\nSay hello."),  # the crashed turn failed before any answer: merged
    ]
    ends = [r for r in (json.loads(x) for x in path.read_text().splitlines()) if r["type"] == "turn_end"]
    assert [e["status"] for e in ends] == ["interrupted", "interrupted", "completed"]


def test_whether_a_turn_ran_commands_is_the_tool_registrys_word_not_a_name(
    mino_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewind says a turn's commands are not undone when the turn called a tool the registry
    says runs commands (category `execute`), whatever its name; the index keeps what it needs."""
    from mino_server.core.sessions.log import _Scan
    from mino_server.core.tools import registry

    at = "2026-10-21T10:00:00.000Z"

    def call(seq: int, turn: str, name: str) -> dict:
        return {
            "seq": seq,
            "type": "tool_call",
            "turn_id": turn,
            "at": at,
            "call_id": f"c{seq}",
            "name": name,
            "arguments": "{}",
        }

    records = [
        *qa("one", "ok", "t1", 1)[:1],
        call(2, "t1", "shell_run"),
        call(3, "t1", "shell_run"),
        *qa("two", "ok", "t2", 4)[:1],
        call(5, "t2", "bash"),
        call(6, "t2", "read_file"),
        *qa("three", "ok", "t3", 7),
    ]
    path = write_log(mino_home, A, records)
    categories = {"shell_run": "execute", "bash": "read", "read_file": "read"}
    monkeypatch.setattr(registry, "tool_categories", lambda: categories)
    log = SessionLog.open(path)
    assert log.turns() == {"t1": (1, 1, True), "t2": (2, 4, False), "t3": (3, 7, False)}
    loaded = _Scan.load(log._scan.dump(0, b""))  # the index keeps what the scan found
    assert loaded is not None and loaded[0].tool_names == ["shell_run", "bash", "read_file"]
    assert loaded[0].turns == log._scan.turns
    categories["bash"] = "execute"  # as the real registry has it
    assert log.turns()["t2"] == (2, 4, True)


def test_mino_home_itself_may_be_a_link(
    model: ScriptedModel, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what is below MINO_HOME is opened without following a link: the home itself is the
    person's setup (a link to another disk, say) and works as a folder would."""
    from mino_server.core.rules import RuleStore

    real = tmp_path / "real-home"
    real.mkdir()
    (tmp_path / "home-link").symlink_to(real)
    monkeypatch.setenv("MINO_HOME", str(tmp_path / "home-link"))
    model.add({"text": "ok"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    assert turn(conversation, "hi").status == "completed"
    command(conversation, "/new")
    conversation.close()
    assert len(list((real / "sessions").glob("*.jsonl"))) == 2
    assert (real / "sessions" / "active-session.json").is_file()
    RuleStore(tmp_path / "home-link").add(["bash git status"], "allow", workdir)
    assert len(list((real / "rules").glob("*.yaml"))) == 1
