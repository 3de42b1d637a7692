"""A turn's attachments: the context items (files, selections, diagnostics) and images sent after
its text (docs/BEHAVIOUR.md, "Editor context", "Images"), checked and loaded before anything is sent
or logged, kept with the user_message record, and the notices for items sent cut.

Functions of the working directory and the home; they hold no state. Conversation.run_turn calls
them; front ends call `attach` to check a turn's attachments before they start it.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import TYPE_CHECKING

from .contract import ContextItem, Notice
from .sessions.log import SessionLog
from .ui import UI

if TYPE_CHECKING:
    from .context import ContextRequest, ResolvedItem
    from .images import Image


def attach(
    workdir: Path,
    home: Path,
    context: typing.Sequence[ContextItem | ContextRequest | ResolvedItem],
    images: typing.Sequence[Image] = (),
) -> tuple[list[ResolvedItem], list[Image]]:
    """(context items, images) of a turn, checked and loaded: a file item without text or lines
    whose bytes are an image becomes an image (after `images`). Raises ContextError naming the
    first that cannot be attached."""
    from . import images as image_files
    from .context import ContextRequest, request_of, resolve_context

    texts: list[ContextItem | ContextRequest | ResolvedItem] = []
    found: list[Image] = []
    for i, item in enumerate(context):
        req = request_of(item, f"context[{i}]") if isinstance(item, ContextItem) else item
        if (
            isinstance(req, ContextRequest)
            and req.text is None
            and req.start_line is None
            and req.end_line is None
            and image_files.is_image_file(workdir, home, req.path)
        ):
            found.append(image_files.from_file(workdir, home, req.path, req.where))
        else:
            texts.append(req)
    pictures = [*images, *found]
    image_files.too_many(len(pictures))
    return (resolve_context(workdir, home, texts) if texts else []), pictures


def keep_images(home: Path, log: SessionLog, images: list[Image]) -> list[dict[str, typing.Any]]:
    """The images' bytes kept for the session (core/images.py), fsynced before a record names them."""
    if not images:
        return []
    from .images import save

    return save(home, log.id, images)


def cut_notices(ui: UI, turn_id: str, items: list[ResolvedItem]) -> None:
    """A notice for each context item sent cut (core/context.py, cut_item)."""
    for item in items:
        if item.cut is not None:
            from .words import context_cut

            ui.event(Notice(turnId=turn_id, text=context_cut(item.path, *item.cut)))


def records(items: list[ResolvedItem]) -> list[dict[str, typing.Any]]:
    """The items as the user_message record keeps them (context.py is imported only when there are any)."""
    if not items:
        return []
    from .context import to_record

    return [to_record(item) for item in items]
