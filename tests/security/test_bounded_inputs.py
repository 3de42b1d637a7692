"""Bytes from outside are bounded while they are read, not after they are parsed.

A 200 MiB MCP result took 238 s and 1.3 GiB before it was cut; one 29 MiB ACP line of numbers took
the process from 28 to 825 MiB. Each channel now has its limit (docs/SECURITY.md, "Bounded
inputs"), and each test feeds the worst input to a real `mino` process and reads its peak memory
(VmHWM in /proc/PID/status, or the rusage of the exited process), with a timeout that makes an
unbounded run fail rather than hang.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
import yaml
from helpers import mino_env

from mino_server.core.inbound import MAX_JSON_VALUES
from mino_server.core.mcp_client import MAX_MESSAGE_BYTES as MCP_MAX_MESSAGE_BYTES
from mino_server.core.model_client import MAX_EVENT_BYTES as MODEL_MAX_EVENT_BYTES
from mino_server.testing.scripted_model import ScriptedModel

MINO = [sys.executable, "-m", "mino_server.main"]
MiB = 1024 * 1024
ANSWER_WITHIN_S = 60  # a hang guard: a bounded read answers in about a second


def _vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _numbers(size: int) -> bytes:
    """`size` bytes (about) of a JSON array of floats: each value 4 bytes of input, ~32 parsed."""
    return b"[" + b"1.5," * (size // 4) + b"1.5]"


def _first_line_within(stream: IO[bytes], timeout: float) -> bytes:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert got, f"no answer within {timeout} s"
    return got[0]


# Runs its arguments and writes their peak memory (ru_maxrss, KiB) to the file named first. Small
# (`python -S`) because a forked child starts with its parent's high-water mark, which exec keeps:
# forked by pytest, every process would report at least pytest's size.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_measured(
    argv: list[str], tmp_path: Path, timeout: float, what: str, **popen: Any
) -> tuple[subprocess.Popen[bytes], float]:
    """Run `argv` to its end (killed after `timeout`: the test fails); the process and its peak
    memory in MiB."""
    peak_file = tmp_path / "maxrss"
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", LAUNCHER, str(peak_file), *argv], start_new_session=True, **popen
    )
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"{what} after {timeout:g} s")
    return proc, int(peak_file.read_text()) / 1024


def _spawn(mino_home: Path, workdir: Path, *args: str) -> subprocess.Popen[bytes]:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text('sandbox: "off"\n')
    return subprocess.Popen(
        [*MINO, *args],
        env=mino_env(mino_home, "http://127.0.0.1:9/v1"),
        cwd=workdir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def test_an_acp_line_of_numbers_is_refused_before_it_is_parsed(mino_home: Path, workdir: Path) -> None:
    proc = _spawn(mino_home, workdir, "--acp")
    try:
        assert proc.stdin is not None and proc.stdout is not None
        params = b'{"protocolVersion":1,"x":' + _numbers(29 * MiB) + b"}"
        line = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":' + params + b"}\n"
        started = time.monotonic()
        proc.stdin.write(line)
        proc.stdin.flush()
        answer = json.loads(_first_line_within(proc.stdout, ANSWER_WITHIN_S))
        took = time.monotonic() - started
        peak = _vm_hwm_mib(proc.pid)
        # 29 MiB read whole (the line cap is 32 MiB) and counted, but never parsed: on the old code
        # the same line made about 7.6 million floats.
        print(f"peak {peak:.0f} MiB, answered in {took:.1f} s")  # shown with -rP
        assert peak < 160, f"peak {peak:.0f} MiB for a 29 MiB line (answered in {took:.1f} s)"
        assert answer.get("error", {}).get("code") == -32600, answer
        assert f"the limit is {MAX_JSON_VALUES}" in answer["error"]["message"]
        # Still serving.
        proc.stdin.write(b'{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}\n')
        proc.stdin.flush()
        assert json.loads(_first_line_within(proc.stdout, ANSWER_WITHIN_S))["id"] == 8
    finally:
        proc.kill()
        proc.wait()


def test_an_editor_message_of_numbers_is_refused_before_it_is_parsed(mino_home: Path, workdir: Path) -> None:
    proc = _spawn(mino_home, workdir, "--stdio")
    try:
        assert proc.stdin is not None and proc.stdout is not None
        params = b'{"processId":null,"capabilities":{},"x":' + _numbers(15 * MiB) + b"}"
        body = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":' + params + b"}"
        assert len(body) < 16 * MiB  # under the Content-Length cap: only the value count refuses it
        proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        proc.stdin.flush()
        header = _first_line_within(proc.stdout, ANSWER_WITHIN_S)
        assert header.startswith(b"Content-Length: ")
        proc.stdout.readline()
        answer = json.loads(proc.stdout.read(int(header.split()[1])))
        peak = _vm_hwm_mib(proc.pid)
        print(f"peak {peak:.0f} MiB")
        assert peak < 120, f"peak {peak:.0f} MiB for a 15 MiB message"
        assert answer.get("error", {}).get("code") == -32600, answer
        assert f"the limit is {MAX_JSON_VALUES}" in answer["error"]["message"]
    finally:
        proc.kill()
        proc.wait()


# A stdio MCP server (standard library only) whose one tool answers with a 200 MiB text result,
# written in 1 MiB pieces (the server itself stays small), on one line as MCP frames it.
FLOOD = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "tools/call":
        sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(msg["id"]))
        piece = "A" * (1 << 20)
        try:
            for _ in range(200):
                sys.stdout.write(piece)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
        except BrokenPipeError:
            sys.exit(0)
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "flood", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "big", "description": "A big answer.", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.timeout(200)
def test_a_200_mib_mcp_result_is_cut_off_while_it_is_read(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "sandbox": "off",
                "mcp_servers": {
                    "flood": {
                        "command": [sys.executable, str(script)],
                        "allow": ["big"],
                        "start_timeout_s": 120,
                    }
                },
            }
        )
    )
    model.add(
        {"calls": [{"name": "mcp__flood__big", "arguments": {}, "call_id": "c1"}]},
        {"text": "done"},
    )
    # The old code took about 240 s here.
    errors = tmp_path / "stderr"
    with errors.open("wb") as err:
        proc, peak = _run_measured(
            [*MINO, "-p", "Call big.", "--mode", "bypass"],
            tmp_path,
            120,
            "mino -p was still reading the MCP result",
            env=mino_env(mino_home, model.base_url),
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    said = errors.read_text()
    assert proc.returncode == 0, said
    assert "Traceback" not in said, said
    assert len(model.requests) == 2, "the call's result never reached the model"
    output = [i for i in model.requests[1]["input"] if i.get("type") == "function_call_output"][-1]["output"]
    assert f"longer than {MCP_MAX_MESSAGE_BYTES // MiB} MiB" in output, output[:300]
    print(f"peak {peak:.0f} MiB")
    assert peak < 150, f"peak {peak:.0f} MiB while a 200 MiB result was refused"


class _EndlessStream(http.server.BaseHTTPRequestHandler):
    """A model service whose streamed answer is one line that never ends (up to 1 GiB)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        piece = b"1.5," * (1 << 18)  # 1 MiB
        try:
            self.wfile.write(b'data: {"type":"response.created","x":[')
            for _ in range(1024):
                self.wfile.write(piece)
        except OSError:
            pass


@pytest.mark.timeout(200)
def test_an_endless_model_stream_is_cut_off_while_it_is_read(
    mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EndlessStream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        mino_home.mkdir(parents=True, exist_ok=True)
        (mino_home / "config.yaml").write_text('sandbox: "off"\n')
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        errors = tmp_path / "stderr"
        with errors.open("wb") as err:
            proc, peak = _run_measured(
                [*MINO, "-p", "Hello."],
                tmp_path,
                120,
                "mino -p was still reading the model's stream",
                env=mino_env(mino_home, base_url),
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        said = errors.read_text()
        print(f"peak {peak:.0f} MiB")
        assert peak < 150, f"peak {peak:.0f} MiB while reading an endless stream"
        assert proc.returncode == 1
        assert "Traceback" not in said, said
        assert f"over {MODEL_MAX_EVENT_BYTES // MiB} MiB" in said, said
    finally:
        server.shutdown()
        server.server_close()
