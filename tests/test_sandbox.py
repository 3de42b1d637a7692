"""Sandbox detection, the wrappers it builds, and bash inside bubblewrap (when this machine has it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from tool_helpers import (  # tests/ is on sys.path (conftest.py)
    SANDBOX,
    SANDBOX_LINE,
    live_with,
    needs_bwrap,
    project_ctx,
    returned_before_the_sleeps_ended,
    run_bash,
    sleep_marker,
)

from mino_server.core.cancel import CancelToken
from mino_server.core.tools import sandbox as sandbox_module
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.bash import BashTool
from mino_server.core.tools.sandbox import Sandbox, bwrap_argv, detect, macos_profile

# --- detection ---------------------------------------------------------------------------------


def test_off_in_config() -> None:
    assert detect("off") == (None, "Sandbox: unavailable (sandbox: off in config)")


def test_unknown_setting() -> None:
    found, line = detect("maybe")
    assert found is None and line.startswith("Sandbox: unavailable (sandbox: 'maybe'")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap detection is for Linux")
def test_missing_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: None)
    assert detect() == (None, "Sandbox: unavailable (bwrap not found; install bubblewrap)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap detection is for Linux")
def test_probe_failure_gives_bwrap_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine where bwrap cannot create namespaces: its last stderr line is the reason."""
    failing = ["bash", "-c", "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1"]
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox_module, "bwrap_argv", lambda *args: failing)
    assert detect(unix_sockets=True) == (
        None,
        "Sandbox: unavailable (bwrap cannot create a sandbox here: bwrap: setting up uid map: Permission denied)",
    )


def test_detection_imports_nothing_heavy_until_asked() -> None:
    code = (
        "import sys\n"
        "import mino_server.core.tools.sandbox, mino_server.core.tools.bash, mino_server.core.tools.files\n"
        "print('subprocess' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- the wrappers ------------------------------------------------------------------------------


def test_bwrap_argv() -> None:
    argv = bwrap_argv(["bash", "-c", "ls"], Path("/home/u/my proj"))
    wd = "/home/u/my proj"
    assert argv[0] == "bwrap"
    assert argv[-4:] == ["--", "bash", "-c", "ls"]
    joined = " ".join(argv)
    for option in ["--ro-bind / /", "--dev /dev", "--proc /proc", "--tmpfs /tmp", "--unshare-net",
                   "--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop ALL"]:  # fmt: skip
        assert option in joined
    assert "--seccomp" not in argv
    bind = argv.index("--bind")
    assert argv[bind + 1 : bind + 3] == [wd, wd]
    assert bind > argv.index("--tmpfs")  # a workdir under /tmp must not be hidden by the tmpfs
    assert argv[argv.index("--chdir") + 1] == wd
    assert bwrap_argv(["true"], Path(wd), seccomp_fd=7)[-6:-4] == ["--seccomp", "7"]


def test_wrap_passes_the_filter_through_a_descriptor(tmp_path: Path) -> None:
    program = b"\x06\x00\x00\x00\x00\x00\xff\x7f"  # one instruction: allow
    argv, fds = Sandbox("bwrap", program).wrap(["true"], tmp_path)
    try:
        assert len(fds) == 1 and argv[argv.index("--seccomp") + 1] == str(fds[0])
        assert os.read(fds[0], 100) == program and os.read(fds[0], 100) == b""  # then EOF
    finally:
        os.close(fds[0])
    assert Sandbox("bwrap").wrap(["true"], tmp_path) == (bwrap_argv(["true"], tmp_path), [])


def test_protected_folders_are_mounted_read_only_after_the_workdir(tmp_path: Path) -> None:
    wd = tmp_path / "proj"
    (wd / ".git").mkdir(parents=True)
    (wd / ".vscode").write_text("a file is protected too")
    (wd / "real-mino").mkdir()
    (wd / ".mino").symlink_to(wd / "real-mino")  # followed: the target is what runs later
    argv = bwrap_argv(["true"], wd)
    binds = [
        argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind" and not argv[i + 2].startswith("/proc/")
    ]
    assert binds == ["/", str(wd / ".git"), str(wd / "real-mino"), str(wd / ".vscode")]
    for source in binds[1:]:
        assert argv.index(source) > argv.index("--bind")
        assert argv[argv.index(source) + 1] == source


def test_a_home_inside_the_workdir_is_hidden_and_read_only(tmp_path: Path) -> None:
    wd = tmp_path / "proj"
    home = wd / "dotfiles" / "mino-home"
    home.mkdir(parents=True)
    argv = bwrap_argv(["true"], wd, home)
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert tmpfs == ["/tmp", str(home)]
    assert argv.index(str(home)) > argv.index("--bind")  # over the writable workdir
    assert argv[argv.index("--remount-ro") + 1] == str(home)


def test_a_home_elsewhere_is_left_read_only(tmp_path: Path) -> None:
    wd = tmp_path / "proj"
    wd.mkdir()
    (tmp_path / "home").mkdir()
    assert "--remount-ro" not in bwrap_argv(["true"], wd, tmp_path / "home")  # outside: read-only
    assert "--remount-ro" not in bwrap_argv(["true"], wd / "sub", wd)  # a workdir inside it
    assert "--remount-ro" not in bwrap_argv(["true"], wd, wd)  # started in MINO_HOME: workdir wins
    assert "--remount-ro" not in bwrap_argv(["true"], wd, wd / "missing")


def test_macos_profile_text() -> None:
    profile = macos_profile(Path("/Users/you/proj"), [Path("/private/tmp"), Path("/private/var/folders")])
    assert profile == (
        "(version 1)\n"
        "(allow default)\n"
        "(deny network*)\n"
        "(deny file-write*)\n"
        "(allow file-write*\n"
        '  (subpath "/Users/you/proj")\n'
        '  (subpath "/private/tmp")\n'
        '  (subpath "/private/var/folders")\n'
        '  (literal "/dev/null")\n'
        '  (literal "/dev/zero")\n'
        '  (literal "/dev/tty")\n'
        '  (regex #"^/dev/fd/[0-9]+$"))\n'
    )


def test_macos_profile_escapes_paths() -> None:
    """A quote in a folder name must not end the string and add rules of its own."""
    profile = macos_profile(Path('/Users/you/a") (allow network*) ("\\x'), [])
    assert '(subpath "/Users/you/a\\") (allow network*) (\\"\\\\x")' in profile


def test_macos_profile_denies_home_and_protected_folders(tmp_path: Path) -> None:
    wd = tmp_path / "proj"
    (wd / ".git").mkdir(parents=True)
    profile = macos_profile(wd, [], home=tmp_path / "home")
    assert profile.endswith(
        f"(deny file-write*\n  (subpath {_quoted(tmp_path / 'home')})\n  (subpath {_quoted(wd / '.git')}))\n"
    )
    assert "(deny file-write*\n  (subpath" not in macos_profile(wd / ".git", [], home=tmp_path)


def test_macos_wrap_uses_the_profile() -> None:
    argv, fds = Sandbox("sandbox-exec").wrap(["bash", "-c", "ls"], Path("/Users/you/proj"))
    assert fds == []
    assert argv[:2] == ["sandbox-exec", "-p"]
    assert '(subpath "/Users/you/proj")' in argv[2]
    assert argv[3:] == ["bash", "-c", "ls"]


def test_macos_profile_default_temp_dirs() -> None:
    profile = macos_profile(Path("/w"))
    assert '(subpath "/private/tmp")' in profile
    assert f"(subpath {_quoted(Path(tempfile.gettempdir()).resolve())})" in profile


def _quoted(path: Path) -> str:
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- bash inside bubblewrap --------------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return project_ctx(tmp_path, SANDBOX)


@needs_bwrap
def test_detect_finds_bwrap_here() -> None:
    assert SANDBOX_LINE == "Sandbox: bwrap"


@needs_bwrap
def test_kind_and_fields_in_the_sandbox(ctx: ToolContext) -> None:
    tool = BashTool()
    assert tool.kind(ctx) == "sandboxed"
    assert ("Sandbox", "bwrap") in tool.prepare(tool.validate({"command": "ls"}), ctx).fields


@needs_bwrap
def test_write_inside_succeeds(ctx: ToolContext) -> None:
    result = run_bash({"command": "echo hi > made.txt && pwd"}, ctx)
    assert result.output == f"{ctx.workdir}\n[exit code: 0]"
    assert (ctx.workdir / "made.txt").read_text() == "hi\n"


@needs_bwrap
def test_write_outside_fails() -> None:
    # Outside /tmp on purpose: inside the sandbox /tmp is a private tmpfs, so a write there "works".
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        wd = Path(tempfile.mkdtemp(dir="/var/tmp")).resolve()
        ctx = ToolContext(workdir=wd, home=wd, memory_dir=wd, cancel=CancelToken(), sandbox=SANDBOX)
        result = run_bash({"command": f"echo x > {outside}/f"}, ctx)
        assert "Read-only file system" in result.output
        assert not result.output.endswith("[exit code: 0]")
        assert not (outside / "f").exists()
    finally:
        shutil.rmtree(outside)
        shutil.rmtree(wd)


@needs_bwrap
def test_tmp_is_private(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "host-only").write_text("x")
    inside = Path(f"/tmp/mino-sandbox-{uuid.uuid4().hex}")
    result = run_bash({"command": f"ls {tmp_path}/host-only; echo t > {inside} && echo wrote"}, ctx)
    assert "No such file or directory" in result.output  # the host's /tmp is not visible
    assert "wrote" in result.output  # but the private /tmp is writable
    assert not inside.exists()


@needs_bwrap
def test_no_network(ctx: ToolContext) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        port = server.getsockname()[1]
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        result = run_bash({"command": command}, ctx)
        assert "connected" not in result.output
        assert not result.output.endswith("[exit code: 0]")
        with pytest.raises(TimeoutError):
            server.accept()
        # The same command without the sandbox does connect: the test can tell the difference.
        plain = ToolContext(
            workdir=ctx.workdir, home=ctx.home, memory_dir=ctx.memory_dir, cancel=CancelToken()
        )
        assert run_bash({"command": command}, plain).output == "connected\n[exit code: 0]"


@needs_bwrap
def test_timeout_kills_everything_in_the_sandbox(ctx: ToolContext) -> None:
    marker = sleep_marker()
    started = time.monotonic()
    result = run_bash({"command": f"sleep {marker} & sleep {marker}", "timeout_s": 0.5}, ctx)
    assert result.status == "failed" and returned_before_the_sleeps_ended(started, marker)
    assert live_with(marker) == []


@needs_bwrap
def test_background_processes_end_with_the_sandbox(ctx: ToolContext) -> None:
    marker = sleep_marker()
    assert run_bash({"command": f"sleep {marker} & echo ok"}, ctx).output == "ok\n[exit code: 0]"
    assert live_with(marker) == []


def test_kernel_settings_are_read_only_in_the_fresh_proc() -> None:
    """Right after the fresh /proc (a bind before it would be covered by it); only what exists."""
    argv = bwrap_argv(["true"], Path("/home/u/proj"))
    after_proc = argv[argv.index("--proc") + 2 :]
    assert after_proc[:3] == ["--ro-bind", "/proc/sys", "/proc/sys"]
    masked = [
        after_proc[i + 2]
        for i, a in enumerate(after_proc[:-2])
        if a == "--ro-bind" and after_proc[i + 1] == "/dev/null"
    ]
    assert "/proc/keys" in masked
    assert all(os.path.exists(p) for p in masked)


def test_what_bwrap_covers_itself_is_bound_only_where_it_does_not() -> None:
    """bwrap's --proc binds /proc/sysrq-trigger, /proc/irq and /proc/bus read-only itself where they
    are writable: Mino does not bind them again (a mount each per command) unless the probe saw
    bwrap leave one writable (root without CAP_DAC_OVERRIDE), and then the probe runs again with
    Mino's own binds."""
    argv = bwrap_argv(["true"], Path("/home/u/proj"))
    assert not set(sandbox_module.LEFT_TO_PROBE) & set(argv)
    bound = bwrap_argv(["true"], Path("/home/u/proj"), bind_covered=True)
    present = [p for p in sandbox_module.LEFT_TO_PROBE if os.path.lexists(p)]
    assert present and all(p in bound for p in present)
    # Also left to the probe: /proc/mtrr (only CAP_SYS_ADMIN opens it) and the driver folders.
    assert {"/proc/mtrr", "/proc/acpi", *sandbox_module.BWRAP_COVERS} <= set(sandbox_module.LEFT_TO_PROBE)
    assert "/proc/sys" in argv and ("/proc/fs" in argv or not os.path.exists("/proc/fs"))  # always bound
    # The probe's own argv has no masks (they change nothing it checks); commands have them.
    probe = bwrap_argv(["true"], Path("/tmp"), masked=False)
    assert "/dev/null" not in probe[probe.index("--proc") :] and "/proc/keys" in argv
    assert "/proc/sys" in probe


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap detection is for Linux")
def test_the_probe_binds_the_covers_itself_when_bwrap_left_one_writable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ok = "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
    irq = ok + "Writable:/proc/irq/default_smp_affinity\n"
    assert sandbox_module._too_weak(irq, True, bind_covered=False) == sandbox_module._COVERS_WRITABLE
    assert sandbox_module._too_weak(irq, True, bind_covered=True) == (
        "sandboxed commands could change kernel settings here (/proc/irq/default_smp_affinity writable)"
    )
    for path in ("/proc/mtrr", "/proc/acpi/wakeup", "/proc/asound/card0/pcm0p/sub0/prealloc"):
        found = ok + f"Writable:{path}\n"
        assert sandbox_module._too_weak(found, True, bind_covered=False) == sandbox_module._COVERS_WRITABLE
    fs = ok + "Writable:/proc/fs/cifs/SecurityFlags\n"  # bound always: writable means refused
    assert sandbox_module._too_weak(fs, True, bind_covered=False).startswith("sandboxed commands could")
    sysctl = irq + "Writable:/proc/sys/kernel/core_pattern\n"  # not only covers: refused at once
    assert sandbox_module._too_weak(sysctl, True, bind_covered=False).startswith("sandboxed commands could")
    probed: list[bool] = []

    def probe(box: sandbox_module.Sandbox) -> str | None:
        probed.append(box.bind_covered)
        return None if box.bind_covered else sandbox_module._COVERS_WRITABLE

    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(sandbox_module, "seccomp_filter", lambda: b"\0" * 8)
    monkeypatch.setattr(sandbox_module, "_probe", probe)
    box, line = detect()
    assert probed == [False, True] and box is not None and box.bind_covered and line == "Sandbox: bwrap"
