"""Disk faults in a real `mino` (through faulthook): what a person sees is one line, never a traceback.

The in-process matrix (test_faults.py) proves the files stay whole; this proves the front end: every
storage failure reaches the terminal as one clear line, and the process stops where
docs/BEHAVIOUR.md, "Durability" says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import faulthook
import pexpect
import pytest
from invariants import store_problems
from tally import TALLY

from mino_server.testing.scripted_model import ScriptedModel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook reads /proc/self/fd")


def hooked_env(env: dict[str, str], fault: str | None) -> dict[str, str]:
    return faulthook.environ(env, MINO_TEST_FAULT=fault) if fault else faulthook.environ(env)


def run(env: dict[str, str], cwd: Path, stdin: str, fault: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faulthook", "--mode", "bypass"],
        input=stdin,
        env=hooked_env(env, fault),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )


# (home before the run, fault, stdin, exit code, the one stderr line starts with, and holds)
CASES = [
    ("fresh", "write:ENOSPC", "hi\n", 1, "mino: Could not save the session selection", "No space left"),
    ("fresh", "replace:EIO", "hi\n", 1, "mino: Could not save the session selection", "Input/output error"),
    ("fresh", "fsync:EIO", "hi\n", 1, "mino: Could not create a session file", "Input/output error"),
    ("fresh", "fsync_dir:EIO", "hi\n", 1, "mino: Could not create a session file", "Input/output error"),
    ("empty-home", "mkdir:ENOSPC", "hi\n", 1, "mino: ", "No space left"),
    ("no-home", "mkdir:ENOSPC", "hi\n", 2, "mino: ", "No space left"),
    ("used", "write:ENOSPC", "hi\n", 1, "Error: Could not write to the session log", "No space left"),
    ("used", "fsync:EIO", "hi\n", 1, "Error: Could not write to the session log", "Input/output error"),
    ("used", "replace:EIO", "/new\nhi\n", 1, "Could not save the session selection", "Input/output error"),
    ("used", "fsync_dir:EIO", "/new\nhi\n", 1, "Could not create a session file", "Input/output error"),
]


@pytest.mark.parametrize(
    "home_state,fault,stdin,code,starts,holds", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_storage_fault_in_a_real_mino_is_one_line(
    model: ScriptedModel,
    mino_env: dict[str, str],
    workdir: Path,
    mino_home: Path,
    home_state: str,
    fault: str,
    stdin: str,
    code: int,
    starts: str,
    holds: str,
) -> None:
    if home_state == "empty-home":
        mino_home.mkdir(mode=0o700)
    elif home_state == "used":
        model.add({"text": "first run"})
        first = run(mino_env, workdir, "hello\n", None)
        assert first.returncode == 0, first.stderr
    model.add({"text": "first answer after the fault"})
    sent = len(model.requests)
    proc = run(mino_env, workdir, stdin, fault)
    TALLY.faults += 1
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    lines = [x for x in out.splitlines() if starts in x]
    assert len(lines) == 1 and holds in lines[0], out
    # The chat stopped before asking the model, and what is on disk loads.
    assert "first answer after the fault" not in proc.stdout and len(model.requests) == sent
    assert store_problems(mino_home) == []
    if fault.startswith("mkdir"):
        return
    # With the disk healthy again, Mino starts and the chat works: the reply the failed run never
    # asked for is the next one.
    again = run(mino_env, workdir, "hi again\n", None)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Assistant> first answer after the fault" in again.stdout, again.stdout
    assert store_problems(mino_home) == []


def test_clear_fault_through_the_pty_is_one_line_and_stops(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    model.add({"text": "pine"})
    first = run(mino_env, workdir, "Remember pine.\n", None)
    assert first.returncode == 0, first.stderr
    child = pexpect.spawn(
        sys.executable,
        ["-m", "faulthook"],
        env=hooked_env(mino_env, "replace:EIO"),
        cwd=str(workdir),
        encoding="utf-8",
        timeout=15,
    )
    child.expect(r"Session: ([0-9a-f]{32})")
    sid = child.match.group(1)
    child.expect_exact("You> ")
    child.sendline("/clear")
    child.expect_exact("Type the complete session ID to clear it: ")
    child.sendline(sid)
    child.expect_exact(f"Could not clear session {sid}: Input/output error.")
    child.expect(pexpect.EOF)
    child.close()
    TALLY.faults += 1
    assert child.exitstatus == 1
    assert "Traceback" not in (child.before or "")
    assert (mino_home / "sessions" / f"{sid}.jsonl").stat().st_size > 0  # not cleared


@pytest.mark.parametrize("fault", ["write:ENOSPC", "fsync:EIO"])
def test_storage_fault_in_the_editor_server_is_one_line_and_stops_the_chat(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path, fault: str
) -> None:
    """`mino --stdio` on a disk that fails after start-up: a failed turn with one line, then every
    request that would write is refused with the same line; reads still work; no traceback."""
    from server_client import Client, RpcError, contract_problems

    model.add({"text": "first run"})
    first = run(mino_env, workdir, "hello\n", None)  # the store and a session exist
    assert first.returncode == 0, first.stderr
    env = hooked_env(mino_env, fault)
    client = Client(env, workdir, argv=[sys.executable, "-m", "faulthook", "--stdio"])
    try:
        client.initialize(workdir)
        sid = client.request("mino/state")["sessionId"]
        assert sid
        result = client.request("mino/turn", {"text": "hi"})
        assert result["status"] == "failed" and "\n" not in result["error"], result
        assert "Could not write to the session log" in result["error"]
        with pytest.raises(RpcError) as refused:
            client.request("mino/sessions/new")
        assert "\n" not in refused.value.message and "chat stops" in refused.value.message
        assert client.request("mino/state")["sessionId"] == sid  # reading still works
    finally:
        client.stop()
    TALLY.faults += 1
    stderr = bytes(client.stderr).decode(errors="replace")
    assert contract_problems(client) == [], stderr
    assert "Traceback" not in stderr, stderr
