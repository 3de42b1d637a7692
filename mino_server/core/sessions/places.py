"""Where each session was last used: `sessions/<id>.place.json` beside its log.

`{"cwd": "/abs/dir", "title": "first line typed"|null}`, replaced atomically. An editor that lists
sessions per project (the Agent Client Protocol's `session/list` with `cwd`) reads it; the log and
its format stay as they are. A missing or damaged file means "not known": the session itself is
unaffected, and the next use writes a good one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..durable import atomic_write
from ..values import Frozen, frozen
from .store import ID_RE

SUFFIX = ".place.json"
TITLE_MAX = 80


@frozen
class Place(Frozen):
    cwd: str
    title: str | None


def path_for(directory: Path, session_id: str) -> Path:
    if not ID_RE.fullmatch(session_id):
        raise ValueError(f"{session_id!r} is not a session ID")
    return directory / f"{session_id}{SUFFIX}"


def recall(directory: Path, session_id: str) -> Place | None:
    try:
        raw = path_for(directory, session_id).read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("cwd"), str) or not os.path.isabs(data["cwd"]):
        return None
    title = data.get("title")
    return Place(data["cwd"], title if isinstance(title, str) else None)


def remember(directory: Path, session_id: str, place: Place) -> None:
    """Save `place` atomically. Raises OSError (the caller decides whether that matters)."""
    body = json.dumps({"cwd": place.cwd, "title": place.title}, ensure_ascii=True) + "\n"
    atomic_write(path_for(directory, session_id), body.encode())


def title_from(text: str) -> str | None:
    """A short title from what a person typed first: its first non-blank line, cut at TITLE_MAX."""
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= TITLE_MAX else line[: TITLE_MAX - 1] + "…"
    return None
