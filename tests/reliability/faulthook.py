"""Run the real `mino` with a test-only hook on the OS calls behind every durable write.

`python -m faulthook ARGS` is `mino ARGS` (the same `mino_server.main.main`), plus, from the environment:

- `MINO_TEST_CRASH_AT="N:how"`: SIGKILL this process at the N-th durable operation (counted from 1).
  `how` is `before` (the operation never happens), `after` (it happened, nothing later did) or `torn`
  (a write puts only a prefix of its bytes on disk first: what a power cut leaves behind).
- `MINO_TEST_FAULT="kind:errno[:nth]"`: the nth (default 1st) operation of that kind, and every later
  one, fails with OSError(errno) — a full or failing disk stays full or failing.
- `MINO_TEST_OPS_LOG=PATH`: write "kind path" per operation there (to see what a scenario does).

A durable operation is os.write / os.fsync / os.ftruncate on a regular file, os.replace, os.open with
O_CREAT, os.mkdir — and only when the path lies inside MINO_HOME or the working directory, so
Python's own files, pipes and the terminal are never touched. Kinds: write, fsync, fsync_dir,
ftruncate, replace, create, mkdir.

Why a launcher rather than a `sitecustomize.py` on PYTHONPATH: nothing shadows the system's own
sitecustomize, only this process is hooked (not the bash children), and the hook is installed before
any `mino_server` module is imported, so every `os` reference the code holds sees it.
"""

from __future__ import annotations

import errno as errno_mod
import os
import signal
import stat
import sys
from collections.abc import Callable, Mapping
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_HOOK_VARS = ("MINO_TEST_CRASH_AT", "MINO_TEST_FAULT", "MINO_TEST_OPS_LOG")


def environ(env: Mapping[str, str], **extra: str) -> dict[str, str]:
    """`env` for `python -m faulthook` started in any folder: this folder and the repository on
    PYTHONPATH, the hook's own variables only as `extra` gives them (never inherited)."""
    out = {k: v for k, v in env.items() if k not in _HOOK_VARS}
    out["PYTHONPATH"] = os.pathsep.join([_HERE, os.path.dirname(os.path.dirname(_HERE))])
    out.update(extra)
    return out


class _Hook:
    def __init__(self, env: dict[str, str]) -> None:
        home = env.get("MINO_HOME") or os.path.expanduser("~/.mino")
        self.roots = [os.path.realpath(home), os.path.realpath(os.getcwd())]
        self.count = 0
        self.crash_at, self.crash_how = 0, "before"
        if env.get("MINO_TEST_CRASH_AT"):
            n, _, how = env["MINO_TEST_CRASH_AT"].partition(":")
            self.crash_at, self.crash_how = int(n), how or "before"
        self.fault_kind, self.fault_errno, self.fault_nth = "", 0, 0
        if env.get("MINO_TEST_FAULT"):
            parts = env["MINO_TEST_FAULT"].split(":")
            self.fault_kind = parts[0]
            self.fault_errno = getattr(errno_mod, parts[1]) if not parts[1].isdigit() else int(parts[1])
            self.fault_nth = int(parts[2]) if len(parts) > 2 else 1
        self.seen: dict[str, int] = {}
        self.ops_log = env.get("MINO_TEST_OPS_LOG")
        self.real: dict[str, Callable[..., Any]] = {}

    def inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == r or real.startswith(r + os.sep) for r in self.roots)

    def fd_path(self, fd: int) -> str | None:
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                return None
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return path if self.inside(path) else None

    def at(self, path: Any, dir_fd: int | None) -> str:
        """The path a call with `dir_fd` (the file tools' writes) means."""
        path = os.fspath(path)
        if dir_fd is None:
            return path
        try:
            return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        except OSError:
            return path

    def step(self, kind: str, path: str) -> str | None:
        """Count one durable operation; returns 'torn' when the caller must tear it, else None."""
        self.count += 1
        if self.ops_log:
            with open(self.ops_log, "a") as f:
                f.write(f"{self.count} {kind} {path}\n")
        self.seen[kind] = self.seen.get(kind, 0) + 1
        if kind == self.fault_kind and self.seen[kind] >= self.fault_nth:
            raise OSError(self.fault_errno, os.strerror(self.fault_errno))
        if self.count == self.crash_at:
            if self.crash_how == "before":
                die()
            return self.crash_how
        return None

    def install(self) -> None:
        real = self.real
        for name in ("write", "fsync", "ftruncate", "replace", "open", "mkdir"):
            real[name] = getattr(os, name)

        def write(fd: int, data: Any) -> int:
            path = self.fd_path(fd)
            if path is None:
                return real["write"](fd, data)
            how = self.step("write", path)
            if how == "torn":
                view = memoryview(data)
                real["write"](fd, view[: max(1, len(view) // 2)])
                die()
            n = real["write"](fd, data)
            if how == "after":
                die()
            return n

        def fsync(fd: int) -> None:
            path = self.fd_path(fd)
            if path is None:
                return real["fsync"](fd)
            kind = "fsync_dir" if os.path.isdir(path) else "fsync"
            how = self.step(kind, path)
            real["fsync"](fd)
            if how:
                die()

        def ftruncate(fd: int, length: int) -> None:
            path = self.fd_path(fd)
            if path is None:
                return real["ftruncate"](fd, length)
            how = self.step("ftruncate", path)
            real["ftruncate"](fd, length)
            if how:
                die()

        def replace(src: Any, dst: Any, **kw: Any) -> None:
            where = self.at(dst, kw.get("dst_dir_fd"))
            if not self.inside(where):
                return real["replace"](src, dst, **kw)
            how = self.step("replace", where)
            real["replace"](src, dst, **kw)
            if how:
                die()

        def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            where = self.at(path, kw.get("dir_fd"))
            if not flags & os.O_CREAT or not self.inside(where):
                return real["open"](path, flags, mode, **kw)
            how = self.step("create", where)
            fd = real["open"](path, flags, mode, **kw)
            if how:
                die()
            return fd

        def mkdir(path: Any, mode: int = 0o777, **kw: Any) -> None:
            # An existing folder gives EEXIST even on a full disk: only a real creation counts.
            where = self.at(path, kw.get("dir_fd"))
            if not self.inside(where) or os.path.lexists(where):
                return real["mkdir"](path, mode, **kw)
            how = self.step("mkdir", where)
            real["mkdir"](path, mode, **kw)
            if how:
                die()

        os.write, os.fsync, os.ftruncate, os.replace = write, fsync, ftruncate, replace  # type: ignore[assignment]
        os.open, os.mkdir = open_, mkdir  # type: ignore[assignment]


def die() -> None:
    # Nothing is flushed, nothing is cleaned up: exactly what a SIGKILL from outside leaves.
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    _Hook(dict(os.environ)).install()
    from mino_server.main import main as mino_main

    return mino_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
