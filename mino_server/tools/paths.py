"""Confining a tool's path to the working directory (SPEC §5).

Two steps, matching the tool contract: `check_path_syntax` is pure (validate), `resolve_in_workdir`
resolves symlinks on disk (prepare, and again in run so a swapped link cannot redirect a write).
"""

from __future__ import annotations

import os
from pathlib import Path

from .base import ArgumentError, ToolFailure


def check_path_syntax(value: str, key: str = "path") -> str:
    """Reject paths no file system accepts; everything else needs the disk to judge."""
    if value == "":
        raise ArgumentError(f"argument '{key}' must not be empty")
    if "\0" in value:
        raise ArgumentError(f"argument '{key}' must not contain a NUL byte")
    return value


def resolve_in_workdir(workdir: Path, rel: str) -> Path:
    """The real path of `rel` (relative to `workdir`, or absolute) if it stays inside `workdir`.

    Symlinks are resolved first, so a link inside the project that points elsewhere is refused
    just like `../x`. The final component may be missing (a file about to be created).
    """
    root = workdir.resolve()
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
        raise ToolFailure(f"{rel} cannot be resolved: {e.strerror or e}.") from None
    if not _inside(resolved, root):
        raise ToolFailure(
            f"{rel} leads outside the working directory {root} through a symbolic link"
            f" (it resolves to {resolved}); tools can only use files inside it."
        )
    return resolved


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
