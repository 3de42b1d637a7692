"""Issue 22, "also attack": the context-item limits (count, sizes, the sum, path tricks).

Found: an item with text took a path of any length (1,000,000 characters was attached, reaching the
model, the session log and the terminal's `[Context: …]` line whole; nothing on disk needs to match
an item with text). Now a path over 4,096 bytes (PATH_MAX) is refused. Held (tested here or in
tests/test_editor_context.py): 101 items, 256 KiB together in UTF-8 bytes (an item's text over 64
KiB is cut with a note, counting 64 KiB: issue 25), FIFOs
(refused without blocking), links to /dev/zero, /proc or MINO_HOME, /proc/self/cwd and
/proc/self/root paths, a start line of 10**30, booleans as line numbers, lone surrogates.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mino_server.core.context import MAX_ITEMS, PATH_MAX_BYTES, ContextError, resolve_context
from mino_server.core.contract import ContextItem


@pytest.fixture
def wd(tmp_path: Path) -> Path:
    w = tmp_path / "w"
    w.mkdir()
    (w / "a.txt").write_text("hi\n")
    os.mkfifo(w / "fifo")
    (w / "zero").symlink_to("/dev/zero")
    (w / "env").symlink_to("/proc/self/environ")
    return w


@pytest.fixture
def home(tmp_path: Path, wd: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    (h / "secret").write_text("s\n")
    (wd / "homelink").symlink_to(h)
    return h


@pytest.mark.parametrize(
    "item, words",
    [
        (
            ContextItem(path="x" * 1_000_000, text="t"),
            "the path is 1,000,000 bytes; a path may be at most 4096",
        ),
        (ContextItem(path="é" * 2049, text="t"), "the path is 4,098 bytes"),
        (ContextItem(path="fifo"), "fifo is not a regular file"),
        (ContextItem(path="zero"), "leads outside the working directory"),
        (ContextItem(path="env"), "leads outside the working directory"),
        (ContextItem(path="homelink/secret"), "inside Mino's home folder"),
        (ContextItem(path="homelink", text="x"), "inside Mino's home folder"),
        (ContextItem(path="/proc/self/cwd/a.txt"), "outside the working directory"),
        (ContextItem(path="/proc/self/root/etc/passwd"), "outside the working directory"),
        (ContextItem(path="a.txt", startLine=10**30), "is past the end of a.txt"),
        (ContextItem(path="a.txt", startLine=True), "must be an integer"),
        (ContextItem(path="\ud800", text="x"), "without NUL bytes"),
    ],
)
def test_hostile_items_are_refused_quickly_with_one_line(
    wd: Path, home: Path, item: ContextItem, words: str
) -> None:
    started = time.monotonic()
    with pytest.raises(ContextError) as info:
        resolve_context(wd, home, [item])
    assert words in str(info.value), str(info.value)[:300]
    assert "\n" not in str(info.value) and len(str(info.value)) < 1000
    assert time.monotonic() - started < 30  # a FIFO must not block: a hang, not speed


def test_the_path_limit_is_the_limit_itself_and_the_count_is_checked_first(wd: Path, home: Path) -> None:
    assert resolve_context(wd, home, [ContextItem(path="p" * PATH_MAX_BYTES, text="t")])[0].text == "t"
    with pytest.raises(
        ContextError, match=f"{MAX_ITEMS + 1} context items; a turn may carry at most {MAX_ITEMS}"
    ):
        resolve_context(wd, home, [ContextItem(path="fifo")] * (MAX_ITEMS + 1))
    assert len(resolve_context(wd, home, [ContextItem(path="a.txt")] * MAX_ITEMS)) == MAX_ITEMS
