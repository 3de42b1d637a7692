"""Images in a user message (docs/BEHAVIOUR.md, "Images"; docs/SECURITY.md, "Images").

Three front-end inputs become the same checked `Image`: an ACP `image` block and an editor's
mino/turn `images` item (`from_base64`: a declared MIME type and base64 data), and a file the person
names (`from_file`: `@shot.png` in typed text, an ACP resource_link or an editor context item
without text whose bytes are an image; read like read_file reads, confined to the working directory
and opened without following links).

Checks, before anything is sent or logged, each failing with a ContextError that names the item: at
most MAX_IMAGES a message; at most MAX_IMAGE_BYTES decoded (a longer base64 text is refused before
it is decoded); PNG, JPEG, GIF or WebP by their bytes (the declared type, when there is one, must
agree), with a readable header giving non-zero width and height (`_header`: a PNG header on garbage
fails its IHDR checksum). Nothing here decodes pixels: a well-formed header on damaged pixels
reaches the model service, whose error ends the turn like any other.

Storage: the bytes are kept content-addressed under MINO_HOME, `images/<session>/<sha256>`
(`save`: written to a temporary file, fsynced, renamed, the folder fsynced, before the
user_message record that names them is appended), and the record keeps only `{name, mime, size,
sha256, width, height}` per image, so the log stays one small JSON object per line. Every request
(this turn's, a later turn's, after a resume or a restart) reads the blob again and checks its
sha256 (`Blobs.part`), so the model gets the very same data URL; a blob that is missing or whose
bytes changed becomes a text line saying so, and a notice tells the person. /clear removes the
session's folder (`remove`), as it removes its checkpoints.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .durable import atomic_write_at, ensure_private_dir, open_private_dir, remove_private_dir
from .errors import ContextError
from .values import Frozen, frozen

FOLDER = "images"
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # decoded, each
MAX_IMAGES = 8  # a message
MAX_NAME_CHARS = 200
MIME_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
# Base64 of MAX_IMAGE_BYTES, padded: anything longer cannot decode to an acceptable image.
_MAX_B64_CHARS = 4 * ((MAX_IMAGE_BYTES + 2) // 3)
_HEX = frozenset("0123456789abcdef")


@frozen
class Image(Frozen):
    """A checked image: its bytes, their sha256, the type its bytes show, and how it is named."""

    name: str
    mime: str
    data: bytes
    sha256: str
    width: int
    height: int

    def record(self) -> dict[str, Any]:
        """What the user_message record keeps of it (the bytes live in the blob)."""
        return {
            "name": self.name,
            "mime": self.mime,
            "size": len(self.data),
            "sha256": self.sha256,
            "width": self.width,
            "height": self.height,
        }


# ---- checking ------------------------------------------------------------------------------------
def sniff(head: bytes) -> str | None:
    """The MIME type the first bytes announce (PNG, JPEG, GIF or WebP), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def check(data: bytes, declared: str | None, name: str, where: str) -> Image:
    """`data` as a checked Image, or ContextError naming `where`."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ContextError(
            f"{where}: the image is {len(data):,} bytes; an image may be at most {MAX_IMAGE_BYTES:,} "
            "bytes (5 MiB). Attach a smaller one."
        )
    found = sniff(data[:16])
    if found is None:
        raise ContextError(f"{where}: not a PNG, JPEG, GIF or WebP image (its first bytes say otherwise).")
    if declared is not None and declared.lower() != found:
        raise ContextError(
            f"{where}: its bytes are a {MIME_NAMES[found]} image, not {_short(declared)} as declared."
        )
    size = _header(found, data)
    if size is None:
        raise ContextError(
            f"{where}: the file starts like a {MIME_NAMES[found]} image but its header is damaged."
        )
    return Image(_name(name), found, data, hashlib.sha256(data).hexdigest(), size[0], size[1])


def from_base64(data: object, declared: object, name: str, where: str) -> Image:
    """An image sent as base64 text with a declared MIME type (an ACP block, an editor's item)."""
    if not isinstance(declared, str) or declared.lower() not in MIME_NAMES:
        raise ContextError(
            f"{where}: mimeType must be image/png, image/jpeg, image/gif or image/webp; got {_short(declared)}."
        )
    if not isinstance(data, str) or not data or data.isspace():
        raise ContextError(f"{where}: data must be the image's bytes in base64.")
    # Refused before decoding (line breaks allowed): a huge text costs no second copy.
    compact = "" if len(data) > 2 * _MAX_B64_CHARS else "".join(data.split())
    if not compact or len(compact) > _MAX_B64_CHARS:
        raise ContextError(
            f"{where}: the image is about {len(data) * 3 // 4:,} bytes; an image may be at most "
            f"{MAX_IMAGE_BYTES:,} bytes (5 MiB). Attach a smaller one."
        )
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ContextError(f"{where}: data is not valid base64.") from None
    return check(raw, declared, name, where)


def from_file(workdir: Path, home: Path, path: str, where: str) -> Image:
    """The image file `path` names, read as read_file reads: the path judged inside the working
    directory (symbolic links resolved, never into MINO_HOME), then opened folder by folder without
    following a link, a regular file only."""
    data = _read(workdir, home, path, where, MAX_IMAGE_BYTES + 1)
    return check(data, None, os.path.basename(path.rstrip("/")) or path, where)


def is_image_file(workdir: Path, home: Path, path: str) -> bool:
    """Whether `path` names a file inside the working directory whose first bytes announce an image."""
    try:
        return sniff(_read(workdir, home, path, path, 16)) is not None
    except (ContextError, ValueError):  # a path that is no file name (a lone surrogate): the
        return False  # context item's own checks say why


def too_many(count: int, where: str = "") -> None:
    """Refuse a message of `count` images before any is decoded; `where` names the first one too many."""
    if count > MAX_IMAGES:
        named = f"{where}: " if where else ""
        raise ContextError(f"{named}{count} images; a message may carry at most {MAX_IMAGES}.")


def _read(workdir: Path, home: Path, path: str, where: str, limit: int) -> bytes:
    from .tools.base import ToolFailure
    from .tools.paths import locate
    from .tools.project_files import DISK

    if not path or "\0" in path:
        raise ContextError(f"{where}: the path must be a file name, without NUL bytes.")
    try:
        target = locate(workdir.resolve(), home, path, writing=False)
        f = DISK.open(target)
        if f is None:
            raise ContextError(f"{where}: {path} does not exist.")
        with f:
            return f.read(limit)
    except ToolFailure as exc:
        raise ContextError(f"{where}: {exc}") from None
    except OSError as exc:
        raise ContextError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None


def _header(mime: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) from the image's header, or None when the header is not sound."""
    try:
        if mime == "image/png":
            # The first chunk is IHDR: length 13, then width and height, guarded by a CRC.
            length, kind = struct.unpack(">I4s", data[8:16])
            body, crc = data[16:29], data[29:33]
            if length != 13 or kind != b"IHDR" or len(crc) != 4:
                return None
            if struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
                return None
            width, height = struct.unpack(">II", body[:8])
        elif mime == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
        elif mime == "image/webp":
            riff_size = struct.unpack("<I", data[4:8])[0]
            chunk = data[12:16]
            if riff_size + 8 > len(data) + 1 or riff_size < 12:
                return None
            if chunk == b"VP8X":
                width = 1 + int.from_bytes(data[24:27], "little")
                height = 1 + int.from_bytes(data[27:30], "little")
            elif chunk == b"VP8L" and data[20:21] == b"\x2f":
                bits = int.from_bytes(data[21:25], "little")
                width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
            elif chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
                width = struct.unpack("<H", data[26:28])[0] & 0x3FFF
                height = struct.unpack("<H", data[28:30])[0] & 0x3FFF
            else:
                return None
        else:
            found = _jpeg_size(data)
            if found is None:
                return None
            width, height = found
    except struct.error:
        return None
    return (width, height) if width > 0 and height > 0 else None


_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame size of the first SOF segment, walking the segments from SOI."""
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if length < 2:
            return None
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        if marker in (0xD9, 0xDA):  # end of image, or scan data before any frame header
            return None
        i += 2 + length
    return None


def _name(name: str) -> str:
    name = " ".join(name.split()) or "image"
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


# ---- storage -------------------------------------------------------------------------------------
def folder(home: Path, session_id: str) -> Path:
    return home / FOLDER / session_id


def remove(home: Path, session_id: str) -> None:
    """Delete a session's images (/clear); no link is followed on the way or inside."""
    remove_private_dir(home, (FOLDER, session_id))


def save(home: Path, session_id: str, images: Sequence[Image]) -> list[dict[str, Any]]:
    """Keep each image's bytes under its sha256 (fsynced, with the folder) and return what the
    user_message record keeps. A blob already there with the same bytes is kept as it is."""
    if not images:
        return []
    ensure_private_dir(home)
    # MINO_HOME/images/<session>, each folder opened without following a link (durable.open_private_dir)
    dir_fd = open_private_dir(home, (FOLDER, session_id))
    try:
        for image in images:
            if _blob_at(dir_fd, image.sha256) != image.data:  # the same bytes kept earlier stay as they are
                atomic_write_at(dir_fd, image.sha256, image.data)  # fsyncs the file, then the folder
    finally:
        os.close(dir_fd)
    for fd_path in ((FOLDER,), ()):  # the session's folder may be new, and `images` with it
        parent = open_private_dir(home, fd_path)
        try:
            os.fsync(parent)
        finally:
            os.close(parent)
    return [image.record() for image in images]


def _blob_at(dir_fd: int, sha: str) -> bytes | None:
    try:
        fd = os.open(sha, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IMAGE_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def record_problem(value: object) -> str | None:
    """Why a user_message record's `images` cannot be replayed; None when it is sound."""
    if not isinstance(value, list) or len(value) > MAX_IMAGES:
        return f"user_message images must be a list of at most {MAX_IMAGES}"
    for rec in value:
        if not (
            isinstance(rec, dict)
            and isinstance(rec.get("name"), str)
            and rec.get("mime") in MIME_NAMES
            and type(rec.get("size")) is int
            and isinstance(rec.get("sha256"), str)
            and len(rec["sha256"]) == 64
            and set(rec["sha256"]) <= _HEX
        ):
            return "user_message images need a name, a known mime, a size and a sha256"
    return None


def placeholder(rec: dict[str, Any], problem: str | None = None) -> str:
    """`[image: NAME, PNG 640×480, 12 KB]`: an image where only text can go (history, a summary)."""
    kind = MIME_NAMES.get(rec.get("mime", ""), "image")
    width, height = rec.get("width"), rec.get("height")
    dims = f" {width}×{height}" if type(width) is int and type(height) is int else ""
    size = rec.get("size")
    shown = f", {_kb(size)}" if type(size) is int else ""
    tail = f"; {problem}" if problem else ""
    return f"[image: {rec.get('name', 'image')}, {kind}{dims}{shown}{tail}]"


def _kb(size: int) -> str:
    return f"{size} bytes" if size < 1024 else f"{(size + 1023) // 1024:,} KB"


class Blobs:
    """One session's kept images, read back for a request. `problems` collects, once per image, why
    one could not be sent (the turn tells the person)."""

    def __init__(self, home: Path, session_id: str) -> None:
        self.dir = folder(home, session_id)
        self.problems: list[str] = []
        self._said: set[str] = set()

    def problem(self, rec: dict[str, Any]) -> str | None:
        """Why the blob of `rec` cannot be sent (missing, changed), or None. Costs a stat."""
        try:
            st = os.stat(self.dir / rec["sha256"], follow_symlinks=False)
        except OSError:
            return "missing from Mino's image store"
        if not stat.S_ISREG(st.st_mode) or st.st_size != rec["size"]:
            return "changed in Mino's image store"
        return None

    def part(self, rec: dict[str, Any]) -> dict[str, Any]:
        """The input_image part of a record's image, read and checked again; a text part saying why
        when its bytes are gone or changed."""
        try:
            fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            data = None
        else:
            try:
                data = _blob_at(fd, rec["sha256"])
            except OSError:
                data = None
            finally:
                os.close(fd)
        if data is None or hashlib.sha256(data).hexdigest() != rec["sha256"]:
            changed = "changed in Mino's image store"  # a link, another kind of file, other bytes
            why = (self.problem(rec) or changed) if data is None else changed
            if rec["sha256"] not in self._said:
                self._said.add(rec["sha256"])
                self.problems.append(placeholder(rec, why))
            return {"type": "input_text", "text": placeholder(rec, f"{why}; not sent")}
        url = f"data:{rec['mime']};base64,{base64.b64encode(data).decode('ascii')}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}


def load_problems(home: Path, session_id: str, records: Sequence[dict[str, Any]]) -> list[str]:
    """One line per image of `records` (replayable user messages) whose blob is missing or changed."""
    blobs = Blobs(home, session_id)
    out = []
    for rec in records:
        for image in rec.get("images") or ():
            why = blobs.problem(image)
            if why is not None:
                out.append(placeholder(image, why))
    return out
