"""Protected folders anywhere in the working directory (docs/SECURITY.md, "The sandbox").

`.git`, `.mino` and `.vscode` hold what runs or instructs later, outside the sandbox: git hooks and
settings (core.fsmonitor), Mino's project skills, editor tasks (`runOn: folderOpen`). At any depth:
VS Code's git support and a person's `cd sub && git status` use a nested repository too.

One walk finds them: breadth first (the shallow ones, which tools pick up first, are found before
a budget runs out), never following a link, never entering a protected folder (it is read-only as
a whole), reading at most MAX_ENTRIES directory entries and keeping at most MAX_FOUND folders. A
walk that stopped early is `complete=False`: the sandbox cannot then keep every protected folder
read-only, so bash treats the command as unsandboxed (it asks). The walk is kept for the process
and checked folder by folder (inode and ctime, see _Walker), so only the first one lists every
folder. Before and after a command the walk is compared: a protected folder that appeared, or that was replaced by something else, is reported
to the model and to the person (words.protected_folders_changed).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from pathlib import Path

from ..values import Frozen, frozen

NAMES = (".git", ".mino", ".vscode")  # compared case-insensitively, as the file tools do
# ~1 µs per entry on a quiet machine (8 µs on a loaded 2-core VM): bench/README.md, "Protected folders".
MAX_ENTRIES = 50_000
# Each is one --ro-bind (two paths) on bwrap's command line: well within ARG_MAX at 4 KiB a path.
MAX_FOUND = 200


@frozen
class Found(Frozen):
    """The protected folders (or files: a worktree's `.git`) of a working directory, by path
    relative to it, with what identifies each (file type and inode); `complete` when the walk
    read the whole tree; `skip`, the folder it did not enter (the walk after a command skips the
    same one)."""

    paths: dict[str, tuple[int, int]]
    complete: bool
    entries: int
    skip: str | None = None

    def absolute(self, workdir: Path) -> list[str]:
        return [os.path.join(workdir, rel) for rel in self.paths]


@frozen
class _Listed(Frozen):
    """One folder as the last walk listed it."""

    ino: int
    ctime_ns: int
    trusted: bool  # its last change was well before the listing: a later one changes ctime
    entries: int
    subfolders: list[str]
    marks: dict[str, tuple[int, int]]  # the protected entries directly in it


class _Walker:
    """The last walk of one working directory, checked again folder by folder.

    A folder's ctime changes whenever an entry is added to, removed from or renamed in it, and no
    process can set ctime (only the clock can, which needs CAP_SYS_TIME: never in the sandbox). So
    a folder whose inode and ctime are unchanged since it was listed still holds the same names,
    and only changed folders are listed again: a walk after the first costs one lstat per folder,
    not one entry per file. A folder listed within TRUST_AFTER_NS of its last change is listed again
    every time: a change in the same clock tick (or second, on coarse file systems) as the listing
    would leave ctime as it was."""

    TRUST_AFTER_NS = 3_000_000_000

    def __init__(self, root: str, skip: str | None) -> None:
        self.root = root
        self.skip = skip
        self.lock = threading.Lock()
        self.folders: dict[str, _Listed] = {}

    def walk(self) -> Found:
        with self.lock:
            found: dict[str, tuple[int, int]] = {}
            folders: dict[str, _Listed] = {}
            entries = 0
            complete = True
            queue: deque[str] = deque([""])
            while queue:
                rel = queue.popleft()
                listed = self._current(rel)
                if listed is None:  # unreadable or gone: what it holds is unknown
                    complete = False
                    continue
                entries += listed.entries
                if entries > MAX_ENTRIES or len(found) + len(listed.marks) > MAX_FOUND:
                    complete = False
                    break
                folders[rel] = listed
                found.update(listed.marks)
                queue.extend(listed.subfolders)
            # Kept (also when the budget ran out): the next walk checks instead of listing again.
            self.folders = folders
            return Found(found, complete, min(entries, MAX_ENTRIES), self.skip)

    def _current(self, rel: str) -> _Listed | None:
        path = os.path.join(self.root, rel) if rel else self.root
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        old = self.folders.get(rel)
        if old is not None and old.trusted and old.ino == st.st_ino and old.ctime_ns == st.st_ctime_ns:
            return old
        return self._list(rel, path, st)

    def _list(self, rel: str, path: str, st: os.stat_result) -> _Listed | None:
        now = time.time_ns()
        subfolders: list[str] = []
        marks: dict[str, tuple[int, int]] = {}
        count = 0
        try:
            with os.scandir(path) as listing:
                for entry in listing:
                    count += 1
                    if count > MAX_ENTRIES:
                        break
                    child = os.path.join(rel, entry.name) if rel else entry.name
                    try:
                        if entry.name.casefold() in NAMES:
                            est = entry.stat(follow_symlinks=False)
                            marks[child] = (stat.S_IFMT(est.st_mode), est.st_ino)
                        elif entry.is_dir(follow_symlinks=False) and entry.path != self.skip:
                            subfolders.append(child)
                    except OSError:  # gone since the listing
                        continue
        except OSError:
            return None
        trusted = st.st_ctime_ns < now - self.TRUST_AFTER_NS
        return _Listed(st.st_ino, st.st_ctime_ns, trusted, count, subfolders, marks)


_walkers: dict[tuple[str, str | None], _Walker] = {}
_walkers_lock = threading.Lock()


def find(workdir: Path, skip: str | None = None) -> Found:
    """Walk `workdir` (symbolic links resolved) for protected folders; `skip` (an absolute path,
    MINO_HOME inside the working directory) is not entered. The walker of this working directory is
    kept for the process (see _Walker): conversations on it share one."""
    key = (str(workdir), skip)
    with _walkers_lock:
        walker = _walkers.get(key)
        if walker is None:
            walker = _walkers[key] = _Walker(str(workdir), skip)
    return walker.walk()


def changes(before: Found, after: Found) -> list[tuple[str, str]]:
    """Protected folders the command made: ("path", "created" | "replaced"), in path order.

    Replaced: the same name now holds another file or folder (a link swapped for a folder, a
    folder deleted and made again). Folders that went away are not listed: nothing runs from them."""
    out = []
    for rel, identity in sorted(after.paths.items()):
        old = before.paths.get(rel)
        if old is None:
            out.append((rel, "created"))
        elif old != identity:
            out.append((rel, "replaced"))
    return out


def mount_target(path: str, workdir: Path) -> str | None:
    """What to mount read-only for one protected path: the path, or a link's target inside the
    working directory; None for a link out of it (its target is read-only already) or a dangling one."""
    if not os.path.islink(path):
        return path
    target = os.path.realpath(path)
    if not os.path.exists(target) or not Path(target).is_relative_to(workdir):
        return None
    return target


def mount_sources(workdir: Path, found: Found) -> list[str]:
    """What to mount read-only: each protected path; a link is followed to a target inside the
    working directory (outside it, the target is read-only already). The link itself stays
    replaceable, like a folder that does not exist yet: the walk after the command reports it.
    A `.git` file (a worktree or submodule) names the real git folder: inside the working
    directory that folder is mounted read-only too, whatever its name."""
    out = []
    for each in found.absolute(workdir):
        path = mount_target(each, workdir)
        if path is None:
            continue
        out.append(path)
        if os.path.isfile(path):
            gitdir = _gitdir(path)
            if gitdir is not None and Path(gitdir).is_relative_to(workdir) and gitdir != str(workdir):
                out.append(gitdir)
    return list(dict.fromkeys(out))


def _gitdir(gitfile: str) -> str | None:
    """The folder a `.git` file's `gitdir: PATH` line names (relative to the file), if it exists."""
    try:
        with open(gitfile, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    text = head.decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:"):
        return None
    target = os.path.realpath(os.path.join(os.path.dirname(gitfile), text[len("gitdir:") :].strip()))
    return target if os.path.isdir(target) else None
