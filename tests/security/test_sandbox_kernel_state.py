"""Issue 22, finding 1: a sandboxed root escaped through /proc/sys.

bwrap makes /proc/sys read-only only where access("/proc/sys", W_OK) succeeds, which it does not
for root without capabilities; but sysctl files obey only their owner and mode, so uid 0 could
write kernel.core_pattern (`|/path/to/script`: the kernel then runs the script as full root on the
next crash), hostname, randomize_va_space, vm.* and /proc/sysrq-trigger. Now Mino mounts those
/proc entries read-only itself, hides the ones that show host keys and timers, and the start-up
probe refuses a sandbox in which a kernel setting is writable.

These tests never write a kernel setting: they open for writing and write nothing (on the old
code the open succeeded; that is the finding).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import RecordingUI, make_conversation, turn
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.tools import sandbox as sandbox_module
from mino_server.core.tools.sandbox import detect
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = needs_bwrap
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only uid 0 owns the kernel settings")

# Every kind of kernel state a file under /proc or /sys changes (those this kernel has).
KERNEL_FILES = [
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/core_uses_pid",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/domainname",
    "/proc/sys/kernel/randomize_va_space",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/kernel/panic",
    "/proc/sys/kernel/sysrq",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/vm/overcommit_memory",
    "/proc/sys/vm/swappiness",
    "/proc/sys/fs/file-max",
    "/proc/sys/fs/suid_dumpable",
    "/proc/sys/net/core/somaxconn",
    "/proc/sysrq-trigger",
    "/proc/irq/default_smp_affinity",  # bwrap's own --proc covers /proc/irq, /proc/bus, sysrq-trigger
    "/proc/bus/pci/00/00.0",
    "/proc/mtrr",
    "/proc/acpi/wakeup",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/power/state",
    "/sys/kernel/uevent_helper",
]
# Show the host's keys, timers or memory: unreadable inside (runc's masked files; /proc/key-users,
# counts without names, stays readable as runc leaves it).
MASKED = ["/proc/keys", "/proc/timer_list", "/proc/kcore", "/proc/sched_debug"]
# Not every /proc/irq/N has one; the first that does stands for all.
IRQ_GLOB = "/proc/irq/*/smp_affinity"

OPEN_FOR_WRITING = """
import glob, os, sys
paths = sys.argv[1:] + sorted(glob.glob("IRQ_GLOB"))[:1]
for p in paths:
    if not os.path.exists(p):
        continue
    try:
        fd = os.open(p, os.O_WRONLY)  # nothing is written: opening is the test
    except OSError as e:
        print(p, "refused", e.errno)
    else:
        os.close(fd)
        print(p, "WRITABLE")
""".replace("IRQ_GLOB", IRQ_GLOB)


def _writable_inside(tmp_path: Path, sandbox: sandbox_module.Sandbox | None = SANDBOX) -> dict[str, str]:
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "probe.py").write_text(OPEN_FOR_WRITING)
    result = run_bash(
        {"command": "python3 probe.py " + " ".join(KERNEL_FILES)}, project_ctx(tmp_path, sandbox)
    )
    lines = [line.split(" ", 1) for line in result.output.splitlines() if line.startswith("/")]
    return dict((path, verdict) for path, verdict in lines)


@as_root
def test_a_sandboxed_root_cannot_open_a_kernel_setting_for_writing(tmp_path: Path) -> None:
    # Outside the sandbox, root can: the test would see a sandbox that protects nothing.
    outside = _writable_inside(tmp_path, None)
    assert outside.get("/proc/sys/kernel/core_pattern") == "WRITABLE"
    inside = _writable_inside(tmp_path)
    assert inside.keys() == outside.keys()
    assert "/proc/sys/kernel/core_pattern" in inside and "/proc/sys/vm/drop_caches" in inside
    writable = [path for path, verdict in inside.items() if verdict == "WRITABLE"]
    assert writable == []
    # Read-only file system (30) for what is mounted read-only; no other answer hides a mistake.
    assert {verdict for verdict in inside.values()} <= {"refused 30", "refused 13", "refused 1"}
    assert inside["/proc/sys/kernel/core_pattern"] == "refused 30"


def test_kernel_settings_stay_readable(tmp_path: Path) -> None:
    """Read-only, not hidden: builds read sysctls (nproc, ulimits, ASLR checks)."""
    result = run_bash(
        {
            "command": "cat /proc/sys/kernel/core_pattern /proc/sys/kernel/randomize_va_space /proc/sys/fs/nr_open"
        },
        project_ctx(tmp_path, SANDBOX),
    )
    host = "".join(
        Path(p).read_text()
        for p in (
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/kernel/randomize_va_space",
            "/proc/sys/fs/nr_open",
        )
    )
    assert result.output == host + "[exit code: 0]"


def test_host_keys_and_timers_are_hidden(tmp_path: Path) -> None:
    present = [p for p in MASKED if os.path.exists(p)]
    assert "/proc/keys" in present
    result = run_bash(
        {
            "command": "for f in "
            + " ".join(present)
            + '; do head -c 64 "$f" >/dev/null 2>&1 && echo "read $f"; done; :'
        },
        project_ctx(tmp_path, SANDBOX),
    )
    assert "read " not in result.output


def test_the_sandbox_still_writes_its_own_process_files(tmp_path: Path) -> None:
    """Only kernel-wide settings are read-only: a process's own /proc files are not (OOM score,
    its name: runtimes and test runners write them)."""
    result = run_bash(
        {
            "command": "echo 500 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj; "
            "echo renamed > /proc/self/comm && read -r name < /proc/self/comm && echo $name"
        },  # fmt: skip
        project_ctx(tmp_path, SANDBOX),
    )
    assert result.output == "500\nrenamed\n[exit code: 0]"


def _unprotected(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox as it was: /proc as bwrap leaves it."""
    monkeypatch.setattr(sandbox_module, "proc_protections", lambda bind_covered=False: ())


@as_root
def test_a_sandbox_with_a_writable_kernel_setting_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _unprotected(monkeypatch)
    found, line = detect()
    assert found is None
    assert line.startswith(
        "Sandbox: unavailable (sandboxed commands could change kernel settings here "
        "(/proc/sys/kernel/core_pattern, "
    )


def test_probe_reason_for_writable_settings() -> None:
    ok = "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
    assert sandbox_module._too_weak(ok, want_seccomp=True) is None
    assert sandbox_module._too_weak(ok + "Writable:/proc/sysrq-trigger\n", want_seccomp=True) == (
        "sandboxed commands could change kernel settings here (/proc/sysrq-trigger writable)"
    )


def test_the_probe_writes_nothing() -> None:
    """It opens each setting for appending (`: >>file`) and never runs a command that writes."""
    redirections = sandbox_module.PROBE_SCRIPT.count(">")
    assert redirections == 2 * sandbox_module.PROBE_SCRIPT.count(
        ': >>"$f"'
    ) + sandbox_module.PROBE_SCRIPT.count("2>/dev/null")
    assert all(p in sandbox_module.PROBE_SCRIPT for p in sandbox_module.PROBE_WRITABLE)
    assert "/proc/sys/kernel/core_pattern" in sandbox_module.PROBE_WRITABLE


def test_the_probe_tries_every_file_of_its_trees_at_any_depth(tmp_path: Path) -> None:
    """The driver folders left to the probe (LEFT_TO_PROBE) are walked whole: a writable file five
    folders down is reported, a read-only one is not, links are not followed (no loop)."""
    trees = [tmp_path / "acpi", tmp_path / "asound"]
    deep = trees[0] / "a" / "b" / "c" / "d" / "e" / "wakeup"
    deep.parent.mkdir(parents=True)
    deep.write_text("")
    (trees[1] / "card0").mkdir(parents=True)
    (trees[1] / "card0" / "id").write_text("")
    (trees[1] / "loop").symlink_to(trees[1])
    script = sandbox_module.PROBE_SCRIPT.replace(
        " ".join(sandbox_module.PROBE_TREES), " ".join(str(t) for t in trees)
    )
    assert script != sandbox_module.PROBE_SCRIPT
    # In bwrap, as a command runs: asound read-only, acpi writable.
    done = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(tmp_path), str(tmp_path),
         "--ro-bind", str(trees[1]), str(trees[1]), "--unshare-pid", "--cap-drop", "ALL", "--", "bash", "-c", script],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    found = [
        line.removeprefix("Writable:") for line in done.stdout.splitlines() if line.startswith("Writable:")
    ]
    assert [f for f in found if f.startswith(str(tmp_path))] == [str(deep)], done.stdout + done.stderr


@as_root
def test_a_writable_kernel_setting_is_reported_at_start_up_and_bash_asks(
    model: ScriptedModel, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _unprotected(monkeypatch)
    model.add({"calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"})
    ui = RecordingUI(approvals=[False])
    conversation = make_conversation(model.base_url, workdir, ui, mode="accept-edits")
    try:
        lines = startup_lines(conversation.open())
        assert any(
            line.startswith("Sandbox: unavailable (sandboxed commands could change kernel") for line in lines
        )
        assert conversation.state().sandbox is None
        turn(conversation, "say hi")
        assert [r.tool for r in ui.asked] == ["bash"]
        assert ("Sandbox", "none") in ui.asked[0].fields
    finally:
        conversation.close()


FRESH_MOUNTS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# A user namespace (no uid map: a root without capabilities may not map uid 0) with its own
# mount, network and pid namespaces: capabilities there, over a /proc and /sys of its own.
if libc.unshare(0x10000000 | 0x20000 | 0x40000000 | 0x20000000) != 0:
    print("unshare refused", ctypes.get_errno())
    raise SystemExit
pid = os.fork()
if pid == 0:
    for fs in ("proc", "sysfs"):
        os.makedirs("/tmp/" + fs, exist_ok=True)
        r = libc.mount(fs.encode(), ("/tmp/" + fs).encode(), fs.encode(), 0, None)
        print(fs, "mounted" if r == 0 else "refused")
    for p in ("/tmp/proc/sys/kernel/core_pattern", "/tmp/sysfs/kernel/mm/transparent_hugepage/enabled"):
        if os.path.exists(p):
            try:
                os.close(os.open(p, os.O_WRONLY))
                print(p, "WRITABLE")
            except OSError:
                pass
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_no_fresh_proc_or_sys_in_a_namespace_made_inside(tmp_path: Path) -> None:
    """The read-only mounts hold below a user namespace a command makes: it cannot mount a /proc
    or /sys of its own (the kernel refuses one that would reveal what is covered)."""
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "fresh.py").write_text(FRESH_MOUNTS)
    result = run_bash({"command": "python3 fresh.py"}, project_ctx(tmp_path, SANDBOX))
    if result.output.startswith("unshare refused"):
        pytest.skip(f"no user namespaces in the sandbox here ({result.output.splitlines()[0]})")
    assert result.output == "proc refused\nsysfs refused\n[exit code: 0]"
