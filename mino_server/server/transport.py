"""LSP base-protocol framing on raw pipes: a reader that survives bad input and a locked writer.

pygls's own read loop has no size cap and answers nothing to a body that is not JSON, so the server
reads frames here and hands well-formed messages to pygls's JsonRPCProtocol. Standard library only:
this runs before pygls has finished importing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..core.inbound import too_much_json
from ..stdio import MessageWriter
from . import protocol as P


@dataclass
class FrameError:
    """A frame that could not be read as a message; answered with `id: null`."""

    code: int
    message: str


def read_frames(stream: BinaryIO) -> Iterator[bytes | FrameError]:
    """Message bodies (or FrameErrors) until EOF. Never raises on bad input."""
    limit = P.MAX_HEADER_LINE_BYTES
    while True:
        length: int | None = None
        problem: str | None = None
        seen_header = False
        while True:
            line = stream.readline(limit + 1)
            if not line:
                return
            if not line.endswith(b"\n") and len(line) > limit:
                while line and not line.endswith(b"\n"):  # drop the rest of the over-long line
                    line = stream.readline(limit + 1)
                if not line:
                    return
                problem = problem or f"a header line is longer than {limit} bytes"
                seen_header = True
                continue
            if not line.strip():
                if not seen_header:
                    continue  # a stray blank line between messages
                break
            seen_header = True
            name, colon, value = line.partition(b":")
            if not colon:
                problem = problem or f"a header line has no colon: {_show(line)}"
            elif name.strip().lower() == b"content-length":
                text = value.strip()
                if text.isdigit():
                    length = int(text)
                else:
                    problem = problem or f"Content-Length is not a whole number: {_show(text)}"
        if length is None:
            yield FrameError(
                P.PARSE_ERROR,
                f"Parse error: {problem or 'the header has no Content-Length'}; message ignored.",
            )
            continue
        if length > P.MAX_MESSAGE_BYTES:
            # Answer first (a client with a wrong length learns why nothing happens), then skip.
            yield FrameError(
                P.INVALID_REQUEST,
                f"Message too large: {length} bytes; the limit is {P.MAX_MESSAGE_BYTES} bytes (16 MiB). "
                "It is skipped unread.",
            )
            if not _skip(stream, length):
                return
            continue
        body = stream.read(length) if length else b""
        if len(body) < length:
            return  # EOF inside a body
        if problem:  # a damaged header: do not guess what the body meant
            yield FrameError(P.PARSE_ERROR, f"Parse error: {problem}; the message was skipped.")
            continue
        yield body


def _skip(stream: BinaryIO, length: int) -> bool:
    while length > 0:
        chunk = stream.read(min(length, 1 << 20))
        if not chunk:
            return False
        length -= len(chunk)
    return True


def _show(raw: bytes, limit: int = 60) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")


def decode(body: bytes) -> dict[str, Any] | FrameError:
    """The JSON object of a body, or the error to answer. Shape checks happen in the server."""
    crowded = too_much_json(body)
    if crowded:
        return FrameError(P.INVALID_REQUEST, f"Invalid request: {crowded}; it was skipped.")
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return FrameError(P.PARSE_ERROR, f"Parse error: the message is not valid JSON ({P.one_line(exc)}).")
    except RecursionError:  # "[[[[…" thousands deep: an error for this message, not the server's end
        return FrameError(P.PARSE_ERROR, "Parse error: the message nests JSON arrays or objects too deeply.")
    if isinstance(message, list):
        return FrameError(P.INVALID_REQUEST, "Invalid request: batches (JSON arrays) are not supported.")
    if not isinstance(message, dict):
        return FrameError(P.INVALID_REQUEST, "Invalid request: a message must be a JSON object.")
    return message


class FrameWriter(MessageWriter):
    """Writes whole LSP frames (see MessageWriter: from any thread, dropped once the client is gone)."""

    def frame(self, body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
