"""Confining a tool's path to the working directory (docs/BEHAVIOUR.md, "Path confinement").

Three steps. `check_path_syntax` is pure (validate). `locate` resolves symlinks on disk and judges
the real path: inside the working directory, never inside MINO_HOME, and whether it lies in a folder
whose files run or instruct later (.git, .mino, .vscode). `open_parent` then opens the real path's
folders one at a time from a descriptor of the working directory, never following a link: the real
path has none, so a link met there was swapped in after `locate` looked, and the call stops instead
of following it outside. Reads and writes then happen relative to that folder descriptor.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from pathlib import Path

from ..errors import ArgumentError, ToolFailure
from ..values import Frozen, frozen

# Files here run commands or instruct Mino later: git hooks and config (also a `.git` file, which
# names the real git folder), Mino's project skills and settings, editor tasks and settings.
PROTECTED_NAMES = (".git", ".mino", ".vscode")

# O_PATH (Linux) opens a folder for lookups only: no read permission needed, nothing to read by mistake.
_WALK_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
# The folder a write lands in is fsynced after the rename, which an O_PATH descriptor cannot do.
_PARENT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def check_path_syntax(value: str, key: str = "path") -> str:
    """Reject paths no file system accepts; everything else needs the disk to judge."""
    if value == "":
        raise ArgumentError(f"argument '{key}' must not be empty")
    if "\0" in value:
        raise ArgumentError(f"argument '{key}' must not contain a NUL byte")
    return value


def changed_while_in_use(rel: str) -> ToolFailure:
    return ToolFailure(
        f"{rel} changed while in use: a folder on its path was replaced by a symbolic link; nothing was done."
    )


def resolve_in_workdir(workdir: Path, rel: str) -> Path:
    """The real path of `rel` (relative to `workdir`, or absolute) if it stays inside `workdir`.

    Symlinks are resolved first, so a link inside the project that points elsewhere is refused
    just like `../x`. The final component may be missing (a file about to be created).
    """
    return _resolve(workdir.resolve(), rel)


def _resolve(root: Path, rel: str) -> Path:
    candidate = Path(rel) if os.path.isabs(rel) else root / rel
    if not _inside(Path(os.path.normpath(candidate)), root):
        raise ToolFailure(
            f"{rel} is outside the working directory {root}; tools can only use files inside it."
        )
    try:
        resolved = candidate.resolve()
    except RuntimeError:  # Python 3.11 reports a symlink loop this way
        raise ToolFailure(f"{rel} cannot be resolved: it is part of a symbolic link loop.") from None
    except OSError as e:
        if e.errno == errno.EINVAL:  # readlink on what lstat had just seen as a link: it was swapped
            raise changed_while_in_use(rel) from None
        raise ToolFailure(f"{rel} cannot be resolved: {e.strerror or e}.") from None
    if not _inside(resolved, root):
        raise ToolFailure(
            f"{rel} leads outside the working directory {root} through a symbolic link"
            f" (it resolves to {resolved}); tools can only use files inside it."
        )
    return resolved


@frozen
class Target(Frozen):
    """A tool's path, judged: `path` is real (no links, no `..`) and inside `root`."""

    rel: str  # as the model wrote it, for messages
    root: Path  # the working directory, resolved
    path: Path
    home: Path  # MINO_HOME as configured, for the identity check while opening
    writing: bool

    @functools.cached_property
    def parts(self) -> tuple[str, ...]:
        return self.path.relative_to(self.root).parts

    @property
    def protected(self) -> str | None:
        """The first folder (or file) on the path named .git, .mino or .vscode, in any letter case
        (the file system may ignore case), at any depth: `sub/.git/config` drives git run in sub/."""
        return next((p for p in self.parts if p.casefold() in PROTECTED_NAMES), None)


def locate(workdir: Path, home: Path, rel: str, *, writing: bool) -> Target:
    """Resolve `rel` inside the working directory and refuse MINO_HOME (by its real path here; by
    folder identity, which also catches a bind mount of it, while opening)."""
    root = workdir.resolve()
    target = Target(rel, root, _resolve(root, rel), home, writing)
    home_real = Path(os.path.realpath(home))
    if _inside(target.path, home_real):
        raise _in_home(target)
    return target


def open_parent(target: Target, *, create: bool = False) -> int | None:
    """A descriptor of the folder `target.path` lies in, opened from the working directory one
    folder at a time without following links; None when a folder is missing (unless `create`:
    then it is made, 0777 minus the umask, as `mkdir -p` would). The caller closes it.

    Every folder on the way is compared with MINO_HOME by device and inode, so a second path to it
    (a bind mount) is refused like the first.
    """
    home_id = _identity(target.home)
    try:
        fd = os.open(target.root, _WALK_FLAGS if target.parts[:-1] else _PARENT_FLAGS)
    except OSError as e:
        raise ToolFailure(f"Cannot open the working directory {target.root}: {e.strerror or e}.") from None
    try:
        if home_id is not None:
            _check_not_home(fd, home_id, target)
            if _below(target.root, home_id):
                raise _in_home(target)
        folders = target.parts[:-1]
        for n, name in enumerate(folders):
            flags = _WALK_FLAGS if n < len(folders) - 1 else _PARENT_FLAGS
            try:
                nxt = _open_dir(fd, name, flags, target)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile by someone else: opening it below checks what it is
                except OSError as e:
                    raise ToolFailure(
                        f"Cannot create the folder for {target.rel}: {e.strerror or e}."
                    ) from None
                try:
                    nxt = _open_dir(fd, name, flags, target)
                except FileNotFoundError:  # removed again between the two calls
                    raise changed_while_in_use(target.rel) from None
            os.close(fd)
            fd = nxt
            if home_id is not None:
                _check_not_home(fd, home_id, target)
        return fd
    except BaseException:
        os.close(fd)
        raise


def final_name(target: Target) -> str:
    """The name to open in the folder `open_parent` returns ("." for the working directory itself)."""
    parts = target.parts
    return parts[-1] if parts else "."


def _open_dir(fd: int, name: str, flags: int, target: Target) -> int:
    try:
        return os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        raise
    except OSError as e:
        # A file on the way is the model's mistake ("a.txt/b"); a link (or a folder again, a moment
        # later) means the folder resolved a moment ago was swapped.
        if e.errno in (errno.ENOTDIR, errno.ELOOP) and not _is_file(fd, name):
            raise changed_while_in_use(target.rel) from None
        raise ToolFailure(f"Cannot open {target.rel}: {e.strerror or e}.") from None


def _is_file(fd: int, name: str) -> bool:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode)


@functools.lru_cache(maxsize=8)
def _below(root: Path, home_id: tuple[int, int]) -> bool:
    """Whether the working directory lies inside a second path to MINO_HOME (a bind mount of it).
    The folders above the working directory are the person's setup, fixed at start-up: asked once."""
    return any(_identity(above) == home_id for above in root.parents)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _check_not_home(fd: int, home_id: tuple[int, int], target: Target) -> None:
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) == home_id:
        raise _in_home(target)


def _in_home(target: Target) -> ToolFailure:
    where = f"{target.rel} is inside Mino's home folder {target.home} (MINO_HOME)"
    if target.writing:
        return ToolFailure(
            f"{where}; file tools never write there. Memories are saved with memory_save, and the "
            "settings are for the person to edit."
        )
    return ToolFailure(
        f"{where}, which holds settings and other sessions; file tools do not read it. "
        "Use memory_view to read a saved memory."
    )


def _inside(path: Path, root: Path) -> bool:
    # On the strings: `root in path.parents` builds a Path per level, a third of a read's time.
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith(os.sep) else r + os.sep)
