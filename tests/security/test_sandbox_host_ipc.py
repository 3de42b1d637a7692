"""A sandboxed command reached the host's IPC: bwrap ran without --unshare-ipc, so a command read
and changed a root-only SysV shared-memory segment of the host and sent into a host message queue.

Now every command gets its own IPC, UTS and (where the kernel has them) cgroup namespaces, and the
start-up probe refuses a sandbox that shares one of them with Mino.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.tools import sandbox as sandbox_module

pytestmark = needs_bwrap

IPC_PRIVATE = 0
IPC_RMID = 0
IPC_CREAT = 0o1000


@pytest.fixture
def host_ipc() -> Iterator[tuple[int, int]]:
    """A root-only (mode 0600) SysV shared-memory segment and message queue of the host."""
    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600)
    msq = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)
    assert shm >= 0 and msq >= 0, os.strerror(ctypes.get_errno())
    try:
        yield shm, msq
    finally:
        libc.shmctl(shm, IPC_RMID, None)
        libc.msgctl(msq, IPC_RMID, None)


def _ids(table: str) -> set[int]:
    """The ids (second column) of a /proc/sysvipc table."""
    return {int(line.split()[1]) for line in table.splitlines()[1:] if line.split()}


def test_a_sandboxed_command_sees_no_host_ipc_object(tmp_path: Path, host_ipc: tuple[int, int]) -> None:
    shm, msq = host_ipc
    # Outside, the tables hold them: the test would otherwise prove nothing.
    assert shm in _ids(Path("/proc/sysvipc/shm").read_text())
    assert msq in _ids(Path("/proc/sysvipc/msg").read_text())
    result = run_bash(
        {"command": "cat /proc/sysvipc/shm; echo ===; cat /proc/sysvipc/msg"}, project_ctx(tmp_path, SANDBOX)
    )
    shm_table, _, msg_table = result.output.rpartition("[exit code")[0].partition("===\n")
    assert shm not in _ids(shm_table)
    assert msq not in _ids(msg_table)


def test_a_sandboxed_command_cannot_attach_or_send_to_the_host_objects(
    tmp_path: Path, host_ipc: tuple[int, int]
) -> None:
    """Not only hidden: by id, shmat and msgsnd find nothing (EINVAL), where root outside may."""
    shm, msq = host_ipc
    script = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
addr = libc.shmat({shm}, None, 0)
print("shmat", "ok" if addr not in (None, ctypes.c_void_p(-1).value) else ctypes.get_errno())
buf = ctypes.create_string_buffer(b"\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00hi", 10)
rc = libc.msgsnd({msq}, buf, 2, 0o4000)
print("msgsnd", "ok" if rc == 0 else ctypes.get_errno())
"""
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "ipc.py").write_text(script)
    outside = run_bash({"command": "python3 ipc.py"}, project_ctx(tmp_path, None))
    assert "shmat ok" in outside.output and "msgsnd ok" in outside.output
    inside = run_bash({"command": "python3 ipc.py"}, project_ctx(tmp_path, SANDBOX))
    assert "shmat 22" in inside.output, inside.output
    assert "msgsnd 22" in inside.output, inside.output


def test_each_command_has_its_own_ipc_uts_and_cgroup_namespaces(tmp_path: Path) -> None:
    names = ["ipc", "uts", "net", "pid"] + (["cgroup"] if os.path.exists("/proc/self/ns/cgroup") else [])
    result = run_bash(
        {"command": " ".join(f"$(readlink /proc/self/ns/{n})" for n in names).join(("echo ", ""))},
        project_ctx(tmp_path, SANDBOX),
    )
    inside = result.output.splitlines()[0].split()
    outside = [os.readlink(f"/proc/self/ns/{n}") for n in names]
    assert len(inside) == len(names)
    for name, mine, theirs in zip(names, inside, outside, strict=True):
        assert mine != theirs, f"the sandbox shares the host's {name} namespace"


def test_the_probe_refuses_a_sandbox_that_shares_the_hosts_ipc(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a bwrap that ignored --unshare-ipc: the start-up line says so, bash is not trusted to it."""
    real = sandbox_module.bwrap_argv

    def without_ipc(*args: object, **kwargs: object) -> list[str]:
        return [a for a in real(*args, **kwargs) if a != "--unshare-ipc"]  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox_module, "bwrap_argv", without_ipc)
    box, line = sandbox_module.detect()
    assert box is None
    assert "ipc namespace" in line, line
    monkeypatch.undo()
    box, line = sandbox_module.detect()
    assert box is not None, line
