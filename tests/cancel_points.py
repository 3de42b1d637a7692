"""The points of a turn where a cancel must end it (issue 23), shared by the editor server's
`$/cancelRequest` and ACP's `session/cancel` tests. Each holds its point open far longer than a
test waits (a 60 s stall, `sleep 60`, a 30 s Retry-After), so a lost cancel is a hang."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from helpers import wait_until

from mino_server.testing.scripted_model import ScriptedModel

LONG_TEXT = " ".join(f"word{n}" for n in range(200))

# point -> (the scripted reply, what to wait for before cancelling: "request", "delta" or "tool")
POINTS: dict[str, tuple[dict[str, Any], str]] = {
    "before the first delta": ({"text": "late", "stall": 60}, "request"),
    "mid-stream": ({"text": LONG_TEXT, "delay": 0.2}, "delta"),
    "while a tool runs": (
        {"calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60"}}]},
        "tool",
    ),
    "during a retry's back-off": (
        {"status": 429, "error": "slow down", "headers": {"Retry-After": "30"}},
        "request",
    ),
}


def reach(point: str, model: ScriptedModel, delta: Callable[[], object], tool: Callable[[], object]) -> None:
    """Wait until the turn is at `point` (the model was asked; a delta came; the tool started)."""
    waits_for = POINTS[point][1]
    if waits_for == "request":
        wait_until(lambda: model.requests, "model request")
        time.sleep(0.2)  # into the stall or the back-off
    elif waits_for == "delta":
        wait_until(delta, "text delta")
    else:
        wait_until(tool, "tool call")
        time.sleep(0.5)  # into the command
