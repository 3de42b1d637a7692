"""Helpers shared by the tool tests: one live call through a tool, the sandbox this machine has, a
tool context, and the processes a command left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from mino_server.core.cancel import CancelToken
from mino_server.core.tools.base import ToolContext, ToolResult
from mino_server.core.tools.bash import BashTool
from mino_server.core.tools.sandbox import detect

# The sandbox as Mino would find it here (probed once per test process) and the mark for tests that
# need bubblewrap itself.
SANDBOX, SANDBOX_LINE = detect() if sys.platform.startswith("linux") else (None, "not Linux")
needs_bwrap = pytest.mark.skipif(
    SANDBOX is None or SANDBOX.name != "bwrap", reason=f"no working bubblewrap here ({SANDBOX_LINE})"
)


def call(tool: Any, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """The whole path a live call takes, as the turn loop runs it (approval granted)."""
    parsed = tool.validate(args)
    return tool.run(parsed, ctx, tool.prepare(parsed, ctx))


def run_bash(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    return call(BashTool(), args, ctx)


def project_ctx(tmp_path: Path, sandbox: Any = None) -> ToolContext:
    """Tools working in tmp_path/proj (made if missing), with MINO_HOME and the memory folder beside it."""
    wd = tmp_path / "proj"
    wd.mkdir(exist_ok=True)
    return ToolContext(
        workdir=wd.resolve(),
        home=tmp_path / "mino-home",
        memory_dir=tmp_path / "memory",
        cancel=CancelToken(),
        sandbox=sandbox,
    )


def workdir_ctx(workdir: Path, sandbox: Any = None) -> ToolContext:
    """Tools working in `workdir` itself, with MINO_HOME and the memory folder beside it."""
    return ToolContext(
        workdir=workdir.resolve(),
        home=workdir.parent / "mino-home",
        memory_dir=workdir.parent / "memory",
        cancel=CancelToken(),
        sandbox=sandbox,
    )


def git(*args: str, cwd: Path) -> str:
    """git with no global or system configuration (a test's repository is all it sees)."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def live_with(marker: str) -> list[int]:
    """Processes (not zombies: this container's init may not reap them) whose command line has `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found


def sleep_marker() -> str:
    """A unique sleep duration so the test finds exactly its own processes.

    60 s: a call that returns sooner (`returned_before_the_sleeps_ended`) ended its sleeps itself,
    however busy the machine; no test waits that long for a call that works.
    """
    return f"60.{uuid.uuid4().int % 10**9:09d}"


def returned_before_the_sleeps_ended(started: float, marker: str) -> bool:
    """The call that began at `started` (time.monotonic()) came back before a `sleep MARKER` could
    have ended on its own: so it ended them (or did not wait for them), which is the behaviour, with
    no latency asserted that a loaded machine could miss."""
    return time.monotonic() - started < float(marker)
