"""The store: one MINO_HOME as one process uses it, shared by every conversation the process holds.

It owns what is per home, not per conversation: the configuration, the session files with their
locks and selection (sessions/store.py) and the sandbox (probed once per process); memory saves are
serialised by memory.save_memory's lock file, across processes too. A conversation (conversation.py)
owns one session log, a working directory, a mode and a running turn; the CLI holds one, the editor
server one per connection, an ACP front end one per ACP session.

Any number of processes share one home (docs/BEHAVIOUR.md, "The store lock"). This is the one
place that knows how: conversations do their session changes inside `locked()` (the short store
lock: creating, switching, clearing and the selection never race) and hold a `claim()` on the
session they have open (no other conversation, in this process or another, can open it);
`holder()`/`holders()` say who has a session open, and `watch()` tells a front end when another
process created, cleared, opened or closed one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from .config import Config
from .sessions.store import Holder, SessionClaim, SessionInUse, SessionStore

T = TypeVar("T")

if TYPE_CHECKING:
    from .rules import RuleStore
    from .tools.sandbox import Sandbox

WATCH_INTERVAL_S = 0.5  # how often a watcher looks at the change counter: a few syscalls each time


class Store:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.sessions = SessionStore(config.sessions_dir)
        self._guard = threading.Lock()
        self._sandbox: Background[tuple[Sandbox | None, str]] | None = None
        self._claims: dict[str, SessionClaim] = {}  # sessions this process has open
        self._own_changes: set[int] = set()  # counter values this process wrote (not news to it)
        self._rules: RuleStore | None = None

    @property
    def rules(self) -> RuleStore:
        """The remembered decisions under this home (core/rules.py), shared by its conversations."""
        if self._rules is None:
            from .rules import RuleStore

            self._rules = RuleStore(self.config.home)
        return self._rules

    def open(self) -> None:
        """Start what the first conversation needs (the sandbox probe). Nothing is locked for the
        life of the process: conversations claim their sessions one by one."""
        self.start_probe()  # the probe runs a process: it runs while the store is opened

    def start_probe(self) -> None:
        """Start the sandbox probe in the background if it has not started (any thread)."""
        with self._guard:
            if self._sandbox is None:
                self._sandbox = Background(self._detect_sandbox, "mino-sandbox-probe")

    def close(self) -> None:
        """Nothing to release: each conversation releases its own claim when it closes."""

    # ---- locking -------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The short store lock (re-entrant). Raises StoreLocked (it stayed taken) and StorageError."""
        with self.sessions.exclusive():
            yield

    def claim(self, session_id: str, workdir: str) -> SessionClaim:
        """Open `session_id` for one conversation until `release()`. Raises SessionInUse when a
        conversation of this or another process has it. Takes the store lock (re-entrant)."""
        with self.locked():
            with self._guard:
                mine = self._claims.get(session_id)
            if mine is not None and mine.held:  # flock would not refuse a second descriptor of ours
                raise SessionInUse(session_id, Holder(os.getpid(), mine.workdir, mine))
            claim = self.sessions.claim(session_id, workdir)
            with self._guard:
                self._claims[session_id] = claim
            self.changed()
            return claim

    def release(self, claim: SessionClaim | None) -> None:
        """Close a claim (idempotent); other processes hear of it through the change counter."""
        if claim is None or not claim.held:
            return
        with self._guard:
            if self._claims.get(claim.session_id) is claim:
                del self._claims[claim.session_id]
        claim.release()
        try:
            with self.locked():
                self.changed()
        except Exception:  # only a signal to other windows (StoreLocked, a full disk): never fail a close
            pass

    def mark_exiting(self) -> None:
        """This process is leaving: every session it has open says so in its note."""
        with self._guard:
            claims = list(self._claims.values())
        for claim in claims:
            claim.mark_exiting()

    def holder(self, session_id: str) -> Holder | None:
        """Who has `session_id` open, this process included (Holder.claim set), or None."""
        with self.locked():
            return self._mine(session_id) or self.sessions.holder(session_id)

    def holders(self) -> dict[str, Holder]:
        """Every session open anywhere, this process's own claims included (Holder.claim set)."""
        with self.locked():
            found = self.sessions.holders()
        with self._guard:
            for sid, claim in self._claims.items():
                if claim.held:
                    found[sid] = Holder(os.getpid(), claim.workdir, claim)
        return found

    def _mine(self, session_id: str) -> Holder | None:
        with self._guard:
            claim = self._claims.get(session_id)
        return Holder(os.getpid(), claim.workdir, claim) if claim is not None and claim.held else None

    # ---- telling other processes ---------------------------------------------------------
    def changed(self) -> None:
        """Bump the change counter (under locked()): a session was created, cleared, opened or closed."""
        self.sessions.note_change(self._remember)

    def _remember(self, value: int) -> None:
        with self._guard:
            self._own_changes.add(value)

    def watch(self, on_change: Callable[[], None], interval: float = WATCH_INTERVAL_S) -> Watcher:
        """Call `on_change` (from a background thread) after another process changed the sessions:
        created, cleared, opened or closed one, or died with one open. Stop it with `stop()`."""
        return Watcher(self, on_change, interval)

    def _news(self, seen: int, now: int) -> bool:
        """Whether counter values in (seen, now] include one this process did not write."""
        with self._guard:
            if now < seen or now - seen > 1000:
                return True  # the file was replaced or reset, or many changes: look again
            news = any(v not in self._own_changes for v in range(seen + 1, now + 1))
            self._own_changes = {v for v in self._own_changes if v > now}
            return news

    # ---- the sandbox ---------------------------------------------------------------------
    def sandbox(self) -> tuple[Sandbox | None, str]:
        """(the sandbox or None, the start-up line); starts the probe if need be and waits for it."""
        self.start_probe()
        with self._guard:
            probe = self._sandbox
        assert probe is not None
        try:
            verdict = probe.result()
        except BaseException:
            with self._guard:  # it failed whole (its modules could not load): the next caller probes again
                if self._sandbox is probe:
                    self._sandbox = None
            raise
        if verdict[0] is not None and verdict[0].unready:
            with self._guard:  # "not now": the next caller probes again (one probe at a time)
                if self._sandbox is probe:
                    self._sandbox = None
        return verdict

    def _detect_sandbox(self) -> tuple[Sandbox | None, str]:
        # What bash loads on its first run (~5-7 ms), here even when the probe runs nothing (sandbox:
        # off): every tool call waits for the verdict, so the first command finds them loaded.
        import selectors  # noqa: F401
        import signal  # noqa: F401
        import subprocess  # noqa: F401

        from .tools import orphans, sandbox  # noqa: F401

        return sandbox.detect(
            self.config.sandbox, self.config.sandbox_unix_sockets, self.config.sandbox_network
        )


class Watcher:
    """A daemon thread that reads the change counter every `interval` seconds (one open and read)
    and checks that the processes holding sessions are alive (a SIGKILLed window releases its lock
    but cannot bump the counter). It sleeps on an Event, so `stop()` ends it at once."""

    def __init__(self, store: Store, on_change: Callable[[], None], interval: float) -> None:
        self._store = store
        self._on_change = on_change
        self._interval = interval
        self._stop = threading.Event()
        self._seen = store.sessions.read_changes()
        self._holders = self._others()
        self._thread = threading.Thread(target=self._run, name="mino-sessions-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(2.0)

    def _others(self) -> dict[str, int]:
        """Sessions other processes have open, by their notes: session -> pid."""
        me = os.getpid()
        return {
            sid: h.pid
            for sid, h in self._store.sessions.notes().items()
            if h.pid is not None and h.pid != me and _alive(h.pid)
        }

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                now = self._store.sessions.read_changes()
                news = now != self._seen and self._store._news(self._seen, now)
                counter_moved = now != self._seen
                self._seen = now
                died = any(not _alive(pid) for pid in self._holders.values())
                if counter_moved or died:
                    self._holders = self._others()
                if (news or died) and not self._stop.is_set():
                    self._on_change()
            except Exception:  # a watcher must never take its front end down
                continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # EPERM: it exists, as another user
    try:  # a killed process its parent has not reaped yet is a zombie: its locks are gone already
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:
        return True


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
