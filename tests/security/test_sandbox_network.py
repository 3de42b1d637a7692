"""Network for sandboxed commands: through Mino's allowlist proxy, and nothing else.

A command in the sandbox reaches a listed host:port with curl, python's urllib and `pip download`
(local servers on 127.0.0.1: inside the sandbox the command sees only the relay, and the proxy
outside connects to the host's loopback). An unlisted one, a direct connection, DNS, UDP, unix
sockets and CONNECT to an unlisted port are refused; an IP address only when listed; a name is
judged as listed whatever it resolves to. The relay (the one process in the sandbox without the
command's seccomp filter) cannot be used to reach anything but the proxy, nor be taken over.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import socket
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_driver import piped
from helpers import RecordingUI, make_conversation, texts, turn
from network_helpers import Server, http_server
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.config import load_config
from mino_server.core.errors import ConfigError
from mino_server.core.tools.base import ToolContext, ToolResult
from mino_server.core.tools.bash import BashTool
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = needs_bwrap
# The base interpreter: a venv may lie where the sandbox hides it (its /tmp is private).
PY = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def ctx_with(tmp_path: Path, entries: list[str]) -> ToolContext:
    assert SANDBOX is not None
    return project_ctx(tmp_path, dataclasses.replace(SANDBOX, network=tuple(entries)))


def bash(ctx: ToolContext, command: str) -> ToolResult:
    return run_bash({"command": command, "timeout_s": 60}, ctx)


@pytest.fixture
def server() -> Iterator[Server]:
    with http_server() as s:
        yield s


@pytest.fixture
def other() -> Iterator[Server]:
    with http_server() as s:
        yield s


def blocked(where: str) -> str:
    return f"Network: blocked {where} (not in sandbox_network)"


def test_listed_reached_by_curl_and_urllib(tmp_path: Path, server: Server) -> None:
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    url = f"http://127.0.0.1:{server.port}"
    result = bash(
        ctx,
        f"curl -sS {url}/curl && {PY} -c \"import urllib.request as u; print(u.urlopen('{url}/py').read().decode())\"",
    )
    assert "hello /curl" in result.output and "hello /py" in result.output, result.output
    assert server.paths == ["/curl", "/py"]
    assert "Network:" not in result.output and result.notice is None


def test_pip_download_from_a_listed_index(tmp_path: Path, server: Server) -> None:
    wheel_name = "tinypkg-0.1-py3-none-any.whl"
    wheel = _wheel()
    digest = hashlib.sha256(wheel).hexdigest()
    server.files["/simple/tinypkg/"] = (
        f'<html><body><a href="/files/{wheel_name}#sha256={digest}">{wheel_name}</a></body></html>'
    ).encode()
    server.files[f"/files/{wheel_name}"] = wheel
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    result = bash(
        ctx,
        f"{PY} -m pip download --isolated --no-cache-dir --disable-pip-version-check --no-deps "
        f"-d dl -i http://127.0.0.1:{server.port}/simple tinypkg",
    )
    assert (ctx.workdir / "dl" / wheel_name).is_file(), result.output
    assert (ctx.workdir / "dl" / wheel_name).read_bytes() == wheel
    assert "/simple/tinypkg/" in server.paths


def _wheel() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        files = {
            "tinypkg/__init__.py": b"",
            "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
            "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(
            "tinypkg-0.1.dist-info/RECORD",
            "".join(f"{n},,\n" for n in files) + "tinypkg-0.1.dist-info/RECORD,,\n",
        )
    return out.getvalue()


def test_unlisted_and_unlisted_port_refused_with_one_line(
    tmp_path: Path, server: Server, other: Server
) -> None:
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    result = bash(
        ctx,
        f"curl -sS -o /dev/null -w '%{{http_code}}\\n' http://127.0.0.1:{other.port}/a; "
        f"curl -sS -o /dev/null -w '%{{http_code}}\\n' http://127.0.0.1:{other.port}/b; "
        f"curl -sS -p -o /dev/null https://127.0.0.1:{other.port}/c; echo connect=$?",
    )
    assert other.seen == []
    assert result.output.startswith("403\n403\n") and "connect=56" in result.output, result.output
    # One line after the command (and in the person's notice), though asked three times.
    assert result.output.endswith(f"[exit code: 0]\n{blocked(f'127.0.0.1:{other.port}')}")
    assert result.notice == blocked(f"127.0.0.1:{other.port}")


def test_name_judged_as_listed_and_ip_only_when_listed(tmp_path: Path, server: Server) -> None:
    # `localhost` listed: it resolves (outside) to 127.0.0.1, which is not listed, and is reached;
    # 127.0.0.1 itself, in any spelling, is not.
    ctx = ctx_with(tmp_path, [f"localhost:{server.port}"])
    result = bash(
        ctx,
        f"curl -sS http://LocalHost:{server.port}/name; "
        f"curl -sS http://127.0.0.1:{server.port}/ip; curl -sS http://2130706433:{server.port}/dec; "
        f"curl -sS -g 'http://[::ffff:127.0.0.1]:{server.port}/v6'",
    )
    assert server.paths == ["/name"], result.output
    assert result.notice == blocked(f"127.0.0.1:{server.port}")


def test_no_direct_connection_dns_udp_or_unix_socket(tmp_path: Path, server: Server) -> None:
    received: list[bytes] = []
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.2)
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            try:
                received.append(udp.recv(100))
            except OSError:
                pass

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    script = f"""
import socket
def attempt(name, f):
    try:
        f(); print(name, "REACHED")
    except OSError as e:
        print(name, "refused", type(e).__name__)
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {server.port}), timeout=5))
attempt("tcp-out", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"x", ("127.0.0.1", {udp.getsockname()[1]}))  # the sandbox's own loopback: goes nowhere
attempt("udp", lambda: s.sendto(b"x", ("8.8.8.8", 53)))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect("/tmp/.mino-network/proxy.sock"))
print(open("/proc/self/status").read().count("Seccomp:\\t2"))
"""
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "probe.py").write_text(script)
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    try:
        result = bash(ctx, f"{PY} probe.py")
    finally:
        stop.set()
        thread.join()
        udp.close()
    assert "REACHED" not in result.output
    for name in ("tcp", "tcp-out", "dns", "udp", "unix"):
        assert f"{name} refused" in result.output, result.output
    # Sending UDP into the empty namespace's loopback "succeeds" locally; nothing leaves it.
    assert received == [] and server.seen == []
    assert "\n1\n" in result.output  # the command runs under the seccomp filter


def test_relay_cannot_be_taken_over(tmp_path: Path, server: Server) -> None:
    # The relay has no seccomp filter, so the command must not be able to make it do anything: it is
    # the one process in the sandbox without the filter (no bwrap init runs there unfiltered), it is
    # not dumpable (no ptrace, no /proc/PID/mem or environ), and all it forwards to is the proxy.
    script = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        continue
    seccomp = status.split("Seccomp:")[1].split()[0]
    print("pid", pid, "seccomp", seccomp, "relay" if pid != os.getpid() and seccomp == "0" else "")
    if seccomp != "0":
        continue
    for what in ("mem", "environ"):
        try:
            open(f"/proc/{pid}/{what}", "rb").read(1); print(what, "READ")
        except OSError as e:
            print(what, "refused", type(e).__name__)
    print("ptrace", "ATTACHED" if libc.ptrace(0x4206, pid, None, None) == 0 else "refused")
"""
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "probe.py").write_text(script)
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    result = bash(ctx, f"{PY} probe.py")
    unfiltered = [line for line in result.output.splitlines() if " seccomp 0" in line]
    assert len(unfiltered) == 1 and unfiltered[0].endswith(" relay"), result.output
    assert "READ" not in result.output and "ATTACHED" not in result.output, result.output
    assert (
        "mem refused" in result.output
        and "environ refused" in result.output
        and "ptrace refused" in result.output
    )


def test_nothing_outlives_a_listed_command(tmp_path: Path, server: Server) -> None:
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    marker = f"mino-net-left-{tmp_path.name}"
    result = bash(ctx, f"(exec -a {marker} sleep 300) & echo started")
    assert "started" in result.output
    import subprocess

    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert left == "", left


def test_empty_list_is_no_network_as_before(tmp_path: Path, server: Server) -> None:
    assert SANDBOX is not None and SANDBOX.network == ()
    ctx = project_ctx(tmp_path, SANDBOX)
    result = bash(ctx, f"env | grep -ci proxy; curl -sS http://127.0.0.1:{server.port}/x; echo rc=$?")
    assert server.seen == [] and "rc=7" in result.output, result.output
    prepared = BashTool().prepare(BashTool().validate({"command": "true"}), ctx)
    assert [f for f, _ in prepared.fields] == ["Command", "Directory", "Sandbox"]


def test_approval_shows_the_list(tmp_path: Path) -> None:
    ctx = ctx_with(tmp_path, ["pypi.org", "*.pythonhosted.org:443"])
    prepared = BashTool().prepare(BashTool().validate({"command": "pip download x"}), ctx)
    assert prepared.fields[-2:] == [("Sandbox", "bwrap"), ("Network", "pypi.org, *.pythonhosted.org:443")]
    from mino_server.core.display import approval_lines

    assert approval_lines("bash", prepared.fields, None)[-1] == 'Network: "pypi.org, *.pythonhosted.org:443"'


def test_config_key(mino_home: Path) -> None:
    path = mino_home / "config.yaml"
    assert load_config().sandbox_network == ()
    path.write_text("sandbox_network: [PyPI.org, 'files.pythonhosted.org:443', '*.example.com']\n")
    assert load_config().sandbox_network == ("PyPI.org", "files.pythonhosted.org:443", "*.example.com")
    for value, why in [
        ("pypi.org", "must be a list of host names, got 'pypi.org'"),
        (
            "['http://pypi.org']",
            "'http://pypi.org' is not a host name, *.domain or IP address (with an optional :PORT)",
        ),
        ("['a.com:99999']", "'a.com:99999' has no valid port (1 to 65535)"),
        ("['a b']", "'a b' is not a host name, *.domain or IP address (with an optional :PORT)"),
    ]:
        path.write_text(f"sandbox_network: {value}\n")
        with pytest.raises(ConfigError) as err:
            load_config()
        assert str(err.value) == f"{path}: 'sandbox_network': {why}"


def test_curl_is_installed() -> None:
    assert shutil.which("curl"), "the network tests need curl (apt-get install curl)"


def test_doctor_says_a_listed_name_is_reached_and_nothing_else(
    tmp_path: Path, mino_home: Path, server: Server
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MINO_API_KEY", "OPENAI_API_KEY")}
    env["MINO_HOME"] = str(mino_home)
    mino_home.mkdir(mode=0o700, exist_ok=True)
    (mino_home / "config.yaml").write_text(f"sandbox_network: ['127.0.0.1:{server.port}', '*.example.com']\n")
    done = piped(env, tmp_path, "", "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["network"] == {
        "name": "network",
        "ok": True,
        "needed": False,
        "found": f"a sandboxed command reaches 127.0.0.1:{server.port} through Mino's proxy; "
        "an unlisted name, a direct connection and DNS refused",
        "fix": None,
    }
    assert server.seen == []  # CONNECT opened a tunnel; nothing was sent through it
    # A listed name nothing answers on: said, with the fix.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    (mino_home / "config.yaml").write_text(f"sandbox_network: ['127.0.0.1:{port}']\n")
    done = piped(env, tmp_path, "", "doctor")
    assert f"could not reach 127.0.0.1:{port} through Mino's proxy (answer: 502)" in done.stdout, done.stdout
    assert f"check 127.0.0.1:{port} in sandbox_network and that this machine reaches it" in done.stdout


def test_a_turn_shows_the_list_and_tells_both_sides_what_was_blocked(
    model: ScriptedModel, workdir: Path, mino_home: Path, server: Server, other: Server
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text(f"sandbox_network: ['127.0.0.1:{server.port}']\n")
    command = (
        f"curl -sS http://127.0.0.1:{server.port}/in; curl -sS -o /dev/null http://127.0.0.1:{other.port}/out"
    )
    model.add({"calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"})
    ui = RecordingUI(approvals=[True])
    conversation = make_conversation(model.base_url, workdir, ui)
    try:
        conversation.open()
        assert turn(conversation, "fetch").status == "completed"
    finally:
        conversation.close()
    line = blocked(f"127.0.0.1:{other.port}")
    assert ("Network", f"127.0.0.1:{server.port}") in ui.asked[0].fields
    assert line in [n["text"] for n in ui.of_type("notice")]
    output = texts(model.requests[1])[-1]
    assert "hello /in" in output and output.endswith(f"[exit code: 0]\n{line}")
    assert server.paths == ["/in"] and other.seen == []


def test_the_relay_starts_when_minos_interpreter_lies_where_the_sandbox_hides(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mino run from a venv under /tmp (a clone there, as CI may make): inside the sandbox /tmp is
    private, so the relay must start from the interpreter's real place."""
    hidden = tmp_path / "venv-bin" / "python"
    hidden.parent.mkdir()
    hidden.symlink_to(PY)
    monkeypatch.setattr(sys, "executable", str(hidden))
    monkeypatch.setattr(sys, "_base_executable", str(hidden), raising=False)
    ctx = ctx_with(tmp_path, [f"127.0.0.1:{server.port}"])
    result = bash(ctx, f"curl -sS http://127.0.0.1:{server.port}/hidden")
    assert "hello /hidden" in result.output, result.output


def test_doctor_runs_its_probe_where_the_sandbox_can_see_it(
    tmp_path: Path, mino_home: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor's network probe, too, starts from the interpreter's real place (a venv under /tmp)."""
    from mino_server.core.config import load_config
    from mino_server.core.doctor import check_network

    hidden = tmp_path / "venv-bin" / "python"
    hidden.parent.mkdir()
    hidden.symlink_to(PY)
    monkeypatch.setattr(sys, "executable", str(hidden))
    monkeypatch.setattr(sys, "_base_executable", str(hidden), raising=False)
    mino_home.mkdir(mode=0o700, exist_ok=True)
    (mino_home / "config.yaml").write_text(f"sandbox_network: ['127.0.0.1:{server.port}']\n")
    check = check_network(load_config(env={"MINO_HOME": str(mino_home)}))
    assert check.ok is True, check
