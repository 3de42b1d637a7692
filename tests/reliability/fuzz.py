"""Hypothesis settings and strategies for hostile input, shared by the fuzz tests.

CI runs a bounded, derandomized number of examples (stable, about a minute in all); set
MINO_FUZZ_SCALE=10 for the full run in README.md. No example database is written into the repo.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from invariants import KNOWN_TYPES, tree_snapshot

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


# ---- session logs, good and bad -----------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=5,
)
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "", "call_0"])
TYPES = [*sorted(KNOWN_TYPES), "bogus"]  # "bogus" last


@st.composite
def a_record(draw: st.DrawFn, noisy: bool = True) -> dict[str, Any]:
    """A record of any type; `noisy`: now and then a field of the wrong shape or an unknown type."""
    t = draw(st.sampled_from(TYPES if noisy else TYPES[:-1]))

    def field(good: st.SearchStrategy[Any]) -> Any:
        return draw(st.one_of(good, JSONISH)) if noisy and draw(st.integers(0, 7)) == 0 else draw(good)

    rec: dict[str, Any] = {"type": t, "at": "2026-10-21T10:00:00.000Z"}
    if draw(st.integers(0, 5)):
        rec["turn_id"] = field(st.sampled_from(["t1", "t2", "t3"]))
    if t in ("user_message", "assistant_message"):
        rec["text"] = field(st.text(max_size=30))
    if t == "assistant_message" and draw(st.integers(0, 3)) == 0:
        rec["interrupted"] = True  # the text streamed before the person interrupted the turn
    elif t == "tool_call":
        rec.update(call_id=field(CALL_IDS), name=field(st.sampled_from(["bash", "read_file", "nope"])))
        rec["arguments"] = field(st.sampled_from(['{"command": "echo hi"}', "{bad", "[]", "{}"]))
    elif t == "tool_result":
        rec.update(call_id=field(CALL_IDS), status=field(st.sampled_from(["completed", "unknown", "weird"])))
        rec["output"] = field(st.text(max_size=20))
    elif t == "turn_end":
        rec["status"] = field(st.sampled_from(["completed", "failed", "interrupted"]))
    elif t == "compaction":
        rec.update(summary=field(st.text(max_size=20)), through_seq=field(st.integers(-2, 30)))
    elif t == "session_skills":
        rec["skills"] = field(st.just([{"name": "s", "description": "d"}]))
    elif t == "recovery":
        rec.update(call_id=field(CALL_IDS), name=field(st.just("bash")))
    elif t == "recovery_ack":
        rec["call_ids"] = field(st.lists(CALL_IDS, max_size=2))
    elif t == "rewind":
        rec["turns"] = field(st.lists(st.sampled_from(["t1", "t2", "t3"]), max_size=2))
    return rec


@st.composite
def a_log(draw: st.DrawFn) -> bytes:
    records = draw(st.lists(a_record(), max_size=10))
    lines = []
    for i, rec in enumerate(records, 1):
        seq = draw(st.sampled_from([i] * 8 + [i + 1, i - 1, "1", None]))
        if seq is not None:
            rec = {"seq": seq, **rec}
        lines.append(json.dumps(rec, ensure_ascii=draw(st.booleans())).encode() + b"\n")
    return damaged(draw, b"".join(lines))


def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` as it is (4 in 10), or with one kind of damage a disk, a crash or a hand can leave."""
    damage = draw(
        st.sampled_from(["none"] * 4 + ["truncate", "garbage", "nul-tail", "not-utf8", "crlf", "blank"])
    )
    if damage == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "garbage":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=20)) + data[at:]
    elif damage == "nul-tail":
        data += b"\x00" * draw(st.integers(1, 64))
    elif damage == "not-utf8" and data:
        data = data.replace(b'"', b'"\xff', 1)
    elif damage == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif damage == "blank":
        data = data.replace(b"\n", b"\n\n", 1)
    return data


def sound_records(draw: st.DrawFn, count: int, first_seq: int = 1) -> list[dict[str, Any]]:
    """`count` records that load (seq in order, every field of its type's shape)."""
    records = draw(st.lists(a_record(noisy=False), min_size=count, max_size=count))
    return [{"seq": seq, **rec} for seq, rec in enumerate(records, first_seq)]
