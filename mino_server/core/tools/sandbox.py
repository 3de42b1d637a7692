"""The bash sandbox (docs/BEHAVIOUR.md, "Sandbox"): bubblewrap on Linux, sandbox-exec on macOS.

Inside bubblewrap: the whole file system read-only except the working directory; in it `.git`,
`.mino` and `.vscode` read-only at any depth (what they hold runs later, outside the sandbox: git
hooks and core.fsmonitor, project skills, editor tasks; found by protected.py's bounded walk); MINO_HOME read-only like the rest, or hidden (an
empty read-only folder) when it is inside the working directory (Mino started in ~); a private /tmp; no network; a fresh /proc of its own pid namespace; no capabilities, even when Mino
runs as root; no new privileges; and a seccomp filter (built with libseccomp) that refuses unix
sockets, which read-only mounts do not stop (connect() on a socket file needs no write access).
Nothing outlives the command.

detect() runs one probe that reads /proc/self/status inside the sandbox, so a machine where the
sandbox cannot start, or starts weaker than that (capabilities kept, no seccomp), says why at
start-up and bash runs unsandboxed — asking first — instead of trusting a weak sandbox.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..values import Frozen

PROBE_TIMEOUT_S = 5.0
# Folders of the working directory whose contents run later outside the sandbox.
PROTECTED_DIRS = (".git", ".mino", ".vscode")
# A bash builtin loop (no extra process): what the sandbox really gave a command.
PROBE_SCRIPT = (
    "while IFS= read -r line; do case $line in CapEff:*|NoNewPrivs:*|Seccomp:*) "
    'echo "$line";; esac; done </proc/self/status'
)
NO_CAPABILITIES = "0000000000000000"


class SandboxError(Exception):
    """Why the sandbox cannot be made as strong as it must be; one line for the start-up message."""


@dataclass(frozen=True, eq=False, repr=False)
class Sandbox(Frozen):
    name: str  # "bwrap" | "sandbox-exec"
    # bwrap: the seccomp BPF program (refuses unix sockets); None when config.yaml allows them.
    seccomp: bytes | None = field(default=None, repr=False)

    def wrap(
        self, argv: list[str], workdir: Path, home: Path | None = None, protected: list[str] | None = None
    ) -> tuple[list[str], list[int]]:
        """`argv` as run inside the sandbox, with `workdir` writable and current, and MINO_HOME
        (`home`) out of reach; plus the descriptors to pass to it (pass_fds), which the caller
        closes once the process is started. `protected`: the paths to keep read-only in the working
        directory (protected.mount_sources, at any depth); None: the top-level ones."""
        if self.name == "bwrap":
            fds = [_filter_fd(self.seccomp)] if self.seccomp is not None else []
            try:
                return bwrap_argv(argv, workdir, home, fds[0] if fds else None, protected), fds
            except BaseException:
                for fd in fds:
                    os.close(fd)
                raise
        if self.name == "sandbox-exec":
            return ["sandbox-exec", "-p", macos_profile(workdir, home=home, protected=protected), *argv], []
        raise ValueError(f"unknown sandbox {self.name!r}")


def bwrap_argv(
    argv: list[str],
    workdir: Path,
    home: Path | None = None,
    seccomp_fd: int | None = None,
    protected: list[str] | None = None,
) -> list[str]:
    wd = str(workdir)
    out = [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",  # a fresh one for the new pid namespace: no other process is visible
        "--tmpfs", "/tmp",
        "--bind", wd, wd,  # after the /tmp tmpfs, so a working directory under /tmp stays visible
    ]  # fmt: skip
    # After the workdir bind: read-only over the writable.
    for source in protected_paths(workdir) if protected is None else protected:
        out += ["--ro-bind", source, source]
    hide = _home_to_hide(workdir, home)
    if hide is not None:  # empty and read-only: a write fails instead of vanishing
        out += ["--tmpfs", hide, "--remount-ro", hide]
    out += [
        "--unshare-net",
        "--unshare-pid",  # when the shell ends, the namespace's init ends every process left in it
        "--die-with-parent",  # Mino (or our kill of bwrap) ending takes the sandbox with it
        "--new-session",  # no TIOCSTI into a terminal; the outer bwrap stays in our process group
        "--cap-drop", "ALL",  # root keeps every capability otherwise (and could remount / read-write)
    ]  # fmt: skip
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    return [*out, "--chdir", wd, "--", *argv]


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
        if os.path.islink(path):
            target = os.path.realpath(path)
            if not os.path.exists(target) or not Path(target).is_relative_to(workdir):
                continue
            path = target
        found.append(path)
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
) -> str:
    """A Seatbelt (SBPL) profile: everything allowed but network (unix sockets included) and writes
    outside the workdir and temp, or into MINO_HOME and the workdir's `.git`, `.mino`, `.vscode`."""
    if temp_dirs is None:
        temp_dirs = [
            Path("/private/tmp"),
            Path("/private/var/folders"),
            Path(tempfile.gettempdir()).resolve(),
        ]
    writable = [workdir, *temp_dirs]
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
        "(allow file-write*\n"
        f"{subpaths}\n"
        '  (literal "/dev/null")\n'
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
_AF_VSOCK = 40  # reaches the VM host's services; not confined by --unshare-net on every kernel
_SOCK_DGRAM = 2
_SOCK_TYPE_MASK = 0xF  # the type without SOCK_CLOEXEC / SOCK_NONBLOCK
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_EPERM = 0x00050000 | 1  # SCMP_ACT_ERRNO(EPERM)
_SCMP_CMP_MASKED_EQ = 7
_LOW_32 = 0xFFFFFFFF  # the kernel reads int arguments as 32 bits: compare only those

# (system call, [(argument index, mask, value), ...] all of which must match) → EPERM.
# socketpair(AF_UNIX, SOCK_STREAM) stays allowed (many programs use it; it cannot reach anything),
# but a datagram pair could sendto() any socket path. io_uring can open sockets without socket(2).
# seccomp_init takes the native architecture only: other ABIs (32-bit, x32) are killed.
SECCOMP_RULES: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...] = (
    ("socket", ((0, _LOW_32, _AF_UNIX),)),
    ("socket", ((0, _LOW_32, _AF_VSOCK),)),
    ("socketpair", ((0, _LOW_32, _AF_UNIX), (1, _SOCK_TYPE_MASK, _SOCK_DGRAM))),
    ("io_uring_setup", ()),
)


@functools.cache
def seccomp_filter() -> bytes:
    """The BPF program for bwrap --seccomp, built once per process with the system's libseccomp
    (a small ctypes binding: a Python package would look the library up with a subprocess)."""
    import ctypes

    try:
        lib = ctypes.CDLL("libseccomp.so.2")
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
        for name, conditions in SECCOMP_RULES:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                raise SandboxError(f"libseccomp does not know the system call {name} (too old)")
            cmps = (ArgCmp * max(1, len(conditions)))(
                *(ArgCmp(arg, _SCMP_CMP_MASKED_EQ, mask, value) for arg, mask, value in conditions)
            )
            rc = lib.seccomp_rule_add_array(ctx, _SCMP_ACT_EPERM, nr, len(conditions), cmps)
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


def detect(setting: str = "auto", unix_sockets: bool = False) -> tuple[Sandbox | None, str]:
    """The sandbox to use and the start-up line that says so (`unix_sockets`: config.yaml's
    sandbox_unix_sockets, which lets sandboxed commands use unix sockets: no seccomp filter then)."""
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
    problem = _probe(sandbox)
    if problem:
        return None, f"Sandbox: unavailable ({problem})"
    if sandbox.name == "bwrap" and unix_sockets:
        return sandbox, "Sandbox: bwrap (unix sockets allowed by config.yaml)"
    return sandbox, f"Sandbox: {sandbox.name}"


def _probe(sandbox: Sandbox) -> str | None:
    """Run one command in the sandbox; the reason it failed or is too weak, or None."""
    import subprocess  # only here: most start-ups (--version, --help) never need it

    command = ["bash", "-c", PROBE_SCRIPT] if sandbox.name == "bwrap" else ["true"]
    try:
        argv, fds = sandbox.wrap(command, Path(tempfile.gettempdir()).resolve())
    except OSError as e:
        return f"{sandbox.name} cannot be prepared: {e.strerror or e}"
    from . import orphans

    try:
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
        return f"{sandbox.name} cannot be started: {e.strerror or e}"
    finally:
        for fd in fds:
            os.close(fd)
    try:
        stdout, stderr = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"{sandbox.name} did not finish a test command within {PROBE_TIMEOUT_S:g} s"
    finally:
        orphans.end(run)
    if proc.returncode != 0:
        lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        return f"{sandbox.name} cannot create a sandbox here: {detail}"
    if sandbox.name == "bwrap":
        return _too_weak(stdout.decode("utf-8", "replace"), sandbox.seccomp is not None)
    return None


def _too_weak(status: str, want_seccomp: bool) -> str | None:
    """Why the probe's /proc/self/status lines show a sandbox too weak to trust, or None."""
    seen = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        seen[key.strip()] = value.strip()
    caps = seen.get("CapEff")
    if caps != NO_CAPABILITIES:
        return f"bwrap leaves sandboxed commands with capabilities here (CapEff {caps or 'unknown'})"
    if seen.get("NoNewPrivs") != "1":
        return "bwrap does not set no_new_privs here"
    if want_seccomp and seen.get("Seccomp") != "2":
        return f"bwrap did not apply the seccomp filter (Seccomp {seen.get('Seccomp') or 'unknown'})"
    return None
