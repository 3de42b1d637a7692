"""In-process disk faults at the OS-call layer the durable code uses.

`inject(monkeypatch, Fault(...))` replaces the `os` module seen by mino_server.core.durable,
mino_server.core.sessions.log and mino_server.core.sessions.store (and durable's `tempfile`) with a stand-in
that fails the chosen operation. Only those three modules see it: the test runner, the scripted
model, the bash tool's pipes and everything else keep the real `os`.

Kinds: write (the write fails), partial (half of the bytes are written, then the write fails: a
disk filling up mid-record), fsync, fsync_dir, replace, create (the temp file cannot be created),
ftruncate. A fault is sticky: once it fired, every later matching operation fails too, as a full or
failing disk does.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from mino_server.core import durable
from mino_server.core.sessions import log as log_mod
from mino_server.core.sessions import store as store_mod


@dataclass
class Fault:
    kind: str
    err: int
    path: str = ""  # the fault applies to paths containing this text ("" = any)
    record: str | None = None  # session appends: only the write/fsync of this record type
    fired: int = 0
    _last: dict[int, bytes] = field(default_factory=dict)  # fd -> the last bytes written to it

    def error(self) -> OSError:
        self.fired += 1
        return OSError(self.err, os.strerror(self.err))


def fd_path(fd: int) -> str:
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return ""
    import fcntl

    try:
        raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), b"\0" * 1024)
    except OSError:
        return ""
    return raw.split(b"\0", 1)[0].decode()


def at_path(path: Any, dir_fd: int | None) -> str:
    """The path an `os` call with `dir_fd` means, for matching a fault by path."""
    path = os.fspath(path)
    return os.path.join(fd_path(dir_fd), path) if dir_fd is not None else path


class FaultyOS:
    """`os` for the durable modules, with one fault."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _match(self, kind: str, path: str, data: bytes = b"") -> bool:
        f = self.fault
        if f.kind != kind or (f.path and f.path not in path):
            return False
        if f.fired:
            return True  # sticky
        return f.record is None or f'"type":"{f.record}"'.encode() in data

    def write(self, fd: int, data: Any) -> int:
        data = bytes(data)
        path = fd_path(fd)
        self.fault._last[fd] = data
        if self._match("write", path, data):
            raise self.fault.error()
        if self._match("partial", path, data):
            os.write(fd, data[: max(1, len(data) // 2)])
            raise self.fault.error()
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        path = fd_path(fd)
        kind = "fsync_dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync"
        if self._match(kind, path, self.fault._last.get(fd, b"")):
            raise self.fault.error()
        os.fsync(fd)

    def replace(self, src: Any, dst: Any, **kw: Any) -> None:
        if self._match("replace", at_path(dst, kw.get("dst_dir_fd"))):
            raise self.fault.error()
        os.replace(src, dst, **kw)

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        # A durable write's temp file: always a fresh one (O_EXCL, `.NAME.XXXX.tmp`) created relative
        # to its folder's descriptor, as lock files and new session files are too.
        temp = flags & os.O_EXCL and str(path).endswith(".tmp")
        if dir_fd is not None and temp and self._match("create", at_path(path, dir_fd)):
            raise self.fault.error()
        return os.open(path, flags, mode, dir_fd=dir_fd)

    def ftruncate(self, fd: int, length: int) -> None:
        if self._match("ftruncate", fd_path(fd)):
            raise self.fault.error()
        os.ftruncate(fd, length)


def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> Fault:
    faulty = FaultyOS(fault)
    for module in (durable, log_mod, store_mod):
        monkeypatch.setattr(module, "os", faulty)
    return fault
