"""Drive the real `mino` CLI: through a real pty (pexpect) or with piped stdin."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pexpect

MINO = [sys.executable, "-m", "mino_server"]


def spawn(
    env: dict[str, str],
    cwd: Path,
    *args: str,
    timeout: float = 15,
    dimensions: tuple[int, int] = (50, 200),
    preexec_fn: Callable[[], None] | None = None,
) -> pexpect.spawn:
    child = pexpect.spawn(
        MINO[0],
        [*MINO[1:], *args],
        env=env,
        cwd=str(cwd),
        encoding="utf-8",
        timeout=timeout,
        dimensions=dimensions,  # (rows, columns)
        preexec_fn=preexec_fn,
    )
    return child


def piped(
    env: dict[str, str], cwd: Path, stdin: str, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MINO, *args], input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
