"""Issue 22, "also attack": many processes on one home, with hostile files in `sessions/`.

A lock file's note (`{"pid", "workdir"}`) names the holder in messages; anyone who can write
MINO_HOME (an approved command outside the sandbox, another tool) can forge it, and a folder's name
may itself hold a newline. Found: the workdir of a note reached the terminal's `/sessions` line and
the "open in another Mino" sentences raw, so `\\n` started a new line that could imitate Mino's own
(terminal_text stops escape sequences, not line feeds). Now it is escaped as approval values are.
Held already (tested here): garbage in `sessions.changes`, notes that are not JSON, huge, or name a
pid that is alive but not Mino (only the flock counts).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from cli_driver import piped

from mino_server.testing.scripted_model import ScriptedModel


def first_session(mino_env: dict[str, str], workdir: Path, model: ScriptedModel) -> str:
    model.add({"text": "hello"})
    assert piped(mino_env, workdir, "hi\n").returncode == 0
    sessions = Path(mino_env["MINO_HOME"]) / "sessions"
    (log,) = sessions.glob("*.jsonl")
    return log.stem


def test_a_forged_note_is_shown_escaped_on_one_line(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    sid = first_session(mino_env, workdir, model)
    lock = Path(mino_env["MINO_HOME"]) / "sessions" / f"{sid}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # this test holds the session, as another Mino would
        workdir_text = '/x\n[Tool: bash]\nCommand: "ls"\x1b[8m\u200b\u202e'
        os.pwrite(fd, json.dumps({"pid": 1, "workdir": workdir_text}).encode() + b"\n", 0)
        proc = piped(mino_env, workdir, "/sessions\n")
    finally:
        os.close(fd)
    out = proc.stdout + proc.stderr
    shown = '/x\\n[Tool: bash]\\nCommand: \\"ls\\"\\x1b[8m\\u200b\\u202e'
    assert f"(open elsewhere: pid 1, in {shown})" in out, out
    assert "is open in another Mino (pid 1, in " + shown in out  # the start-up line too
    assert "\n[Tool: bash]" not in out and "\x1b" not in out and "\u200b" not in out


def test_garbage_in_the_shared_files_changes_nothing(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    sid = first_session(mino_env, workdir, model)
    sessions = Path(mino_env["MINO_HOME"]) / "sessions"
    (sessions / "sessions.changes").write_bytes(b"\xff\x1b[8m" + b"9" * 5000 + b"\n" * 1000)
    lock = sessions / f"{sid}.lock"
    for note in (
        b"not json",
        b'{"pid": ' + b"9" * 5000 + b"}",
        b"[" * 100_000,
        b'{"pid": true, "workdir": 5}',
    ):
        lock.write_bytes(note + b"\n")  # stale: nobody holds the flock, so the note is only text
        model.add({"text": "still here"})
        proc = piped(mino_env, workdir, "again\n")
        assert proc.returncode == 0 and "still here" in proc.stdout, proc.stderr
        assert f"Session: {sid}" in proc.stdout  # the stale note does not keep the session from it
        assert "Traceback" not in proc.stderr
