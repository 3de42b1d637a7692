"""Finding 2: a sandboxed command reached a host service through a unix socket.

Read-only bind mounts do not stop connect() on a socket file. Now a seccomp filter (libseccomp,
passed to bwrap with --seccomp) refuses socket(AF_UNIX, …) with EPERM — stricter than "outside the
working directory": seccomp cannot read the path — and datagram socketpairs (sendto() can name any
socket path). config.yaml's `sandbox_unix_sockets: true` allows unix sockets again.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import RecordingUI, make_conversation
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.config import load_config
from mino_server.core.errors import ConfigError
from mino_server.core.tools.sandbox import detect
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

ANSWER = b"hello from the host service"


class UnixServer:
    """A host service on a unix socket outside the working directory and outside /tmp (which is
    private in the sandbox, so a socket there would be out of reach for another reason)."""

    def __init__(self, kind: int = socket.SOCK_STREAM) -> None:
        self.dir = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-sock-"))
        self.path = self.dir / "service.sock"
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(str(self.path))
        self.path.chmod(0o777)
        self.received: list[bytes] = []
        if kind == socket.SOCK_STREAM:
            self.sock.listen()
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(kind,), daemon=True)
        self._thread.start()

    def _serve(self, kind: int) -> None:
        while not self._stop.is_set():
            try:
                if kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    with conn:
                        self.received.append(b"connection")
                        conn.sendall(ANSWER)
                else:
                    self.received.append(self.sock.recv(100))
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server() -> Iterator[UnixServer]:
    s = UnixServer()
    yield s
    s.close()


def _connect(path: Path) -> str:
    code = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); print(s.recv(100).decode())"
    )
    return f"python3 -c {_shell_quote(code)}"


def _shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


@needs_bwrap
def test_a_sandboxed_command_cannot_reach_a_host_unix_socket(tmp_path: Path, server: UnixServer) -> None:
    result = run_bash({"command": _connect(server.path)}, project_ctx(tmp_path, SANDBOX))
    assert ANSWER.decode() not in result.output
    assert "PermissionError: [Errno 1] Operation not permitted" in result.output
    assert server.received == []
    # The same command without the sandbox gets the answer: the test can tell the difference.
    plain = run_bash({"command": _connect(server.path)}, project_ctx(tmp_path, None))
    assert plain.output == ANSWER.decode() + "\n[exit code: 0]"


@needs_bwrap
def test_a_datagram_socketpair_cannot_send_to_a_host_socket(tmp_path: Path) -> None:
    server = UnixServer(socket.SOCK_DGRAM)
    try:
        code = (
            "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
            f"a.sendto(b'injected', {str(server.path)!r}); print('sent')"
        )
        result = run_bash({"command": f"python3 -c {_shell_quote(code)}"}, project_ctx(tmp_path, SANDBOX))
        assert "sent" not in result.output and "Operation not permitted" in result.output
        assert server.received == []
    finally:
        server.close()


# Issue 22, finding 2: the filter compared the type with SOCK_DGRAM only, but the kernel makes an
# AF_UNIX SOCK_RAW pair a datagram one. Every type but SOCK_STREAM, with any flags, is refused.
PAIR_TYPES = {
    "SOCK_RAW": socket.SOCK_RAW,
    "SOCK_DGRAM|SOCK_NONBLOCK": socket.SOCK_DGRAM | socket.SOCK_NONBLOCK,
    "SOCK_DGRAM|SOCK_CLOEXEC": socket.SOCK_DGRAM | socket.SOCK_CLOEXEC,
    "SOCK_RAW|SOCK_NONBLOCK|SOCK_CLOEXEC": socket.SOCK_RAW | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC,
    "SOCK_SEQPACKET": socket.SOCK_SEQPACKET,
    "SOCK_RDM": socket.SOCK_RDM,
    "type 0": 0,
}


@needs_bwrap
@pytest.mark.parametrize("kind", list(PAIR_TYPES))
def test_no_other_socketpair_type_reaches_a_host_datagram_socket(tmp_path: Path, kind: str) -> None:
    server = UnixServer(socket.SOCK_DGRAM)
    try:
        code = (
            "import socket, sys\n"
            "try:\n"
            f"    a, b = socket.socketpair(socket.AF_UNIX, {PAIR_TYPES[kind]})\n"
            "except OSError as e:\n"
            "    sys.exit(f'socketpair: {e.strerror}')\n"
            f"a.sendto(b'by sendto', {str(server.path)!r})\n"
            f"b.connect({str(server.path)!r}); b.send(b'by connect')\n"
            "print('sent')\n"
        )
        (tmp_path / "proj").mkdir(exist_ok=True)
        (tmp_path / "proj" / "pair.py").write_text(code)
        if kind == "SOCK_RAW":  # without the sandbox it does reach the socket: the test can tell
            assert run_bash({"command": "python3 pair.py"}, project_ctx(tmp_path, None)).output.startswith(
                "sent"
            )
            assert _wait_for(lambda: len(server.received) == 2), server.received
            server.received.clear()
        result = run_bash({"command": "python3 pair.py"}, project_ctx(tmp_path, SANDBOX))
        assert "sent" not in result.output
        assert result.output.startswith("socketpair: ")  # EPERM, or the kernel's own refusal of the type
        assert server.received == []
    finally:
        server.close()


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@needs_bwrap
def test_stream_socketpairs_still_work(tmp_path: Path) -> None:
    """Plenty of programs talk to their own children over one; it reaches nothing else."""
    code = (
        "import socket; a, b = socket.socketpair(); a.sendall(b'ping'); print(b.recv(4).decode()); "
        "c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC); "
        "c.sendall(b'pong'); print(d.recv(4).decode())"
    )
    result = run_bash({"command": f"python3 -c {_shell_quote(code)}"}, project_ctx(tmp_path, SANDBOX))
    assert result.output == "ping\npong\n[exit code: 0]"


@needs_bwrap
def test_io_uring_is_refused(tmp_path: Path) -> None:
    """io_uring can open sockets without socket(2): refused, so the filter has no way around it."""
    code = (
        "import ctypes, ctypes.util; libc = ctypes.CDLL(None, use_errno=True); "
        "params = ctypes.create_string_buffer(120); "
        "r = libc.syscall(425, 4, params); print(r, ctypes.get_errno())"
    )
    plain = run_bash({"command": f"python3 -c {_shell_quote(code)}"}, project_ctx(tmp_path, None))
    if plain.output.startswith("-1 "):
        pytest.skip(f"io_uring is not available here at all ({plain.output.splitlines()[0]})")
    result = run_bash({"command": f"python3 -c {_shell_quote(code)}"}, project_ctx(tmp_path, SANDBOX))
    assert result.output == "-1 1\n[exit code: 0]"  # EPERM


@needs_bwrap
def test_the_config_switch_allows_unix_sockets(tmp_path: Path, server: UnixServer) -> None:
    allowed, line = detect(unix_sockets=True)
    assert allowed is not None and line == "Sandbox: bwrap (unix sockets allowed by config.yaml)"
    result = run_bash({"command": _connect(server.path)}, project_ctx(tmp_path, allowed))
    assert result.output == ANSWER.decode() + "\n[exit code: 0]"
    # Everything else holds: still no capabilities.
    caps = run_bash({"command": "grep CapEff /proc/self/status"}, project_ctx(tmp_path, allowed)).output
    assert "CapEff:\t0000000000000000" in caps


def test_config_key_is_validated(mino_home: Path) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    path = mino_home / "config.yaml"
    env = {"MINO_HOME": str(mino_home)}
    assert load_config(env=env).sandbox_unix_sockets is False
    path.write_text("sandbox_unix_sockets: true\n")
    assert load_config(env=env).sandbox_unix_sockets is True
    path.write_text("sandbox_unix_sockets: 'yes please'\n")
    with pytest.raises(ConfigError) as err:
        load_config(env=env)
    assert str(err.value) == f"{path}: 'sandbox_unix_sockets' must be true or false, got 'yes please'"


@needs_bwrap
def test_the_agent_passes_the_switch_to_detection(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text("sandbox_unix_sockets: true\n")
    conversation = make_conversation(model.base_url, workdir, RecordingUI())
    try:
        assert "Sandbox: bwrap (unix sockets allowed by config.yaml)" in startup_lines(conversation.open())
    finally:
        conversation.close()


def test_the_seccomp_binding_is_not_loaded_for_help_or_version() -> None:
    code = (
        "import sys\n"
        "from mino_server.main import main\n"
        "main(['--help']); main(['--version'])\n"
        "print('ctypes' in sys.modules, 'mino_server.core.tools.sandbox' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "False False"
