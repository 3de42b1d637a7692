"""What the protocol front ends (`mino --stdio`, `mino --acp`) do alike as processes: speak their
protocol on stdin/stdout, log to stderr, and leave on SIGTERM as on the end of their input.

Not the core: the core never owns the process's streams or signals.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any, BinaryIO


class Terminated(Exception):
    """SIGTERM arrived: the read loop leaves as on the end of its input."""


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


def raise_on_sigterm() -> None:
    """From now on SIGTERM raises Terminated in the main thread."""

    def on_term(signum: int, frame: Any) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
