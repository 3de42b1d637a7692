"""What a person sees: the approval display (docs/BEHAVIOUR.md, "Approval display") and the one sanitiser for the terminal.

Approval values (escape_value) are shown in double quotes with nothing invisible left in them.
Printable text stays as it is (Chinese, Cyrillic look-alikes, emoji). Everything a person cannot
see becomes an escape: `\\n`, `\\t`, `\\r`, `\\\\`, `\\"`, and `\\xhh` / `\\uhhhh` / `\\Uhhhhhhhh` for the
rest (`\\x` only for ASCII controls, as Go's %q). Every backslash in the value is escaped, so the
output decodes back to exactly one value.

field_value() is what every front end shows for one approval field: escape_value's text, with long
runs of one blank or invisible character collapsed to a count and an over-long value shortened in
the middle. Its markers are `\\{` ... `}`: escape_value never writes a backslash followed by `{`
(a backslash of the value is `\\\\`), so a marker cannot be mistaken for the value's own text:

    \\{4000 spaces}            4000 spaces in a row
    \\{300 × \\t}              300 copies of one escaped character in a row
    \\{12000 characters not shown}   the middle of an over-long value, cut

terminal_text() is the one filter for every string from outside (model text, tool output, file
names, error messages) on its way to a terminal: it neutralises what could drive the terminal.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable


def _lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A pattern compiled on its first use. Those for text beyond ASCII and for approvals are not
    needed before a CLI's first request, and compiling them took ~2.5 ms of its start-up."""
    return functools.cache(lambda: re.compile(pattern, flags))


MAX_MARKS = 4  # combining marks in a row shown as themselves (Vietnamese needs 2, Hebrew points 3)
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


_INVISIBLE = _lazy("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _INVISIBLE_RANGES) + "]")


def _invisible(ch: str) -> bool:
    return _INVISIBLE().match(ch) is not None


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
    marks = 0  # combining marks in a row just before
    for ch in s:
        if " " < ch < "\x7f" and ch not in '\\"':  # the common case: printable ASCII
            out.append(ch)
            base, marks = True, 0
            continue
        literal = ch.isprintable() and not _invisible(ch) and ch not in '\\"'
        # A combining mark with nothing visible to sit on (start of the value, after a space or an
        # escape) would attach to the quote or the escape text and hide itself, and a stack of them
        # grows over the lines above: escape it, and every mark past MAX_MARKS in a row.
        if literal and unicodedata.category(ch) in ("Mn", "Me"):
            marks += 1
            if not base or marks > MAX_MARKS:
                out.append(_escape_char(ch))
                continue
        else:
            marks = 0
        if literal:
            out.append(ch)
            base = ch != " "
        else:
            out.append(_escape_char(ch))
            base = False
    return "".join(out)


# ---- approval fields ----------------------------------------------------------------------------
# Shown characters. Above FIELD_MAX_CHARS a field is shortened (a 2 KiB text preview still fits);
# then it shows at most 2,000 and a marker: 10 rows of a 200-column terminal, 25 of an 80-column one.
FIELD_MAX_CHARS = 2200
FIELD_HEAD_CHARS = 1500  # kept from the start of a shortened field
FIELD_TAIL_CHARS = 500  # kept from its end
BLANK_RUN = 16  # this many copies of one blank or escaped character in a row are shown as a count

_RUN = _lazy(rf"(.)\1{{{BLANK_RUN - 1},}}", re.S)
# One shown unit of escape_value's output: one escape or one literal character. escape_value maps
# every character of the value to exactly one unit, so units count the value's characters.
_UNIT = _lazy(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|.", re.S)


class _Segment:
    """A stretch of the value and how it is shown (a plain class: the CLI imports this at start-up)."""

    __slots__ = ("run", "shown", "size", "start", "stop")

    def __init__(self, start: int, stop: int, shown: str, run: bool, size: int | None = None) -> None:
        self.start = start  # where it is in the value
        self.stop = stop
        self.shown = shown
        self.run = run  # a collapsed run: shown whole or not at all
        # len(shown); for a stretch too long to show whole, a lower bound, and `shown` is left empty
        # (only what fits a budget of it is ever escaped: a 3 MB value costs no 3 MB loop)
        self.size = len(shown) if size is None else size


def field_value(value: str) -> tuple[str, int]:
    """The inside of the quotes for one approval field, and how many characters of `value` were cut.

    Nothing in a field can push its beginning out of view: a run of BLANK_RUN or more of one space
    or one escaped character is shown as `\\{N spaces}` / `\\{N × ESC}`, and a field still longer
    than FIELD_MAX_CHARS keeps its first and last characters around `\\{N characters not shown}`.
    """
    segments = _segments(value)
    if sum(seg.size for seg in segments) <= FIELD_MAX_CHARS:
        return "".join(seg.shown for seg in segments), 0
    head, head_end = _head(value, segments, FIELD_HEAD_CHARS)
    tail, tail_start = _tail(value, segments, FIELD_TAIL_CHARS, head_end)
    cut = tail_start - head_end
    return f"{head}\\{{{cut} characters not shown}}{tail}", cut


def _segments(value: str) -> list[_Segment]:
    """The value as escaped stretches and collapsed runs (found in the value: a regex, not a loop).

    Escaping a stretch on its own is the same as in the whole value: what precedes it is the end of
    a run, a blank or an escape, which escape_value treats like the start of a value."""
    out: list[_Segment] = []
    pos = 0
    for m in _RUN().finditer(value):
        ch = m.group(1)
        if ch != " " and (ch in '\\"' or escape_value(ch) == ch):
            continue  # a run of something visible ("=====") is shown as it is
        if m.start() > pos:
            out.append(_stretch(value, pos, m.start()))
        what = "spaces" if ch == " " else f"× {escape_value(ch)}"
        out.append(_Segment(m.start(), m.end(), f"\\{{{m.end() - m.start()} {what}}}", True))
        pos = m.end()
    if pos < len(value):
        out.append(_stretch(value, pos, len(value)))
    return out


def _stretch(value: str, start: int, stop: int) -> _Segment:
    if stop - start > FIELD_MAX_CHARS:  # each character shows as one or more: it cannot fit whole
        return _Segment(start, stop, "", False, stop - start)
    return _Segment(start, stop, escape_value(value[start:stop]), False)


def _head(value: str, segments: list[_Segment], budget: int) -> tuple[str, int]:
    """The longest start that fits in `budget` shown characters, and where it ends in the value."""
    parts: list[str] = []
    end = 0
    for seg in segments:
        if seg.size <= budget:
            parts.append(seg.shown)
            budget -= len(seg.shown)
            end = seg.stop
            continue
        if not seg.run:  # each character shows as at least one: `budget` characters are enough
            units = _UNIT().findall(escape_value(value[seg.start : seg.start + budget]))
            taken = _fitting(units, budget)
            parts.extend(taken)
            end = seg.start + len(taken)
        break
    return "".join(parts), end


def _tail(value: str, segments: list[_Segment], budget: int, floor: int) -> tuple[str, int]:
    """The longest end after `floor` that fits in `budget` shown characters, and where it starts."""
    parts: list[str] = []
    begin = len(value)
    for seg in reversed(segments):
        if seg.stop <= floor:
            break
        if seg.start >= floor and seg.size <= budget:
            parts.append(seg.shown)
            budget -= len(seg.shown)
            begin = seg.start
            continue
        if not seg.run:
            units = _UNIT().findall(escape_value(value[max(seg.start, floor, seg.stop - budget) : seg.stop]))
            taken = _fitting(units[::-1], budget)[::-1]
            parts.append("".join(taken))
            begin = seg.stop - len(taken)
        break
    return "".join(reversed(parts)), begin


def _fitting(units: list[str], budget: int) -> list[str]:
    """The first of `units` whose shown length fits in `budget`."""
    for count, unit in enumerate(units):
        budget -= len(unit)
        if budget < 0:
            return units[:count]
    return units


def approval_fields(
    fields: list[tuple[str, str]], warning: str | None, *, as_given: bool = False
) -> tuple[list[tuple[str, str]], str | None]:
    """The shown fields (field_value) in display order (deciding fields last, unless `as_given`: a
    screen kept exactly as a chapter shows it), and the warning, with a line for each field that was
    cut.

    Done once, in the core: the terminal, the editor, ACP and the eval runner show the same."""
    shown: list[tuple[str, str]] = []
    lines = [warning] if warning else []
    ordered = fields if as_given else sorted(fields, key=lambda f: f[0] in DECIDING)  # stable sort
    for label, value in ordered:
        text, cut = field_value(value)
        shown.append((label, text))
        if cut:
            lines.append(
                f"{label} is too long to show in full: {cut} of its {len(value)} characters are not shown "
                "(cut from the middle). Deny unless you trust what you cannot see."
            )
    return shown, "\n".join(lines) or None


# The fields that decide, short and written by Mino (where, how, which sandbox), come last, right
# above the warning and the question; what the model wrote at length (a command, its reason, a
# file's content, a diff, a memory's text) comes before them, so its tail can never be the last
# thing read before answering (a reason faking `Sandbox: "bwrap"`). Labels named outside Mino (an
# MCP tool's arguments) are never one of these: mcp.argument_label prefixes them with `argument `.
DECIDING = frozenset(
    {
        "Path",
        "Target",
        "Directory",
        "Memory",
        "Mode",
        "Type",
        "Lines",
        "Skill",
        "Sandbox",
        "Network",
        "Server",
        "Rule",
    }
)


def approval_lines(tool: str, fields: list[tuple[str, str]], warning: str | None) -> list[str]:
    """`[Tool: NAME]`, one `Label: "value"` line per field, then the warning; the front end adds the
    question. The values arrive escaped already: the core escapes them once for every front end."""
    lines = [f"[Tool: {tool}]"]
    lines.extend(f'{label}: "{value}"' for label, value in fields)
    if warning:
        lines.append(warning)
    return lines


# One unit of a shown value when it is cut again: a marker (its count is what it stands for), an
# escape or one character.
_SHOWN_UNIT = _lazy(r"\\\{(\d+)[^}]*\}|\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|.", re.S)


def columns(text: str) -> int:
    """How many terminal columns `text` takes (wide East Asian characters two, marks none)."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def rows(line: str, cols: int) -> int:
    """The screen rows one line takes on a terminal `cols` wide (it wraps)."""
    return max(1, -(-columns(line) // max(cols, 1)))


def fit_approval(
    tool: str, fields: list[tuple[str, str]], warning: str | None, height: int, cols: int
) -> list[str]:
    """approval_lines, with the longest fields cut in the middle (`\\{N characters not shown}`) until
    the block takes at most `height` rows of a terminal `cols` wide, so that nothing of it, above all
    the deciding fields at its end, scrolls away before the question (which is not counted).

    Fields are cut to a common number of rows, longest first; when anything is cut a line says so.
    A block that cannot fit (a tiny terminal) keeps one row per field."""
    lines = approval_lines(tool, fields, warning)
    if sum(rows(line, cols) for line in lines) <= height:
        return lines
    note = "Cut to fit this terminal: "
    fixed = rows(lines[0], cols) + sum(rows(line, cols) for line in lines[1 + len(fields) :])
    fixed += rows(note + "x" * 120, cols)  # the line that says what was cut
    sizes = [rows(f'{label}: "{value}"', cols) for label, value in fields]
    cap = max(sizes)
    while cap > 1 and sum(min(size, cap) for size in sizes) > height - fixed:
        cap -= 1
    shown: list[tuple[str, str]] = []
    cuts: list[str] = []
    for (label, value), size in zip(fields, sizes, strict=True):
        if size <= cap:
            shown.append((label, value))
            continue
        text, cut = _cut_shown(value, cap * cols - columns(f'{label}: ""') - 1)
        shown.append((label, text))
        cuts.append(f"{label} ({cut} more characters)")
    lines = approval_lines(tool, shown, warning)
    lines.append(f"{note}{', '.join(cuts)} not shown. Deny unless you trust what you cannot see.")
    return lines


def _cut_shown(value: str, width: int) -> tuple[str, int]:
    """An already shown value cut in the middle to at most `width` columns (markers and escapes
    kept whole), and how many characters of the original value the new marker stands for."""
    units = [(m.group(), int(m.group(1)) if m.group(1) else 1) for m in _SHOWN_UNIT().finditer(value)]
    budget = max(width - len("\\{99999 characters not shown}"), 0)
    head_budget = budget * 2 // 3
    head = 0
    while head < len(units) and columns(units[head][0]) <= head_budget:
        head_budget -= columns(units[head][0])
        head += 1
    tail_budget = budget - (budget * 2 // 3 - head_budget)
    tail = len(units)
    while tail > head and columns(units[tail - 1][0]) <= tail_budget:
        tail_budget -= columns(units[tail - 1][0])
        tail -= 1
    cut = sum(count for _, count in units[head:tail])
    text = (
        "".join(u for u, _ in units[:head])
        + f"\\{{{cut} characters not shown}}"
        + "".join(u for u, _ in units[tail:])
    )
    return text, cut


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


# ---- the terminal -------------------------------------------------------------------------------
# What could drive a terminal: C0 controls but \n and \t (ESC starts every escape sequence), DEL,
# C1 controls (U+009B is a one-character CSI for some terminals), lone surrogates (cannot be
# written as UTF-8) and the bidi embeddings, overrides and isolates (they reorder what is shown).
# A carriage return could overwrite the line: only CR LF passes, as a line end.
_ASCII_UNSAFE = re.compile("\r\n?|[\x00-\x08\x0b-\x1f\x7f]")
# Everything beyond ASCII: looked at one character at a time (_State.run).
_NOT_PLAIN = re.compile("[^\x00-\x7f]+")
# What shows as nothing, decided by Unicode's categories rather than a list: controls (Cc), format
# characters (Cf: zero-width space and joiners, LRM/RLM/ALM, bidi controls, word joiner, BOM, tags
# U+E0000-E007F, soft hyphen), line and paragraph separators (Zl, Zp), surrogates (Cs), private use
# (Co) and unassigned code points (Cn); plus the default-ignorable letters and symbols of
# _INVISIBLE_RANGES (Hangul fillers, the braille blank, variation selectors).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
# Text made only of ASCII and common visible letters and punctuation (Latin, Greek, Cyrillic, CJK,
# kana, Hangul, fullwidth forms): no mark, format character, emoji or gap among them (checked by
# tests/test_display.py), so such a delta needs no per-character look (the streaming path).
_VISIBLE_TEXT = _lazy(
    "[\t\n\x20-\x7e\u00a1-\u00ac\u00ae-\u02ff\u0391-\u03a1\u03a3-\u03c9\u0400-\u0482"
    "\u048a-\u04ff\u1e00-\u1eff\u2010-\u2027\u2030-\u205e\u3001-\u3029\u3030-\u303f"
    "\u3041-\u3096\u30a0-\u30ff\u4e00-\u9fff\uac00-\ud7a3\uff01-\uff60]*"
)
_RUNS = re.compile("[^\x00-\x7f]+|[\x00-\x7f]+")
_ZWJ = "\u200d"
_EMOJI_PRESENTATION = ("\ufe0e", "\ufe0f")  # text and emoji variation selectors (VS15, VS16)


def terminal_text(text: str, before: str = "") -> str:
    """`text` made safe to write to a terminal: everything above is shown as its escape (`\\x1b`,
    `\\r`, `\\u009b`, `\\u200b`, as escape_value writes them), so nothing is silently dropped and
    nothing is invisible. Everything else, backslashes included, is left as it is: this is for
    reading, not decoding. `before` is the text written just before (a streamed delta's
    predecessor), so a run of combining marks split across deltas is still counted as one run.

    Emoji keep working: a zero-width joiner right after a pictograph (👨‍👩‍👧) and one VS15/VS16
    right after a visible character (❤️) are shown as themselves."""
    if text.isascii():  # the common case: one regex, no per-character work
        return _ASCII_UNSAFE.sub(_terminal_escape, text) if _ASCII_UNSAFE.search(text) else text
    if _VISIBLE_TEXT().fullmatch(text):
        return text
    state = _State()
    if before:
        state.after(before[-(MAX_MARKS + 2) :])
    out: list[str] = []
    pos = 0
    for m in _NOT_PLAIN.finditer(text):
        if m.start() > pos:
            plain = text[pos : m.start()]
            out.append(_ASCII_UNSAFE.sub(_terminal_escape, plain) if _ASCII_UNSAFE.search(plain) else plain)
            state.plain(plain[-1])
        out.append(state.run(m.group()))
        pos = m.end()
    if pos < len(text):
        rest = text[pos:]
        out.append(_ASCII_UNSAFE.sub(_terminal_escape, rest) if _ASCII_UNSAFE.search(rest) else rest)
    return "".join(out)


class _State:
    """What the characters just shown were, for the next character's decision."""

    __slots__ = ("base", "marks", "pictograph", "selector")

    def __init__(self) -> None:
        self.base = False  # the last character shown as itself is visible (a mark may sit on it)
        self.marks = 0  # combining marks in a row just before
        self.pictograph = False  # the last character shown is an emoji (a ZWJ may follow)
        self.selector = False  # the last character was a variation selector shown as itself

    def plain(self, last: str) -> None:
        """After a stretch of ASCII ending in `last`."""
        self.base, self.marks, self.pictograph, self.selector = " " < last < "\x7f", 0, False, False

    def after(self, text: str) -> None:
        """After `text`, written earlier (only the state matters)."""
        for m in _RUNS.finditer(text):
            run = m.group()
            if _NOT_PLAIN.fullmatch(run):
                self.run(run)
            else:
                self.plain(run[-1])

    def run(self, run: str) -> str:
        return "".join(self._one(ch) for ch in run)

    def _one(self, ch: str) -> str:
        cat = unicodedata.category(ch)
        if cat in _HIDDEN_CATEGORIES or _INVISIBLE().match(ch):
            if ch == _ZWJ and self.pictograph:
                self.pictograph = self.base = self.selector = False
                return ch
            if ch in _EMOJI_PRESENTATION and self.base and not self.selector:
                self.selector, self.marks = True, 0
                return ch  # keeps `pictograph`: ❤️ + ZWJ + 🔥
            self.base = self.pictograph = self.selector = False
            self.marks = 0
            return _escape_char(ch)
        if cat == "Mn" or cat == "Me":
            self.marks += 1
            return ch if self.marks <= MAX_MARKS and self.base else _escape_char(ch)
        self.marks, self.selector = 0, False
        self.base = cat[0] != "Z"  # a no-break or ideographic space carries no mark
        self.pictograph = cat == "So" or "\U0001f3fb" <= ch <= "\U0001f3ff"  # skin tones are Sk
        return ch


def _terminal_escape(m: re.Match[str]) -> str:
    found = m.group()
    return "\n" if found == "\r\n" else _escape_char(found)
