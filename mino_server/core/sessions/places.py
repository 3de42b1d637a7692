"""Where each session was last used: `sessions/<id>.place.json` beside its log.

`{"cwd": "/abs/dir", "title": "first line typed"|null, "model": "name"|null}`, replaced atomically.
An editor that lists sessions per project (the Agent Client Protocol's `session/list` with `cwd`)
reads it, and a resumed ACP session picks the model chosen in it again; the log and its format stay
as they are. A missing or damaged file means "not known": the session itself is
unaffected, and the next use writes a good one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..durable import atomic_write_at, open_private_dir
from ..values import Frozen, frozen
from .store import ID_RE

SUFFIX = ".place.json"
TITLE_MAX = 80


@frozen
class Place(Frozen):
    cwd: str
    title: str | None
    model: str | None = None  # the model picked for the session (ACP's model option), if any


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
    title, model = data.get("title"), data.get("model")
    return Place(
        data["cwd"], title if isinstance(title, str) else None, model if isinstance(model, str) else None
    )


def remember(directory: Path, session_id: str, place: Place) -> None:
    """Save `place` atomically. Raises OSError (the caller decides whether that matters)."""
    fields = {"cwd": place.cwd, "title": place.title}
    if place.model is not None:
        fields["model"] = place.model
    body = json.dumps(fields, ensure_ascii=True) + "\n"
    path = path_for(directory, session_id)
    # The sessions folder opened from MINO_HOME without following a link (durable.open_private_dir).
    folder = open_private_dir(directory.parent, (directory.name,))
    try:
        atomic_write_at(folder, path.name, body.encode())
    finally:
        os.close(folder)


# An escape display.terminal_text may leave cut at the end of a title (`\u20`): dropped whole.
_CUT_ESCAPE = re.compile(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3}|U[0-9a-f]{0,7})?$")


def title_from(text: str) -> str | None:
    """A session's title from the first message typed in it: its first non-blank line, blanks
    folded, escaped as every outside string a person reads (nothing invisible, no control
    characters), cut to TITLE_MAX characters with "…". None when the text has no visible line."""
    from ..display import terminal_text

    for line in text.splitlines():
        line = terminal_text(" ".join(line.split()))
        if line:
            if len(line) <= TITLE_MAX:
                return line
            return _CUT_ESCAPE.sub("", line[: TITLE_MAX - 1]) + "…"
    return None
