"""What the protocol front ends (`mino --stdio`, `mino --acp`) do alike as processes: speak their
protocol on stdin/stdout, write whole messages from any thread, log to stderr, and leave on SIGTERM
as on the end of their input. Standard library only: this runs before anything else has loaded.

Not the core: the core never owns the process's streams or signals.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

log = logging.getLogger("mino.stdio")


class Terminated(BaseException):
    """SIGTERM arrived: the read loop leaves as on the end of its input.

    A BaseException, like KeyboardInterrupt: the signal can land inside any `except Exception`
    on the main thread (a request being answered there), which must not swallow it."""


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own copies of fds 0 and 1; the process's fds 0/1 become /dev/null/stderr, so a
    stray print or a child process's output can never land in the protocol stream."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return open(proto_in, "rb", buffering=1 << 16), open(proto_out, "wb", buffering=0)


def configure_logging(name: str) -> None:
    """Log to stderr as `name` (e.g. "mino --acp"); debug when MINO_SERVER_DEBUG is set."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{name}: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if os.environ.get("MINO_SERVER_DEBUG") else logging.WARNING)


TERMINATE_WITHIN_S = 7.0  # the orderly way out waits at most 5 s for a turn to write its end


def raise_on_sigterm() -> None:
    """From now on SIGTERM raises Terminated in the main thread, and the process ends within
    TERMINATE_WITHIN_S whatever the main thread is doing: what matters is fsynced as it is written,
    and the session locks are flocks, released with the process.

    The deadline does not depend on the main thread. A Python-level handler runs only when the main
    thread next executes Python code, which may be never: the kernel can hand the signal to another
    thread while the main thread sits in read() on a silent client (not interrupted), or the main
    thread can be in a C call that does not return soon (an fsync on a busy disk). So the C-level
    handler's wakeup fd (written at delivery, from whatever thread took the signal) wakes a watcher
    thread that starts the deadline. SIGTERM is also unblocked: a mask inherited from the parent
    (exec keeps it) would hold the signal pending forever."""

    def on_term(signum: int, frame: Any) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the C handler must never block on a full pipe
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end,), name="sigterm-deadline", daemon=True).start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _watch(fd: int) -> None:
    while signal.SIGTERM not in os.read(fd, 64):  # one byte per signal delivered (SIGINT too)
        pass
    time.sleep(TERMINATE_WITHIN_S)
    _exit_now()


def _exit_now() -> None:
    # No logging and no sys.stderr here: their locks may be held by the very thread that is stuck.
    # The line goes out only if the pipe has room for it (a small write is then whole, not blocking).
    try:
        if select.select([], [2], [], 0)[1]:
            os.write(2, f"still running {TERMINATE_WITHIN_S:.0f} s after SIGTERM: exiting now\n".encode())
    except OSError:
        pass
    end_what_mino_started()
    os._exit(1)


def end_what_mino_started() -> None:
    """Before os._exit (which skips atexit): kill every process Mino started that is still there
    (core/tools/orphans.py end_all; loaded once Mino has started a command or an MCP server).
    Reads /proc and sends signals only: safe when another thread is stuck holding a lock."""
    orphans = sys.modules.get("mino_server.core.tools.orphans")
    if orphans is not None:
        try:
            orphans.end_all()
        except Exception:  # the exit must happen whatever
            pass


class MessageWriter:
    """Writes whole messages under a lock (turn workers, the reader and pygls all send), each framed
    by the subclass. A client that has gone away (EPIPE) is not an error: the rest is dropped and
    `closed` is set, and the reader's EOF ends the process."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False

    def frame(self, body: bytes) -> bytes:
        raise NotImplementedError

    def send(self, message: dict[str, Any]) -> None:
        # ASCII-only JSON: lone surrogates from odd file names cannot make the stream invalid UTF-8.
        data = self.frame(json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii"))
        with self._lock:
            if self.closed:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError) as exc:  # ValueError: the stream was closed here
                self.closed = True
                log.info("stdout closed (%s); no more messages are sent", exc)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            try:
                self._stream.close()
            except OSError:
                pass
