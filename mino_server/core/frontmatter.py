"""Front matter (`---\\n<yaml>\\n---\\n<body>`) shared by memory files and skills, read strictly.

The files are written by people and by the model, then read every turn, so parsing accepts only the
small shape Mino writes: one YAML mapping of plain string fields, exactly the expected keys, no
anchors or aliases, no duplicate keys. Every problem is a `FrontMatterError` with a reason a person
can act on; nothing here raises anything else for bad input.

PyYAML is imported inside the functions: start-up does not pay for it when no file is read.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .values import Frozen, frozen

if TYPE_CHECKING:
    from yaml import CSafeLoader, SafeLoader

# Memories and skills share one naming rule: lowercase letters, digits, single inner hyphens.
# At most 64 characters: a name is a file or folder name (NAME.md), is repeated on every memory index
# line sent with each request, and is typed by people; 64 is also the Agent Skills limit, so skills
# written for other agents keep their names.
NAME_MAX_CHARS = 64
NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
NAME_RULE = f"lowercase letters, digits and single hyphens, at most {NAME_MAX_CHARS} characters"

_DELIMITER = "---"
_STR_TAG = "tag:yaml.org,2002:str"
_FIELD_KEY_RE = re.compile(r"[a-z][a-z0-9_-]*")
_HUGE_WIDTH = 1 << 30  # never fold a long value onto a second line


class FrontMatterError(ValueError):
    """The text is not acceptable front matter; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileRejected(Exception):
    """A file that must not be read (symlink, special file, several links, too large)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@frozen
class Document(Frozen):
    fields: dict[str, str]  # in file order
    body: str  # everything after the closing `---` line, verbatim


def shown(value: str, limit: int = 60) -> str:
    """A value inside a one-line reason: invisible characters escaped, cut when long, so a hostile
    file (a newline or an escape sequence in a name, a 20 KiB key) still gives one short line."""
    from .display import escape_value

    return escape_value(value[:limit]) + ("…" if len(value) > limit else "")


def problem_lines(heading: str, problems: Sequence[tuple[str, str]]) -> list[str]:
    """`heading` then one `  file: reason` line per problem; [] when there is nothing to say.
    File names are escaped: a folder may be someone else's, and a name may hold a newline or an
    escape sequence."""
    if not problems:
        return []
    return [heading, *(f"  {shown(f, 255)}: {r}" for f, r in problems)]


def valid_name(name: str) -> bool:
    return len(name) <= NAME_MAX_CHARS and NAME_RE.fullmatch(name) is not None


def one_line_problem(field: str, value: str, max_bytes: int) -> str | None:
    """Why `value` is not a usable one-line field (a memory's summary, a skill's description), or None."""
    if value.strip() == "":
        return f"{field} is empty"
    # splitlines() breaks on every line separator (\r, \x85, \u2028 ...), not only \n.
    if value.splitlines() != [value]:
        return f"{field} must be one line"
    size = len(value.encode())
    if size > max_bytes:
        return f"{field} is {size} bytes; the limit is {max_bytes} bytes (UTF-8)"
    return None


def _loader() -> type[SafeLoader | CSafeLoader]:
    import yaml

    loader: type[SafeLoader | CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # C: with libyaml
    return loader


def split(text: str) -> tuple[str, str]:
    """Split `---\\n<yaml>\\n---\\n<body>` into (yaml, body). CRLF delimiter lines are accepted.

    Only `\\n` ends a line here (not \\x85 or \\u2028): the delimiters are what an editor shows.
    """
    for opening in ("---\n", "---\r\n"):
        if text.startswith(opening):
            break
    else:
        raise FrontMatterError("the file does not start with a '---' line")
    begin = pos = len(opening)
    while True:
        newline = text.find("\n", pos)
        line_end = len(text) if newline == -1 else newline
        if text[pos:line_end] in (_DELIMITER, _DELIMITER + "\r"):
            return text[begin:pos], "" if newline == -1 else text[newline + 1 :]
        if newline == -1:
            raise FrontMatterError("the front matter has no closing '---' line")
        pos = newline + 1


def parse_fields(yaml_text: str, required: Sequence[str]) -> dict[str, str]:
    """Parse the YAML between the delimiters: a mapping of exactly the given keys to strings."""
    import yaml

    try:
        root = yaml.compose(yaml_text, Loader=_loader())
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""  # +1 for 1-based, +1 for '---'
        raise FrontMatterError(f"invalid YAML: {problem}{where}") from None
    if not isinstance(root, yaml.MappingNode):
        raise FrontMatterError("the front matter is not a mapping of fields")
    seen_nodes: set[int] = set()
    fields: dict[str, str] = {}
    for key_node, value_node in root.value:
        for node in (key_node, value_node):
            # compose() hands back the anchored node itself for every alias: a repeat is an alias.
            if id(node) in seen_nodes:
                raise FrontMatterError("the front matter uses YAML aliases")
            seen_nodes.add(id(node))
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
            raise FrontMatterError("a front matter key is not a string")
        key = key_node.value
        if key in fields:
            raise FrontMatterError(f"field '{shown(key)}' appears twice")
        # Tags are resolved at compose time: `yes`, `null`, `1.0`, dates are not strings here.
        if not isinstance(value_node, yaml.ScalarNode) or value_node.tag != _STR_TAG:
            raise FrontMatterError(f"field '{shown(key)}' is not a string")
        fields[key] = value_node.value
    extra = [k for k in fields if k not in required]
    if extra:
        raise FrontMatterError(f"unexpected field(s): {', '.join(shown(k) for k in extra)}")
    missing = [k for k in required if k not in fields]
    if missing:
        raise FrontMatterError(f"missing field(s): {', '.join(missing)}")
    return fields


def parse(data: bytes | str, required: Sequence[str]) -> Document:
    """Parse a whole file. Bytes must be UTF-8 (a leading BOM, as some editors write, is allowed)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FrontMatterError("the file is not valid UTF-8 text") from None
    else:
        text = data
    text = text.removeprefix("\ufeff")
    yaml_text, body = split(text)
    return Document(parse_fields(yaml_text, required), body)


def _scalar(key: str, value: str) -> str:
    """`value` as YAML: plain when it reads back as the same string, else double-quoted by PyYAML."""
    import yaml

    try:
        plain_ok = parse_fields(f"{key}: {value}\n", [key]) == {key: value}
    except FrontMatterError:
        plain_ok = False
    if plain_ok and "\n" not in value and "\r" not in value:
        return value
    # Double quotes escape every line break and control character, so the value stays on one line.
    dumped = yaml.safe_dump(value, default_style='"', allow_unicode=True, width=_HUGE_WIDTH)
    return dumped.rstrip("\n")


def render(fields: Sequence[tuple[str, str]], body: str = "") -> str:
    """Write front matter in Mino's own shape: `---`, one `key: value` line per field, `---`, body.

    parse(render(f, b)) gives back exactly f and b for any strings (quotes, colons, `#`, a leading
    `-`, `yes`/`null`/`1.0`, unicode, line breaks).
    """
    lines = [_DELIMITER]
    for key, value in fields:
        if not _FIELD_KEY_RE.fullmatch(key):
            raise ValueError(f"bad front matter key {key!r}")
        lines.append(f"{key}: {_scalar(key, value)}")
    lines.append(_DELIMITER)
    return "\n".join(lines) + "\n" + body


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """Read a small regular file that the user controls, without ever following or blocking on it.

    lstat first (symlinks and FIFOs are never opened), then O_NOFOLLOW|O_NONBLOCK and fstat again to
    catch a swap in between. More than one hard link is refused: the file could be a second name for
    a file elsewhere. Raises FileRejected (with a reason) or OSError.
    """
    before = os.lstat(path)
    _check(before, max_bytes)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRejected("symbolic link (not followed)") from None
        raise
    try:
        after = os.fstat(fd)
        _check(after, max_bytes)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise FileRejected("the file was replaced while it was being read")
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew after fstat
        raise FileRejected(f"larger than {_size(max_bytes)}")
    return b"".join(chunks)


def _check(st: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise FileRejected("symbolic link (not followed)")
    if not stat.S_ISREG(st.st_mode):
        raise FileRejected("not a regular file")
    if st.st_nlink > 1:
        raise FileRejected(f"has {st.st_nlink} hard links (only files with a single link are read)")
    if st.st_size > max_bytes:
        raise FileRejected(f"larger than {_size(max_bytes)}")


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"
