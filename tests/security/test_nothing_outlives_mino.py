"""What Mino started outlived it: an MCP server that ignores SIGTERM was ended (SIGKILL to its
process group), but a child it had moved into a session of its own (`setsid`) survived Mino's exit.

Now Mino is a child subreaper: such a child is reparented to Mino when the server dies, and Mino
ends what carries the server's marker when it stops the server, and every descendant it still has
when it exits. Each front end is run as a real process over real pipes, with a fake stdio MCP
server (standard library only) that ignores SIGTERM and leaves a `setsid sleep` behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import mino_env, running, wait_until

from mino_server.testing.scripted_model import ScriptedModel

MINO = [sys.executable, "-m", "mino_server.main"]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")

# Ignores SIGTERM, starts a grandchild in a session of its own that sleeps, writes its pid, then
# answers MCP over stdio until its input ends, and then does not exit (the SDK must escalate).
SERVER = r"""
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["setsid", "sleep", "300"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.2)  # setsid forks when it leads a process group: the sleep is the one left
sleeper = [int(p) for p in os.listdir("/proc") if p.isdigit()
           and open(f"/proc/{p}/cmdline", "rb").read() == b"sleep\x00300\x00"
           and int(open(f"/proc/{p}/stat").read().rpartition(")")[2].split()[3]) == int(p)]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(" ".join(map(str, sleeper or [child.pid])))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stubborn", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "noop", "description": "Does nothing.",
                             "inputSchema": {"type": "object"}}]}
    else:
        result = {"content": [{"type": "text", "text": "ok"}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
while True:
    time.sleep(60)
"""


@pytest.fixture
def stubborn(tmp_path: Path, mino_home: Path) -> Iterator[Path]:
    """config.yaml names the stubborn server; yields the file it writes its grandchild's pid to.
    The grandchild is killed afterwards whatever the test found (it would live 300 s)."""
    script = tmp_path / "stubborn.py"
    script.write_text(SERVER)
    pidfile = tmp_path / "grandchild.pid"
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "sandbox": "off",
                "mcp_servers": {
                    "stubborn": {
                        "command": [sys.executable, str(script), str(pidfile)],
                        "start_timeout_s": 120,
                    }
                },
            }
        )
    )
    yield pidfile
    for pid in _pids(pidfile):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _pids(pidfile: Path) -> list[int]:
    return [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []


def _assert_gone_after_exit(pidfile: Path) -> None:
    pids = _pids(pidfile)
    assert pids, "the server never started its grandchild"
    # Mino has exited, and ended what was left on its way out. A moment for the kernel to finish.
    deadline = time.monotonic() + 5
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(running(p) for p in pids), f"the server's setsid grandchild {pids} outlived Mino"


def test_mino_p_leaves_no_mcp_grandchild(
    model: ScriptedModel, mino_home: Path, workdir: Path, stubborn: Path
) -> None:
    model.add({"text": "Done."})
    proc = subprocess.run(
        [*MINO, "-p", "Say done."],
        env=mino_env(mino_home, model.base_url),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    _assert_gone_after_exit(stubborn)


def _acp(message: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def _serve(
    flag: str, env: dict[str, str], workdir: Path, stubborn: Path, opening: list[bytes], closing: list[bytes]
) -> int:
    """Run `mino FLAG` on pipes: send `opening`, wait for the MCP server's grandchild, send
    `closing`, end stdin; Mino's exit status once it has left."""
    proc = subprocess.Popen(
        [*MINO, flag],
        env=env,
        cwd=workdir,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(opening))
        proc.stdin.flush()
        wait_until(stubborn.exists, "grandchild pid from the MCP server", timeout=100)
        proc.stdin.write(b"".join(closing))
        proc.stdin.close()
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_mino_acp_leaves_no_mcp_grandchild(
    model: ScriptedModel, mino_home: Path, workdir: Path, stubborn: Path
) -> None:
    opening = [
        _acp({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        _acp({"id": 2, "method": "session/new", "params": {"cwd": str(workdir), "mcpServers": []}}),
    ]
    assert _serve("--acp", mino_env(mino_home, model.base_url), workdir, stubborn, opening, []) == 0
    _assert_gone_after_exit(stubborn)


def _lsp(message: dict[str, object]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_mino_stdio_leaves_no_mcp_grandchild(
    model: ScriptedModel, mino_home: Path, workdir: Path, stubborn: Path
) -> None:
    init = {"processId": os.getpid(), "rootUri": workdir.as_uri(), "capabilities": {}}
    opening = [
        _lsp({"id": 1, "method": "initialize", "params": init}),
        _lsp({"method": "initialized", "params": {}}),
        _lsp({"id": 2, "method": "mino/state", "params": {}}),
    ]
    closing = [_lsp({"id": 3, "method": "shutdown"}), _lsp({"method": "exit"})]
    _serve("--stdio", mino_env(mino_home, model.base_url), workdir, stubborn, opening, closing)
    _assert_gone_after_exit(stubborn)
