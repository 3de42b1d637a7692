"""The project file tools: read_file, write_file, edit_file (docs/BEHAVIOUR.md, "Tools").

Paths are judged by paths.locate (inside the working directory, never MINO_HOME) and opened by
paths.open_parent (folder by folder from the working directory, no link followed), so a folder
swapped for a link during the call cannot lead outside. Writes are bound to what the user
approved: prepare() records the real path and the sha256 of the file's bytes (None when absent),
run() checks both again and writes nothing if either changed. Files are opened, read and written
through `ctx.files` (project_files.py: the disk by default, or a client that does it for Mino), so a
crash leaves the old or the new file, never a mix. Writes into .git/, .mino/ or .vscode/ take the "other" row of the decision table.
prepare() also keeps the whole file before and after (`Prepared.diff`, decoded from the same bytes
the hash is taken of) for an editor's diff view, when both are small UTF-8 text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from ..contract import DIFF_MAX_BYTES, FileDiff, Kind, ToolCategory, protected_question
from ..display import escape_value, field_value, preview, split_lines, utf8_boundary
from ..values import Frozen, frozen
from .base import (
    COMPLETED,
    ArgumentError,
    Prepared,
    ToolContext,
    ToolFailure,
    ToolOf,
    ToolResult,
    reject_unknown,
    require_str,
    schema,
)
from .paths import Target, check_path_syntax, locate
from .project_files import CHANGED_AFTER_APPROVAL, sha256

READ_MAX_BYTES = 256 * 1024
READ_MAX_LINES = 2000
EDIT_MAX_BYTES = 8 * 1024 * 1024  # edit_file holds the file, its new text and a diff in memory
BINARY_SNIFF_BYTES = 8192


@frozen
class FileState(Frozen):
    """What a write is bound to: where it lands and the bytes there when the user was asked."""

    path: Path  # real path
    sha256: str | None  # None when the file is absent


@frozen
class ReadArgs(Frozen):
    path: str
    start_line: int | None = None
    end_line: int | None = None


@frozen
class WriteArgs(Frozen):
    path: str
    content: str
    mode: str  # "create" | "overwrite"


@frozen
class EditArgs(Frozen):
    path: str
    old_text: str
    new_text: str


# --- helpers shared by the three tools ---------------------------------------------------------


def _path_arg(args: dict[str, Any]) -> str:
    return check_path_syntax(require_str(args, "path") or "")


def _line_arg(args: dict[str, Any], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"argument '{key}' must be an integer")
    if value < 1:
        raise ArgumentError(f"argument '{key}' must be 1 or more (lines are numbered from 1)")
    return value


def _locate(ctx: ToolContext, rel: str, *, writing: bool) -> Target:
    return locate(ctx.workdir, ctx.home, rel, writing=writing)


def _decode_text(data: bytes, rel: str) -> str:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolFailure(f"{rel} looks like a binary file (it has NUL bytes); only UTF-8 text can be used.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{rel} is not UTF-8 text; only UTF-8 text can be used.") from None


def _path_fields(rel: str, resolved: Path, workdir: Path) -> list[tuple[str, str]]:
    fields = [("Path", rel)]
    plain = Path(os.path.normpath(rel if os.path.isabs(rel) else workdir / rel))
    if plain != resolved:  # a symlink is involved: show where the write really lands
        fields.append(("Target", str(resolved)))
    fields.append(("Directory", str(workdir)))
    return fields


def _protected_folder(target: Target) -> str:
    """The protected folder the write lands in, as a path in the project (`sub/.git`)."""
    name = target.protected
    assert name is not None
    return "/".join(target.parts[: target.parts.index(name) + 1])


def _protected_warning(target: Target) -> str | None:
    """The approval's reason why this write asks in every mode but bypass; None for other paths."""
    if target.protected is None:
        return None
    # The folders on the way are the model's names: escaped (and cut) as a field value, so a newline
    # or an escape in them cannot start a line of their own in the block.
    where = field_value(_protected_folder(target))[0]
    return (
        f"{where}: files here can run commands or instruct Mino later (git hooks and config, Mino "
        "skills and settings, editor tasks and settings), so writes here ask in every mode except bypass."
    )


def _write_prepared(
    target: Target,
    fields: list[tuple[str, str]],
    preview_note: str | None,
    state: FileState,
    diff: FileDiff | None,
) -> Prepared[FileState]:
    protected = _protected_warning(target)
    warning = " ".join(w for w in (protected, preview_note) if w) or None
    if not protected:
        from ..rules import Subject

        subject = Subject("write", "/".join(target.parts))
        return Prepared(fields, warning=warning, state=state, diff=diff, subject=subject)
    question = protected_question(escape_value(target.protected or ""))  # `.git` in the case written
    return Prepared(fields, warning=warning, state=state, kind="other", diff=diff, question=question)


def file_diff(path: Path, before: bytes | str | None, after: str) -> FileDiff | None:
    """The whole file before and after, when both are UTF-8 text (no NUL) of at most DIFF_MAX_BYTES;
    else None: a binary or huge file has no useful side-by-side view, and the event would be huge."""
    if isinstance(before, bytes):
        if len(before) > DIFF_MAX_BYTES:
            return None
        try:
            before = before.decode("utf-8")
        except UnicodeDecodeError:
            return None
    for text in (before, after):
        if text is not None and (
            len(text) > DIFF_MAX_BYTES or "\0" in text or len(text.encode("utf-8")) > DIFF_MAX_BYTES
        ):
            return None
    return FileDiff(path=str(path), before=before, after=after)


def _as_approved(ctx: ToolContext, rel: str, prepared: Prepared[FileState]) -> Target:
    """The target, once its path still resolves where the user approved; else nothing may be written.
    (That the file's bytes are unchanged is checked by the write itself, ProjectFiles.write.)"""
    target = _locate(ctx, rel, writing=True)
    if not isinstance(prepared.state, FileState) or target.path != prepared.state.path:
        raise ToolFailure(CHANGED_AFTER_APPROVAL)  # the path now resolves elsewhere
    return target


def _find_all(text: str, needle: str) -> list[int]:
    """Start positions of every occurrence, overlapping ones included ("aa" occurs twice in "aaa")."""
    found, at = [], text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


# --- read_file ---------------------------------------------------------------------------------


class ReadFileTool(ToolOf[ReadArgs, None]):
    name: ClassVar[str] = "read_file"
    category: ClassVar[ToolCategory] = "read"
    description: ClassVar[str] = (
        "Read a UTF-8 text file in the working directory. `path` is relative to the working directory "
        "(an absolute path must lie inside it). Returns the file's text exactly as it is, without line "
        f"numbers, so you can copy text from it into edit_file's old_text. At most {READ_MAX_LINES} lines "
        f"or {READ_MAX_BYTES // 1024} KiB are returned per call; when the output is cut, a last line in "
        "square brackets says where it stopped and how to read on. Use start_line and end_line "
        "(1-based, inclusive) to read part of a long file. Binary and non-UTF-8 files are refused."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {
            "path": {"type": "string", "description": "File path, relative to the working directory."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line to read, inclusive."},
        },
        ["path"],
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "read_only"

    def validate(self, args: dict[str, Any]) -> ReadArgs:
        reject_unknown(args, {"path", "start_line", "end_line"})
        path = _path_arg(args)
        start, end = _line_arg(args, "start_line"), _line_arg(args, "end_line")
        if start is not None and end is not None and end < start:
            raise ArgumentError(f"end_line ({end}) must not be less than start_line ({start})")
        return ReadArgs(path, start, end)

    def prepare(self, args: ReadArgs, ctx: ToolContext) -> Prepared[None]:
        _locate(ctx, args.path, writing=False)
        fields = [("Path", args.path), ("Directory", str(ctx.workdir))]
        if args.start_line is not None or args.end_line is not None:
            fields.append(("Lines", f"{args.start_line or 1}-{args.end_line or 'end'}"))
        return Prepared(fields)

    def run(self, args: ReadArgs, ctx: ToolContext, prepared: Prepared[None]) -> ToolResult:
        f = ctx.files.open(_locate(ctx, args.path, writing=False))
        if f is None:
            raise ToolFailure(f"{args.path} does not exist.")
        try:
            with f:
                text = _read_lines(f, args)
        except OSError as e:
            raise ToolFailure(f"Cannot read {args.path}: {e.strerror or e}.") from None
        return ToolResult(COMPLETED, text)


def _read_lines(f: BinaryIO, args: ReadArgs) -> str:
    """Lines start_line..end_line of an open binary file, within the size caps, with a note if cut."""
    rel, start, end = args.path, args.start_line or 1, args.end_line
    if b"\0" in f.read(BINARY_SNIFF_BYTES):
        raise ToolFailure(f"{rel} looks like a binary file (it has NUL bytes); read_file only reads text.")
    f.seek(0)
    lineno, partial = 1, False  # the line the next byte read belongs to; have we read part of it?
    while lineno < start:  # skip, in bounded pieces so one huge line cannot fill memory
        piece = f.readline(1 << 20)
        if not piece:
            break
        partial = not piece.endswith(b"\n")
        lineno += not partial

    kept: list[bytes] = []  # one entry per line; only the last may be partial
    size, cut = 0, False
    while end is None or lineno + len(kept) <= end:
        if len(kept) == READ_MAX_LINES:
            cut = bool(f.read(1))
            break
        piece = f.readline(READ_MAX_BYTES - size + 1)
        if not piece:
            break
        if size + len(piece) > READ_MAX_BYTES:
            kept.append(piece[: utf8_boundary(piece, READ_MAX_BYTES - size)])
            cut = True
            break
        kept.append(piece)
        size += len(piece)
    if not kept:
        if start == 1:
            return f"({rel} is empty.)"
        count = lineno - 1 + partial
        raise ToolFailure(
            f"start_line {start} is past the end of {rel}, which has {count} line{'' if count == 1 else 's'}."
        )
    try:
        text = b"".join(kept).decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{rel} is not UTF-8 text; read_file only reads text.") from None
    if not cut:
        return text
    last = lineno + len(kept) - 1
    if kept[-1].endswith(b"\n"):
        note = f"[Output cut after line {last} ({READ_MAX_LINES} lines per call); read on with start_line={last + 1}.]"
    elif len(kept) == 1:
        note = (
            f"[Output cut at {READ_MAX_BYTES // 1024} KiB inside line {last}, which is longer than that; "
            "use bash (for example cut -c or head -c) to see the rest.]"
        )
    else:
        note = f"[Output cut at {READ_MAX_BYTES // 1024} KiB inside line {last}; read on with start_line={last}.]"
    return text + ("" if text.endswith("\n") else "\n") + note


# --- write_file --------------------------------------------------------------------------------


class WriteFileTool(ToolOf[WriteArgs, FileState]):
    name: ClassVar[str] = "write_file"
    category: ClassVar[ToolCategory] = "edit"
    description: ClassVar[str] = (
        "Write a whole file in the working directory. mode 'create' makes a new file and fails if the "
        "path already exists (missing parent folders are created); mode 'overwrite' replaces all of an "
        "existing file's contents and fails if it does not exist. `content` is the complete new text "
        "(UTF-8). To change part of an existing file, prefer edit_file. The user may be asked to "
        "approve the write; if the file changes before they answer, nothing is written."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {
            "path": {"type": "string", "description": "File path, relative to the working directory."},
            "content": {"type": "string", "description": "The complete contents of the file."},
            "mode": {
                "type": "string",
                "enum": ["create", "overwrite"],
                "description": "'create' for a new file, 'overwrite' to replace an existing one.",
            },
        },
        ["path", "content", "mode"],
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "project_write"

    def validate(self, args: dict[str, Any]) -> WriteArgs:
        reject_unknown(args, {"path", "content", "mode"})
        path = _path_arg(args)
        content = require_str(args, "content", allow_empty=True) or ""
        mode = require_str(args, "mode")
        if mode not in ("create", "overwrite"):
            raise ArgumentError("argument 'mode' must be 'create' or 'overwrite'")
        return WriteArgs(path, content, mode)

    def prepare(self, args: WriteArgs, ctx: ToolContext) -> Prepared[FileState]:
        target = _locate(ctx, args.path, writing=True)
        path = target.path
        found = ctx.files.read(target)
        state = None if found is None else sha256(found.data)
        if args.mode == "create" and state is not None:
            raise ToolFailure(f"{args.path} already exists; use mode 'overwrite' to replace it.")
        if args.mode == "overwrite" and state is None:
            raise ToolFailure(f"{args.path} does not exist; use mode 'create' to make a new file.")
        if args.mode == "create":
            mode_text = "Create a new file" if path.parent.is_dir() else "Create a new file and its folders"
        else:
            mode_text = "Replace the existing file"
        head, note = preview(args.content)
        fields = [*_path_fields(args.path, path, ctx.workdir), ("Mode", mode_text), ("Content", head)]
        diff = file_diff(path, None if found is None else found.data, args.content)
        return _write_prepared(target, fields, note, FileState(path, state), diff)

    def run(self, args: WriteArgs, ctx: ToolContext, prepared: Prepared[FileState]) -> ToolResult:
        target = _as_approved(ctx, args.path, prepared)
        data = args.content.encode("utf-8")
        ctx.files.write(target, data, prepared.state.sha256)
        return ToolResult(COMPLETED, f"Wrote {len(data)} bytes to {args.path}")


# --- edit_file ---------------------------------------------------------------------------------


class EditFileTool(ToolOf[EditArgs, FileState]):
    name: ClassVar[str] = "edit_file"
    category: ClassVar[ToolCategory] = "edit"
    description: ClassVar[str] = (
        "Replace one exact piece of text in an existing UTF-8 file in the working directory. "
        "old_text must occur exactly once in the file: it is matched character for character, "
        "including whitespace, indentation and line breaks, so copy it from read_file's output and "
        "include enough surrounding lines to make it unique. new_text replaces it (empty to delete it). "
        "If old_text occurs zero or several times, nothing is changed and the result says how many "
        "times it was found. The user may be asked to approve the edit."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {
            "path": {"type": "string", "description": "File path, relative to the working directory."},
            "old_text": {"type": "string", "description": "The exact text to replace; must occur once."},
            "new_text": {"type": "string", "description": "The replacement text."},
        },
        ["path", "old_text", "new_text"],
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "project_write"

    def validate(self, args: dict[str, Any]) -> EditArgs:
        reject_unknown(args, {"path", "old_text", "new_text"})
        path = _path_arg(args)
        old = require_str(args, "old_text") or ""
        new = require_str(args, "new_text", allow_empty=True) or ""
        if old == new:
            raise ArgumentError("new_text is the same as old_text; there is nothing to change")
        return EditArgs(path, old, new)

    def prepare(self, args: EditArgs, ctx: ToolContext) -> Prepared[FileState]:
        import difflib  # ~3 ms at start-up otherwise; only an edit needs it

        target = _locate(ctx, args.path, writing=True)
        found = ctx.files.read(target)
        if found is None:
            raise ToolFailure(f"{args.path} does not exist; use write_file to create it.")
        data = found.data
        old, new = self._replace(data, args)
        diff = "".join(
            line if line.endswith("\n") else line + "\n"
            for line in difflib.unified_diff(split_lines(old), split_lines(new), n=3)
            if not line.startswith(("---", "+++"))  # the Path field already names the file
        )
        head, note = preview(diff)
        fields = [
            *_path_fields(args.path, target.path, ctx.workdir),
            ("Mode", "Edit the existing file"),
            ("Diff", head),
        ]
        whole = file_diff(target.path, old, new)
        return _write_prepared(target, fields, note, FileState(target.path, sha256(data)), whole)

    def run(self, args: EditArgs, ctx: ToolContext, prepared: Prepared[FileState]) -> ToolResult:
        target = _as_approved(ctx, args.path, prepared)
        found = ctx.files.read(target)
        if found is None or sha256(found.data) != prepared.state.sha256:
            raise ToolFailure(CHANGED_AFTER_APPROVAL)
        _, new = self._replace(found.data, args)
        ctx.files.write(target, new.encode("utf-8"), prepared.state.sha256)
        return ToolResult(COMPLETED, f"Edited {args.path}: replaced 1 occurrence")

    @staticmethod
    def _replace(data: bytes, args: EditArgs) -> tuple[str, str]:
        if len(data) > EDIT_MAX_BYTES:
            raise ToolFailure(
                f"{args.path} is {len(data) // (1024 * 1024)} MiB; edit_file edits files up to "
                f"{EDIT_MAX_BYTES // (1024 * 1024)} MiB."
            )
        text = _decode_text(data, args.path)
        hits = _find_all(text, args.old_text)
        if len(hits) != 1:
            where = "was not found" if not hits else f"occurs {len(hits)} times"
            raise ToolFailure(
                f"old_text {where} in {args.path} (it must occur exactly once); nothing was changed."
                + (" Include more surrounding text to make it unique." if hits else "")
            )
        at = hits[0]
        return text, text[:at] + args.new_text + text[at + len(args.old_text) :]
