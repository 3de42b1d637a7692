"""Protected folders anywhere in the working directory (docs/SECURITY.md, "The sandbox").

`.git`, `.mino` and `.vscode` hold what runs or instructs later, outside the sandbox: git hooks and
settings (core.fsmonitor), Mino's project skills, editor tasks (`runOn: folderOpen`). At any depth:
VS Code's git support and a person's `cd sub && git status` use a nested repository too.

One walk finds them: breadth first (the shallow ones, which tools pick up first, are found before
a budget runs out), never following a link, never entering a protected folder (it is read-only as
a whole), reading at most MAX_ENTRIES directory entries and keeping at most MAX_FOUND folders. A
walk that stopped early is `complete=False`: the sandbox cannot then keep every protected folder
read-only, so bash treats the command as unsandboxed (it asks). Before and after a command the walk
is compared: a protected folder that appeared, or that was replaced by something else, is reported
to the model and to the person (words.protected_folders_changed).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..values import Frozen

NAMES = (".git", ".mino", ".vscode")  # compared case-insensitively, as the file tools do
# ~1 µs per entry on a quiet machine (8 µs on a loaded 2-core VM): bench/README.md, "Protected folders".
MAX_ENTRIES = 50_000
# Each is one --ro-bind (two paths) on bwrap's command line: well within ARG_MAX at 4 KiB a path.
MAX_FOUND = 200


@dataclass(frozen=True, eq=False, repr=False)
class Found(Frozen):
    """The protected folders (or files: a worktree's `.git`) of a working directory, by path
    relative to it, with what identifies each (file type and inode); `complete` when the walk
    read the whole tree."""

    paths: dict[str, tuple[int, int]]
    complete: bool
    entries: int

    def absolute(self, workdir: Path) -> list[str]:
        return [os.path.join(workdir, rel) for rel in self.paths]


def find(workdir: Path, skip: str | None = None) -> Found:
    """Walk `workdir` (symbolic links resolved) for protected folders; `skip` (an absolute path,
    MINO_HOME inside the working directory) is not entered."""
    found: dict[str, tuple[int, int]] = {}
    entries = 0
    complete = True
    queue: deque[str] = deque([""])
    root = str(workdir)
    while queue:
        rel = queue.popleft()
        try:
            listing = os.scandir(os.path.join(root, rel) if rel else root)
        except OSError:  # unreadable or gone: what it holds is unknown
            complete = False
            continue
        with listing:
            for entry in listing:
                entries += 1
                if entries > MAX_ENTRIES:
                    return Found(found, False, entries - 1)
                child = os.path.join(rel, entry.name) if rel else entry.name
                try:
                    if entry.name.casefold() in NAMES:
                        if len(found) >= MAX_FOUND:
                            return Found(found, False, entries)
                        st = entry.stat(follow_symlinks=False)
                        found[child] = (stat.S_IFMT(st.st_mode), st.st_ino)
                    elif entry.is_dir(follow_symlinks=False) and entry.path != skip:
                        queue.append(child)
                except OSError:  # gone since the listing
                    continue
    return Found(found, complete, entries)


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


def mount_sources(workdir: Path, found: Found) -> list[str]:
    """What to mount read-only: each protected path; a link is followed to a target inside the
    working directory (outside it, the target is read-only already). The link itself stays
    replaceable, like a folder that does not exist yet: the walk after the command reports it.
    A `.git` file (a worktree or submodule) names the real git folder: inside the working
    directory that folder is mounted read-only too, whatever its name."""
    out = []
    for path in found.absolute(workdir):
        if os.path.islink(path):
            target = os.path.realpath(path)
            if not os.path.exists(target) or not Path(target).is_relative_to(workdir):
                continue
            path = target
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
