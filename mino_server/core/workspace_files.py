"""The working directory's files for `@` completion (mino/files; docs/BEHAVIOUR.md, "Editor context").

The list leaves out what a person would not attach: git-ignored files and hidden ones (any part of
the path starting with "."), and MINO_HOME when it lies inside. In a git work tree it comes from
`git ls-files --cached --others --exclude-standard` (tracked and untracked, ignores applied);
elsewhere from a walk that skips dot folders and does not follow links to folders.

A completion must answer while a person types (50 ms for a 20,000-file tree), so the list is made
once, kept, and made again in the background when it is older than MAX_AGE_S, the answer coming from
the list already there. Making it is bounded: at most MAX_FILES paths, MAX_GIT_BYTES of git output,
LIST_TIMEOUT_S of time; a tree larger than that completes from the part that was listed.

git runs with its file-system monitor and untracked cache off, optional locks off, no prompts: a
project's .git/config may be hostile, and listing must never run a command it names.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import deque
from pathlib import Path

MAX_RESULTS = 50
MAX_FILES = 200_000
MAX_GIT_BYTES = 32 * 1024 * 1024
LIST_TIMEOUT_S = 5.0
MAX_AGE_S = 2.0
GIT_COMMAND = [
    "git",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "ls-files",
    "-z",
    "--cached",
    "--others",
    "--exclude-standard",
]


class WorkspaceFiles:
    """The file list of one working directory, cached; `complete(prefix)` answers from it."""

    def __init__(self, workdir: Path, home: Path) -> None:
        self.root = workdir.resolve()
        self.home = home
        self._lock = threading.Lock()
        self._listing = threading.Lock()  # one listing at a time
        self._paths: list[str] | None = None  # sorted: shallow first, then by name
        self._folded: list[str] = []  # the same, case-folded, for matching
        self._made = 0.0  # time.monotonic() of the listing in use

    def warm(self) -> None:
        """Make the list in the background (the first completion then answers at once)."""
        threading.Thread(target=self._refresh, name="mino-files", daemon=True).start()

    def complete(self, prefix: str, limit: int = MAX_RESULTS) -> list[str]:
        """Up to `limit` workspace-relative paths ("/"-separated) that start with `prefix` (ignoring
        case), then paths whose file name does, shallow ones first."""
        with self._lock:
            paths, folded, made = self._paths, self._folded, self._made
        if paths is None:  # the first completion: wait for the listing (warm() may have started it)
            with self._listing:
                if self._paths is None:
                    self._make()
            with self._lock:
                paths, folded = self._paths or [], self._folded
        elif time.monotonic() - made > MAX_AGE_S and not self._listing.locked():
            self.warm()  # answer now from the list there is; the next answer sees the new one
        want = prefix.removeprefix("./").casefold()
        found = [i for i, path in enumerate(folded) if path.startswith(want)][:limit]
        if len(found) < limit and want and "/" not in want:
            taken = set(found)
            for i, path in enumerate(folded):
                if i not in taken and path.rpartition("/")[2].startswith(want):
                    found.append(i)
                    if len(found) == limit:
                        break
        return [paths[i] for i in found]

    def _refresh(self) -> None:
        with self._listing:
            self._make()

    def _make(self) -> None:
        """List the files (the caller holds _listing) and put the new list in use."""
        paths = _git_files(self.root)
        if paths is None:
            paths = _walk(self.root)
        home = _inside_rel(self.root, self.home)
        kept = [
            p
            for p in dict.fromkeys(paths)  # a file with merge conflicts is listed once per stage
            if "/." not in "/" + p and not (home and (p == home or p.startswith(home + "/"))) and _utf8(p)
        ]
        kept.sort(key=lambda p: (p.count("/"), p.casefold()))
        with self._lock:
            self._paths, self._folded, self._made = kept, [p.casefold() for p in kept], time.monotonic()


def _utf8(name: str) -> bool:
    """Whether a file name is UTF-8 (one that is not cannot travel as JSON text, nor be typed)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _inside_rel(root: Path, home: Path) -> str | None:
    """MINO_HOME relative to the working directory when it lies inside it."""
    try:
        rel = Path(os.path.realpath(home)).relative_to(root).as_posix()
    except ValueError:
        return None
    return rel if rel != "." else ""


def _git_files(root: Path) -> list[str] | None:
    """Tracked and untracked, not ignored, files under `root` from git; None when `root` is not in a
    git work tree (or git is missing, refuses it, or takes too long)."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        proc = subprocess.Popen(
            GIT_COMMAND,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    assert proc.stdout is not None
    deadline = time.monotonic() + LIST_TIMEOUT_S
    timer = threading.Timer(LIST_TIMEOUT_S, proc.kill)  # a stuck git must not hold completion
    timer.start()
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_GIT_BYTES and (chunk := proc.stdout.read1(1 << 20)):  # type: ignore[attr-defined]
            chunks.append(chunk)
            size += len(chunk)
        complete = size < MAX_GIT_BYTES
        if not complete:
            proc.kill()
        code = proc.wait()
    finally:
        timer.cancel()
        proc.stdout.close()
    if time.monotonic() > deadline or (complete and code != 0):
        return None
    names = b"".join(chunks).split(b"\0")
    names.pop()  # the empty name after the last NUL, or a name cut off at the byte limit
    return [os.fsdecode(n) for n in names[:MAX_FILES]]


def _walk(root: Path) -> list[str]:
    """Files under `root`, breadth first, skipping dot entries and never following a link to a
    folder; bounded by MAX_FILES and LIST_TIMEOUT_S."""
    found: list[str] = []
    folders: deque[str] = deque([""])
    deadline = time.monotonic() + LIST_TIMEOUT_S
    while folders and len(found) < MAX_FILES and time.monotonic() < deadline:
        rel = folders.popleft()
        try:
            with os.scandir(root / rel if rel else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(path)
                elif entry.is_file():
                    found.append(path)
            except OSError:
                continue
    return found[:MAX_FILES]
