"""The session store: many JSONL sessions, the saved selection and the store lock
(docs/BEHAVIOUR.md, "Sessions", "The selection file", "The store lock").

- `sessions/<id>.jsonl`, id = 32 lowercase hex characters.
- `sessions/active-session.json` holds the chosen ID, written atomically, saved before the new
  selection is shown.
- `sessions/sessions.lock` is held by one Mino process from start to exit.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from ..durable import atomic_write, ensure_private_dir, fsync_dir
from .log import LogError, SessionLog

ID_RE = re.compile(r"^[0-9a-f]{32}$")
FILE_RE = re.compile(r"^([0-9a-f]{32})\.jsonl$")
SELECTION = "active-session.json"
LOCK = "sessions.lock"


class StoreLocked(Exception):
    """Another Mino process holds the store; `pid` is the holder's, when its note could be read."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class StorageError(Exception):
    """Saving the selection or clearing failed: the chat must stop (docs/BEHAVIOUR.md, "Durability")."""


class SelectionError(Exception):
    """active-session.json exists but cannot be used."""


@dataclass(frozen=True)
class SessionInfo:
    id: str
    mtime: float


class SessionStore:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._lock_fd = -1

    # ---- the lock ------------------------------------------------------------------------
    def lock(self) -> None:
        import fcntl

        path = self.dir / LOCK
        try:
            ensure_private_dir(self.dir)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # a full or read-only disk: one clear line at start-up, not a traceback
            raise StorageError(f"Cannot open the session store {self.dir}: {exc.strerror or exc}.") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(
                f"The session store {self.dir} is in use by another Mino process (pid {holder}). "
                "Close it first; only one Mino can use the store at a time.",
                int(holder) if holder.isdigit() else None,
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is only a note for the "in use" message; the flock is what counts
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing releases the flock
            self._lock_fd = -1

    # ---- listing -------------------------------------------------------------------------
    def list(self) -> list[SessionInfo]:
        """Session files, newest first by modification time."""
        out = []
        try:
            with os.scandir(self.dir) as it:
                for entry in it:
                    m = FILE_RE.match(entry.name)
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
        if not stat.S_ISREG(st.st_mode):
            raise SelectionError(f"{SELECTION} is not a regular file")
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise SelectionError(f"{SELECTION} is damaged ({exc.__class__.__name__})") from None
        sid = data.get("session_id") if isinstance(data, dict) else None
        if not isinstance(sid, str) or not ID_RE.match(sid):
            raise SelectionError(f"{SELECTION} does not hold a valid session ID")
        return sid

    def save_selection(self, session_id: str) -> None:
        try:
            atomic_write(self.dir / SELECTION, (json.dumps({"session_id": session_id}) + "\n").encode())
        except OSError as exc:
            raise StorageError(
                f"Could not save the session selection: {exc.strerror or exc}. The chat stops here."
            ) from None

    # ---- sessions ------------------------------------------------------------------------
    def create(self) -> str:
        """A new empty session file (fsynced, with its folder)."""
        try:
            ensure_private_dir(self.dir)
            while True:
                sid = secrets.token_hex(16)
                try:
                    fd = os.open(self.path(sid), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                except FileExistsError:
                    continue
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                fsync_dir(self.dir)
                return sid
        except OSError as exc:  # any step, not only the open: a failing disk is one clear line
            raise StorageError(
                f"Could not create a session file: {exc.strerror or exc}. The chat stops here."
            ) from None

    def open_log(self, session_id: str) -> SessionLog:
        if not ID_RE.match(session_id):
            raise LogError(f"{session_id!r} is not a session ID")
        path = self.path(session_id)
        if not self.exists(session_id):
            raise LogError(f"session {session_id} does not exist")
        return SessionLog.open(path)

    def clear(self, session_id: str) -> None:
        """Replace the log with an empty file: temp file, fsync, rename, fsync dir."""
        try:
            atomic_write(self.path(session_id), b"")
        except OSError as exc:
            raise StorageError(
                f"Could not clear session {session_id}: {exc.strerror or exc}. The session may not be cleared; "
                "the chat stops here."
            ) from None
