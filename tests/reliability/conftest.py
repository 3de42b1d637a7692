"""The reliability suite: shared fixtures and the closing summary (kills, faults, fuzz cases, losses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tally import TALLY  # noqa: E402


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    t = TALLY
    if not (t.kills or t.faults or t.fuzz_cases or t.model_faults or t.losses):
        return
    terminalreporter.section("reliability")
    terminalreporter.write_line(
        f"kills: {t.kills}  disk faults: {t.faults}  model-server faults: {t.model_faults}  "
        f"fuzz cases: {t.fuzz_cases}  lost or corrupted: {len(t.losses)}"
    )
    for note in t.notes:
        terminalreporter.write_line(f"  {note}")
    for loss in t.losses[:50]:
        terminalreporter.write_line(f"  LOST/CORRUPTED: {loss}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Belt and braces: a recorded loss fails the run even if the test that saw it did not.
    if TALLY.losses and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
