"""Editor context in a turn: files or lines a person attached to what they typed.

An item names a path (absolute, or relative to the working directory) and optionally lines and the
text the editor shows (a selection, possibly unsaved). `resolve_items` checks every item before
anything is sent or logged: the path must resolve, symlinks included, inside the working directory
(and never into MINO_HOME); a given text is at most ITEM_MAX_BYTES, all texts together at most
TOTAL_MAX_BYTES (UTF-8); an item without text is read from disk with read_file's own checks and
limits. `with_context` words the result for the model: the typed text, then per item
`Context: <relative path>[ (lines A-B)]`, a newline and the text in a Markdown fence longer than any
backtick run inside it.

Minimal on purpose: until a turn takes the items as separate input parts, a front end passes
`with_context(...)` as the turn's text, so the user_message record holds exactly what the model
received and a resume or a restart sends the same again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cancel import CancelToken
from .tools.base import ArgumentError, ToolContext, ToolFailure

ITEM_MAX_BYTES = 64 * 1024
TOTAL_MAX_BYTES = 256 * 1024
_BACKTICKS = re.compile(r"`+")


class ContextError(ValueError):
    """An item that cannot be attached; the message names it and says why (nothing was sent)."""


@dataclass(frozen=True)
class ContextRequest:
    """An item as the editor sent it."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    text: str | None = None
    where: str = "context item"  # how a message names the item, e.g. "prompt[2] (file:///…)"


@dataclass(frozen=True)
class ContextItem:
    """A checked item: `path` relative to the working directory, `text` what the model gets."""

    path: str
    start_line: int | None
    end_line: int | None
    text: str


def resolve_items(requests: list[ContextRequest], workdir: Path, home: Path) -> list[ContextItem]:
    """Check and load every item, or raise ContextError for the first one that cannot be attached."""
    from .tools.files import ReadFileTool
    from .tools.paths import locate

    root = workdir.resolve()
    total = 0
    items: list[ContextItem] = []
    for req in requests:
        if req.start_line is not None and req.start_line < 1:
            raise ContextError(f"{req.where}: lines are numbered from 1")
        if req.start_line is not None and req.end_line is not None and req.end_line < req.start_line:
            raise ContextError(f"{req.where}: the last line is before the first")
        try:
            target = locate(root, home, req.path, writing=False)
        except ToolFailure as exc:
            raise ContextError(f"{req.where}: {exc}") from None
        rel = target.path.relative_to(root).as_posix() if target.path != root else "."
        if req.text is not None:
            size = len(req.text.encode("utf-8", "surrogatepass"))
            if size > ITEM_MAX_BYTES:
                raise ContextError(
                    f"{req.where}: its text is {size} bytes; an item may hold at most {ITEM_MAX_BYTES} bytes"
                )
            text = req.text
        else:
            text = _read(ReadFileTool(), rel, req, root, home)
            size = len(text.encode("utf-8", "surrogatepass"))
        total += size
        if total > TOTAL_MAX_BYTES:
            raise ContextError(
                f"{req.where}: the context items together pass {TOTAL_MAX_BYTES} bytes; attach less"
            )
        items.append(ContextItem(rel, req.start_line, req.end_line, text))
    return items


def _read(tool: Any, rel: str, req: ContextRequest, root: Path, home: Path) -> str:
    """The file (or its lines) as read_file would return it to the model."""
    args: dict[str, Any] = {"path": rel}
    if req.start_line is not None:
        args["start_line"] = req.start_line
    if req.end_line is not None:
        args["end_line"] = req.end_line
    ctx = ToolContext(workdir=root, home=home, memory_dir=home / "memory", cancel=CancelToken())
    try:
        parsed = tool.validate(args)
        prepared = tool.prepare(parsed, ctx)
        result = tool.run(parsed, ctx, prepared)
    except (ArgumentError, ToolFailure) as exc:
        raise ContextError(f"{req.where}: {exc}") from None
    except OSError as exc:
        raise ContextError(f"{req.where}: cannot read {rel}: {exc.strerror or exc}") from None
    return str(result.output)


def fence(text: str) -> str:
    """`text` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}\n{text}{'' if text.endswith(chr(10)) or not text else chr(10)}{mark}"


def item_label(item: ContextItem) -> str:
    if item.start_line is None and item.end_line is None:
        return f"Context: {item.path}"
    return f"Context: {item.path} (lines {item.start_line or 1}-{item.end_line or 'end'})"


def with_context(text: str, items: list[ContextItem]) -> str:
    """The typed text followed by one part per item, separated by blank lines."""
    parts = [text] if text else []
    parts.extend(f"{item_label(item)}\n{fence(item.text)}" for item in items)
    return "\n\n".join(parts)
