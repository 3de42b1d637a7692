"""Project instructions: the AGENTS.md files from the repository root down to the working directory.

They are text from whoever wrote the repository, so they reach the model only once the person
accepted exactly that content (consent.py, kind "instructions", bound to the paths and the bytes
sent): a changed byte asks again; a no sends nothing and asks again next session.

Limits: at most MAX_BYTES together, root first; a file that crosses the limit is cut there and the
files after it are left out (the model and the person are told). Only regular files count: a
symlink, a FIFO or a folder named AGENTS.md is skipped (a FIFO would block the read; a symlink
could show the person one file and point at another, e.g. outside the project).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from .values import Frozen, frozen

FILE_NAME = "AGENTS.md"
CONSENT_KIND = "instructions"
MAX_BYTES = 32 * 1024
HEADING = (
    "Project instructions (AGENTS.md files from the project, root first; the person accepted them for "
    "this project):"
)


@frozen
class InstructionFile(Frozen):
    """One AGENTS.md as it would be sent: `text` is what the model gets (possibly cut)."""

    path: str  # absolute
    shown: str  # relative to the repository root, for the heading and the question
    data: bytes  # the bytes sent (the digest is bound to them)
    cut: bool = False  # cut at the limit (this file crossed MAX_BYTES)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@frozen
class Found(Frozen):
    root: Path
    files: tuple[InstructionFile, ...]
    left_out: tuple[str, ...] = ()  # files after the limit, not sent (shown paths)

    @property
    def lines(self) -> int:
        return sum(len(f.text.splitlines()) for f in self.files)

    @property
    def digest(self) -> str:
        from .consent import digest

        parts: list[str | bytes] = [CONSENT_KIND]
        for f in self.files:
            parts += [f.path, f.data]
        return digest(*parts)


def repository_root(workdir: Path) -> Path:
    """The nearest folder from `workdir` up that has a `.git` (a folder, or a worktree's file), else `workdir`."""
    for folder in (workdir, *workdir.parents):
        try:
            os.lstat(folder / ".git")
        except OSError:
            continue
        return folder
    return workdir


def _read(path: Path, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of a regular file that is not a symlink; None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        want = limit + 1
        while want > 0:
            chunk = os.read(fd, min(want, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            want -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _cut(data: bytes, limit: int) -> bytes:
    """`data` cut to at most `limit` bytes, at a line end when there is one, never inside a character."""
    head = data[:limit]
    newline = head.rfind(b"\n")
    if newline >= 0:
        return head[: newline + 1]
    return head.decode("utf-8", "ignore").encode("utf-8")  # a partial last character dropped


def find(workdir: Path) -> Found:
    """The AGENTS.md files that apply to `workdir`, root first, within MAX_BYTES together."""
    workdir = workdir.resolve()
    root = repository_root(workdir)
    parts = workdir.relative_to(root).parts
    folders = [root.joinpath(*parts[:i]) for i in range(len(parts) + 1)]  # root first
    files: list[InstructionFile] = []
    left_out: list[str] = []
    room = MAX_BYTES
    for folder in folders:
        path = folder / FILE_NAME
        shown = str(path.relative_to(root))
        if room <= 0:
            if _read(path, 0) is not None:
                left_out.append(shown)
            continue
        data = _read(path, room)
        if data is None or not data.strip():
            continue
        cut = len(data) > room
        if cut:
            data = _cut(data, room)
        files.append(InstructionFile(path=str(path), shown=shown, data=data, cut=cut))
        room = 0 if cut else room - len(data)
    return Found(root=root, files=tuple(files), left_out=tuple(left_out))


def render(found: Found) -> str | None:
    """The labelled part of the instructions sent after SOUL.md; None when there is nothing to send."""
    if not found.files:
        return None
    parts = [HEADING]
    for f in found.files:
        parts.append(f"\n--- {f.shown} ---\n{f.text.rstrip()}")
        if f.cut:
            parts.append(
                f"[{f.shown} was cut here: project instructions are limited to {MAX_BYTES // 1024} KiB]"
            )
    if found.left_out:
        parts.append(f"[Not sent, past the {MAX_BYTES // 1024} KiB limit: {', '.join(found.left_out)}]")
    return "\n".join(parts)


def files_for_question(found: Found) -> Sequence[tuple[str, str]]:
    return [(f.path, f.text) for f in found.files]
