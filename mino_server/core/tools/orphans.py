"""Ending what a command leaves running when no sandbox does it (Linux).

bash kills a command's process group when it ends; a process that left the group (`setsid`,
`nohup … &` under job control, a daemon's double fork) would outlive it. So Mino makes itself a
child subreaper (PR_SET_CHILD_SUBREAPER): an orphan is reparented to Mino instead of init. When a
command ends, Mino kills every adopted child that came from it, with everything below it, and
reaps them. Each step reads a few /proc files; nothing polls while commands run.

Which command an adopted child came from (several may run at once, one per conversation):
1. its session is the command's (the shell leads its own session; only setsid leaves it), or
2. its environment carries the command's marker (MINO_COMMAND_ID; inherited unless cleared); the
   marker of another command that runs now leaves it to that one, or
3. neither (setsid with a cleared environment, or a marker no running command has: anyone can
   write one): it started while this command ran and no other running command had started
   before it; otherwise it is left for the last of those to end.
Every child process Mino starts goes through start() (commands, the sandbox probe) or is a service
(an MCP server: service() gives it a marker of its own, and what carries that marker is never a
command's), so an adopted child that is none of them is some command's. Elsewhere (macOS), only the
process group is killed.

Nothing Mino starts outlives it: end_service() ends what a stopped server left (its `setsid`
children, adopted by Mino once the server is gone), and when Mino's process exits, end_all() kills
every descendant it still has (atexit, and every front end's os._exit, which skips atexit). What
this cannot cover (Mino itself killed with SIGKILL) is in docs/SECURITY.md.
"""

from __future__ import annotations

import ctypes  # ~2 ms: this module loads with the sandbox probe (store.py), before any command runs
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from ..values import Frozen, frozen

MARKER = "MINO_COMMAND_ID"
_MARKER_KEY = b"\0" + MARKER.encode() + b"="
REAP_WAIT_S = 2.0  # for killed leftovers to be gone (a process in uninterruptible sleep may not)
_PR_SET_CHILD_SUBREAPER = 36


class _Process(Protocol):
    @property
    def pid(self) -> int: ...


P = TypeVar("P", bound=_Process)  # what spawn() returns: a subprocess.Popen


@frozen
class Run(Frozen):
    pid: int  # the command's shell (or the outer bwrap): leader of its own session
    marker: bytes  # b"\0MINO_COMMAND_ID=<token>\0", to find in "\0" + /proc/PID/environ
    start: int  # its start time, in clock ticks since boot


_lock = threading.Lock()  # held while a command's process is started and registered
_running: dict[int, Run] = {}
_services: set[bytes] = set()  # the markers of the services (MCP servers) that run now
# Services registered whose process may not have exec'd yet: until it has, /proc shows it with
# Mino's own environment (no marker), so a command's cleanup must not judge unmarked children.
_starting: set[bytes] = set()
_adopting: bool | None = None  # None: not tried yet
_children_files = True  # /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN); else a /proc scan


def new_marker() -> str:
    return os.urandom(8).hex()


def prepare() -> None:
    """Become a child subreaper (once; Linux). Safe to call from any thread."""
    global _adopting, _children_files
    if _adopting is not None:
        return
    with _lock:
        if _adopting is not None:
            return
        ok = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.prctl.argtypes = [
                    ctypes.c_int,
                    ctypes.c_ulong,
                    ctypes.c_ulong,
                    ctypes.c_ulong,
                    ctypes.c_ulong,
                ]
                libc.prctl.restype = ctypes.c_int
                ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                ok = False
            _children_files = os.path.exists(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/children")
            if ok:
                import atexit

                atexit.register(end_all)
        _adopting = ok


def start(spawn: Callable[[], P], marker: str, bare: bool) -> tuple[P, Run]:
    """Start a command's process with `spawn()` (its environment carries MARKER=`marker`) and
    register it. `bare`: no sandbox will end its leftovers, so Mino must be able to adopt them."""
    if bare:
        prepare()
    with _lock:  # registered before any cleanup can see it as an unknown child
        proc = spawn()
        run = Run(proc.pid, _MARKER_KEY + marker.encode() + b"\0", _stat_of(proc.pid)[3] if _linux() else 0)
        _running[proc.pid] = run
    return proc, run


def end(run: Run) -> None:
    """After the command's shell was reaped and its group killed: kill and reap its leftovers."""
    with _lock:
        _running.pop(run.pid, None)
    if not _adopting:
        return
    me = os.getpid()
    killed: dict[int, int] = {}  # pid → start time of each process sent SIGKILL
    deadline = time.monotonic() + REAP_WAIT_S
    while True:
        busy = False
        with _lock:  # a command being started now is registered before its shell can show here
            others = list(_running.values())
            for pid in _children(me):
                if pid in _running or pid == run.pid:  # the shell itself is Popen's to reap
                    continue
                state, _, sid, start = _stat_of(pid)
                if not state or (killed.get(pid) != start and not _belongs(pid, sid, start, run, others)):
                    continue
                if state != "Z" and killed.get(pid) != start:
                    _kill_tree(pid, start, killed, me)
                _reap(pid)
                busy = True  # acted on one: look again (its children may be Mino's now)
        # Until a round finds nothing: what was killed further down is reparented to Mino as its
        # parent dies, and reaped in a later round.
        if not (busy or _any_left(killed)) or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def service(marker: str) -> str:
    """Register a long-lived child (an MCP server) whose environment carries MARKER=`marker`:
    what carries it belongs to no command. Returns `marker`. Makes Mino a subreaper first, so that
    what the service leaves when it ends is Mino's to end (end_service)."""
    prepare()
    key = _MARKER_KEY + marker.encode() + b"\0"
    with _lock:
        _services.add(key)
        _starting.add(key)
    return marker


def service_started(marker: str) -> None:
    """The service's process has been started (exec'd, its marker in its environment), or its
    start failed: unmarked children are a command's again."""
    with _lock:
        _starting.discard(_MARKER_KEY + marker.encode() + b"\0")


def end_service(marker: str) -> None:
    """After the service was stopped: kill and reap every process Mino adopted that carries its
    marker (and everything below each), the service itself if it is still there."""
    key = _MARKER_KEY + marker.encode() + b"\0"
    with _lock:
        _services.discard(key)
        _starting.discard(key)
    if _adopting:
        _sweep(lambda pid: key in _environ(pid))


def end_all() -> None:
    """Mino is exiting: kill every descendant it still has, and reap them. No lock taken (this may
    run while another thread is stuck holding one), nothing but /proc reads and signals."""
    if _adopting:
        _sweep(lambda pid: True)


def _sweep(chosen: Callable[[int], bool]) -> None:
    """Kill the children of Mino that `chosen` picks, each with its tree, until none is left."""
    me = os.getpid()
    killed: dict[int, int] = {}
    deadline = time.monotonic() + REAP_WAIT_S
    while True:
        busy = False
        for pid in _children(me):
            state, _, _, start = _stat_of(pid)
            if not state or (killed.get(pid) != start and not chosen(pid)):
                continue
            if state != "Z" and killed.get(pid) != start:
                _kill_tree(pid, start, killed, me)
            _reap(pid)
            busy = True
        if not (busy or _any_left(killed)) or time.monotonic() > deadline:
            return
        time.sleep(0.001)


def _linux() -> bool:
    return sys.platform.startswith("linux")


def _belongs(pid: int, sid: int, start: int, run: Run, others: list[Run]) -> bool:
    if sid == run.pid:
        return True
    env = _environ(pid)
    if run.marker in env:
        return True
    if any(other.marker in env for other in others):
        return False  # a command's that runs now: it ends with that one
    if any(key in env for key in _services):
        return False  # a running MCP server or what it started: it ends with that server
    if _starting:
        return False  # perhaps a server between fork and exec: left alone (end_all ends it at exit)
    # No marker, or one no running command has (forged, or copied from an ended command): only
    # the order of starts can tell.
    return start >= run.start and not any(other.start <= start for other in others)


def _kill_tree(pid: int, start: int, killed: dict[int, int], me: int) -> None:
    """SIGKILL `pid` and everything below it, each recorded in `killed` so that it is recognised
    (and reaped) once it is reparented to Mino. A process sent SIGKILL forks no more, so its
    children read after the kill (or, if it died already, before) are all of them."""
    stack = [(pid, start)]
    while stack:
        p, st = stack.pop()
        before = _children(p)
        if not _kill(p, st):
            continue
        killed[p] = st
        for child in dict.fromkeys([*before, *_children(p)]):
            state, parent, _, child_start = _stat_of(child)
            if state and parent in (p, me) and child not in killed:  # not a newer process of that number
                stack.append((child, child_start))


def _kill(pid: int, start: int) -> bool:
    """SIGKILL the process `pid` that started at `start` — never a newer process given its number."""
    import signal

    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False  # gone
    except AttributeError:  # no pidfd: our own children at least cannot be recycled before we reap
        fd = -1
    try:
        if _stat_of(pid)[3] != start:
            return False
        if fd >= 0:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):  # gone, or another user's (a setuid program)
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def _reap(pid: int) -> None:
    """Reap our child `pid` if it has ended."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _any_left(killed: dict[int, int]) -> bool:
    return any(_stat_of(pid)[3] == start for pid, start in killed.items())


def _children(pid: int) -> list[int]:
    if not _children_files:
        return _children_by_scan(pid)
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return kids


def _children_by_scan(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _stat_of(int(entry))[1] == pid:
            kids.append(int(entry))
    return kids


def _stat_of(pid: int) -> tuple[str, int, int, int]:
    """(state, parent, session, start time) of a process; ("", 0, 0, 0) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2 :].split()
        return fields[0].decode(), int(fields[1]), int(fields[3]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return "", 0, 0, 0


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return b"\0" + f.read()
    except OSError:
        return b""  # a zombie's, or another user's
