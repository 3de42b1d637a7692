"""The crash harness and the two-writer harness at once, under competing load (issue 23): a busy
process per core and an fsyncing I/O writer (tests/load.py) while one `mino` is SIGKILLed at random
points and two `mino --stdio` windows share a home with one killed mid-turn. Nothing may be lost,
run twice or left unloadable because the machine is busy.

MINO_LOAD_KILLS sets the crash harness's kills (default 6; the two-writer harness does a third, at least 2).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from crash_harness import CrashRun
from harness import Report, report_run
from two_writers import TwoWriterRun

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from load import Load  # noqa: E402  (tests/load.py, beside this folder)

KILLS = int(os.environ.get("MINO_LOAD_KILLS", "6"))
SEED = int(os.environ.get("MINO_CRASH_SEED", "20261130")) + 23  # not the unloaded runs' plan

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook reads /proc/self/fd")


@pytest.mark.timeout(max(240, KILLS * 20))
def test_crash_and_two_writer_harnesses_under_load_lose_nothing(tmp_path: Path) -> None:
    crash = CrashRun(tmp_path / "crash", SEED)
    writers = TwoWriterRun(tmp_path / "writers", SEED)
    reports: dict[str, Report] = {}

    def run_crash() -> None:
        reports["crash"] = crash.run(KILLS)

    with Load(seconds=max(240, KILLS * 20)):
        thread = threading.Thread(target=run_crash, name="crash-harness")
        thread.start()
        try:
            reports["writers"] = writers.run(max(2, KILLS // 3))
        finally:
            thread.join()
    report_run(
        reports["crash"], "crash harness under load", SEED, tmp_path / "crash", f"mino-crash-load-{SEED}"
    )
    report_run(
        reports["writers"],
        "two writers under load",
        SEED,
        tmp_path / "writers",
        f"mino-two-writers-load-{SEED}",
    )
    assert reports["crash"].kills >= KILLS
    assert reports["writers"].kills >= max(2, KILLS // 3)
