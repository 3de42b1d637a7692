"""The store: one MINO_HOME as one process uses it, shared by every conversation the process holds.

It owns what is per home, not per conversation: the configuration, the session files with their
lock and selection (sessions/store.py) and the sandbox (probed once per process); memory saves are
serialised by memory.save_memory's lock file, across processes too. A conversation (conversation.py) owns one session log, a working
directory, a mode and a running turn; the CLI holds one, the editor server one per connection, an
ACP front end one per ACP session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from .config import Config
from .sessions.store import SessionStore

T = TypeVar("T")

if TYPE_CHECKING:
    from .tools.sandbox import Sandbox


class Store:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions = SessionStore(config.sessions_dir)
        self._guard = threading.Lock()
        self._users = 0
        self._sandbox: Background[tuple[Sandbox | None, str]] | None = None

    def open(self) -> None:
        """Take the store lock for this process (once, however many conversations open it).

        Raises sessions.store.StoreLocked (another process holds it) and StorageError."""
        with self._guard:
            if self._sandbox is None:  # the probe runs a process: it runs while the store is opened
                self._sandbox = Background(self._detect_sandbox, "mino-sandbox-probe")
            if self._users == 0:
                self.sessions.lock()
            self._users += 1

    def close(self) -> None:
        with self._guard:
            if self._users == 0:
                return
            self._users -= 1
            if self._users == 0:
                self.sessions.unlock()

    def sandbox(self) -> tuple[Sandbox | None, str]:
        """(the sandbox or None, the start-up line); waits for the probe on first use."""
        with self._guard:
            if self._sandbox is None:
                self._sandbox = Background(self._detect_sandbox, "mino-sandbox-probe")
            probe = self._sandbox
        return probe.result()

    def _detect_sandbox(self) -> tuple[Sandbox | None, str]:
        from .tools import sandbox

        return sandbox.detect(self.config.sandbox, self.config.sandbox_unix_sockets)


class Background(Generic[T]):
    """Run `work` in a thread now; `result()` waits for it and returns its value or raises its error."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._value: tuple[T] | None = None  # set (in a tuple: T may be None) when work() returned
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = (self._work(),)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None  # the thread ended without an error: work() returned
        return self._value[0]
