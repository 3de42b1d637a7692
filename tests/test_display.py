"""The approval display (docs/BEHAVIOUR.md, "Approval display"): nothing invisible, printable text as is, decodable."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mino_server.core.display import (
    BLANK_RUN,
    FIELD_HEAD_CHARS,
    FIELD_MAX_CHARS,
    FIELD_TAIL_CHARS,
    approval_fields,
    approval_lines,
    escape_value,
    field_value,
    preview,
    terminal_text,
)

_ESCAPE = re.compile(r'\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[nrt\\"])')
_NAMED = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"'}


def decode(shown: str) -> str:
    """The inverse of escape_value; fails on a bare backslash or quote (so it checks the format too)."""
    out, pos = [], 0
    while pos < len(shown):
        ch = shown[pos]
        if ch == "\\":
            m = _ESCAPE.match(shown, pos)
            assert m, f"bad escape at {pos} in {shown!r}"
            code = m.group(1)
            out.append(_NAMED.get(code) or chr(int(code[1:], 16)))
            pos = m.end()
        else:
            assert ch != '"', f"unescaped quote in {shown!r}"
            out.append(ch)
            pos += 1
    return "".join(out)


HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"}


def hidden(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat in HIDDEN_CATEGORIES or (cat == "Zs" and ch != " ")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain text 123", "plain text 123"),
        ("这个用户的项目都用 pnpm 安装依赖。", "这个用户的项目都用 pnpm 安装依赖。"),
        ("pаypal", "pаypal"),  # Cyrillic а stays a letter
        ("a\nb\tc\rd", "a\\nb\\tc\\rd"),
        ('say "hi" \\ bye', 'say \\"hi\\" \\\\ bye'),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("\x00\x7f\x85\x9b", "\\x00\\x7f\\u0085\\u009b"),
        ("a\u200bb\u200cc\u200dd\u2060e\ufeff", "a\\u200bb\\u200cc\\u200dd\\u2060e\\ufeff"),
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),
        ("\u2066x\u2069\u200e\u200f\u061c", "\\u2066x\\u2069\\u200e\\u200f\\u061c"),
        ("a\u00a0b\u3000c\u2009d", "a\\u00a0b\\u3000c\\u2009d"),
        ("l1\u2028l2\u2029", "l1\\u2028l2\\u2029"),
        ("\u00ad\u115f\u3164\u2800", "\\u00ad\\u115f\\u3164\\u2800"),
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),
        ("\ue000\U000f0000", "\\ue000\\U000f0000"),  # private use
        ("\u0378", "\\u0378"),  # unassigned
        ("\ud800", "\\ud800"),  # a lone surrogate (JSON can carry one)
        ("❤\ufe0f", "❤\\ufe0f"),  # variation selectors are invisible on their own
        ("e\u0301", "e\u0301"),  # a combining accent on a letter is visible: kept
        ("ệ", "ệ"),
        ("\u0301x", "\\u0301x"),  # at the start it would sit on the opening quote
        ("a \u0301", "a \\u0301"),  # on a space
        ("\u200b\u0301", "\\u200b\\u0301"),  # on an escape
        ("😀 emoji", "😀 emoji"),
    ],
)
def test_escape_examples(value: str, shown: str) -> None:
    assert escape_value(value) == shown
    assert decode(shown) == value


def test_memory_save_example_lines_are_exact() -> None:
    raw = [
        ("Memory", "uses-pnpm"),
        ("Directory", "/Users/you/.mino/memory"),
        ("Mode", "Create a new memory"),
        ("Type", "project"),
        ("Summary", "这个用户的项目都用 pnpm 安装依赖，从不用 npm 或 yarn。"),
    ]
    lines = approval_lines(
        "memory_save",
        [(label, escape_value(value)) for label, value in raw],
        "Saved memories are shown to the model in every later session and project; "
        "approval applies only to this content.",
    )
    assert lines == [
        "[Tool: memory_save]",
        'Memory: "uses-pnpm"',
        'Directory: "/Users/you/.mino/memory"',
        'Mode: "Create a new memory"',
        'Type: "project"',
        'Summary: "这个用户的项目都用 pnpm 安装依赖，从不用 npm 或 yarn。"',
        "Saved memories are shown to the model in every later session and project; "
        "approval applies only to this content.",
    ]


def test_approval_lines_without_warning() -> None:
    assert approval_lines("bash", [("Command", escape_value("ls\n"))], None) == [
        "[Tool: bash]",
        'Command: "ls\\n"',
    ]
    assert approval_lines("x", [("Path", escape_value('a"b'))], None)[1] == 'Path: "a\\"b"'


def test_preview_short_text_is_whole() -> None:
    assert preview("one\ntwo\n") == ("one\ntwo\n", None)
    assert preview("") == ("", None)


def test_preview_cuts_lines_and_says_so() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 31))
    head, note = preview(text)
    assert head == "".join(f"line {i}\n" for i in range(1, 21))
    assert note == "Preview cut: showing 20 of 30 lines (151 bytes of 231 bytes)."


def test_preview_counts_only_newlines_as_line_breaks() -> None:
    text = "a\rb\x0cc\u2028d\n" * 25
    head, note = preview(text)
    assert head == "a\rb\x0cc\u2028d\n" * 20
    assert note is not None and "showing 20 of 25 lines" in note


def test_preview_cuts_bytes_on_a_character_boundary() -> None:
    text = "汉" * 1000  # 3000 bytes on one line
    head, note = preview(text)
    assert head == "汉" * 682  # 2046 bytes: the 683rd character would pass 2048
    assert note is not None and "1 of 1 lines" in note and "2.9 KiB" in note


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_no_invisible_character_survives(value: str) -> None:
    shown = escape_value(value)
    assert not any(hidden(ch) for ch in shown)
    assert "\n" not in shown


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_escaping_is_decodable(value: str) -> None:
    assert decode(escape_value(value)) == value


@given(
    st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    st.text(alphabet=st.characters(codec=None, exclude_categories=())),
)
def test_escaping_is_injective(a: str, b: str) -> None:
    if a != b:
        assert escape_value(a) != escape_value(b)


LETTERS = st.one_of(
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),  # CJK unified ideographs
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF, categories=["Lo"]),  # kana
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),  # Hangul syllables
    st.characters(categories=["Lu", "Ll", "Lt"]),  # cased letters of every script
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters='\\"'),
)


@given(st.text(alphabet=LETTERS))
def test_printable_letters_survive_unchanged(value: str) -> None:
    assert escape_value(value) == value


@given(st.lists(st.sampled_from(["word", " ", "中文", "а"]), max_size=20).map("".join))
def test_spaces_between_words_stay_spaces(value: str) -> None:
    assert escape_value(value) == value


# ---- field_value: runs collapsed, over-long values shortened (finding 9) ------------------------
_MARKER = re.compile(r"\\\{(\d+) (spaces|× (\\[^}]+)|characters not shown)\}")


def decode_field(shown: str) -> tuple[str, int | None, str]:
    """(decoded text before the cut, characters cut or None, decoded text after it)."""
    parts: list[str] = []
    before: str | None = None
    cut: int | None = None
    pos = 0
    for m in _MARKER.finditer(shown):
        parts.append(shown[pos : m.start()])
        if m.group(2) == "spaces":
            parts.append(escape_value(" ") * int(m.group(1)))
        elif m.group(3):
            parts.append(m.group(3) * int(m.group(1)))
        else:
            assert before is None, "two cut markers"
            before, cut, parts = decode("".join(parts)), int(m.group(1)), []
        pos = m.end()
    parts.append(shown[pos:])
    rest = decode("".join(parts))
    return (before, cut, rest) if before is not None else (rest, None, "")


def test_the_padded_command_of_the_finding() -> None:
    value = "cp ~/.ssh/id_rsa ./pub/ ;" + " " * 4000 + "npm run lint"
    assert field_value(value) == ("cp ~/.ssh/id_rsa ./pub/ ;\\{4000 spaces}npm run lint", 0)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a" + " " * (BLANK_RUN - 1) + "b", "a" + " " * (BLANK_RUN - 1) + "b"),  # indentation stays
        (" " * BLANK_RUN, f"\\{{{BLANK_RUN} spaces}}"),
        ("x\t" + "\t" * 30, "x\\{31 × \\t}"),
        ("\u00a0" * 500 + "rm -rf ~", "\\{500 × \\u00a0}rm -rf ~"),
        ("\u200b" * 20 + "\n" * 20, "\\{20 × \\u200b}\\{20 × \\n}"),
        ("\x1b" * 16, "\\{16 × \\x1b}"),
        ("=" * 80, "=" * 80),  # a run of something visible is shown as it is
        ("\\" * 20 + '"' * 20, "\\\\" * 20 + '\\"' * 20),  # backslashes and quotes are visible too
        ("", ""),
    ],
)
def test_runs_are_collapsed_with_their_count(value: str, shown: str) -> None:
    assert field_value(value) == (shown, 0)
    assert decode_field(shown) == (value, None, "")


def test_a_value_of_its_own_markers_cannot_pass_for_one() -> None:
    # The value's backslash is shown as \\: the marker text it typed is not a marker.
    assert field_value("\\{4000 spaces}")[0] == "\\\\{4000 spaces}"


def test_an_over_long_value_keeps_its_start_and_end_and_says_what_was_cut() -> None:
    value = "cp ~/.ssh/id_rsa ./pub/ ; " + "true; " * 2000 + "npm run lint"
    shown, cut = field_value(value)
    assert shown.startswith("cp ~/.ssh/id_rsa ./pub/ ; true; ") and shown.endswith("true; npm run lint")
    assert len(shown) <= FIELD_HEAD_CHARS + FIELD_TAIL_CHARS + 40
    head, n, tail = decode_field(shown)
    assert n == cut and len(head) + cut + len(tail) == len(value)
    assert value.startswith(head) and value.endswith(tail)
    assert len(head) == FIELD_HEAD_CHARS and len(tail) == FIELD_TAIL_CHARS


def test_a_two_kib_preview_is_shown_whole() -> None:
    text = "".join(
        f"{i:3d} " + "ordinary source text, as a preview shows it; " * 2 + "x\n" for i in range(20)
    )
    head, note = preview(text)
    assert note is None and len(head.encode()) > 1900
    assert field_value(head) == (escape_value(head), 0)


def test_escapes_are_never_split_by_the_cut() -> None:
    value = "\x00" * 5 + "é\u200b" * 3000 + "end"
    shown, cut = field_value(value)
    head, n, tail = decode_field(shown)  # decode() fails on a broken escape
    assert cut == n and value.startswith(head) and value.endswith(tail)
    assert len(head) + cut + len(tail) == len(value)


def test_a_huge_value_is_quick() -> None:
    import time

    value = "ab\x00" * 1_000_000
    # CPU time, not wall time: a busy machine stretches the wall clock, not the work (a quadratic
    # cut would take minutes of CPU; it takes well under a second).
    started = time.process_time()
    shown, cut = field_value(value)
    assert time.process_time() - started < 5
    assert len(shown) < FIELD_MAX_CHARS and cut > 2_990_000


RUNNY = st.lists(
    st.tuples(
        st.sampled_from([" ", "a", "\t", "\u00a0", "é", "\u0301", "\\", '"', "\x1b", "中"]),
        st.integers(1, 40),
    ),
    max_size=200,
).map(lambda runs: "".join(ch * n for ch, n in runs))


@given(st.one_of(RUNNY, st.text(alphabet=st.characters(codec=None, exclude_categories=()))))
def test_field_value_hides_nothing_and_reads_back(value: str) -> None:
    shown, cut = field_value(value)
    assert not any(hidden(ch) for ch in shown) and "\n" not in shown
    head, n, tail = decode_field(shown)
    if cut == 0:
        assert n is None and head == value
    else:
        assert n == cut and value.startswith(head) and value.endswith(tail)
        assert len(head) + cut + len(tail) == len(value)
        assert len(shown) <= FIELD_HEAD_CHARS + FIELD_TAIL_CHARS + 40


@given(RUNNY.map(lambda v: v * 20))
def test_long_runny_values_are_cut_consistently(value: str) -> None:
    shown, cut = field_value(value)
    head, n, tail = decode_field(shown)
    assert (n or 0) == cut and value.startswith(head) and value.endswith(tail)
    assert len(head) + cut + len(tail) == len(value)
    assert len(shown) <= max(FIELD_MAX_CHARS, FIELD_HEAD_CHARS + FIELD_TAIL_CHARS + 40)


def test_approval_fields_adds_a_warning_line_for_a_cut_field() -> None:
    fields, warning = approval_fields([("Command", "x" * 5000), ("Directory", "/w")], "Fixed sentence.")
    assert fields[1] == ("Directory", "/w") and fields[0][1].startswith("x" * FIELD_HEAD_CHARS + "\\{")
    assert warning is not None
    first, second = warning.split("\n")
    assert first == "Fixed sentence."
    cut = 5000 - FIELD_HEAD_CHARS - FIELD_TAIL_CHARS
    assert second == (
        f"Command is too long to show in full: {cut} of its 5000 characters are not shown "
        "(cut from the middle). Deny unless you trust what you cannot see."
    )
    assert approval_fields([("Command", " " * 5000)], None) == ([("Command", "\\{5000 spaces}")], None)


# ---- terminal_text: the one sanitiser for outside text (finding 3) -----------------------------
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain 中文 😀 \\x1b stays", "plain 中文 😀 \\x1b stays"),
        ("a\nb\tc", "a\nb\tc"),
        ("\x1b[30;40m\x1b[8mhidden", "\\x1b[30;40m\\x1b[8mhidden"),
        ("line\r\n", "line\n"),
        ("Approve\rDenied", "Approve\\rDenied"),
        ("\r\r\n", "\\r\n"),
        ("\x00\x07\x08\x0b\x0c\x7f", "\\x00\\x07\\x08\\x0b\\x0c\\x7f"),
        ("\x85\x9b31m\x9d", "\\u0085\\u009b31m\\u009d"),
        ("\u202egnp.exe\u2066x\u2069", "\\u202egnp.exe\\u2066x\\u2069"),
        ("\udc80", "\\udc80"),
    ],
)
def test_terminal_text_examples(text: str, shown: str) -> None:
    assert terminal_text(text) == shown


TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\r\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_terminal_text_leaves_nothing_that_drives_a_terminal(text: str) -> None:
    shown = terminal_text(text)
    assert not TERMINAL_UNSAFE.search(shown)
    shown.encode("utf-8")  # no lone surrogate left
    # Nothing silently dropped: every character is still there, in order, as itself or as its
    # escape, and each of these as its escape (a CR before LF is the line end itself).
    pos = 0
    for c in text.replace("\r\n", "\n"):
        at = shown.find(c, pos, pos + 1) if not TERMINAL_UNSAFE.match(c) else -1
        if at < 0:
            escaped = "\\r" if c == "\r" else escape_value(c)
            assert shown.startswith(escaped, pos), (c, shown[pos:])
            pos += len(escaped)
        else:
            pos = at + 1
    assert pos == len(shown)


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_escaped_approval_text_passes_the_terminal_unchanged(value: str) -> None:
    shown = field_value(value)[0]
    assert terminal_text(shown) == shown


def test_the_fast_path_holds_only_visible_characters() -> None:
    # terminal_text returns text of these characters unchanged without looking at each one.
    from mino_server.core.display import _INVISIBLE, _VISIBLE_TEXT

    for cp in range(0x80, 0x10000):
        ch = chr(cp)
        if _VISIBLE_TEXT().fullmatch(ch):
            assert unicodedata.category(ch) not in ("Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp", "Mn", "Me")
            assert not _INVISIBLE().match(ch)
