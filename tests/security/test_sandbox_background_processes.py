"""Finding 7: background processes outlived the command without the sandbox.

With `sandbox: off`, `setsid sleep 300 &` outlived the command and Mino, although the tool says
"Background processes are stopped when the command ends". Now every descendant of a command ends
when it ends: in bubblewrap its pid namespace does it; without one, Mino is a child subreaper and
ends the orphans that came from the command (tools/orphans.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest
from tool_helpers import (
    SANDBOX,
    live_with,
    needs_bwrap,
    project_ctx,
    returned_before_the_sleeps_ended,
    run_bash,
    sleep_marker,
)

from mino_server.core.tools import orphans
from mino_server.core.tools.sandbox import detect

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")

# Ways out of the command's process group, each leaving a `sleep MARKER` behind (after the
# command has had the time to start it).
ESCAPES = {
    "setsid": "setsid sleep {m} & sleep 0.2",
    "setsid-detached": "(setsid sleep {m} >/dev/null 2>&1 &); sleep 0.2",
    "double-fork": "( (sleep {m} >/dev/null 2>&1 &) & ); sleep 0.2",
    "nohup-job-control": "set -m; nohup sleep {m} >/dev/null 2>&1 & sleep 0.2",
    "cleared-environment": "env -i setsid sleep {m} >/dev/null 2>&1 & sleep 0.2",
    "tree": "setsid bash -c 'sleep {m} & env -i setsid sleep {m} & sleep {m}' >/dev/null & sleep 0.2",
    "ignores-sigterm": "setsid bash -c 'trap \"\" TERM; sleep {m}; :' >/dev/null & sleep 0.2",
    # Issue 22, finding 7: a marker no running command has counted as "another command's".
    "forged-marker": "setsid env MINO_COMMAND_ID=0123456789abcdef sleep {m} >/dev/null 2>&1 & sleep 0.2",
    "forged-marker-only": "env -i MINO_COMMAND_ID=forged setsid sleep {m} >/dev/null 2>&1 & sleep 0.2",
    "forged-marker-twice": (
        "setsid env MINO_COMMAND_ID=x MINO_COMMAND_ID=y sleep {m} >/dev/null 2>&1 & sleep 0.2"
    ),
}


def _adopted_zombies() -> list[int]:
    return [pid for pid in orphans._children(os.getpid()) if orphans._stat_of(pid)[0] == "Z"]


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_unsandboxed_leftovers_end_with_the_command(tmp_path: Path, escape: str) -> None:
    marker = sleep_marker()
    # Other tests in this process leave orphans of their own (pytest is a subreaper once Mino is):
    # only this command's must not be left as zombies.
    zombies_before = set(_adopted_zombies())
    started = time.monotonic()
    result = run_bash(
        {"command": ESCAPES[escape].format(m=marker) + "; echo ok"}, project_ctx(tmp_path, None)
    )
    assert result.output == "ok\n[exit code: 0]"
    assert returned_before_the_sleeps_ended(started, marker)  # it did not wait for the leftovers
    assert live_with(marker) == []
    assert set(_adopted_zombies()) - zombies_before == set()  # reaped, not left as zombies of Mino


@needs_bwrap
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_sandboxed_leftovers_end_with_the_command(tmp_path: Path, escape: str) -> None:
    marker = sleep_marker()
    result = run_bash(
        {"command": ESCAPES[escape].format(m=marker) + "; echo ok"}, project_ctx(tmp_path, SANDBOX)
    )
    assert result.output == "ok\n[exit code: 0]"
    assert live_with(marker) == []


def test_unsandboxed_timeout_ends_leftovers_too(tmp_path: Path) -> None:
    marker = sleep_marker()
    result = run_bash(
        {"command": f"setsid sleep {marker} & sleep {marker}", "timeout_s": 0.5}, project_ctx(tmp_path, None)
    )
    assert result.status == "failed"
    assert live_with(marker) == []


def test_concurrent_commands_end_only_their_own(tmp_path: Path) -> None:
    """Two conversations' commands at once: one ending does not end the other's processes."""
    mine, theirs = sleep_marker(), sleep_marker()
    release = tmp_path / "release"
    long_result: list[object] = []

    def long_command() -> None:
        command = f"setsid sleep {theirs} & while [ ! -e {release} ]; do sleep 0.02; done; echo long"
        long_result.append(run_bash({"command": command}, project_ctx(tmp_path, None)))

    other = threading.Thread(target=long_command)
    other.start()
    try:
        deadline = time.monotonic() + 5
        while len(live_with(theirs)) < 2 and time.monotonic() < deadline:  # its shell and its sleep
            time.sleep(0.02)
        assert run_bash(
            {"command": f"setsid sleep {mine} & sleep 0.2; echo short"}, project_ctx(tmp_path, None)
        ).output == ("short\n[exit code: 0]")
        assert live_with(mine) == []
        assert len(live_with(theirs)) == 2  # its sleep still runs: its command has not ended
    finally:
        release.touch()
        other.join()
    assert [r.output for r in long_result] == ["long\n[exit code: 0]"]  # type: ignore[attr-defined]
    assert live_with(theirs) == []


def test_an_untraceable_leftover_during_another_command_waits_for_the_last_to_end(tmp_path: Path) -> None:
    """setsid with a cleared environment, while an older command still runs: it could be either's,
    so it is ended when the last of them ends, never left behind."""
    stray = sleep_marker()
    release = tmp_path / "release"
    done: list[object] = []

    def long_command() -> None:
        command = f"while [ ! -e {release} ]; do sleep 0.02; done; echo long"
        done.append(run_bash({"command": command}, project_ctx(tmp_path, None)))

    other = threading.Thread(target=long_command)
    other.start()
    try:
        time.sleep(0.1)  # the long command starts first
        run_bash(
            {"command": f"env -i setsid sleep {stray} >/dev/null 2>&1 & sleep 0.2"},
            project_ctx(tmp_path, None),
        )
    finally:
        release.touch()
        other.join()
    assert live_with(stray) == []


def test_leftovers_of_a_process_that_is_not_a_command_are_left_alone(tmp_path: Path) -> None:
    """Mino ends only what came from a command: an orphan adopted before the command started stays."""
    import subprocess

    marker = sleep_marker()
    orphans.prepare()
    subprocess.run(["bash", "-c", f"setsid sleep {marker} >/dev/null 2>&1 &"], check=True)
    try:
        deadline = time.monotonic() + 5
        while not live_with(marker) and time.monotonic() < deadline:  # the fork may not have run yet
            time.sleep(0.01)
        time.sleep(0.05)  # start times count in clock ticks (10 ms): the command starts in a later one
        assert len(live_with(marker)) == 1
        run_bash({"command": "true"}, project_ctx(tmp_path, None))
        assert len(live_with(marker)) == 1
    finally:
        for pid in live_with(marker):
            os.kill(pid, 9)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


@needs_bwrap
def test_the_sandbox_probe_is_registered_like_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """So a command ending while another conversation starts (and probes) does not take the probe
    for one of its leftovers."""
    seen: list[tuple[int, bool]] = []
    real_start = orphans.start

    def spy(spawn: object, marker: str, bare: bool) -> object:
        proc, run = real_start(spawn, marker, bare)  # type: ignore[arg-type]
        seen.append((proc.pid, proc.pid in orphans._running))
        return proc, run

    monkeypatch.setattr(orphans, "start", spy)
    detect()
    assert len(seen) == 1 and seen[0][1] is True
    assert seen[0][0] not in orphans._running  # and unregistered when it ended


def test_a_server_still_starting_is_not_taken_for_a_commands_leftover(tmp_path: Path) -> None:
    """An MCP server between fork and exec shows Mino's own environment (no marker yet): a command
    that ends meanwhile must leave it alone (seen as an MCP server failing with "Connection closed"
    when the start-up probe ended while it started)."""
    import subprocess

    marker = orphans.service(orphans.new_marker())  # registered, its process not started yet
    children: list[subprocess.Popen[bytes]] = []

    def server_starting() -> None:
        time.sleep(0.2)  # after the command started, in a later clock tick
        children.append(subprocess.Popen(["sleep", "30"]))  # a child of Mino with no marker

    try:
        starter = threading.Thread(target=server_starting)
        starter.start()
        run_bash({"command": "sleep 0.6"}, project_ctx(tmp_path, None))
        starter.join()
        assert children and children[0].poll() is None, "the starting server was killed"
    finally:
        orphans.service_started(marker)
        orphans.end_service(marker)
        for child in children:
            child.kill()
            child.wait()
