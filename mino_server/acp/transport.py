"""Newline-delimited JSON-RPC 2.0 on a byte stream, as the Agent Client Protocol frames it.

One message per line, UTF-8, no embedded newline (json.dumps escapes every control character, and
ensure_ascii keeps a lone surrogate from model output encodable). A line longer than MAX_LINE_BYTES
is skipped unread to its end and answered with INVALID_REQUEST; standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..core.inbound import too_much_json
from ..jsonrpc import INVALID_REQUEST, PARSE_ERROR
from ..stdio import MessageWriter

MAX_LINE_BYTES = 32 * 1024 * 1024  # a prompt with 256 KiB of context is far below; a runaway client is not
_CHUNK = 1 << 16
# The id of one of Mino's own requests near the start of a skipped line: the answer it was (a client
# answering fs/read_text_file with too much text), so that request fails instead of waiting on.
_OWN_ID = re.compile(rb'"id"\s*:\s*"(mino-[0-9]{1,18})"')


@dataclass(frozen=True)
class LineError:
    """A line that is not one JSON-RPC message; `code` and `message` are the error to answer."""

    code: int
    message: str
    answers: str | None = None  # the id of Mino's request a skipped line answered, when it says


def read_messages(stream: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[dict[str, Any] | LineError]:
    """Each non-blank line as a JSON object, or a LineError; ends at EOF."""
    while True:
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # skip the rest of the line without holding it
                more = stream.readline(_CHUNK)
                if not more or more.endswith(b"\n"):
                    break
            own = _OWN_ID.search(line, 0, 4096)
            yield LineError(
                INVALID_REQUEST,
                f"Invalid request: a message longer than {max_bytes} bytes was skipped.",
                own.group(1).decode() if own else None,
            )
            continue
        if not line.strip():
            continue
        crowded = too_much_json(line)
        if crowded:
            yield LineError(INVALID_REQUEST, f"Invalid request: {crowded}; it was skipped.")
            continue
        try:
            message = json.loads(line)
        except ValueError:
            yield LineError(
                PARSE_ERROR, "Parse error: a line is not valid JSON (one JSON-RPC message per line)."
            )
            continue
        except RecursionError:  # "[[[[…" thousands deep: an error for this line, not the agent's end
            yield LineError(PARSE_ERROR, "Parse error: the message nests JSON arrays or objects too deeply.")
            continue
        if not isinstance(message, dict):
            kind = "a batch (JSON array)" if isinstance(message, list) else "not a JSON object"
            yield LineError(
                INVALID_REQUEST, f"Invalid request: the message is {kind}; send one object per line."
            )
            continue
        yield message


class Writer(MessageWriter):
    """Writes whole messages, one per line (see MessageWriter: from any thread, dropped once the
    client is gone)."""

    def frame(self, body: bytes) -> bytes:
        return body + b"\n"
