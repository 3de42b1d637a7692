"""Competing load for `make test-stress` and the reliability suite's loaded case.

`python tests/load.py [--seconds N] -- COMMAND...` runs COMMAND while one busy process per core and
one I/O writer (4 MiB written and fsynced in a loop, in a temporary folder) compete with it, and
stops them when COMMAND ends (or after N seconds, whichever comes first); COMMAND's exit status is
the script's. `Load` is the same as a context manager for a test.

The load is bounded three times: the workers stop themselves at their deadline, get SIGKILL when the
command ends, and get SIGKILL from the kernel when the process that started them dies
(PR_SET_PDEATHSIG), so a killed run leaves no busy loop behind. SIGTERM (`make` stopped, `timeout`)
or Ctrl-C stops the command's whole process group and the load as the end of the command does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import FrameType, TracebackType

BUSY = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"
WRITER = """
import os, time
end = time.monotonic() + {s}
path = os.path.join({d!r}, "load.bin")
block = os.urandom(1 << 20)
while time.monotonic() < end:
    with open(path, "wb") as f:
        for _ in range(4):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    os.unlink(path)
"""


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel for SIGKILL when the starting thread's process dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def ask() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)

    return ask


class Load:
    """One busy process per core (or `busy`) and one fsyncing writer, for at most `seconds`."""

    def __init__(self, seconds: float = 3600, busy: int | None = None) -> None:
        self.seconds = seconds
        self.busy = busy if busy is not None else (os.cpu_count() or 1)
        self._procs: list[subprocess.Popen[bytes]] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def describe(self) -> str:
        return f"{self.busy} busy process(es) + 1 I/O writer (4 MiB fsynced in a loop)"

    def __enter__(self) -> Load:
        self._dir = tempfile.TemporaryDirectory(prefix="mino-load-")
        scripts = [BUSY.format(s=self.seconds)] * self.busy
        scripts.append(WRITER.format(s=self.seconds, d=self._dir.name))
        preexec = _die_with_parent()
        for script in scripts:
            self._procs.append(
                subprocess.Popen([sys.executable, "-c", script], start_new_session=True, preexec_fn=preexec)
            )
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for proc in self._procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self._procs:
            proc.wait()
        self._procs.clear()
        if self._dir is not None:
            self._dir.cleanup()


def main(argv: list[str]) -> int:
    seconds = 3600.0
    if argv[:1] == ["--seconds"]:
        seconds, argv = float(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: python tests/load.py [--seconds N] -- COMMAND...\n")
        return 2

    with Load(seconds) as load:
        sys.stderr.write(f"load: {load.describe()}, at most {seconds:.0f} s\n")
        started = time.monotonic()
        # The command gets a process group of its own, so that stopping it reaches all it started
        # (npm's shell and test host, pytest's servers), not just the process named.
        proc = subprocess.Popen(argv, process_group=0)

        def end_group() -> None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        def stop(signum: int, frame: FrameType | None) -> None:
            # SIGTERM (make or timeout stopped) or Ctrl-C, which no longer reaches the command's
            # group from the terminal: pass it on, give the command 10 s to end as it would (pytest
            # prints its report), then end what is left; the with block ends the load.
            try:
                os.killpg(proc.pid, signum)
                proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            end_group()
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        code = proc.wait()
        end_group()  # anything the command left behind in its group
        sys.stderr.write(
            f"load: {' '.join(argv)} ended with {code} after {time.monotonic() - started:.0f} s\n"
        )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
