"""What a chat panel shows for a session, a page at a time (docs/PROTOCOL.md, `mino/history`).

A page is the latest `limit` shown records (user and assistant messages, tool results) whose seq is
below `before`, oldest first, and whether earlier ones exist. Only the page's records (and the
tool_call records that name their tools) are read from the log, so a page costs the same on a
session of 100 records and of a million. A user message's images are shown by name after its text
(`[image: shot.png, PNG 640×480, 12 KB]`, images.placeholder): the history carries no image bytes.
"""

from __future__ import annotations

from .contract import HistoryItem, Role
from .sessions.log import SessionLog

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000  # a larger limit is capped: a page stays a page


def page_limit(limit: int | None) -> int:
    """The number of items a page holds for the `limit` asked (None: the default)."""
    if limit is None:
        return DEFAULT_LIMIT
    return min(max(limit, 1), MAX_LIMIT)


def history_page(
    log: SessionLog | None, before: int | None = None, limit: int | None = None
) -> tuple[list[HistoryItem], bool]:
    """(items, more): the latest page of items with seq below `before` (None: no bound)."""
    if log is None:
        return [], False
    pairs, more = log.page(before, page_limit(limit))
    gone = log.rewound()  # turns /rewind took back: shown, and marked
    items = []
    for rec, call in pairs:
        rewound = True if gone and rec.get("turn_id") in gone else None
        t = rec["type"]
        if t == "tool_result":
            items.append(
                HistoryItem(
                    seq=rec["seq"],
                    turnId=rec.get("turn_id"),
                    role="tool",
                    text=rec["output"],
                    tool=call["name"] if call is not None else "?",
                    status=rec["status"],
                    rewound=rewound,
                )
            )
        else:
            role: Role = "user" if t == "user_message" else "assistant"
            text = rec["text"]
            if t == "user_message" and rec.get("images"):  # each image by name, after the typed text
                from .images import placeholder

                text = "\n".join(
                    [text, *map(placeholder, rec["images"])] if text else map(placeholder, rec["images"])
                )
            items.append(
                HistoryItem(
                    seq=rec["seq"],
                    turnId=rec.get("turn_id"),
                    role=role,
                    text=text,
                    rewound=rewound,
                    interrupted=True if t == "assistant_message" and rec.get("interrupted") else None,
                )
            )
    return items, more
