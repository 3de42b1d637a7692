"""Disk faults on every write that matters: one clear line, the chat stops where
docs/BEHAVIOUR.md, "Durability" says, and every file on disk is the old or the new version, never a mix.

In-process, through the core Conversation, with faults injected at the OS-call layer the durable code uses
(faults.py): hundreds of cases in a few seconds, each aimed at exactly one write, and the test
runner itself never sees a failing `os`. test_cli_faults.py checks the same through a real `mino`.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from faults import Fault, inject
from helpers import Conversation, RecordingUI, command, command_result, make_conversation, turn
from invariants import log_consistency, memory_problems, pair_calls, read_log, read_selection
from tally import TALLY, whole

from mino_server.core.errors import StorageError
from mino_server.core.memory import render_memory
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

ENOSPC, EIO = errno.ENOSPC, errno.EIO
RECORDS = ["session_skills", "user_message", "tool_call", "tool_result", "assistant_message", "turn_end"]
APPEND_FAULTS = [("write", ENOSPC), ("write", EIO), ("partial", ENOSPC), ("fsync", EIO)]
REPLACE_FAULTS = [
    ("write", ENOSPC),
    ("partial", ENOSPC),
    ("fsync", EIO),
    ("replace", EIO),
    ("fsync_dir", EIO),
    ("create", ENOSPC),
]


def faults(cases: list[tuple[str, int]]) -> pytest.MarkDecorator:
    """Parametrize (kind, err) over `cases`, with ids like "write-ENOSPC"."""
    return pytest.mark.parametrize("kind,err", cases, ids=[f"{k}-{errno.errorcode[e]}" for k, e in cases])


def one_line(text: str | None, err: int) -> None:
    assert text and "\n" not in text, text
    assert os.strerror(err) in text, text
    assert "Traceback" not in text


def session_path(home: Path, sid: str) -> Path:
    return home / "sessions" / f"{sid}.jsonl"


def bash_echo(token: str, witness: str = "witness.txt") -> dict[str, Any]:
    return {
        "calls": [{"name": "bash", "arguments": {"command": f"echo {token} >> {witness}"}, "call_id": token}]
    }


def witness_count(workdir: Path, token: str) -> int:
    path = workdir / "witness.txt"
    return path.read_text().splitlines().count(token) if path.exists() else 0


def restart(base_url: str, workdir: Path) -> tuple[Conversation, RecordingUI, list[str]]:
    ui = RecordingUI(confirms=[True])
    conversation = make_conversation(base_url, workdir, ui, mode="bypass")
    return conversation, ui, startup_lines(conversation.open())


# ---- session appends ---------------------------------------------------------------------------


@faults(APPEND_FAULTS)
@pytest.mark.parametrize("record", RECORDS)
def test_append_fault_stops_the_chat_and_keeps_the_log_whole(
    model: ScriptedModel, workdir: Path, mino_home: Path, record: str, kind: str, err: int
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    sid = conversation.session_id
    assert sid is not None
    path = session_path(mino_home, sid)
    model.add(bash_echo("tok1"), {"text": "done"})
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=".jsonl", record=record))
        outcome = turn(conversation, "go")
    TALLY.faults += 1
    assert fault.fired, "the fault never hit its write"
    # One clear line, and the chat stops (an append failure stops it, like every storage failure in
    # docs/BEHAVIOUR.md, "Durability").
    assert outcome.status == "failed"
    one_line(outcome.error, err)
    assert "The chat stops here" in (outcome.error or "")
    assert conversation.stopped
    sent = len(model.requests)
    assert turn(conversation, "again").status == "failed" and len(model.requests) == sent
    # On disk: exactly the records saved before, or those plus the whole new one; never part of one.
    assert conversation.log is not None
    kept = list(conversation.log.read_records())
    view = read_log(path)
    whole(
        view.problem is None and not view.torn,
        f"append {record}/{kind}: log damaged ({view.problem or 'torn'})",
    )
    whole(
        view.records == kept or (view.records[:-1] == kept and view.records[-1]["type"] == record),
        f"append {record}/{kind}: log on disk is neither the old nor the new version",
    )
    ran = RECORDS.index(record) > RECORDS.index("tool_call")
    whole(
        witness_count(workdir, "tok1") == int(ran),
        f"append {record}/{kind}: bash ran a wrong number of times",
    )
    conversation.close()
    # Start again: whatever is on disk loads, a call without a result is asked about, nothing runs again.
    with ScriptedModel([{"text": "fine"}]) as fresh:  # the failed turn's unused replies stay behind
        conversation, ui, lines = restart(fresh.base_url, workdir)
        assert conversation.session_id == sid, lines
        pending = pair_calls(view.records)[1]
        assert len(ui.confirm_messages) == (1 if pending else 0)
        assert turn(conversation, "next").status == "completed"
        conversation.close()
    problems = log_consistency(read_log(path))
    whole(not problems, f"append {record}/{kind}: {problems}")
    whole(witness_count(workdir, "tok1") == int(ran), f"append {record}/{kind}: bash ran again after restart")


# ---- the selection -----------------------------------------------------------------------------


@faults(REPLACE_FAULTS)
@pytest.mark.parametrize("line", ["/new", "/resume"])
def test_selection_fault_stops_the_chat_and_keeps_a_valid_selection(
    model: ScriptedModel, workdir: Path, mino_home: Path, line: str, kind: str, err: int
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    first = conversation.session_id
    second = command(conversation, "/new")[0].removeprefix("Session: ")
    before = set(os.listdir(mino_home / "sessions"))
    # The temp file's name holds "active-session.json"; the temp folder and its fsync are the folder's.
    folder = str(mino_home / "sessions")
    target = folder if kind in ("fsync_dir", "create") else "active-session.json"
    if line == "/resume":
        line = f"/resume {first}"
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=target))
        result, out = command_result(conversation, line)
    TALLY.faults += 1
    assert fault.fired
    assert result.stop is True
    one_line(out[-1], err)
    assert out[-1].startswith(("Could not save the session selection", "Could not create a session file"))
    assert not any(x.startswith("Session: ") for x in out)  # the new selection is never shown
    sid, problem = read_selection(mino_home)
    new_files = {n[:32] for n in set(os.listdir(mino_home / "sessions")) - before if n.endswith(".jsonl")}
    whole(
        problem is None and sid in ({second, first} | new_files), f"selection {line}/{kind}: {problem or sid}"
    )
    if kind != "fsync_dir":  # the rename did not happen: the old selection is on disk
        whole(sid == second, f"selection {line}/{kind}: changed although saving failed")
    assert turn(conversation, "still there?").status == "failed" and model.requests == []
    conversation.close()
    conversation, _, lines = restart(model.base_url, workdir)
    assert conversation.session_id == sid and conversation.restore_problem is None, lines
    conversation.close()


@faults([("fsync", EIO), ("fsync_dir", EIO)])
def test_session_file_creation_fault_stops_the_chat(
    model: ScriptedModel, workdir: Path, mino_home: Path, kind: str, err: int
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    old = conversation.session_id
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(
            mp, Fault(kind, err, path=".jsonl" if kind == "fsync" else str(mino_home / "sessions"))
        )
        result, out = command_result(conversation, "/new")
    TALLY.faults += 1
    assert fault.fired
    assert result.stop is True
    one_line(out[-1], err)
    whole(read_selection(mino_home)[0] == old, "/new: a session file that could not be created was selected")
    conversation.close()


def test_first_start_on_a_full_disk_is_one_clear_error(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault("write", ENOSPC, path="active-session.json"))
        with pytest.raises(StorageError) as info:
            conversation.open()
    TALLY.faults += 1
    assert fault.fired
    one_line(str(info.value), ENOSPC)
    conversation.close()
    # The next start on a disk with room adopts the lone (empty) session file in place.
    conversation, _, lines = restart(model.base_url, workdir)
    assert conversation.session_id is not None, lines
    conversation.close()


# ---- /clear ------------------------------------------------------------------------------------

CLEAR_FAULTS = [("fsync", EIO), ("replace", EIO), ("replace", ENOSPC), ("fsync_dir", EIO), ("create", ENOSPC)]


@faults(CLEAR_FAULTS)
def test_clear_fault_stops_the_chat_and_the_log_is_old_or_empty(
    model: ScriptedModel, workdir: Path, mino_home: Path, kind: str, err: int
) -> None:
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui, mode="bypass")
    conversation.open()
    sid = conversation.session_id
    assert sid is not None
    model.add({"text": "pine"})
    turn(conversation, "Remember pine.")
    path = session_path(mino_home, sid)
    old = path.read_bytes()
    ui.typed = [sid]
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=str(mino_home / "sessions")))
        result, out = command_result(conversation, "/clear")
    TALLY.faults += 1
    assert fault.fired
    assert result.stop is True
    one_line(out[-1], err)
    assert out[-1].startswith(f"Could not clear session {sid}")
    assert not any(x.startswith("Cleared session") for x in out)
    now = path.read_bytes()
    whole(now in (old, b""), f"/clear {kind}: the log is neither the old one nor empty")
    if kind != "fsync_dir":
        whole(now == old, f"/clear {kind}: cleared although clearing failed before the rename")
    assert turn(conversation, "What word?").status == "failed" and len(model.requests) == 1
    conversation.close()


# ---- memory_save and the file tools: a failed tool, not a stopped chat --------------------------


@faults(REPLACE_FAULTS)
def test_memory_save_fault_is_a_failed_result_and_the_memory_is_old_or_new(
    model: ScriptedModel, workdir: Path, mino_home: Path, kind: str, err: int
) -> None:
    memdir = mino_home / "memory"
    memdir.mkdir(parents=True)
    old = render_memory("uses-pnpm", "project", "This user's projects use pnpm.")
    (memdir / "uses-pnpm.md").write_text(old)
    args = {"name": "uses-pnpm", "type": "project", "summary": "Use pnpm, never npm.", "mode": "overwrite"}
    args["details"] = "pnpm install\n" * 300
    new = render_memory("uses-pnpm", "project", args["summary"], args["details"])
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    model.add({"calls": [{"name": "memory_save", "arguments": args, "call_id": "m1"}]}, {"text": "ok"})
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=str(memdir)))
        outcome = turn(conversation, "remember pnpm")
    TALLY.faults += 1
    assert fault.fired
    assert outcome.status == "completed" and not conversation.stopped  # a failed save is a tool result
    result = [r for r in conversation.log.read_records() if r["type"] == "tool_result"][-1]  # type: ignore[union-attr]
    assert result["status"] == "failed"
    one_line(result["output"], err)
    assert result["output"].startswith("Could not save memory uses-pnpm")
    text = (memdir / "uses-pnpm.md").read_text()
    whole(text in (old, new), f"memory_save {kind}: the memory file is a mix")
    if kind != "fsync_dir":
        whole(text == old, f"memory_save {kind}: changed although saving failed before the rename")
    whole(sorted(os.listdir(memdir)) == ["uses-pnpm.md"], f"memory_save {kind}: left {os.listdir(memdir)}")
    whole(not memory_problems(memdir), f"memory_save {kind}: {memory_problems(memdir)}")
    model.add({"text": "next works"})
    assert turn(conversation, "next").status == "completed"
    conversation.close()


@faults(REPLACE_FAULTS)
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
def test_file_write_fault_is_a_failed_result_and_the_file_is_old_or_new(
    model: ScriptedModel, workdir: Path, mino_home: Path, tool: str, kind: str, err: int
) -> None:
    target = workdir / "notes.txt"
    old = "line one\n" * 500
    target.write_text(old)
    if tool == "write_file":
        args: dict[str, Any] = {"path": "notes.txt", "content": "line two\n" * 500, "mode": "overwrite"}
        new = args["content"]
    else:
        args = {"path": "notes.txt", "old_text": "line one\n" * 500, "new_text": "replaced\n"}
        new = "replaced\n"
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    model.add({"calls": [{"name": tool, "arguments": args, "call_id": "w1"}]}, {"text": "ok"})
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=str(workdir)))
        outcome = turn(conversation, "edit it")
    TALLY.faults += 1
    assert fault.fired
    assert outcome.status == "completed" and not conversation.stopped
    result = [r for r in conversation.log.read_records() if r["type"] == "tool_result"][-1]  # type: ignore[union-attr]
    assert result["status"] == "failed"
    one_line(result["output"], err)
    text = target.read_text()
    whole(text in (old, new), f"{tool} {kind}: the file is a mix")
    if kind == "fsync_dir":  # the rename happened, then the folder's fsync failed: say so truthfully
        assert text == new and result["output"].startswith("Wrote notes.txt, but"), result["output"]
    else:
        whole(text == old, f"{tool} {kind}: changed although writing failed before the rename")
    whole(os.listdir(workdir) == ["notes.txt"], f"{tool} {kind}: left {os.listdir(workdir)}")
    model.add({"text": "next works"})
    assert turn(conversation, "next").status == "completed"
    conversation.close()


# ---- repairing a torn tail -----------------------------------------------------------------------


def torn_session(home: Path, sid: str) -> bytes:
    d = home / "sessions"
    d.mkdir(parents=True, exist_ok=True)
    at = "2026-10-21T10:00:00.000Z"
    recs = [
        {"seq": 1, "type": "user_message", "turn_id": "t1", "at": at, "text": "q"},
        {"seq": 2, "type": "assistant_message", "turn_id": "t1", "at": at, "text": "a"},
        {"seq": 3, "type": "turn_end", "turn_id": "t1", "at": at, "status": "completed"},
    ]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode() + b'{"seq": 4, "type": "user_mes'
    (d / f"{sid}.jsonl").write_bytes(data)
    return data


@pytest.mark.parametrize(
    "kind,err,where",
    [("write", ENOSPC, ".recovery-"), ("create", ENOSPC, "/sessions"), ("ftruncate", EIO, ".jsonl")],
)
@pytest.mark.parametrize("when", ["start-up", "resume"])
def test_torn_tail_repair_fault_is_one_clear_line(
    model: ScriptedModel, workdir: Path, mino_home: Path, kind: str, err: int, where: str, when: str
) -> None:
    sid = "c" * 32
    data = torn_session(mino_home, sid)
    sessions = mino_home / "sessions"
    if when == "resume":
        other = "d" * 32
        (sessions / f"{other}.jsonl").write_bytes(b"")
        (sessions / "active-session.json").write_text(json.dumps({"session_id": other}))
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    with pytest.MonkeyPatch.context() as mp:
        fault = inject(mp, Fault(kind, err, path=where))
        if when == "start-up":
            out = startup_lines(conversation.open())
        else:
            conversation.open()
            out = command(conversation, f"/resume {sid}")
    TALLY.faults += 1
    assert fault.fired
    shown = "\n".join(out)
    assert os.strerror(err) in shown, shown
    assert conversation.session_id != sid  # a log that could not be repaired is not selected
    now = (sessions / f"{sid}.jsonl").read_bytes()
    whole(now == data, f"torn-tail repair {kind}: the log changed although the repair failed")
    conversation.close()
    # With room on the disk again, the repair works.
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    conversation.open()
    if when == "resume":
        command(conversation, f"/resume {sid}")
    assert conversation.session_id == sid
    conversation.close()
