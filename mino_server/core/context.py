"""Editor context in a turn: files, or lines of them, attached to what a person typed
(docs/BEHAVIOUR.md, "Editor context").

Three front-end inputs become the same items: the `context` of an editor's mino/turn (a selection,
possibly unsaved, or a file), `@path` and `@path:A-B` in typed text (`find_mentions`: one parser for
the chat panel and the terminal alike), and an ACP client's resource / resource_link blocks.

`resolve_context` checks every item before anything is sent or logged, and raises ContextError with
one line naming the first item that cannot be attached: the path must resolve, symbolic links
included, inside the working directory and never into MINO_HOME (tools/paths.py's confinement); an
item without text is read from disk with read_file's own checks and limits; all items together are
at most TOTAL_MAX_BYTES (UTF-8 bytes), and at most MAX_ITEMS of them. A given text over
ITEM_MAX_BYTES is not refused: the model gets its first ITEM_MAX_BYTES, cut on a character
boundary, and a line saying where it was cut and that read_file reads the rest (`cut_item`); the
conversation tells the person with a notice (words.context_cut).

The model receives the typed text followed by one `input_text` part per item (`context_part`):
`Context: <path relative to the working directory>[ (lines A-B)]`, a newline, and the text in a
Markdown fence longer than any backtick run inside it. The user_message record keeps the resolved
items (`to_record`: path, lines, text as sent), so a later request, a resume and a restart send
exactly the same parts (sessions/log.py, user_item), whatever the files hold by then.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .contract import ContextItem
from .errors import ContextError
from .values import Frozen, frozen

ITEM_MAX_BYTES = 64 * 1024  # a text the editor sends (a selection, an unsaved buffer)
TOTAL_MAX_BYTES = 256 * 1024  # all items of one turn together
MAX_MENTIONS = 50  # `@` words looked up on disk per message; later ones stay plain text
MAX_ITEMS = 100  # items per turn: each is checked (and maybe read) on disk
PATH_MAX_BYTES = 4096  # Linux's PATH_MAX: a longer path names no file (an item with text need not exist)
_BACKTICKS = re.compile(r"`+")
_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_LINES = re.compile(r"^(.+):(\d{1,9})(?:-(\d{1,9}))?$")
_TRAILING = ".,;:!?)]}>'\""  # punctuation after a mention ("see @a.py, then …") is not part of it
_SURROGATE = re.compile("[\ud800-\udfff]")


@frozen
class ContextRequest(Frozen):
    """An item as a front end asks for it, with how an error message names it."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    text: str | None = None
    where: str = "context item"  # e.g. "params.context[2]", "@src/app.py:10-20", "prompt[1] (file:///…)"


@frozen
class ResolvedItem(Frozen):
    """A checked item: `path` relative to the working directory ("/"-separated), `text` what the
    model gets. What the user_message record keeps (to_record / from_record)."""

    path: str
    start_line: int | None
    end_line: int | None
    text: str
    cut: tuple[int, int] | None = None  # (bytes sent, bytes given) when cut_item cut it; not kept


# ---- resolving ----------------------------------------------------------------------------------
def resolve_context(
    workdir: Path, home: Path, items: Sequence[ContextRequest | ContextItem | ResolvedItem]
) -> list[ResolvedItem]:
    """Check and load every item, in order, or raise ContextError for the first that cannot be attached.

    `items` are front-end requests (ContextRequest), the editor protocol's items (contract.ContextItem,
    named `context[i]` in messages), or items this function resolved before (kept as they are, and
    counted). Reads happen here, so call it off any thread that must stay free."""
    if len(items) > MAX_ITEMS:
        raise ContextError(f"{len(items)} context items; a turn may carry at most {MAX_ITEMS}.")
    root = workdir.resolve()
    total = 0
    resolved: list[ResolvedItem] = []
    for i, item in enumerate(items):
        if isinstance(item, ResolvedItem):
            one, where = item, f"context[{i}] ({item.path})"
        else:
            req = item if isinstance(item, ContextRequest) else request_of(item, f"context[{i}]")
            one, where = _resolve_one(req, root, home), req.where
        # A given text is cut at ITEM_MAX_BYTES; a file read is cut by read_file at 256 KiB; the
        # notes saying so do not count against the budget.
        size = len(one.text.encode("utf-8"))
        total += min(size, ITEM_MAX_BYTES if one.cut is not None else TOTAL_MAX_BYTES)
        if total > TOTAL_MAX_BYTES:
            raise ContextError(
                f"{where}: with it the context items come to {total:,} bytes; all items together may "
                f"hold at most {TOTAL_MAX_BYTES} bytes (256 KiB). Attach fewer files, or lines of them "
                "(@path:A-B)."
            )
        resolved.append(one)
    return resolved


def request_of(item: ContextItem, where: str) -> ContextRequest:
    """The editor protocol's item as a request named `where` in messages."""
    return ContextRequest(item.path, item.startLine, item.endLine, item.text, where)


def resolve_items(requests: Sequence[ContextRequest], workdir: Path, home: Path) -> list[ResolvedItem]:
    """resolve_context with the arguments in the order the ACP front end first used."""
    return resolve_context(workdir, home, requests)


def _resolve_one(req: ContextRequest, root: Path, home: Path) -> ResolvedItem:
    from .tools.base import ToolFailure
    from .tools.paths import locate

    path = req.path
    if not path or "\0" in path or _SURROGATE.search(path):
        raise ContextError(
            f"{req.where}: the path must be a file name, without NUL bytes; got {path[:200]!r}"
        )
    if len(path.encode("utf-8")) > PATH_MAX_BYTES:
        # It would reach the model, the log and the screen whole: no file has such a name.
        raise ContextError(
            f"{req.where}: the path is {len(path.encode('utf-8')):,} bytes; a path may be at most "
            f"{PATH_MAX_BYTES} bytes."
        )
    start, end = req.start_line, req.end_line
    if (start is not None and start < 1) or (end is not None and end < 1):
        raise ContextError(f"{req.where}: lines are numbered from 1")
    if start is not None and end is not None and end < start:
        raise ContextError(f"{req.where}: the last line ({end}) is before the first ({start})")
    if _in_home(root, home, path):
        raise ContextError(
            f"{req.where}: {path} is inside Mino's home folder {home} (MINO_HOME), which holds settings "
            "and other sessions; it cannot be attached."
        )
    try:
        target = locate(root, home, path, writing=False)
    except ToolFailure as exc:
        raise ContextError(f"{req.where}: {exc}") from None
    rel = _shown_path(root, path, target.path)
    if req.text is None:
        text = _read(rel, start, end, req.where, root, home)
    else:
        text = _SURROGATE.sub("\ufffd", req.text)  # half an emoji cannot be saved as UTF-8
        data = text.encode("utf-8")
        if len(data) > ITEM_MAX_BYTES:
            return cut_item(ResolvedItem(rel, start, end, text), data)
    return ResolvedItem(rel, start, end, text)


def cut_item(item: ResolvedItem, data: bytes) -> ResolvedItem:
    """The item's first ITEM_MAX_BYTES (`data` is its text in UTF-8), cut on a character boundary,
    and a line telling the model where it was cut and how to read the rest; `cut` says so to the
    conversation, which tells the person."""
    from .display import utf8_boundary

    size = utf8_boundary(data, ITEM_MAX_BYTES)
    kept = data[:size].decode("utf-8")
    note = cut_note(item.path, size, len(data))
    newline = "" if kept.endswith("\n") or not kept else "\n"
    text = f"{kept}{newline}{note}"
    return ResolvedItem(item.path, item.start_line, item.end_line, text, (size, len(data)))


def cut_note(path: str, kept: int, size: int) -> str:
    """The line the model gets after a cut item."""
    return (
        f"[Mino cut this item at {kept:,} of {size:,} bytes (UTF-8); the rest was not attached. "
        f"Read {path} with read_file to see more.]"
    )


def _in_home(root: Path, home: Path, path: str) -> bool:
    real = os.path.realpath(path if os.path.isabs(path) else root / path)
    home_real = os.path.realpath(home)
    return real == home_real or real.startswith(home_real.rstrip(os.sep) + os.sep)


def _shown_path(root: Path, typed: str, real: Path) -> str:
    """The path as the person named it, relative to the working directory (a link keeps its own
    name); the real path when the name only reaches inside through a link above it."""
    plain = Path(os.path.normpath(typed if os.path.isabs(typed) else root / typed))
    for candidate in (plain, real):
        try:
            rel = candidate.relative_to(root).as_posix()
        except ValueError:
            continue
        return rel or "."
    return real.as_posix()


def _read(rel: str, start: int | None, end: int | None, where: str, root: Path, home: Path) -> str:
    """The file (or its lines) exactly as read_file would return it to the model."""
    from .cancel import CancelToken
    from .tools.base import ArgumentError, ToolContext, ToolFailure
    from .tools.files import ReadFileTool

    tool = ReadFileTool()
    args: dict[str, Any] = {"path": rel}
    if start is not None:
        args["start_line"] = start
    if end is not None:
        args["end_line"] = end
    ctx = ToolContext(workdir=root, home=home, memory_dir=home / "memory", cancel=CancelToken())
    try:
        parsed = tool.validate(args)
        result = tool.run(parsed, ctx, tool.prepare(parsed, ctx))
    except (ArgumentError, ToolFailure) as exc:
        raise ContextError(f"{where}: {exc}") from None
    except OSError as exc:
        raise ContextError(f"{where}: cannot read {rel}: {exc.strerror or exc}") from None
    return result.output


# ---- @path and @path:A-B in typed text ---------------------------------------------------------
def find_mentions(text: str, workdir: Path, home: Path) -> list[ContextRequest]:
    """The files an `@path` or `@path:A-B` in `text` names (at the start or after white space), in
    order, each once. An `@word` that names no regular file inside the working directory (an email
    address, a decorator, a file elsewhere) is plain text and gives nothing. The text is sent as
    typed either way; only the first MAX_MENTIONS `@` words are looked up."""
    root = workdir.resolve()
    found: list[ContextRequest] = []
    seen: set[tuple[str, int | None, int | None]] = set()
    for n, m in enumerate(_MENTION.finditer(text)):
        if n >= MAX_MENTIONS:
            break
        req = _mention(m.group(1), root, home)
        if req is None:
            continue
        key = (os.path.normpath(req.path), req.start_line, req.end_line)
        if key not in seen:
            seen.add(key)
            found.append(req)
    return found


def _mention(word: str, root: Path, home: Path) -> ContextRequest | None:
    candidates = [word]
    stripped = word.rstrip(_TRAILING)
    if stripped and stripped != word:
        candidates.append(stripped)
    for token in candidates:
        if _is_file(root, home, token):
            return ContextRequest(token, where=f"@{token}")
        lines = _LINES.fullmatch(token)
        if lines and _is_file(root, home, lines.group(1)):
            start = int(lines.group(2))
            end = int(lines.group(3)) if lines.group(3) else start
            return ContextRequest(lines.group(1), start, end, where=f"@{token}")
    return None


def _is_file(root: Path, home: Path, path: str) -> bool:
    """Whether `path` resolves (links included) to a regular file inside the working directory, not
    in MINO_HOME."""
    from .tools.base import ToolFailure
    from .tools.paths import locate

    if "\0" in path or _SURROGATE.search(path) or _in_home(root, home, path):
        return False
    try:
        target = locate(root, home, path, writing=False)
        return stat.S_ISREG(os.stat(target.path).st_mode)
    except (ToolFailure, OSError, ValueError):
        return False


# ---- what the model receives and the log keeps -------------------------------------------------
def fence(text: str) -> str:
    """`text` in a Markdown code fence longer than any backtick run inside it (at least three)."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    mark = "`" * max(3, longest + 1)
    newline = "" if text.endswith("\n") or not text else "\n"
    return f"{mark}\n{text}{newline}{mark}"


def item_label(item: ResolvedItem) -> str:
    """`Context: <path>[ (lines A-B)]`: the first line of the item's part (and what the terminal shows)."""
    if item.start_line is None and item.end_line is None:
        return f"Context: {item.path}"
    return f"Context: {item.path} (lines {item.start_line or 1}-{item.end_line or 'end'})"


def context_part(item: ResolvedItem) -> str:
    """The text of the item's `input_text` part."""
    return f"{item_label(item)}\n{fence(item.text)}"


def with_context(text: str, items: Sequence[ResolvedItem]) -> str:
    """The typed text and every item's part in one string, separated by blank lines: for a front end
    that can only pass text. Conversation.run_turn(context=...) sends them as parts instead."""
    parts = [text] if text else []
    parts.extend(context_part(item) for item in items)
    return "\n\n".join(parts)


def to_record(item: ResolvedItem) -> dict[str, Any]:
    """The item as the user_message record keeps it."""
    rec: dict[str, Any] = {"path": item.path}
    if item.start_line is not None:
        rec["start_line"] = item.start_line
    if item.end_line is not None:
        rec["end_line"] = item.end_line
    rec["text"] = item.text
    return rec


def from_record(rec: dict[str, Any]) -> ResolvedItem:
    return ResolvedItem(rec["path"], rec.get("start_line"), rec.get("end_line"), rec["text"])


def record_problem(value: object) -> str | None:
    """Why a user_message record's `context` cannot be replayed; None when it is sound."""
    if not isinstance(value, list):
        return "user_message context must be a list"
    for rec in value:
        if not (
            isinstance(rec, dict) and isinstance(rec.get("path"), str) and isinstance(rec.get("text"), str)
        ):
            return "user_message context items need a string path and text"
        for key in ("start_line", "end_line"):
            if key in rec and type(rec[key]) is not int:
                return f"user_message context {key} must be a whole number"
    return None
