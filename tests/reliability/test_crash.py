"""SIGKILL a real `mino` at random points, start it again, and check nothing was lost or run twice.

MINO_CRASH_KILLS sets the number of kills (default 25, about 12 s); MINO_CRASH_SEED the
seed (default fixed, so CI is repeatable; the full run in README.md uses several seeds).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import faulthook
import pexpect
import pytest
from crash_harness import CrashRun
from harness import report_run
from invariants import pair_calls, read_log
from tally import TALLY

from mino_server.testing.scripted_model import ScriptedModel

KILLS = int(os.environ.get("MINO_CRASH_KILLS", "25"))
SEED = int(os.environ.get("MINO_CRASH_SEED", "20261130"))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook reads /proc/self/fd")


# A hang guard, not a speed limit: 25 kills took 12 s on a quiet machine and 42 s under load.
@pytest.mark.timeout(max(600, KILLS * 20))
def test_sigkill_at_random_points_loses_nothing_and_runs_nothing_twice(tmp_path: Path) -> None:
    run = CrashRun(tmp_path / "run", SEED)
    report = run.run(KILLS)
    report_run(report, "crash harness", SEED, tmp_path / "run", f"mino-crash-{SEED}")
    assert report.kills >= KILLS
    # The harness must have exercised what it claims to: kills on durable operations and recovery.
    if KILLS >= 20:
        assert report.crash_ops, "no kill landed on a durable operation"
        assert report.asked > 0, "no kill left a call without a result to ask about"


def test_kill_during_start_up_recovery_asks_once_per_call(tmp_path: Path) -> None:
    """SIGKILL right after the `recovery` record, before the unknown result: the next start still
    marks the call unknown exactly once, asks about one call, and runs nothing again."""
    home, work = tmp_path / "home", tmp_path / "work"
    sessions = home / "sessions"
    sessions.mkdir(parents=True)
    work.mkdir()
    sid, at = "b" * 32, "2026-11-30T10:00:00.000Z"
    records = [
        {"seq": 1, "type": "user_message", "turn_id": "t1", "at": at, "text": "run it"},
        {"seq": 2, "type": "tool_call", "turn_id": "t1", "at": at, "call_id": "c1", "name": "bash"},
    ]
    records[1]["arguments"] = json.dumps({"command": "echo c1 >> witness.txt"})
    (sessions / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (sessions / "active-session.json").write_text(json.dumps({"session_id": sid}))
    with ScriptedModel([{"text": "fine"}]) as model:
        ops = tmp_path / "ops.log"
        env = faulthook.environ(
            os.environ,
            MINO_HOME=str(home),
            MINO_BASE_URL=model.base_url,
            MINO_API_KEY="k",
            MINO_TEST_OPS_LOG=str(ops),
        )
        # First start: learn which durable operation writes the `recovery` record, then kill after it.
        child = pexpect.spawn(
            sys.executable, ["-m", "faulthook"], env=env, cwd=str(work), encoding="utf-8", timeout=15
        )
        child.expect_exact("[y/N] ")
        child.kill(9)
        child.close()
        writes = [
            line.split()[0] for line in ops.read_text().splitlines() if " write " in line and sid in line
        ]
        assert writes, "the recovery record was never written"
        (sessions / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))  # as before
        for made in sessions.iterdir():  # and the lock files the first start made: the same operations again
            if made.suffix in (".lock", ".changes"):
                made.unlink()
        env["MINO_TEST_CRASH_AT"] = f"{writes[0]}:after"
        child = pexpect.spawn(
            sys.executable, ["-m", "faulthook"], env=env, cwd=str(work), encoding="utf-8", timeout=15
        )
        child.expect(pexpect.EOF)
        child.close()
        assert child.signalstatus == 9
        assert [r["type"] for r in read_log(sessions / f"{sid}.jsonl").records][-1] == "recovery"
        TALLY.kills += 2
        # Start again: one call to ask about, marked unknown once, and the chat works.
        env.pop("MINO_TEST_CRASH_AT")
        child = pexpect.spawn(
            sys.executable, ["-m", "faulthook"], env=env, cwd=str(work), encoding="utf-8", timeout=15
        )
        child.expect(r"has (\d+) tool call\(s\)")
        assert child.match.group(1) == "1"
        child.expect_exact("[y/N] ")
        child.sendline("y")
        child.expect_exact("You> ")
        child.sendline("what happened?")
        child.expect_exact("Assistant> fine")
        child.expect_exact("You> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    view = read_log(sessions / f"{sid}.jsonl")
    results, pending = pair_calls(view.records)
    assert not pending and [r["status"] for r in results.values()] == ["unknown"]
    assert sum(r["type"] == "tool_result" for r in view.records) == 1
    assert not (work / "witness.txt").exists()  # never run, not even once
