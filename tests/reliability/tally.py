"""The numbers the reliability suite reports at the end of a run (see conftest.pytest_terminal_summary).

Tests record what they did (kills, injected faults, fuzz cases) and every loss or corruption they
found. A loss also fails the test that found it; the summary makes the totals visible in CI logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tally:
    kills: int = 0
    faults: int = 0
    fuzz_cases: int = 0
    model_faults: int = 0
    losses: list[str] = field(default_factory=list)  # "what: detail", one per lost or corrupted thing
    notes: list[str] = field(default_factory=list)  # details worth a line in the summary

    def loss(self, what: str) -> None:
        self.losses.append(what)


TALLY = Tally()


def whole(condition: bool, what: str) -> None:
    """A check that nothing was lost or corrupted: a failure is counted in the summary and fails the test."""
    if not condition:
        TALLY.loss(what)
    assert condition, what
