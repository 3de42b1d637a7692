"""Finding 1: a root dev container voided the sandbox.

As uid 0, bwrap kept every capability: a sandboxed command remounted / read-write, wrote on the
host, unmounted its /proc and read MINO_API_KEY from the host's /proc/PID/environ. Now sandboxed
commands have no capabilities whoever starts Mino, see only their own pid namespace's /proc, and a
sandbox that cannot be made that strong is not used: the start-up line says why and bash asks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import RecordingUI, make_conversation, turn
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.tools import sandbox as sandbox_module
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.sandbox import SandboxError, detect
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = needs_bwrap


@pytest.fixture
def outside() -> Iterator[Path]:
    """A host folder outside the working directory and outside /tmp (private in the sandbox)."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-host-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return project_ctx(tmp_path, SANDBOX)


def _keep_capabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap as it runs without --cap-drop: as root, sandboxed commands would keep capabilities."""
    real = sandbox_module.bwrap_argv

    def keeps_capabilities(*args: object) -> list[str]:
        argv = real(*args)  # type: ignore[arg-type]
        i = argv.index("--cap-drop")
        return argv[:i] + argv[i + 2 :]

    monkeypatch.setattr(sandbox_module, "bwrap_argv", keeps_capabilities)


def _status(ctx: ToolContext) -> dict[str, str]:
    out = run_bash({"command": "cat /proc/self/status"}, ctx).output
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}


def test_sandboxed_commands_have_no_capabilities(ctx: ToolContext) -> None:
    status = _status(ctx)
    assert status["CapEff"] == "0000000000000000"
    assert status["CapPrm"] == "0000000000000000"
    assert status["CapAmb"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"  # no setuid program or file capability gives them back
    assert status["Seccomp"] == "2"


def test_a_sandboxed_root_cannot_remount_the_root_read_write(ctx: ToolContext, outside: Path) -> None:
    target = outside / "written-from-the-sandbox"
    result = run_bash(
        {"command": f"mount -o remount,rw / ; mount -o remount,rw,bind / ; echo x > {target}"}, ctx
    )
    assert "Read-only file system" in result.output
    assert not target.exists()


def test_the_api_key_is_not_readable_through_proc(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mino's key lives in Mino's environment: a stand-in process outside the sandbox holds one."""
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("MINO_API_KEY", secret)
    holder = subprocess.Popen(
        ["sleep", "30"], env={**os.environ, "MINO_API_KEY": secret}, stdin=subprocess.DEVNULL
    )
    try:
        command = (
            "umount -l /proc; "  # once: with capabilities, this uncovered the host's /proc
            f"echo pid-visible=$(test -e /proc/{holder.pid}/environ && echo yes || echo no); "
            f"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c {secret}; echo \"[$MINO_API_KEY]\""
        )
        result = run_bash({"command": command}, ctx)
        assert "pid-visible=no" in result.output
        assert secret not in result.output
        assert "\n0\n[]\n" in result.output  # grep found nothing; the variable is not passed either
    finally:
        holder.kill()
        holder.wait()


def test_unmounting_proc_is_refused(ctx: ToolContext) -> None:
    result = run_bash({"command": "umount -l /proc && echo unmounted; ls /proc | grep -c '^[0-9]'"}, ctx)
    assert "unmounted" not in result.output
    # Only the sandbox's own processes: bwrap's init, the shell, ls, grep (and maybe a subshell).
    count = int(result.output.splitlines()[-2])
    assert count <= 6


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps capabilities without --cap-drop")
def test_a_sandbox_that_keeps_capabilities_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _keep_capabilities(monkeypatch)
    found, line = detect()
    assert found is None
    assert line.startswith("Sandbox: unavailable (bwrap leaves sandboxed commands with capabilities here")


def test_a_sandbox_without_the_seccomp_filter_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    real = sandbox_module.bwrap_argv
    monkeypatch.setattr(
        sandbox_module,
        "bwrap_argv",
        lambda argv, wd, home=None, fd=None, *rest: real(argv, wd, home, None, *rest),
    )
    found, line = detect()
    assert found is None
    assert line == "Sandbox: unavailable (bwrap did not apply the seccomp filter (Seccomp 0))"


def test_without_libseccomp_the_sandbox_is_not_used_unless_unix_sockets_are_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctypes

    real_pydll = ctypes.PyDLL  # the loader seccomp_filter uses (it keeps the GIL through each call)

    def no_libseccomp(name: str | None, *args: object, **kwargs: object) -> object:
        if name and "seccomp" in name:
            raise OSError(f"{name}: cannot open shared object file")
        return real_pydll(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ctypes, "PyDLL", no_libseccomp)
    with pytest.raises(SandboxError, match="libseccomp.so.2 not found"):
        sandbox_module.seccomp_filter.__wrapped__()
    monkeypatch.setattr(sandbox_module, "seccomp_filter", sandbox_module.seccomp_filter.__wrapped__)
    found, line = detect()
    assert found is None
    assert line == (
        "Sandbox: unavailable (libseccomp.so.2 not found, needed to block unix sockets; install "
        "libseccomp2, or allow unix sockets with sandbox_unix_sockets: true in config.yaml)"
    )
    found, line = detect(unix_sockets=True)
    assert found is not None and found.seccomp is None
    assert line == "Sandbox: bwrap (unix sockets allowed by config.yaml)"


def test_probe_reasons() -> None:
    ok = "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
    assert sandbox_module._too_weak(ok, want_seccomp=True) is None
    assert sandbox_module._too_weak(ok.replace("\t2", "\t0"), want_seccomp=False) is None
    assert "CapEff 000001ffffffffff" in (
        sandbox_module._too_weak(ok.replace("0000000000000000", "000001ffffffffff"), True) or ""
    )
    assert sandbox_module._too_weak("", True) == (
        "bwrap leaves sandboxed commands with capabilities here (CapEff unknown)"
    )
    assert sandbox_module._too_weak(ok.replace("NoNewPrivs:\t1", "NoNewPrivs:\t0"), True) == (
        "bwrap does not set no_new_privs here"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps capabilities without --cap-drop")
def test_a_weak_sandbox_is_reported_at_start_up_and_bash_asks(
    model: ScriptedModel, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the agent: the start-up line says why, and bash counts as unsandboxed (it asks)."""
    _keep_capabilities(monkeypatch)
    model.add({"calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"})
    ui = RecordingUI(approvals=[False])
    conversation = make_conversation(model.base_url, workdir, ui, mode="accept-edits")
    try:
        lines = startup_lines(conversation.open())
        assert any(line.startswith("Sandbox: unavailable (bwrap leaves sandboxed commands") for line in lines)
        assert conversation.state().sandbox is None
        turn(conversation, "say hi")
        assert [r.tool for r in ui.asked] == ["bash"]  # accept-edits runs sandboxed bash unasked
        assert ("Sandbox", "none") in ui.asked[0].fields
    finally:
        conversation.close()
