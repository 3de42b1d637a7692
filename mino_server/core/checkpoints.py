"""The checkpoint store: every file's state before Mino wrote it, for /rewind (docs/BEHAVIOUR.md, "Rewind").

One append-only file per session, MINO_HOME/checkpoints/<session>/pack, never anything in the
project (no .git objects, refs, stash or index). Each write_file or edit_file that runs appends
(CheckpointedFiles, below: the project-files port's write, once the port has checked the bytes the
approval is bound to), before the project file is written and in ONE fsynced append (durable.append_line: the record is
whole or cut back), the file's previous bytes (once per distinct sha256: content-addressed, so a
file edited ten times keeps each distinct state once) and an entry naming the turn, the path
(relative to the working directory, as paths.locate resolved it), the sha256 before ("null": the
file did not exist), a digest of what Mino writes (`after_digest`) and the permission bits. A rewind
appends a `restore` entry before each file it writes, so the store always knows what Mino last put
there.

The digest of what Mino writes is BLAKE3 ("blake3:<hex>"), not the sha256 everything else uses: it
is the one hash the checkpoint itself computes (the bytes before are hashed by the approval and
checked by the port anyway), and BLAKE3 takes ~0.2 ms for a MiB where sha256 takes ~0.8 ms, which
is what keeps a checkpoint under 1 ms of CPU per MiB. Both are 256-bit cryptographic hashes; an
`after` without the prefix (stores written before) is a sha256, and `same` accepts either.

Records: a JSON header line, and for a blob its `n` raw bytes and a newline after it:
    {"k":"blob","sha":S,"n":N}\\n<N bytes>\\n
    {"k":"write","turn":T,"path":P,"before":S|null,"after":"blake3:<hex>"|S,"mode":M|null}\\n
    {"k":"restore","path":P,"after":S|null}\\n
A torn last record (a crash mid-append, before the project file was touched) is cut off on load.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from .durable import append_line, ensure_private_dir, open_file_at, open_private_dir, remove_private_dir
from .errors import ToolFailure
from .tools.paths import Target
from .tools.project_files import BeforeWrite, FileBytes, ProjectFiles
from .values import Mutable, mutable

PACK = "pack"
FOLDER = "checkpoints"
BLAKE3 = "blake3:"

Action = Literal["restore", "delete", "keep"]


class CheckpointError(Exception):
    """The store cannot be read; the message says why (nothing was changed)."""


@mutable
class Entry(Mutable):
    kind: Literal["write", "restore"]
    turn: str | None  # the turn whose write this was; None for a rewind's own restore
    path: str  # relative to the working directory
    before: str | None  # sha256 of the bytes before; None: the file did not exist
    after: str | None  # digest of what Mino put there (see `same`); None: Mino deleted it
    mode: int | None  # permission bits before (write entries of existing files)


def after_digest(data: bytes) -> str:
    """The digest a write entry's `after` holds (the module's docstring says why BLAKE3)."""
    from blake3 import blake3  # only a write needs it: not on the start-up path

    return BLAKE3 + blake3(data).hexdigest()


def same(digest: str | None, data: bytes | None, sha: str | None) -> bool:
    """Whether `digest` (an entry's before or after) names `data`, whose sha256 is `sha` (None:
    the file is absent)."""
    if digest is None or data is None:
        return digest is None and data is None
    return after_digest(data) == digest if digest.startswith(BLAKE3) else digest == sha


def folder(home: Path, session_id: str) -> Path:
    return home / FOLDER / session_id


def remove(home: Path, session_id: str) -> None:
    """Delete a session's checkpoints (/clear); no link is followed on the way or inside."""
    remove_private_dir(home, (FOLDER, session_id))


def size_of(home: Path, session_id: str) -> int:
    """Bytes the session's store holds on disk (0 when it has none)."""
    try:
        return os.stat(folder(home, session_id) / PACK, follow_symlinks=False).st_size
    except OSError:
        return 0


class CheckpointStore:
    """One session's store, opened by the conversation that has the session (one writer)."""

    def __init__(self, home: Path, session_id: str) -> None:
        self.home, self.session_id = home, session_id
        self.dir = folder(home, session_id)
        self.path = self.dir / PACK
        self._fd = -1
        self.entries: list[Entry] = []
        self._blobs: dict[str, tuple[int, int]] = {}  # sha256 -> (offset, length) in the pack
        self._size = 0
        self._loaded = False

    # ---- reading -------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded:
            return
        try:
            fd = self._open_pack(os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, create=False)
        except FileNotFoundError:
            self._loaded = True
            return
        except OSError as exc:
            raise CheckpointError(
                f"Cannot open the checkpoint store {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise CheckpointError(f"The checkpoint store {self.path} is not a regular file.")
            good = self._scan(fd)
            if good < os.fstat(fd).st_size:  # a torn last record: its project file was never written
                os.ftruncate(fd, good)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size, self._loaded = fd, good, True

    def _scan(self, fd: int) -> int:
        """Read every record; the offset after the last whole one."""
        with open(os.dup(fd), "rb") as f:
            good = 0
            while True:
                line = f.readline()
                if not line.endswith(b"\n"):
                    return good
                try:
                    rec = json.loads(line)
                    kind = rec["k"]
                except (ValueError, KeyError, TypeError):
                    return self._damaged(f, good)
                if kind == "blob":
                    n, at = rec["n"], f.tell()
                    f.seek(n, os.SEEK_CUR)
                    if f.tell() > os.fstat(fd).st_size - 1 or f.read(1) != b"\n":
                        return good
                    self._blobs[rec["sha"]] = (at, n)
                elif kind in ("write", "restore"):
                    self.entries.append(
                        Entry(
                            kind,
                            rec.get("turn"),
                            rec["path"],
                            rec.get("before"),
                            rec["after"],
                            rec.get("mode"),
                        )
                    )
                else:
                    return self._damaged(f, good)
                good = f.tell()

    def _damaged(self, f: object, good: int) -> int:
        raise CheckpointError(
            f"The checkpoint store {self.path} is damaged after byte {good}; nothing was changed."
        )

    def blob(self, sha: str) -> bytes:
        at, n = self._blobs[sha]
        data = os.pread(self._fd, n, at)
        if len(data) != n:
            raise CheckpointError(f"The checkpoint store {self.path} is shorter than its records say.")
        return data

    def has(self, sha: str) -> bool:
        return sha in self._blobs

    @property
    def size(self) -> int:
        return self._size

    # ---- writing -------------------------------------------------------------------------
    def _open_for_append(self) -> int:
        self.load()
        if self._fd < 0:
            ensure_private_dir(self.home)
            self._fd = self._open_pack(
                os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, create=True, sync=True
            )
        return self._fd

    def _open_pack(self, flags: int, *, create: bool, sync: bool = False) -> int:
        """The pack, its folders under MINO_HOME opened without following a link (a folder swapped
        for a link fails instead of leading elsewhere); `sync`: its folders fsynced (once per
        session: the pack's name survives a power cut)."""
        folder = open_private_dir(self.home, (FOLDER, self.session_id), create=create)
        try:
            fd = open_file_at(folder, PACK, flags, self.path)  # not a link, not a second name
            if sync:
                os.fsync(folder)
                above = open_private_dir(self.home, (FOLDER,), create=False)
                try:
                    os.fsync(above)
                finally:
                    os.close(above)
            return fd
        finally:
            os.close(folder)

    def _append(self, parts: list[bytes], blob: tuple[str, int, int] | None) -> None:
        fd = self._open_for_append()
        append_line(fd, parts)  # one fsync; whole or cut back
        if blob is not None:
            self._blobs[blob[0]] = (self._size + blob[1], blob[2])
        self._size += sum(len(p) for p in parts)

    def keep(
        self,
        turn: str | None,
        path: str,
        before: bytes | None,
        before_sha: str | None,
        after: str,
        mode: int | None,
    ) -> None:
        """Record a write before it happens: the previous bytes (unless already kept) and the entry
        (`after`: after_digest of the bytes about to be written)."""
        parts: list[bytes] = []
        blob = None
        if before is not None and before_sha is not None and before_sha not in self._blobs:
            head = _line({"k": "blob", "sha": before_sha, "n": len(before)})
            parts += [head, before, b"\n"]
            blob = (before_sha, len(head), len(before))
        entry = Entry("write", turn, path, before_sha, after, mode)
        parts.append(
            _line(
                {
                    "k": "write",
                    "turn": turn,
                    "path": path,
                    "before": before_sha,
                    "after": after,
                    "mode": mode,
                }
            )
        )
        self._append(parts, blob)
        self.entries.append(entry)

    def restoring(self, path: str, after: str | None) -> None:
        """Record, before a rewind writes or deletes `path`, what it will put there."""
        self._append([_line({"k": "restore", "path": path, "after": after})], None)
        self.entries.append(Entry("restore", None, path, None, after, None))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._loaded = False
        self.entries, self._blobs, self._size = [], {}, 0

    # ---- what a rewind would do ----------------------------------------------------------
    def turns(self) -> dict[str, list[str]]:
        """turn ID -> the paths its writes changed, in order of first write."""
        out: dict[str, list[str]] = {}
        for e in self.entries:
            if e.kind == "write" and e.turn is not None:
                paths = out.setdefault(e.turn, [])
                if e.path not in paths:
                    paths.append(e.path)
        return out

    def targets(self, turns: set[str]) -> Iterator[tuple[str, str | None, int | None, set[str | None]]]:
        """For each path written in `turns`: (path, the sha256 before the first such write (None:
        did not exist), its mode, the states that count as "Mino's": what Mino last put there, or
        the bytes before that last entry when its write never happened)."""
        first: dict[str, Entry] = {}
        mino: dict[str, set[str | None]] = {}
        for e in self.entries:
            if e.kind == "write" and e.turn in turns and e.path not in first:
                first[e.path] = e
            if e.kind == "write":  # Mino writes only over e.before: if it never did, that is there
                mino[e.path] = {e.after, e.before}
            else:  # a rewind's restore that never happened leaves one of the states before it
                mino[e.path] = {e.after, *mino.get(e.path, ())}
        for path, e in first.items():
            yield path, e.before, e.mode, mino[path]


def _line(obj: dict[str, object]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class CheckpointedFiles:
    """The project-files port (tools/project_files.py) with a checkpoint before every write: the bytes
    the port found (the ones the approval is bound to) go to the store, fsynced, before it writes.
    The one place write_file and edit_file are hooked; reads pass through."""

    def __init__(self, inner: ProjectFiles, store: CheckpointStore, turn_id: str | None) -> None:
        self.inner, self.store, self.turn_id = inner, store, turn_id

    def open(self, target: Target) -> BinaryIO | None:
        return self.inner.open(target)

    def read(self, target: Target) -> FileBytes | None:
        return self.inner.read(target)

    def write(
        self, target: Target, data: bytes, expected: str | None, before_write: BeforeWrite | None = None
    ) -> str | None:
        def keep(found: FileBytes | None) -> None:
            try:
                self.store.keep(
                    self.turn_id,
                    "/".join(target.parts),
                    None if found is None else found.data,
                    expected,  # the port checked that the bytes found have this sha256
                    after_digest(data),
                    None if found is None else found.mode,
                )
            except (OSError, CheckpointError) as e:
                why = e.strerror if isinstance(e, OSError) and e.strerror else e
                raise ToolFailure(
                    f"Cannot keep the previous state of {target.rel} for /rewind ({why}); "
                    "nothing was written."
                ) from None
            if before_write is not None:
                before_write(found)

        return self.inner.write(target, data, expected, keep)
