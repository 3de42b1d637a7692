"""The approval display (SPEC §6): nothing invisible, printable text as is, decodable."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mino_server.display import approval_lines, escape_value, preview

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


def test_seed_example_lines() -> None:
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
