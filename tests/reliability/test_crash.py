"""SIGKILL a real `mino` at random points, start it again, and check nothing was lost or run twice.

MINO_CRASH_KILLS sets the number of kills (default 25, about half a minute); MINO_CRASH_SEED the
seed (default fixed, so CI is repeatable; the full run in README.md uses several seeds).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from crash_harness import CrashRun
from tally import TALLY

KILLS = int(os.environ.get("MINO_CRASH_KILLS", "25"))
SEED = int(os.environ.get("MINO_CRASH_SEED", "20261130"))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hook reads /proc/self/fd")


@pytest.mark.timeout(max(120, KILLS * 5))
def test_sigkill_at_random_points_loses_nothing_and_runs_nothing_twice(tmp_path: Path) -> None:
    run = CrashRun(tmp_path / "run", SEED)
    report = run.run(KILLS)
    TALLY.kills += report.kills
    for p in report.problems:
        TALLY.loss(f"crash: {p}")
    print(f"\ncrash harness (seed {SEED}): {report.summary()}")
    if report.problems:
        kept = Path(os.environ.get("MINO_CRASH_KEEP", "/tmp")) / f"mino-crash-{SEED}"
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(tmp_path / "run", kept, symlinks=True)
        pytest.fail(
            f"{len(report.problems)} problem(s); the run is kept in {kept}:\n"
            + "\n".join(report.problems[:20])
        )
    assert report.kills >= KILLS
    # The harness must have exercised what it claims to: kills on durable operations and recovery.
    if KILLS >= 20:
        assert report.crash_ops, "no kill landed on a durable operation"
        assert report.asked > 0, "no kill left a call without a result to ask about"
