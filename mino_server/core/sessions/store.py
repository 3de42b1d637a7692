"""The session store: many JSONL sessions, the saved selection and the locks
(docs/BEHAVIOUR.md, "Sessions", "The selection file", "The store lock").

- `sessions/<id>.jsonl`, id = 32 lowercase hex characters.
- `sessions/active-session.json` holds the ID most recently created, resumed or cleared by any
  process, written atomically under the store lock, saved before the new selection is shown.
- `sessions/sessions.lock`: the short store lock (`exclusive()`), held only around creating,
  switching, clearing and the selection's read and write, so those never race between processes.
- `sessions/<id>.lock`: held by whoever has that session open, for as long as it has it open
  (`claim()`); it holds a one-line note `{"pid": N, "workdir": "..."}` for the "open elsewhere" lines.
- `sessions/sessions.changes`: a counter bumped under the store lock by every create, clear, claim
  and release, so other processes can tell their editors to refresh (`read_changes()`).

Every file here is written through the folder opened from MINO_HOME without following a link, and
opened with O_NOFOLLOW (durable.open_private_dir, open_file_at): `sessions` or any file in it swapped
for a link, or for a second name of another file, fails with one line instead of being written
through (docs/SECURITY.md, "Writes on the person's behalf").

Every lock is an `flock`: it belongs to an open file description, so it never outlives its process
(SIGKILL included), two conversations of one process on two descriptors keep each other out too,
and a note left by a killed process is only a stale note: the lock is what counts.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import field
from pathlib import Path

from ..durable import IS_A_LINK, NotFollowed, atomic_write_at, open_file_at, open_private_dir
from ..errors import SelectionError, StorageError, StoreLocked
from ..values import Frozen, frozen
from .log import LogError, SessionLog

# Checked with fullmatch (and anchored with \A…\Z, which a trailing newline does not pass either:
# `$` does): an ID becomes a file name.
ID_RE = re.compile(r"\A[0-9a-f]{32}\Z")
FILE_RE = re.compile(r"\A([0-9a-f]{32})\.jsonl\Z")
CLAIM_RE = re.compile(r"\A([0-9a-f]{32})\.lock\Z")
SELECTION = "active-session.json"
LOCK = "sessions.lock"
CHANGES = "sessions.changes"
STORE_LOCK_WAIT_S = (
    10.0  # the lock is held for milliseconds; only a Mino before version 2 holds it for longer
)
EXITING_WAIT_S = 5.0  # how long opening a session waits for a holder that said it is exiting
NOTE_BYTES = 16 * 1024  # a note is one short line; read no more than this of a file someone else wrote


@frozen
class SessionInfo(Frozen):
    id: str
    mtime: float


@frozen
class Holder(Frozen):
    """Who has a session open, from its note (None where the note could not be read)."""

    pid: int | None
    workdir: str | None
    claim: SessionClaim | None = field(default=None, compare=False)  # set when it is this process
    exiting: bool = field(default=False, compare=False)  # its process is on its way out


class SessionInUse(Exception):
    """The session is open elsewhere: in another process, or in another conversation of this one."""

    def __init__(self, session_id: str, holder: Holder) -> None:
        super().__init__(f"session {session_id} is open elsewhere (pid {holder.pid})")
        self.session_id = session_id
        self.holder = holder


class SessionClaim:
    """This process has `session_id` open: an flock on `sessions/<id>.lock`, until `release()`."""

    def __init__(self, session_id: str, fd: int, workdir: str) -> None:
        self.session_id = session_id
        self.workdir = workdir
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self) -> None:
        if self._fd < 0:
            return
        try:
            os.pwrite(self._fd, b"\n", 0)  # an empty first line: nobody's note (best effort)
            os.ftruncate(self._fd, 1)
        except OSError:
            pass
        os.close(self._fd)  # closing releases the flock
        self._fd = -1

    def mark_exiting(self) -> None:
        """Say in the note that this process is leaving: another process opening the session then
        waits for the claim to go (EXITING_WAIT_S) rather than refusing at once."""
        if self._fd < 0:
            return
        note = _note(self.workdir, exiting=True)
        try:
            os.pwrite(self._fd, note, 0)
            os.ftruncate(self._fd, len(note))
        except OSError:
            pass  # best effort, as the note itself


class SessionStore:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._guard = threading.RLock()
        self._depth = 0  # how deep the holding thread is in exclusive()

    # ---- the store lock ------------------------------------------------------------------
    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the short store lock (re-entrant within a thread): creating, switching, clearing and
        the selection never race. Raises StorageError (cannot open it) and StoreLocked (timeout)."""
        with self._guard:  # threads of this process queue here, not on the flock
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            fd = self._open_lock_file(LOCK, os.O_RDWR)
            try:
                self._flock_within(fd, STORE_LOCK_WAIT_S)
                self._depth = 1
                try:
                    yield
                finally:
                    self._depth = 0
            finally:
                os.close(fd)  # releases the flock

    def folder(self, create: bool = True) -> int:
        """A descriptor of the sessions folder, opened from its parent (MINO_HOME) without following
        a link (durable.NotFollowed otherwise); made 0700 when missing with `create`. The caller
        closes it."""
        return open_private_dir(self.dir.parent, (self.dir.name,), create=create)

    def _open_lock_file(self, name: str, flags: int) -> int:
        try:
            # The folder is made when missing (mkdir only then), and so is the file: opening an
            # existing lock file is not a write to the disk.
            folder = self.folder()
            try:
                try:
                    return open_file_at(folder, name, flags, self.dir / name)
                except FileNotFoundError:
                    return open_file_at(folder, name, flags | os.O_CREAT, self.dir / name)
            finally:
                os.close(folder)
        except NotFollowed as exc:  # the line names the path already
            raise StorageError(f"Cannot open the session store: {exc}.") from None
        except OSError as exc:  # a full or read-only disk: one clear line, not a traceback
            raise StorageError(f"Cannot open the session store {self.dir}: {exc.strerror or exc}.") from None

    def _flock_within(self, fd: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        # Mino before protocol version 2 held this lock for its whole run and wrote its pid in it.
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        except OSError:
            holder = "unknown"
        holder = holder if holder.isdigit() else "unknown"
        raise StoreLocked(
            f"The session store {self.dir} stayed locked for {seconds:g} s by another Mino process "
            f"(pid {holder}); an older Mino holds the lock for its whole run. Close it first.",
            int(holder) if holder.isdigit() else None,
        )

    # ---- sessions open somewhere -----------------------------------------------------------
    def claim(self, session_id: str, workdir: str) -> SessionClaim:
        """Take `session_id`'s lock for as long as this process has it open (call under exclusive()).

        Raises SessionInUse (someone has it open) and StorageError."""
        if not ID_RE.fullmatch(session_id):  # the name becomes a path
            raise LogError(f"{session_id!r} is not a session ID")
        fd = self._open_lock_file(f"{session_id}.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_note(fd)
            os.close(fd)
            raise SessionInUse(session_id, holder) from None
        try:
            data = _note(workdir)
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))  # exactly the note: no tail of a longer earlier one
        except OSError:
            pass  # the note only names the holder in messages; the flock is what counts
        return SessionClaim(session_id, fd, workdir)

    def holder(self, session_id: str) -> Holder | None:
        """Who has `session_id` open (call under exclusive(), where no claim can race the probe);
        None when nobody does. This process's own claims look held: Store tells them apart."""
        if not ID_RE.fullmatch(session_id):
            return None
        try:
            fd = os.open(self.dir / f"{session_id}.lock", os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None  # never opened, or not a lock file we made
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return _read_note(fd)
            except OSError:
                return None
            return None  # closing below drops the probe's lock
        finally:
            os.close(fd)

    def holders(self) -> dict[str, Holder]:
        """Every session someone has open (call under exclusive())."""
        out: dict[str, Holder] = {}
        try:
            with os.scandir(self.dir) as it:
                names = [m.group(1) for e in it if (m := CLAIM_RE.fullmatch(e.name))]
        except OSError:
            return out
        for sid in names:
            holder = self.holder(sid)
            if holder is not None:
                out[sid] = holder
        return out

    def notes(self) -> dict[str, Holder]:
        """The notes of every session lock file, read without locking (for noticing a holder that
        died); a note may be stale or half-written: only a claim attempt says who holds a session."""
        out: dict[str, Holder] = {}
        try:
            with os.scandir(self.dir) as it:
                entries = [(m.group(1), e) for e in it if (m := CLAIM_RE.fullmatch(e.name))]
        except OSError:
            return out
        for sid, entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_size <= 1:
                    continue  # released: an empty first line
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                holder = _read_note(fd)
            finally:
                os.close(fd)
            if holder.pid is not None:
                out[sid] = holder
        return out

    # ---- the change counter ----------------------------------------------------------------
    def note_change(self, before_write: Callable[[int], None] | None = None) -> int | None:
        """Bump the change counter (call under exclusive()); returns the new value, None when it
        could not be written (other windows then refresh later: nothing depends on it)."""
        try:
            fd = self._open_lock_file(CHANGES, os.O_RDWR)
        except StorageError:
            return None
        try:
            value = _parse_count(os.pread(fd, 64, 0)) + 1
            if before_write is not None:
                before_write(value)  # the caller records it as its own before anyone can read it
            os.pwrite(fd, f"{value:020d}\n".encode(), 0)  # fixed width: never a shorter, torn-looking value
            return value
        except OSError:
            return None
        finally:
            os.close(fd)

    def read_changes(self) -> int:
        """The change counter (0 when there is none yet); read without a lock, as often as wanted."""
        try:
            fd = os.open(self.dir / CHANGES, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return 0
        try:
            return _parse_count(os.pread(fd, 64, 0))
        except OSError:
            return 0
        finally:
            os.close(fd)

    # ---- listing -------------------------------------------------------------------------
    def list(self) -> list[SessionInfo]:
        """Session files, newest first by modification time."""
        out = []
        try:
            with os.scandir(self.dir) as it:
                for entry in it:
                    m = FILE_RE.fullmatch(entry.name)
                    if not m:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    out.append(SessionInfo(m.group(1), st.st_mtime))
        except FileNotFoundError:
            return []
        out.sort(key=lambda s: (s.mtime, s.id), reverse=True)
        return out

    def path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.jsonl"

    def exists(self, session_id: str) -> bool:
        try:
            os.lstat(self.path(session_id))
        except OSError:
            return False
        return True

    # ---- selection -----------------------------------------------------------------------
    def read_selection(self) -> str | None:
        """The selected ID, or None when there is no selection file. SelectionError when it is damaged."""
        path = self.dir / SELECTION
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):  # never read or replaced through it
            raise SelectionError(str(NotFollowed(path, IS_A_LINK)))
        if not stat.S_ISREG(st.st_mode):
            raise SelectionError(f"{SELECTION} is not a regular file")
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise SelectionError(f"{SELECTION} is damaged ({exc.__class__.__name__})") from None
        sid = data.get("session_id") if isinstance(data, dict) else None
        if not isinstance(sid, str) or not ID_RE.fullmatch(sid):
            raise SelectionError(f"{SELECTION} does not hold a valid session ID")
        return sid

    def save_selection(self, session_id: str) -> None:
        try:
            folder = self.folder()
            try:
                atomic_write_at(folder, SELECTION, (json.dumps({"session_id": session_id}) + "\n").encode())
            finally:
                os.close(folder)
        except OSError as exc:
            raise StorageError(
                f"Could not save the session selection: {exc.strerror or exc}. The chat stops here."
            ) from None

    # ---- sessions ------------------------------------------------------------------------
    def create(self) -> str:
        """A new empty session file (fsynced, with its folder)."""
        try:
            folder = self.folder()
            try:
                while True:
                    sid = os.urandom(16).hex()
                    name = f"{sid}.jsonl"
                    try:
                        fd = open_file_at(folder, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, self.dir / name)
                    except FileExistsError:
                        continue
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    os.fsync(folder)
                    return sid
            finally:
                os.close(folder)
        except OSError as exc:  # any step, not only the open: a failing disk is one clear line
            raise StorageError(
                f"Could not create a session file: {exc.strerror or exc}. The chat stops here."
            ) from None

    def open_log(self, session_id: str) -> SessionLog:
        if not ID_RE.fullmatch(session_id):
            raise LogError(f"{session_id!r} is not a session ID")
        path = self.path(session_id)
        if not self.exists(session_id):
            raise LogError(f"session {session_id} does not exist")
        try:
            folder = self.folder(create=False)
        except OSError as exc:
            raise LogError(f"cannot open {path.name}: {exc.strerror or exc}") from None
        try:
            return SessionLog.open(path, folder)
        finally:
            os.close(folder)

    def clear(self, session_id: str) -> None:
        """Replace the log with an empty file: temp file, fsync, rename, fsync dir."""
        try:
            folder = self.folder(create=False)
            try:
                atomic_write_at(folder, self.path(session_id).name, b"")
            finally:
                os.close(folder)
        except OSError as exc:
            raise StorageError(
                f"Could not clear session {session_id}: {exc.strerror or exc}. The session may not be cleared; "
                "the chat stops here."
            ) from None


def _note(workdir: str, exiting: bool = False) -> bytes:
    fields: dict[str, object] = {"pid": os.getpid(), "workdir": workdir}
    if exiting:
        fields["exiting"] = True
    return (json.dumps(fields) + "\n").encode("ascii")  # ASCII: any path survives


def _read_note(fd: int) -> Holder:
    """A holder's note: the first line of its lock file, `{"pid": N, "workdir": "..."}`."""
    try:
        raw = os.pread(fd, NOTE_BYTES, 0)
    except OSError:
        return Holder(None, None)
    line = raw.split(b"\n", 1)[0]
    try:
        note = json.loads(line.decode("utf-8", "surrogateescape"))
    except ValueError:
        return Holder(None, None)
    if not isinstance(note, dict):
        return Holder(None, None)
    pid, workdir = note.get("pid"), note.get("workdir")
    return Holder(
        pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        workdir if isinstance(workdir, str) and workdir else None,
        exiting=note.get("exiting") is True,
    )


def _parse_count(raw: bytes) -> int:
    text = raw.split(b"\n", 1)[0].strip()
    return int(text) if text.isdigit() and len(text) <= 20 else 0
