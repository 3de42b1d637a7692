"""The bash sandbox (docs/BEHAVIOUR.md, "Sandbox"): bubblewrap on Linux, sandbox-exec on macOS.

Inside bubblewrap: the whole file system read-only except the working directory; in it `.git`,
`.mino` and `.vscode` read-only at any depth (what they hold runs later, outside the sandbox: git
hooks and core.fsmonitor, project skills, editor tasks; found by protected.py's bounded walk);
MINO_HOME read-only like the rest, or hidden (an empty read-only folder) when it is inside the
working directory (Mino started in ~); a private /tmp; no network; its own IPC, UTS and (where the
kernel has them) cgroup namespaces, so the host's SysV and POSIX IPC objects are out of reach; a
fresh /proc of its own pid namespace, in which the files that change the kernel (/proc/sys, /proc/sysrq-trigger, ...) are
read-only, since a root without capabilities may still write them; no capabilities, even when Mino
runs as root; no new privileges; and a seccomp filter (built with libseccomp) that refuses unix
sockets, which read-only mounts do not stop (connect() on a socket file needs no write access), and
the system calls that reach kernel state beyond the sandbox (keyrings, BPF, ...). Nothing outlives
the command.

detect() runs one probe that reads /proc/self/status inside the sandbox and opens a few kernel
settings for writing, so a machine where the sandbox cannot start, or starts weaker than that
(capabilities kept, no seccomp, a writable kernel setting, a namespace shared with the host), says
why at start-up and bash runs unsandboxed — asking first — instead of trusting a weak sandbox. A
probe that fails for want of resources (too many open files or processes, no memory, no answer
within PROBE_TIMEOUT_S on a busy machine) says "not now", not "no sandbox": the sandbox is kept,
marked `unready`, no command runs until a later probe succeeds, and nothing falls back to running
unsandboxed (bypass included).
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import sys
import tempfile
from dataclasses import field
from pathlib import Path

from ..values import Frozen, frozen
from ..words import sandbox_not_started
from .protected import mount_target

PROBE_TIMEOUT_S = 5.0
# Folders of the working directory whose contents run later outside the sandbox.
PROTECTED_DIRS = (".git", ".mino", ".vscode")
# Kernel settings a sandboxed command must not be able to write (a sample of each kind the mounts
# below cover; PROBE_TREES are tried whole): the probe opens each for appending and writes nothing.
PROBE_WRITABLE = (
    "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/randomize_va_space", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger",
    "/proc/mtrr", "/proc/irq/default_smp_affinity",
)  # fmt: skip
# /proc folders whose every file the probe tries (as PROBE_WRITABLE's): bwrap's cover /proc/bus
# (by every file, not one: a machine without PCI has no /proc/bus/pci/00/00.0), and the driver
# folders, root-writable on some machines (/proc/acpi/wakeup) and absent or read-only on others.
# /proc/irq is judged by its one folder-wide file: its ~130 per-IRQ files cost the probe ~5 ms.
PROBE_TREES = ("/proc/bus", "/proc/acpi", "/proc/scsi", "/proc/asound")
# Bash builtins only (no extra process): what the sandbox really gave a command. The trees are
# walked to any depth (links are not followed: each names a folder walked anyway).
PROBE_SCRIPT = (
    "while IFS= read -r line; do case $line in CapEff:*|NoNewPrivs:*|Seccomp:*) "
    'echo "$line";; esac; done </proc/self/status; '
    f"for f in {' '.join(PROBE_WRITABLE)}; do "
    '[ -e "$f" ] && { : >>"$f"; } 2>/dev/null && echo "Writable:$f"; done; '
    'walk() { local f; for f in "$1"/*; do if [ -L "$f" ]; then :; elif [ -d "$f" ]; then walk "$f"; '
    'elif [ -e "$f" ]; then { : >>"$f"; } 2>/dev/null && echo "Writable:$f"; fi; done; }; '
    f'for t in {" ".join(PROBE_TREES)}; do walk "$t"; done; :'
)
NO_CAPABILITIES = "0000000000000000"


class SandboxError(Exception):
    """Why the sandbox cannot be made as strong as it must be; one line for the start-up message."""


class SandboxBusy(Exception):
    """The probe could not run for want of resources: the machine may have a sandbox, not now."""


# errno values that say "not now" rather than "not here".
_NOT_NOW = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.ENOBUFS})


def _not_now(e: OSError, what: str) -> SandboxBusy | None:
    return SandboxBusy(f"{what}: {e.strerror or e}") if e.errno in _NOT_NOW else None


@frozen
class Sandbox(Frozen):
    name: str  # "bwrap" | "sandbox-exec"
    # bwrap: the seccomp BPF program (refuses unix sockets); None when config.yaml allows them.
    seccomp: bytes | None = field(default=None, repr=False)
    # bwrap: bind BWRAP_COVERS read-only too (bwrap left one writable here: root without
    # CAP_DAC_OVERRIDE, whose access(W_OK) check fails on folders it may still write into).
    bind_covered: bool = False
    # Why the probe could not run yet (SandboxBusy): no command runs in it, or around it, until a
    # later probe succeeds. None: the probe passed.
    unready: str | None = None
    # bwrap: config.yaml's sandbox_network; with entries, commands reach them through network.py's
    # proxy (and nothing else).
    network: tuple[str, ...] = ()

    def wrap(
        self,
        argv: list[str],
        workdir: Path,
        home: Path | None = None,
        protected: list[str] | None = None,
        masked: bool = True,
        read_only: bool = False,
        network: str | None = None,
    ) -> tuple[list[str], list[int]]:
        """`argv` as run inside the sandbox, with `workdir` writable and current, and MINO_HOME
        (`home`) out of reach; plus the descriptors to pass to it (pass_fds), which the caller
        closes once the process is started. `protected`: the paths to keep read-only in the working
        directory (protected.mount_sources, at any depth); None: the top-level ones. `masked`:
        False for the start-up probe only (see proc_protections). `read_only`: plan mode, the
        working directory read-only too (bwrap keeps its private, empty /tmp writable: it is
        discarded with the command and holds none of the person's files), System V IPC of its own,
        and unix sockets refused even when config.yaml allows them: through one, a service (Docker,
        D-Bus) changes what the mounts keep read-only. Raises OSError when that filter cannot be
        built. `network`: the proxy's folder for this command (network.py's Listener): the command
        then starts behind network.py's relay, which installs the seccomp filter itself once the
        relay runs (bwrap would filter both); never with `read_only` (plan mode has no network)."""
        if self.name == "bwrap":
            program = self.seccomp
            if program is None and read_only:
                try:
                    program = seccomp_filter()
                except SandboxError as exc:
                    raise OSError(f"cannot refuse unix sockets in plan mode: {exc}") from None
            fds = [_filter_fd(program)] if program is not None else []
            try:
                seccomp_fd = fds[0] if fds else None
                if network is not None and not read_only:
                    from . import network as net

                    argv = net.relay_argv(base_python(), seccomp_fd, argv)
                    return bwrap_argv(
                        argv, workdir, home, None, protected, masked, self.bind_covered, False, network
                    ), fds
                return bwrap_argv(
                    argv, workdir, home, seccomp_fd, protected, masked, self.bind_covered, read_only
                ), fds
            except BaseException:
                for fd in fds:
                    os.close(fd)
                raise
        if self.name == "sandbox-exec":
            profile = macos_profile(workdir, home=home, protected=protected, read_only=read_only)
            return ["sandbox-exec", "-p", profile, *argv], []
        raise ValueError(f"unknown sandbox {self.name!r}")


def base_python() -> str:
    """The interpreter to run inside the sandbox (the network relay, doctor's probe): the base
    interpreter's real path, not a venv's link to it — they need only the standard library, and a
    venv may lie where the sandbox hides (under its private /tmp)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def bwrap_argv(
    argv: list[str],
    workdir: Path,
    home: Path | None = None,
    seccomp_fd: int | None = None,
    protected: list[str] | None = None,
    masked: bool = True,
    bind_covered: bool = False,
    read_only: bool = False,
    network: str | None = None,
) -> list[str]:
    wd = str(workdir)
    out = [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",  # a fresh one for the new pid namespace: no other process is visible
        *proc_protections(bind_covered),
        *(proc_masks() if masked else ()),
        "--tmpfs", "/tmp",
        # After the /tmp tmpfs, so a working directory under /tmp stays visible; read-only in plan mode.
        "--ro-bind" if read_only else "--bind", wd, wd,
    ]  # fmt: skip
    # After the workdir bind: read-only over the writable (nothing to cover when it is read-only).
    for source in () if read_only else protected_paths(workdir) if protected is None else protected:
        out += ["--ro-bind", source, source]
    hide = _home_to_hide(workdir, home)
    if hide is not None:  # empty and read-only: a write fails instead of vanishing
        out += ["--tmpfs", hide, "--remount-ro", hide]
    if network is not None:  # the proxy's socket, read-only (connect() needs no write access)
        from .network import SOCKET_DIR

        out += ["--ro-bind", network, SOCKET_DIR]
    out += [
        "--unshare-net",
        "--unshare-pid",  # when the shell ends, the namespace's init ends every process left in it
        "--unshare-ipc",  # the host's SysV shared memory, semaphores, message queues and POSIX queues
        "--unshare-uts",  # sethostname() would otherwise rename the host (a capless root may not, still)
        *_UNSHARE_CGROUP,  # the cgroup paths of the host's processes, as /proc/self/cgroup shows them
        "--die-with-parent",  # Mino (or our kill of bwrap) ending takes the sandbox with it
        "--new-session",  # no TIOCSTI into a terminal; the outer bwrap stays in our process group
        "--cap-drop", "ALL",  # root keeps every capability otherwise (and could remount / read-write)
    ]  # fmt: skip
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    if network is not None:
        # No bwrap init in the namespace: without --seccomp it would run unfiltered and dumpable,
        # so a command could ptrace it into opening unix sockets. The relay's launcher is pid 1
        # and becomes the command; when it ends, the kernel ends every process left in the namespace.
        out.append("--as-pid-1")
    return [*out, "--chdir", wd, "--", *argv]


# Namespaces every command gets a fresh one of, and the probe proves it (_probe: `-ef` against
# the host's own, passed in as descriptors). cgroup only where the kernel has cgroup namespaces.
_HAS_CGROUP_NS = os.path.exists("/proc/self/ns/cgroup")
_UNSHARE_CGROUP = ("--unshare-cgroup",) if _HAS_CGROUP_NS else ()
UNSHARED_NAMESPACES = ("ipc", "uts", "net", "pid", *(("cgroup",) if _HAS_CGROUP_NS else ()))


# /proc entries that change the kernel when written, made read-only: root without capabilities
# may still write files uid 0 owns (core_pattern runs a program as full root, sysrq-trigger reboots,
# hostname, vm.*), and bwrap covers /proc/sys itself only where access(W_OK) lets it, not as a
# capless root. The list is the container runtimes' (runc's read-only paths, and the masked
# folders), plus /proc/mtrr (mode 0644, owner root; today its open checks a capability). The bind's
# source is the host's /proc: the same kernel objects (sysctls resolve per namespace from the
# reader), and the mount is locked read-only for any namespace a command could make below it.
READ_ONLY_PROC = (
    "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/mtrr",
    "/proc/acpi", "/proc/scsi", "/proc/asound",
)  # fmt: skip
# Of those, what bwrap's own --proc already binds read-only wherever it is writable: it does so when
# access(W_OK) succeeds, which for root it does (root still has CAP_DAC_OVERRIDE while bwrap sets
# up; only /proc/sys answers EACCES whatever the capabilities), and another user cannot write them.
# Binding them again costs a mount each on every command (bwrap reads the whole mount table for
# each), so Mino leaves them to bwrap, and the start-up probe tries them for writing
# (PROBE_WRITABLE, PROBE_TREES): a bwrap that stopped covering them is not trusted.
BWRAP_COVERS = ("/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
# And what no sandboxed command can write on most machines, so that a bind would cost a mount per
# command for nothing: /proc/mtrr (the kernel lets only CAP_SYS_ADMIN open it) and the driver
# folders of PROBE_TREES (empty, absent or read-only but where a driver made a root-writable file,
# like ACPI's wakeup list on PCs). The probe tries them all; where one is writable, Mino binds all
# of LEFT_TO_PROBE read-only and probes again. /proc/sys and /proc/fs (where a file system module
# loaded at any time, like cifs, adds root-writable tunables) are always bound.
LEFT_TO_PROBE = tuple(dict.fromkeys((*BWRAP_COVERS, "/proc/mtrr", *PROBE_TREES)))
# Files that show kernel memory, keys or timers of the host: replaced by /dev/null (runc's masked
# files). Kernel keys are refused by seccomp too; this hides their descriptions. /proc/key-users
# (how many keys each user has, no names) is left readable, as runc leaves it: a mount per command.
MASKED_PROC = (
    "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug",
)  # fmt: skip


@functools.cache
def proc_protections(bind_covered: bool = False) -> tuple[str, ...]:
    """bwrap arguments that make READ_ONLY_PROC read-only (but LEFT_TO_PROBE unless
    `bind_covered`), for those this kernel has (a bind onto a missing /proc entry would stop
    bwrap); checked once per process."""
    out: list[str] = []
    for path in READ_ONLY_PROC:
        if (bind_covered or path not in LEFT_TO_PROBE) and os.path.lexists(path):
            out += ["--ro-bind", path, path]
    return tuple(out)


@functools.cache
def proc_masks() -> tuple[str, ...]:
    """bwrap arguments that hide MASKED_PROC (those this kernel has). Every command gets them; the
    start-up probe does not: they hide what could be read and change nothing the probe checks
    (capabilities, no_new_privs, seccomp, writable kernel settings), and each is one more mount
    on the way to the first command, which waits for the probe."""
    return tuple(a for path in MASKED_PROC if os.path.lexists(path) for a in ("--ro-bind", "/dev/null", path))


def protected_paths(workdir: Path) -> list[str]:
    """The existing `.git`, `.mino`, `.vscode` of the working directory, to mount read-only.

    A folder or a file (`.git` of a worktree or submodule). A symlink is followed to a target
    inside the working directory (outside it, the target is read-only already); the link itself
    stays replaceable, like a protected folder that does not exist yet: creating one would mean
    creating it in the person's project."""
    found = []
    for name in PROTECTED_DIRS:
        path = os.path.join(workdir, name)
        if not os.path.lexists(path):
            continue
        source = mount_target(path, workdir)
        if source is not None:
            found.append(source)
    return found


def _home_to_hide(workdir: Path, home: Path | None) -> str | None:
    """MINO_HOME (symlinks resolved) when it is inside the working directory (Mino started in ~,
    say), where it would be writable; anywhere else it is read-only like the rest of the system."""
    if home is None:
        return None
    hide = os.path.realpath(home)
    if hide == str(workdir) or not Path(hide).is_relative_to(workdir) or not os.path.isdir(hide):
        return None  # started in MINO_HOME itself: the working directory wins (a documented limit)
    return hide


def macos_profile(
    workdir: Path,
    temp_dirs: list[Path] | None = None,
    home: Path | None = None,
    protected: list[str] | None = None,
    read_only: bool = False,
) -> str:
    """A Seatbelt (SBPL) profile: everything allowed but network (unix sockets included) and writes
    outside the workdir and temp, or into MINO_HOME and the workdir's `.git`, `.mino`, `.vscode`.
    `read_only` (plan mode): no writes at all but to the device files below (macOS has no private
    temp folder to give a command, so temp is read-only too)."""
    if read_only:
        temp_dirs = []
    elif temp_dirs is None:
        temp_dirs = [
            Path("/private/tmp"),
            Path("/private/var/folders"),
            Path(tempfile.gettempdir()).resolve(),
        ]
    writable = [] if read_only else [workdir, *temp_dirs]
    subpaths = "\n".join(f"  (subpath {_sbpl_string(str(p))})" for p in dict.fromkeys(writable))
    denied = list(protected_paths(workdir) if protected is None else protected)
    if home is not None:
        resolved = Path(os.path.realpath(home))
        if not workdir.is_relative_to(resolved):  # a working directory inside MINO_HOME stays writable
            denied.insert(0, str(resolved))
    # Later rules win in SBPL: these denials override the allowance above.
    deny = ""
    if denied:
        deny = "(deny file-write*\n" + "\n".join(f"  (subpath {_sbpl_string(p)})" for p in denied) + ")\n"
    return (
        "(version 1)\n"
        "(allow default)\n"
        "(deny network*)\n"
        "(deny file-write*)\n"
        "(allow file-write*\n" + (f"{subpaths}\n" if subpaths else "") + '  (literal "/dev/null")\n'
        '  (literal "/dev/zero")\n'
        '  (literal "/dev/tty")\n'
        '  (regex #"^/dev/fd/[0-9]+$"))\n'
        f"{deny}"
    )


def _sbpl_string(s: str) -> str:
    """A Scheme string literal for SBPL: quotes and backslashes escaped, so a path cannot end it."""
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


# --- seccomp ---------------------------------------------------------------------------------------

# Linux values (the same on every architecture), written out so start-up need not import socket.
_AF_UNIX = 1
_AF_INET = 2
_AF_INET6 = 10
_AF_NETLINK = 16
_SOCK_STREAM = 1
_SOCK_TYPE_MASK = 0xF  # the type without SOCK_CLOEXEC / SOCK_NONBLOCK (the kernel's own mask)
_EPERM = 1
_EAFNOSUPPORT = 97
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000  # | errno
_SCMP_CMP_GE = 5
_SCMP_CMP_MASKED_EQ = 7
_NR_SCMP_ERROR = -1
_LOW_32 = 0xFFFFFFFF  # the kernel reads int arguments as 32 bits: compare only those

Rule = tuple[str, int, tuple[tuple[int, int, int, int], ...]]  # (call, errno, [(arg, op, a, b)])


def _eq(arg: int, value: int, mask: int = _LOW_32) -> tuple[int, int, int, int]:
    return (arg, _SCMP_CMP_MASKED_EQ, mask, value)


def _blocks(values: set[int], mask: int) -> list[tuple[int, int]]:
    """(mask, value) pairs whose masked comparisons `arg & mask == value` together match exactly
    the numbers in `values` (small numbers, all within `mask`): aligned power-of-two runs, as an
    address range is written as prefixes. Fewer rules make libseccomp's build (on the way to the
    first command) and the filter every system call runs shorter."""
    out = []
    v, top = 0, max(values) + 1 if values else 0
    while v < top:
        if v not in values:
            v += 1
            continue
        size = 1
        while v % (size * 2) == 0 and all(x in values for x in range(v, v + size * 2)):
            size *= 2
        out.append((mask & ~(size - 1), v))
        v += size
    return out


def _family_rules() -> list[Rule]:
    """socket() and socketpair() of any family but IPv4, IPv6 and netlink → EAFNOSUPPORT, as a
    kernel without that family answers (as Flatpak does). The network ones reach only the
    sandbox's empty network namespace (netlink included: it is per namespace, and what it could
    change on the host needs capabilities). AF_UNIX has its own rules below; AF_VSOCK reached the
    VM host's services; the rest (AF_ALG, AF_BLUETOOTH, AF_PACKET, ...) no build needs. Families
    below 17 in aligned runs (0, 3, 4-7, 8-9, 11, 12-15), from 17 up in one comparison (the whole
    64 bits: a value with high bits set is refused too)."""
    refused = set(range(_AF_NETLINK + 1)) - {_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK}
    rules: list[Rule] = []
    for call in ("socket", "socketpair"):
        for mask, value in _blocks(refused, _LOW_32):
            rules.append((call, _EAFNOSUPPORT, (_eq(0, value, mask),)))
        rules.append((call, _EAFNOSUPPORT, ((0, _SCMP_CMP_GE, _AF_NETLINK + 1, 0),)))
    return rules


# (system call, errno, [(argument index, comparison, a, b), ...] all of which must match).
# - socket(AF_UNIX) of every type: read-only mounts do not stop connect() on a socket file.
# - socketpair(AF_UNIX) of every type but SOCK_STREAM (the type masked, so SOCK_NONBLOCK or
#   SOCK_CLOEXEC cannot dodge it): a datagram pair can sendto() any socket path, and the kernel
#   makes SOCK_RAW a datagram one. Stream pairs stay: many programs talk to their children so, and
#   an unnamed stream pair reaches nothing else.
# - io_uring: it can open sockets (and more) without the system calls above.
# - kernel keyrings (keyctl, add_key, request_key): not namespaced; root's keys were readable.
# - the rest of what container profiles refuse that a build or test does not need and that reaches
#   the kernel or host state beyond the process: BPF programs, perf events, userfaultfd, modules,
#   kexec, the kernel log, clocks, swap, accounting, quotas, reboot, handle-based opens, old
#   interfaces. Most need capabilities the sandbox has not, so this is a second lock.
# Not refused: ptrace, process_vm_*, pidfd_getfd, personality (they reach only the sandbox's own
# pid namespace), user namespaces (the kernel does not let a capless root map uid 0 in one).
# seccomp_init takes the native architecture only: other ABIs (32-bit, x32) are killed.
_REQUIRED = ("socket", "socketpair", "io_uring_setup", "keyctl", "add_key", "request_key")
SECCOMP_RULES: tuple[Rule, ...] = (
    ("socket", _EPERM, (_eq(0, _AF_UNIX),)),
    *(  # the types 0, 2-3, 4-7, 8-15: four masked comparisons
        ("socketpair", _EPERM, (_eq(0, _AF_UNIX), _eq(1, value, mask)))
        for mask, value in _blocks(set(range(_SOCK_TYPE_MASK + 1)) - {_SOCK_STREAM}, _SOCK_TYPE_MASK)
    ),
    *_family_rules(),
    *((name, _EPERM, ()) for name in (
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        "keyctl", "add_key", "request_key",
        "bpf", "perf_event_open", "userfaultfd", "fanotify_init", "lookup_dcookie",
        "init_module", "finit_module", "delete_module", "create_module", "query_module",
        "get_kernel_syms", "kexec_load", "kexec_file_load", "reboot", "syslog", "acct",
        "swapon", "swapoff", "quotactl", "quotactl_fd", "settimeofday", "stime", "clock_settime",
        "clock_adjtime", "open_by_handle_at", "iopl", "ioperm", "vm86", "vm86old", "uselib",
        "ustat", "sysfs", "_sysctl", "nfsservctl", "vhangup",
    )),
)  # fmt: skip


@functools.cache
def seccomp_filter() -> bytes:
    """The BPF program for bwrap --seccomp, built once per process with the system's libseccomp
    (a small ctypes binding: a Python package would look the library up with a subprocess)."""
    import ctypes

    try:
        # PyDLL: each call keeps the interpreter lock (~120 calls, each microseconds). CDLL drops
        # and takes it back around every call, and the probe runs while start-up imports on
        # other threads: each hand-over waited for them (~2 % of a cold start's CPU).
        lib = ctypes.PyDLL("libseccomp.so.2")
    except OSError:
        raise SandboxError(
            "libseccomp.so.2 not found, needed to block unix sockets; install libseccomp2, "
            "or allow unix sockets with sandbox_unix_sockets: true in config.yaml"
        ) from None

    class ArgCmp(ctypes.Structure):
        _fields_ = [
            ("arg", ctypes.c_uint),
            ("op", ctypes.c_int),
            ("datum_a", ctypes.c_uint64),
            ("datum_b", ctypes.c_uint64),
        ]

    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.restype = None
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(ArgCmp),
    ]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_export_bpf.restype = ctypes.c_int

    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise SandboxError("libseccomp could not start a filter")
    try:
        for name, errno, conditions in SECCOMP_RULES:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr == _NR_SCMP_ERROR:  # (another negative number: not on this architecture)
                if name in _REQUIRED:
                    raise SandboxError(f"libseccomp does not know the system call {name} (too old)")
                continue
            cmps = (ArgCmp * max(1, len(conditions)))(*(ArgCmp(*c) for c in conditions))
            rc = lib.seccomp_rule_add_array(ctx, _SCMP_ACT_ERRNO | errno, nr, len(conditions), cmps)
            if rc < 0:
                raise SandboxError(f"libseccomp refused the rule for {name}: {os.strerror(-rc)}")
        fd = os.memfd_create("mino-seccomp", os.MFD_CLOEXEC)
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise SandboxError(f"libseccomp could not export the filter: {os.strerror(-rc)}")
            size = os.lseek(fd, 0, os.SEEK_CUR)
            program = os.pread(fd, size, 0)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    if not program or len(program) % 8:
        raise SandboxError("libseccomp exported an empty or malformed filter")
    return program


def _filter_fd(program: bytes) -> int:
    """A pipe that holds the BPF program, for bwrap --seccomp FD (it reads to the end)."""
    r, w = os.pipe()  # a few hundred bytes: fits the pipe's buffer, so the write never blocks
    try:
        os.write(w, program)
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return r


# --- detection -------------------------------------------------------------------------------------


def detect(
    setting: str = "auto", unix_sockets: bool = False, network: tuple[str, ...] = ()
) -> tuple[Sandbox | None, str]:
    """The sandbox to use and the start-up line that says so (`unix_sockets`: config.yaml's
    sandbox_unix_sockets, which lets sandboxed commands use unix sockets: no seccomp filter then;
    `network`: its sandbox_network, which bwrap commands reach through network.py's proxy)."""
    if setting == "off":
        return None, "Sandbox: unavailable (sandbox: off in config)"
    if setting != "auto":
        return None, f"Sandbox: unavailable (sandbox: {setting!r} in config is not auto or off)"
    if sys.platform.startswith("linux"):
        if shutil.which("bwrap") is None:
            return None, "Sandbox: unavailable (bwrap not found; install bubblewrap)"
        seccomp = None
        if not unix_sockets:
            try:
                seccomp = seccomp_filter()
            except SandboxError as e:
                return None, f"Sandbox: unavailable ({e})"
        sandbox = Sandbox("bwrap", seccomp)
    elif sys.platform == "darwin":
        if shutil.which("sandbox-exec") is None:
            return None, "Sandbox: unavailable (sandbox-exec not found)"
        sandbox = Sandbox("sandbox-exec")
    else:
        return None, f"Sandbox: unavailable (no sandbox on {sys.platform})"
    try:
        problem = _probe(sandbox)
        if problem == _COVERS_WRITABLE:  # bwrap left its own covers writable here: Mino binds them too
            sandbox = Sandbox("bwrap", sandbox.seccomp, bind_covered=True)
            problem = _probe(sandbox)
    except SandboxBusy as e:
        unready = Sandbox(sandbox.name, sandbox.seccomp, sandbox.bind_covered, unready=str(e))
        return unready, sandbox_not_started(str(e), sandbox.name)
    if problem:
        return None, f"Sandbox: unavailable ({problem})"
    if network and sandbox.name == "bwrap":
        sandbox = Sandbox("bwrap", sandbox.seccomp, sandbox.bind_covered, network=network)
    elif network:
        return sandbox, f"Sandbox: {sandbox.name} (sandbox_network is not supported here: no network)"
    if sandbox.name == "bwrap" and unix_sockets:
        return sandbox, "Sandbox: bwrap (unix sockets allowed by config.yaml)"
    return sandbox, f"Sandbox: {sandbox.name}"


def _probe(sandbox: Sandbox) -> str | None:
    """Run one command in the sandbox; the reason it failed or is too weak, or None."""
    import subprocess  # only here: most start-ups (--version, --help) never need it

    # The namespace checks name the descriptors' numbers: the script is completed once they are open.
    command = ["bash", "-c", PROBE_SCRIPT] if sandbox.name == "bwrap" else ["true"]
    try:
        argv, fds = sandbox.wrap(command, Path(tempfile.gettempdir()).resolve(), masked=False)
    except OSError as e:
        busy = _not_now(e, f"{sandbox.name} cannot be prepared")
        if busy is not None:
            raise busy from None
        return f"{sandbox.name} cannot be prepared: {e.strerror or e}"
    from . import orphans

    try:
        if PROBE_SCRIPT in argv:
            host_ns = _host_namespaces()
            fds += host_ns
            argv[argv.index(PROBE_SCRIPT)] += _namespace_script(host_ns)
        # Registered like a command: a command's leftovers are told apart from it.
        proc, run = orphans.start(
            lambda: subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=fds,
            ),
            orphans.new_marker(),
            bare=False,
        )
    except OSError as e:
        busy = _not_now(e, f"{sandbox.name} cannot be started")
        if busy is not None:
            raise busy from None
        return f"{sandbox.name} cannot be started: {e.strerror or e}"
    finally:
        for fd in fds:
            os.close(fd)
    try:
        stdout, stderr = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise SandboxBusy(
            f"{sandbox.name} did not finish a test command within {PROBE_TIMEOUT_S:g} s"
        ) from None
    finally:
        orphans.end(run)
    if proc.returncode != 0:
        lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        return f"{sandbox.name} cannot create a sandbox here: {detail}"
    if sandbox.name == "bwrap":
        return _too_weak(stdout.decode("utf-8", "replace"), sandbox.seccomp is not None, sandbox.bind_covered)
    return None


def _host_namespaces() -> list[int]:
    """Descriptors of Mino's own namespaces (UNSHARED_NAMESPACES), passed to the probe: inside, a
    `-ef` against its own tells whether it has a fresh one. A descriptor, not a path: the host's
    /proc is not visible in the sandbox, and its own fds need no access check."""
    fds: list[int] = []
    try:
        for name in UNSHARED_NAMESPACES:
            fds.append(os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    return fds


def _namespace_script(fds: list[int]) -> str:
    """Bash builtins: "Shared:NAME" for each namespace the sandbox shares with Mino, and for one
    it cannot compare (the descriptor did not arrive)."""
    return "".join(
        f"; [ -e /proc/self/fd/{fd} ] && ! [ /proc/self/ns/{name} -ef /proc/self/fd/{fd} ] || echo Shared:{name}"
        for name, fd in zip(UNSHARED_NAMESPACES, fds, strict=True)
    )


def _too_weak(status: str, want_seccomp: bool, bind_covered: bool = True) -> str | None:
    """Why the probe's /proc/self/status lines show a sandbox too weak to trust, or None."""
    seen = {}
    writable = []
    shared = []
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Writable":
            writable.append(value.strip())
        elif key == "Shared":
            shared.append(value.strip())
        else:
            seen[key.strip()] = value.strip()
    caps = seen.get("CapEff")
    if caps != NO_CAPABILITIES:
        return f"bwrap leaves sandboxed commands with capabilities here (CapEff {caps or 'unknown'})"
    if seen.get("NoNewPrivs") != "1":
        return "bwrap does not set no_new_privs here"
    if want_seccomp and seen.get("Seccomp") != "2":
        return f"bwrap did not apply the seccomp filter (Seccomp {seen.get('Seccomp') or 'unknown'})"
    if shared:
        return f"sandboxed commands share the host's {', '.join(shared)} namespace here"
    if writable and not bind_covered and all(_covered(path) for path in writable):
        return _COVERS_WRITABLE
    if writable:
        return f"sandboxed commands could change kernel settings here ({', '.join(writable)} writable)"
    return None


_COVERS_WRITABLE = "covers"  # _too_weak: only what LEFT_TO_PROBE names was writable (detect retries)


def _covered(path: str) -> bool:
    return any(path == cover or path.startswith(cover + "/") for cover in LEFT_TO_PROBE)
