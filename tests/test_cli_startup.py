"""The CLI's start with piped input: the first request does not wait for the sandbox probe, the
start-up lines still come first and say what the probe found, and no command runs before its verdict.

`bwrap` is a wrapper on PATH in front of the real one: it logs each start and end and holds every
run until the test allows it, so the order is seen, not timed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_driver import MINO

from mino_server.testing.scripted_model import ScriptedModel

REAL_BWRAP = shutil.which("bwrap")
pytestmark = pytest.mark.skipif(REAL_BWRAP is None, reason="needs bubblewrap")

WRAPPER = """#!/bin/sh
echo "start $$" >> {log}
while [ ! -e {go} ]; do sleep 0.01; done
{real} "$@"
status=$?
echo "end $$" >> {log}
exit $status
"""


def held_bwrap(tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """Put the holding wrapper first on PATH; returns (its log, the file that lets runs go on)."""
    bindir, log, go = tmp_path / "bin", tmp_path / "bwrap.log", tmp_path / "go"
    bindir.mkdir()
    wrapper = bindir / "bwrap"
    wrapper.write_text(WRAPPER.format(log=log, go=go, real=REAL_BWRAP))
    wrapper.chmod(0o755)
    env["PATH"] = f"{bindir}:{env['PATH']}"
    return log, go


def start_piped(env: dict[str, str], cwd: Path, stdin: str, *args: str) -> subprocess.Popen[str]:
    lines = cwd.parent / "stdin.txt"
    lines.write_text(stdin)
    with lines.open() as source:
        return subprocess.Popen(
            [*MINO, *args],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=True,
        )


def wait_for(done: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_what_the_first_request_needs_loads_nothing_of_the_sandbox_or_of_running_commands() -> None:
    """The modules a first turn loads in the background (conversation._warm_up_turn: the tool set and
    its schemas) leave subprocess, ctypes and the probe to the probe's thread, which runs after it."""
    code = (
        "import sys\n"
        "import mino_server.cli, mino_server.core.conversation, mino_server.core.http1\n"
        "from mino_server.core import consent, display, instructions, memory, skills, turn\n"
        "from mino_server.core.tools.registry import default_tools\n"
        "default_tools()\n"
        "print(sorted(m for m in ('subprocess', 'ctypes', 'mino_server.core.tools.orphans',"
        " 'mino_server.core.tools.sandbox') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_piped_turn_loads_neither_httpx_nor_what_no_call_needs(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    """The model request goes over core/http1.py (h11); httpx, whose import costs ~55 ms of CPU, is
    not loaded by a turn, nor the rules (no call came) nor the MCP client (no server configured)."""
    model.add({"text": "Hello there."})
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mino_server", "--mode", "bypass"],
        input="Say hello.\n",
        capture_output=True,
        text=True,
        env=mino_env,
        cwd=workdir,
        timeout=60,
    )
    assert done.returncode == 0 and "Assistant> Hello there." in done.stdout, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert {"mino_server.core.http1", "h11"} <= imported  # the measurement saw the turn's imports
    assert (
        not {"httpx", "httpcore", "anyio", "mino_server.core.rules", "mino_server.core.mcp_client"} & imported
    )


def test_first_request_goes_out_before_the_probe_and_the_lines_keep_their_order(
    tmp_path: Path, model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    log, go = held_bwrap(tmp_path, mino_env)
    model.add({"text": "Hello there."})
    proc = start_piped(mino_env, workdir, "Say hello.\n")
    try:
        # The probe is held until `go`: had the start waited for its verdict, the request would come
        # only once the probe gave up (PROBE_TIMEOUT_S) and the line would say "unavailable".
        wait_for(lambda: model.requests, "the first request, while the probe cannot finish")
        go.touch()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Session: ") and lines[1].startswith("Permission mode: ")
    assert lines[2] == "Sandbox: bwrap"  # the probe's verdict, where it always was
    assert lines[3] == "" and lines[4] == "Assistant> Hello there."
    assert log.read_text().count("start") == 1  # the probe ran, once


def test_no_command_runs_before_the_probe_has_answered(
    tmp_path: Path, model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    log, go = held_bwrap(tmp_path, mino_env)
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"text": "It ran.", "require": "ran"},
    )
    proc = start_piped(mino_env, workdir, "Run it.\n", "--mode", "bypass")
    try:
        wait_for(lambda: model.requests, "the first request")
        wait_for(log.exists, "the probe to start (the call is waiting for its verdict)")
        time.sleep(0.3)
        assert log.read_text().count("start") == 1  # the command waits for the probe, not beside it
        assert not (workdir / "ran.txt").exists()
        go.touch()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    runs = log.read_text().split()
    assert runs[0:4:2] == ["start", "end"] and runs[1] == runs[3]  # the probe ended before the command began
    assert runs[4:8:2] == ["start", "end"] and len(runs) == 8
    assert (workdir / "ran.txt").read_text() == "ran\n"
    assert out.index("Sandbox: bwrap") < out.index("Assistant>")
    assert 'Sandbox: "bwrap"' in out.split("Assistant>", 1)[1]  # the approval block names the sandbox
