"""How much JSON one message from outside may make once parsed, judged on its bytes before parsing.

Every channel that reads bytes from outside (ACP and editor messages, MCP servers, the model's
stream) bounds the bytes of one message while it reads them; this bounds what those bytes become.
A byte cap alone does not: 29 MiB of `[1,2,3,…]` is 15 million list items, ~800 MB of Python
objects, and 16 MiB of `[{},{},…]` about 400 MB of dicts. Text inside strings costs what its bytes
cost, so values are counted outside strings. Standard library only: the protocol front ends load
this before anything else.
"""

from __future__ import annotations

import re

# Objects and arrays one message may hold: Mino's largest messages (a prompt with 256 KiB of
# context) hold a few thousand.
MAX_CONTAINERS = 200_000
# Values (and keys) one message may hold outside strings, counted as the `,` and `:` between them:
# ~40 MB of Python objects at most (500,000 floats, or short strings, with their list slots).
MAX_JSON_VALUES = 500_000

# A JSON string, escapes included (unrolled: no alternation per character).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def too_much_json(body: bytes) -> str | None:
    """Why a message body is refused unparsed (too many objects or arrays, or too many values),
    or None. Counted first with strings included (an over-count, one pass in C); only a body that
    may be over is counted again with its strings taken out."""
    containers = body.count(b"{") + body.count(b"[")
    separators = body.count(b",") + body.count(b":")
    if containers <= MAX_CONTAINERS and separators <= MAX_JSON_VALUES:
        return None
    outside = _STRING.sub(b'""', body)
    containers = outside.count(b"{") + outside.count(b"[")
    if containers > MAX_CONTAINERS:
        return f"the message holds {containers} JSON objects or arrays; the limit is {MAX_CONTAINERS}"
    values = outside.count(b",") + outside.count(b":")
    if values > MAX_JSON_VALUES:
        return f"the message holds over {values} JSON values; the limit is {MAX_JSON_VALUES}"
    return None
