"""Durable writes: every write that matters goes through here.

Atomic replace = temp file in the same folder, fsync, rename, fsync of the folder, so a crash
leaves the old or the new bytes, never a mix. Appends are flushed and fsynced before returning.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


class NotDurable(OSError):
    """The rename happened (the new bytes are in place) but the folder's fsync failed afterwards."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and parents) with mode 0700 for the leaf; leave existing modes alone."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)


class NotFollowed(OSError):
    """A folder or file under MINO_HOME is a symbolic link, or not the kind of thing expected there
    (a file where a folder was, a second name of another file): it is not followed or written
    through. The message is one line naming the path; `strerror` is the same line, so callers that
    show `exc.strerror` show it."""

    def __init__(self, path: Path | str, why: str) -> None:
        line = f"{path} {why}"
        super().__init__(errno.ELOOP, line)

    def __str__(self) -> str:
        return str(self.strerror)


# What NotFollowed says, defined once (docs/SECURITY.md, "Writes on the person's behalf").
IS_A_LINK = "is a symbolic link; Mino does not follow links inside its home folder (MINO_HOME)"
NOT_A_FOLDER = "is not a folder; Mino does not follow links inside its home folder (MINO_HOME)"
NOT_A_FILE = "is not a regular file; Mino writes only regular files inside its home folder (MINO_HOME)"
HARD_LINKED = (
    "has {n} hard links; Mino writes only files with a single name inside its home folder (MINO_HOME)"
)


def _refused(dir_fd: int, name: str, where: Path | str, wanted_folder: bool) -> NotFollowed:
    """Why `name` in `dir_fd` could not be opened as a folder or file of the home."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        return NotFollowed(where, IS_A_LINK)
    return NotFollowed(where, NOT_A_FOLDER if wanted_folder else NOT_A_FILE)


def open_private_dir(base: Path, parts: tuple[str, ...] | list[str], *, create: bool = True) -> int:
    """A descriptor (open for reading, so it can be fsynced) of `base`/`parts`, each folder below
    `base` made 0700 if missing and opened without following a link: a folder of MINO_HOME swapped
    for a link (to a project's .git, say) fails with NotFollowed (one line naming it) instead of
    being written through. `base` itself (MINO_HOME) is the person's setup and may be a link.
    Without `create`, a missing folder is FileNotFoundError. The caller closes it."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise
        ensure_private_dir(base)  # MINO_HOME (and its parents) made as load_config makes it
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        where = base
        for name in parts:
            if name in ("", ".", "..") or "/" in name:
                raise ValueError(f"not a folder name: {name!r}")
            where = where / name
            try:
                try:
                    nxt = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, DIR_MODE, dir_fd=fd)
                    except FileExistsError:
                        pass  # made meanwhile: opening it checks what it is
                    nxt = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or a file where the folder was
                    raise _refused(fd, name, where, True) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_file_at(dir_fd: int, name: str, flags: int, where: Path | str, mode: int = FILE_MODE) -> int:
    """Open the file `name` of the home folder `dir_fd` (from open_private_dir) without following a
    link: a link, a folder, a FIFO or a device there fails with NotFollowed, and so does, when
    `flags` allow writing, a file with another hard link (an append or a lock note would change the
    other name's bytes too). `where` is the path the message names. The caller closes it."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link, a socket, a folder
            raise _refused(dir_fd, name, where, False) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotFollowed(where, NOT_A_FILE)
        if flags & (os.O_WRONLY | os.O_RDWR) and st.st_nlink > 1:
            raise NotFollowed(where, HARD_LINKED.format(n=st.st_nlink))
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_private_dir(base: Path, parts: tuple[str, ...]) -> None:
    """Delete the folder `base`/`parts` and everything in it, reached as open_private_dir reaches
    it: a folder on the way swapped for a link deletes nothing elsewhere, and a link inside is
    removed, never followed. Nothing there, or a link on the way: nothing is done. Best effort."""
    try:
        parent = open_private_dir(base, parts[:-1], create=False)
    except OSError:
        return
    try:
        _remove_at(parent, parts[-1])
    finally:
        os.close(parent)


def _remove_at(parent: int, name: str) -> None:
    """Remove `name` in the folder `parent`: a folder with its contents (opened without following
    a link, one level at a time), anything else by unlinking the name."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:  # a file, a link, or gone
        try:
            os.unlink(name, dir_fd=parent)
        except OSError:
            pass
        return
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in entries]
        for inner in names:
            _remove_at(fd, inner)
    except OSError:
        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent)
    except OSError:
        pass


def atomic_write(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Replace `path` with `data` atomically (temp file, fsync, rename, fsync dir)."""
    folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        _replace_at(folder, path.name, data, mode)
    finally:
        os.close(folder)
    try:
        fsync_dir(path.parent)
    except OSError as exc:  # too late to keep the old bytes: say so, callers must not claim "nothing written"
        raise NotDurable(exc.errno, exc.strerror) from exc


def atomic_write_at(dir_fd: int, name: str, data: bytes, mode: int = FILE_MODE, *, sync: bool = True) -> None:
    """atomic_write inside the folder `dir_fd` refers to: the temp file is created, renamed and the
    folder fsynced through that descriptor, so a folder renamed or swapped for a link meanwhile
    cannot send any of it elsewhere. `dir_fd` must be open for reading (fsync needs it). Without
    `sync` nothing is fsynced: for a cache that checks itself (a crash may leave it torn)."""
    _replace_at(dir_fd, name, data, mode, sync)
    if not sync:
        return
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        raise NotDurable(exc.errno, exc.strerror) from exc


def _replace_at(dir_fd: int, name: str, data: bytes, mode: int, sync: bool = True) -> None:
    """A temp file in the folder `dir_fd` gets `data` (fsynced), then takes the place of `name`; on
    failure the temp file is removed and `name` is untouched. The folder is not fsynced here."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):  # a name clash is as unlikely as in tempfile.mkstemp; it retries the same way
        tmp = f".{name}.{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary file name")
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def append_line(fd: int, data: bytes | list[bytes]) -> None:
    """Append one whole record (or its parts, written one after the other and never joined in
    memory: a checkpoint's megabyte is not copied) to an O_APPEND descriptor and fsync it.

    When the write or the fsync fails (a full disk can take part of a record first), the file is cut
    back to where it was: it keeps the old records, never part of a new one.
    """
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        for part in [data] if isinstance(data, bytes) else data:
            view = memoryview(part)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        os.fsync(fd)
    except BaseException:
        try:
            os.ftruncate(fd, start)
            os.fsync(fd)
        except OSError:
            pass  # the next load cuts the torn tail and keeps a copy (docs/BEHAVIOUR.md, "Recovery")
        raise
