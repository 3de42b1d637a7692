"""The approval display (SPEC §6): values in double quotes with nothing invisible left in them.

Printable text stays as it is (Chinese, Cyrillic look-alikes, emoji). Everything a person cannot
see becomes an escape: `\\n`, `\\t`, `\\r`, `\\\\`, `\\"`, and `\\xhh` / `\\uhhhh` / `\\Uhhhhhhhh` for the
rest (`\\x` only for ASCII controls, as Go's %q). Every backslash in the value is escaped, so the
output decodes back to exactly one value.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"'}

# Characters str.isprintable() accepts but that render as nothing or as blank space:
# Unicode's Default_Ignorable_Code_Point set (Hangul fillers, variation selectors, tags, ...)
# plus the braille blank, which looks exactly like a space.
_INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul choseong/jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space/joiners, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format chars
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space / BOM
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned specials
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags and variation selectors supplement
)


def _invisible(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _INVISIBLE_RANGES)


def _escape_char(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    cp = ord(ch)
    if cp < 0x80:  # ASCII controls as \x1b; everything else by its code point, as Go's %q does
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def escape_value(s: str) -> str:
    """The inside of the quotes for one display value."""
    out: list[str] = []
    base = False  # was the previous character shown as itself, and something a mark can sit on?
    for ch in s:
        if " " < ch < "\x7f" and ch not in '\\"':  # the common case: printable ASCII
            out.append(ch)
            base = True
            continue
        cp = ord(ch)
        literal = ch.isprintable() and not _invisible(cp) and ch not in '\\"'
        # A combining mark with nothing visible to sit on (start of the value, after a space or an
        # escape) would attach to the quote or the escape text and hide itself: escape it.
        if literal and not base and unicodedata.category(ch) in ("Mn", "Me"):
            literal = False
        if literal:
            out.append(ch)
            base = ch != " "
        else:
            out.append(_escape_char(ch))
            base = False
    return "".join(out)


def approval_lines(tool: str, fields: list[tuple[str, str]], warning: str | None) -> list[str]:
    """`[Tool: NAME]`, one `Label: "value"` line per field, then the warning; the front end adds the
    question. The values arrive escaped already: the core escapes them once for every front end."""
    lines = [f"[Tool: {tool}]"]
    lines.extend(f'{label}: "{value}"' for label, value in fields)
    if warning:
        lines.append(warning)
    return lines


def preview(text: str, max_lines: int = 20, max_bytes: int = 2048) -> tuple[str, str | None]:
    """The start of `text` for a preview field, and a sentence saying what was left out (or None)."""
    lines = split_lines(text)
    head = "".join(lines[:max_lines])
    encoded = head.encode("utf-8", "surrogatepass")
    if len(encoded) > max_bytes:
        head = encoded[: utf8_boundary(encoded, max_bytes)].decode("utf-8", "surrogatepass")
    if head == text:
        return text, None
    total_bytes = len(text.encode("utf-8", "surrogatepass"))
    shown_lines = len(split_lines(head))
    return head, (
        f"Preview cut: showing {shown_lines} of {len(lines)} lines"
        f" ({_size(len(head.encode('utf-8', 'surrogatepass')))} of {_size(total_bytes)})."
    )


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split at "\n" only, as files count them (str.splitlines also
    splits at \r, form feeds and U+2028, which the display shows escaped inside a line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def utf8_boundary(data: bytes, pos: int) -> int:
    """The largest index <= pos that does not split a UTF-8 sequence of `data`."""
    pos = min(pos, len(data))
    while 0 < pos < len(data) and data[pos] & 0xC0 == 0x80:
        pos -= 1
    return pos


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"
