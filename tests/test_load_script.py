"""tests/load.py, the competing load of `make test-stress`: a stopped or killed run leaves nothing
behind. A `make test-stress` stopped by SIGTERM once left its two busy loops and its fsyncing writer
running for their full hour, and the suite under them running as an orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

LOAD = Path(__file__).resolve().parent / "load.py"
HANG_S = 60.0  # a hang guard: each wait ends as soon as what it waits for happens

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # the arguments are NUL-separated: `sleep 3015.25` reads b"sleep\x003015.25\x00"
        if marker.encode() in cmdline.replace(b"\0", b" ") and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def wait_until(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + HANG_S
    while not check():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_script_stops_its_load_and_its_command(how: int) -> None:
    seconds = f"{3000 + how}.25"  # only this test's workers carry it in their source
    command_marker = f"sleep {seconds}"
    script = subprocess.Popen(
        [sys.executable, str(LOAD), "--seconds", seconds, "--", "sh", "-c", f"{command_marker}; true"],
        stderr=subprocess.PIPE,
    )
    try:
        assert script.stderr is not None
        assert script.stderr.readline().startswith(b"load: ")
        workers = processes_with(f"monotonic() + {seconds}")
        assert len(workers) == (os.cpu_count() or 1) + 1  # a busy loop per core and the writer
        wait_until(lambda: processes_with(command_marker), "the command to start")
        script.send_signal(how)
        script.wait(HANG_S)
        wait_until(lambda: not processes_with(f"monotonic() + {seconds}"), "the load to stop")
        if how == signal.SIGTERM:  # a killed script cannot stop its command; a stopped one does
            wait_until(lambda: not processes_with(command_marker), "the command to stop")
    finally:
        for pid in processes_with(f"monotonic() + {seconds}") + processes_with(command_marker):
            os.kill(pid, signal.SIGKILL)
        if script.poll() is None:
            script.kill()
