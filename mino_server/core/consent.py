"""What the person said yes to once and need not be asked again, remembered under MINO_HOME.

Project content that instructs the model (project skills today; AGENTS.md later) is used only once
the person accepted exactly that content: a yes is remembered by kind and by the SHA-256 of what
was shown and what it binds (digest()), so a change in one byte asks again. One file per yes,
`MINO_HOME/consent/<kind>/<digest>`, written atomically: processes sharing a home never rewrite
each other's answers, and a torn write leaves no half-accepted state. A no is not remembered: it
asks again next time.

The sandbox keeps MINO_HOME read-only (or hidden), and file tools refuse it, so a command or the
model cannot say yes on the person's behalf.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

CONSENT_DIR = "consent"
_KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


def digest(*parts: str | bytes) -> str:
    """SHA-256 over `parts`, each prefixed with its length: ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def _path(home: Path, kind: str, sha: str) -> Path:
    if not _KIND.fullmatch(kind) or not _DIGEST.fullmatch(sha):
        raise ValueError(f"bad consent key {kind!r}/{sha!r}")
    return home / CONSENT_DIR / kind / sha


def accepted(home: Path, kind: str, sha: str) -> bool:
    """The person said yes to this `kind` of content with this digest before."""
    import os
    import stat

    from .durable import open_private_dir

    _path(home, kind, sha)
    try:  # no link followed below MINO_HOME: a linked answer is not the person's yes
        folder = open_private_dir(home, (CONSENT_DIR, kind), create=False)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.stat(sha, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(folder)


def remember(home: Path, kind: str, sha: str, about: str) -> None:
    """Remember a yes (`about`: a line for a person reading the folder, e.g. the path accepted).
    Raises OSError when it cannot be saved; the caller says so (the yes holds for now)."""
    import os

    from .durable import atomic_write_at, ensure_private_dir, open_private_dir

    _path(home, kind, sha)  # the key is checked
    ensure_private_dir(home)
    folder = open_private_dir(home, (CONSENT_DIR, kind))  # no link followed below MINO_HOME
    record = {
        "kind": kind,
        "sha256": sha,
        "about": about,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")
        atomic_write_at(folder, sha, data)
    finally:
        os.close(folder)
