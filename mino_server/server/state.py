"""The State the editor is told: what `mino/state` answers and when `mino/stateChanged` is sent.

Conversation.state() reads and parses every memory file (~5 ms for 200): a turn's two busy
notifications would pay that on the way in and out. It is reused while nothing it depends on
changed: the session, the restore problem, the mode and the memory folder's entries (names,
inodes, times). busy and usage are read fresh: usage changes after every turn that reported one,
so in the key it would re-read the memory folder on every turn's way out (~1.5 ms for 200).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import protocol as P

if TYPE_CHECKING:
    from ..core.conversation import Conversation

log = logging.getLogger("mino.server")


class StateReporter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_sent: tuple[Any, ...] | None = None
        self._cache: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    def state(self, conversation: Conversation, op_busy: bool) -> P.State:
        """The conversation's State; busy also while an operation that shows busy runs (`op_busy`)."""
        key = _key(conversation)
        cached = self._cache
        if cached is not None and cached[0] == key and key[0] is not None:
            data = dict(cached[1])
        else:
            data = P.dump(conversation.state())
            if _key(conversation) == key:
                self._cache = (key, data)
            data = dict(data)
        data["busy"] = bool(conversation.busy) or op_busy
        data["usage"] = P.dump(conversation.usage)
        state: P.State = P.parse(P.State, data)
        return state

    def changed(self, state: Callable[[], P.State], notify: Callable[[str, Any], None], force: bool) -> None:
        """Notify `mino/stateChanged` when session, restore problem, mode, busy or the MCP servers
        differ from the last one sent (or when forced: the same session, cleared)."""
        try:
            with self._lock:
                data = P.dump(state())
                key = (
                    data["sessionId"],
                    data["restoreProblem"],
                    data["mode"],
                    data["busy"],
                    repr(data.get("mcp")),
                )
                if key == self._last_sent and not force:
                    return
                self._last_sent = key
                notify("mino/stateChanged", data)
        except Exception:
            log.exception("mino/stateChanged not sent")


def _key(conversation: Conversation) -> tuple[Any, ...]:
    return (
        _memory_signature(conversation.config.memory_dir),
        conversation.session_id,
        conversation.restore_problem,
        conversation.mode,
        tuple((s.name, s.state, s.tools, s.error) for s in conversation.mcp.status())
        if conversation.mcp
        else (),
    )


def _memory_signature(directory: Path) -> tuple[Any, ...] | None:
    """What the memory folder looks like without reading it; None when it cannot be told."""
    try:
        top = os.stat(directory)
        entries = []
        with os.scandir(directory) as it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                entries.append(
                    (entry.name, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink)
                )
    except OSError:
        return None
    return (top.st_ino, top.st_mtime_ns, tuple(sorted(entries)))
