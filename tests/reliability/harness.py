"""What the two crash harnesses (crash_harness.py: one terminal Mino; two_writers.py: two editor
windows) and their tests share: the run's frame, the kill, the witness file, a finished turn's
records, and how a run is reported.

The witness file: every bash call the scripted model asks for appends its unique token to
`witness.txt` in the working directory, so the file tells which calls ran, and how often.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import pytest
from helpers import mino_env
from invariants import read_log, request_consistency
from tally import TALLY

from mino_server.testing.scripted_model import ScriptedModel


class Report(Protocol):
    kills: int
    problems: list[str]
    seconds: float

    def summary(self) -> str: ...


class HarnessRun:
    """One run over one MINO_HOME under `root`: numbered cycles from one seed (a failure is replayed
    by running the seed again), problems tagged with both, and every request any cycle's scripted
    model received checked at the end. A subclass runs the cycles."""

    def __init__(self, root: Path, seed: int, report: Any) -> None:
        self.root = root
        self.home = root / "mino-home"
        self.rng = random.Random(seed)
        self.seed = seed
        self.report = report
        self.cycle_no = 0
        self.call_no = 0
        self.requests: list[dict[str, Any]] = []  # every cycle's model requests

    def run(self, kills: int) -> Any:
        """The report, after at least `kills` kills (unless problems stopped it) and a clean end."""
        started = time.monotonic()
        self.cycles(kills)
        for body in self.requests:
            for p in request_consistency(body):
                self.problem(f"request to the model: {p}")
        self.report.seconds = time.monotonic() - started
        return self.report

    def cycles(self, kills: int) -> None:
        raise NotImplementedError

    def problem(self, text: str) -> None:
        self.report.problems.append(f"cycle {self.cycle_no} (seed {self.seed}): {text}")

    def mino_env(self, model: ScriptedModel) -> dict[str, str]:
        """The environment of a Mino on this run's home talking to `model`."""
        return dict(mino_env(self.home, model.base_url), HOME=str(self.root / "user-home"))


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def witness_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def witness_problems(lines: list[str], tokens: Iterable[str]) -> list[str]:
    """A line no call asked for (a torn append?), or a call that ran more than once."""
    asked = set(tokens)
    problems = []
    for token, n in Counter(lines).items():
        if token not in asked:
            problems.append(f"witness line {token!r} is no call the model made (torn append?)")
        elif n > 1:
            problems.append(f"bash call {token} ran {n} times")
    return problems


class NotOnDisk(Exception):
    """A turn Mino said is done is not whole on disk."""


def finished_turn(log: Path, text: str) -> tuple[list[dict[str, Any]], str]:
    """The records of `log`, read while Mino is idle, and the turn_id of the latest turn typed as
    `text`; NotOnDisk when the log is damaged or that turn's turn_end does not say completed."""
    view = read_log(log)
    if view.problem or view.torn:
        raise NotOnDisk(f"its log is damaged while idle: {view.problem or 'torn tail'}")
    users = [r for r in view.records if r["type"] == "user_message" and r["text"] == text]
    ends = {r.get("turn_id"): r for r in view.records if r["type"] == "turn_end"}
    if not users or ends.get(users[-1].get("turn_id"), {}).get("status") != "completed":
        raise NotOnDisk(f"turn {text!r} was answered done but its records are not all on disk")
    return view.records, users[-1]["turn_id"]


def report_run(report: Report, label: str, seed: int, run_dir: Path, keep_as: str) -> None:
    """Count the run in the suite's summary; on a problem keep `run_dir` as `keep_as`-XXXXXXXX (a
    new folder each time, so runs of other checkouts on the machine cannot replace it) in
    $MINO_CRASH_KEEP (default /tmp) for a look, and fail."""
    TALLY.kills += report.kills
    for p in report.problems:
        TALLY.loss(f"{label}: {p}")
    TALLY.notes.append(f"{label} (seed {seed}): {report.summary()}")
    if report.problems:
        keep = os.environ.get("MINO_CRASH_KEEP", "/tmp")
        kept = Path(tempfile.mkdtemp(prefix=f"{keep_as}-", dir=keep)) / "run"
        shutil.copytree(run_dir, kept, symlinks=True)
        pytest.fail(
            f"{len(report.problems)} problem(s); the run is kept in {kept}:\n"
            + "\n".join(report.problems[:20])
        )
