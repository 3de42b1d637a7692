"""Hypothesis settings and strategies for hostile input, shared by the fuzz tests.

CI runs a bounded, derandomized number of examples (stable, about a minute in all); set
MINO_FUZZ_SCALE=10 for the full run in README.md. No example database is written into the repo.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from invariants import tree_snapshot

SCALE = int(os.environ.get("MINO_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples * SCALE,
        derandomize=True,  # the same examples on every run: CI is stable
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# ---- YAML front matter, good and bad ---------------------------------------------------------------

NAMES = st.one_of(
    st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True),
    st.sampled_from(["UPPER", "a--b", "-a", "a-", "..", "../x", "a/b", "a\x00b", "x" * 65, "", " a", "é"]),
    st.text(max_size=12),
)
SCALARS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["yes", "null", "1.0", "2026-01-01", "~", "&a x", "*a", "!!python/object:os.system", "[a]", "{a: 1}"]
    ),
    st.just("x" * 30_000),  # a huge scalar: over the file limit
    st.just("y" * 5_000),
)


@st.composite
def front_matter(draw: st.DrawFn, keys: tuple[str, ...]) -> bytes:
    """A file that looks like front matter, with every way it can be wrong."""
    shape = draw(st.sampled_from(["fields", "alias", "laughs", "raw", "bytes", "no-close", "empty", "list"]))
    if shape == "bytes":
        return draw(st.binary(max_size=300))
    if shape == "raw":
        return draw(st.text(max_size=300)).encode("utf-8", "surrogatepass")
    if shape == "empty":
        return b""
    fields = {k: draw(st.one_of(NAMES, SCALARS)) if k == "name" else draw(SCALARS) for k in keys}
    if draw(st.booleans()):
        fields[draw(st.sampled_from(["extra", "type", "name", "Name"]))] = draw(SCALARS)
    lines = []
    for key, value in fields.items():
        style = draw(st.sampled_from(["plain", "quoted", "block"]))
        if style == "quoted":
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        elif style == "block":
            value = "|\n  " + value.replace("\n", "\n  ")
        lines.append(f"{key}: {value}")
    if shape == "alias":
        lines = ["anchor: &a x", *lines, f"{keys[0]}: *a"]
    elif shape == "laughs":
        lines = ['a: &a ["lol","lol","lol"]', "b: &b [*a,*a,*a,*a]", "c: &c [*b,*b,*b,*b]", *lines]
    elif shape == "list":
        lines = [f"- {line}" for line in lines]
    body = draw(st.sampled_from(["", "details\n", "x" * 17_000, "\x00\x01", "---\nmore\n"]))
    head = draw(st.sampled_from(["---\n", "---\r\n", "\ufeff---\n", "--- \n", ""]))
    close = "" if shape == "no-close" else draw(st.sampled_from(["---\n", "---\r\n", "---"]))
    text = head + "\n".join(lines) + "\n" + close + body
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        raw = raw.replace(b"a", b"\xff", 1)  # not UTF-8
    return raw


# ---- files of every kind ------------------------------------------------------------------------------

FILE_KINDS = (
    "file",
    "file",
    "file",
    "symlink-out",
    "symlink-dangling",
    "symlink-dir",
    "fifo",
    "dir",
    "hardlink",
    "huge",
)


def make_entry(path: Path, kind: str, content: bytes, outside: Path) -> None:
    """Create `path` as a `kind` of file (never writing outside `path`'s folder but for the sentinel)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        return
    if kind == "file":
        path.write_bytes(content)
    elif kind == "huge":
        path.write_bytes(content + b"\n" + b"z" * 70_000)
    elif kind == "symlink-out":
        os.symlink(outside / "secret.md", path)
    elif kind == "symlink-dangling":
        os.symlink(outside / "nothing-here", path)
    elif kind == "symlink-dir":
        os.symlink(outside, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "hardlink":
        os.link(outside / "secret.md", path)


def make_outside(root: Path, secret: bytes) -> Path:
    """A folder outside MINO_HOME and the working directory that nothing may ever change."""
    outside = root / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.md").write_bytes(secret)
    return outside


class OutsideGuard:
    """Everything under `root` except the folders Mino may write to must stay exactly as it was."""

    def __init__(self, root: Path, allowed: list[Path]) -> None:
        self.root = root
        self.allowed = [str(a.relative_to(root)) for a in allowed]
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in tree_snapshot(self.root).items()
            if not any(k == a or k.startswith(a + os.sep) for a in self.allowed)
        }

    def changed(self) -> list[str]:
        after = self.snapshot()
        return sorted(k for k in set(self.before) | set(after) if self.before.get(k) != after.get(k))


def is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
