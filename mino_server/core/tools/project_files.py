"""The port for what a client can do for the file tools: open, read and write one project file.

The file tools (files.py) reach project files only through `ToolContext.files`, a `ProjectFiles`;
the disk (`DiskFiles`, below) is the default. A front end whose client can do it for Mino (an
editor's unsaved buffers and undo: ACP's fs/read_text_file and fs/write_text_file) passes its own
implementation to `Conversation(files=...)`. Mino's own rules stay on this side of the port, whoever
implements it: the path is judged (paths.locate: inside the working directory, never MINO_HOME,
protected folders) before a port sees it, and an approved write is bound to the sha256 of the bytes
the port returned when the person was asked (`write(..., expected=)`).

Every write of a project file goes through here, so what must happen around one (keeping the file's
previous state for a rewind) has one place too.

The disk: paths.open_parent opens the real path's folders one at a time without following a link,
reads and writes happen relative to that folder, and every write goes through
durable.atomic_write_at, so a crash leaves the old or the new file, never a mix.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import stat
from collections.abc import Callable
from typing import BinaryIO, Protocol

from .. import durable
from ..errors import ToolFailure
from ..values import Frozen, frozen
from .paths import Target, changed_while_in_use, final_name, open_parent

CHANGED_AFTER_APPROVAL = "File changed after approval; nothing was written."


@frozen
class FileBytes(Frozen):
    """A project file as a port read it: its bytes, and the permission bits a rewrite keeps."""

    data: bytes
    mode: int


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Called by a write once the file is known to hold the expected bytes (None: absent), before anything
# is written: a checkpoint keeps them there (core/checkpoints.py); raising stops the write.
BeforeWrite = Callable[["FileBytes | None"], None]


class ProjectFiles(Protocol):
    """Where the file tools read and write a project file (`target`: a path paths.locate judged)."""

    def open(self, target: Target) -> BinaryIO | None:
        """The file to read from its start (the caller closes it); None when it does not exist.
        ToolFailure for a folder, a device or a file that cannot be opened."""
        ...

    def read(self, target: Target) -> FileBytes | None:
        """The whole file; None when it does not exist. ToolFailure as for `open`."""
        ...

    def write(
        self, target: Target, data: bytes, expected: str | None, before_write: BeforeWrite | None = None
    ) -> None:
        """Replace the file with `data` (missing folders are made) if the sha256 of its bytes is
        still `expected` (None: it must still not exist); else ToolFailure(CHANGED_AFTER_APPROVAL)
        and nothing is written. `before_write` gets the bytes found (the ones checked) first."""
        ...


class DiskFiles:
    """The project's files on this machine's disk: the default `ProjectFiles`."""

    def open(self, target: Target) -> BinaryIO | None:
        fd = _open_regular(target)
        return None if fd is None else open(fd, "rb")

    def read(self, target: Target) -> FileBytes | None:
        fd = _open_regular(target)
        return None if fd is None else _read_fd(fd, target.rel)

    def write(
        self, target: Target, data: bytes, expected: str | None, before_write: BeforeWrite | None = None
    ) -> None:
        parent = open_parent(target)
        try:
            found = None if parent is None else read_at(parent, target)
            if (None if found is None else sha256(found.data)) != expected:
                raise ToolFailure(CHANGED_AFTER_APPROVAL)
            if parent is None:  # missing folders: make them, each opened without following links
                parent = open_parent(target, create=True)
                assert parent is not None
            if found is None:
                if _exists_at(parent, final_name(target)):  # appeared since the check above
                    raise ToolFailure(CHANGED_AFTER_APPROVAL)
                mode = _new_file_mode()
            else:
                mode = found.mode
            if before_write is not None:
                before_write(found)
            _write(parent, target, data, mode)
        finally:
            if parent is not None:
                os.close(parent)


DISK = DiskFiles()


def _open_regular_at(parent: int, name: str, rel: str) -> int | None:
    """A read descriptor for the regular file `name` in folder `parent`, None when absent;
    directories and devices are refused."""
    try:
        # O_NOFOLLOW: the name comes from a resolved path, so a link here was swapped in since.
        # O_NONBLOCK: opening a FIFO must not hang the turn before the type check refuses it.
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise changed_while_in_use(rel) from None
        raise ToolFailure(f"Cannot open {rel}: {e.strerror or e}.") from None
    try:
        _require_regular(os.fstat(fd), rel)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_regular(target: Target) -> int | None:
    parent = open_parent(target)
    if parent is None:
        return None
    try:
        return _open_regular_at(parent, final_name(target), target.rel)
    finally:
        os.close(parent)


def _read_fd(fd: int, rel: str) -> FileBytes:
    """All bytes and the permission bits of an open file; closes it."""
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        # rwx bits only: a rewrite never makes a file setuid or setgid
        return FileBytes(b"".join(chunks), stat.S_IMODE(os.fstat(fd).st_mode) & 0o777)
    except OSError as e:
        raise ToolFailure(f"Cannot read {rel}: {e.strerror or e}.") from None
    finally:
        os.close(fd)


def read_at(parent: int, target: Target) -> FileBytes | None:
    """The target in the open folder `parent`, None when it is absent."""
    fd = _open_regular_at(parent, final_name(target), target.rel)
    return None if fd is None else _read_fd(fd, target.rel)


def _exists_at(parent: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # something is there that cannot even be looked at: not "absent"
    return True


def _require_regular(st: os.stat_result, rel: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolFailure(f"{rel} is a directory, not a file.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailure(f"{rel} is not a regular file.")


@functools.cache
def _new_file_mode() -> int:
    """0666 minus the umask, as a shell redirection would create the file (0644 under umask 022)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc (macOS): read the umask by setting it and putting it back
    os.umask(mask)
    return 0o666 & ~mask


def _write(parent: int, target: Target, data: bytes, mode: int) -> None:
    rel = target.rel
    try:
        durable.atomic_write_at(parent, final_name(target), data, mode)
    except durable.NotDurable as e:
        raise ToolFailure(
            f"Wrote {rel}, but could not sync its folder to disk ({e.strerror or e}); "
            "the change may not survive a power cut."
        ) from None
    except OSError as e:
        raise ToolFailure(f"Cannot write {rel}: {e.strerror or e}; nothing was written.") from None
