"""One session: a JSONL log of records (docs/BEHAVIOUR.md, "Session records", "Recovery").

Each record: {"seq", "type", "turn_id"?, "at", ...}; seq is 1, 2, 3 … contiguous per file, and the
file name is the session's identity (no session_id field). Appends are fsynced before they return.

Loading checks every record: a torn last line (a crash mid-append, or a tail of NUL bytes) is kept
in a recovery copy beside the file and cut off; damage anywhere else means the log cannot be loaded.

The log is never held whole in memory. Loading streams through the file once and keeps only what
replay, recovery and the chat panel's pages need to find records again: each record's byte offset,
the seqs of the records a page shows, call and turn bookkeeping. Records themselves are read back
when needed (the replay after the latest compaction, one page, one call).

A checked index beside the log (`<id>.jsonl.idx`) saves that work for the next load: it holds the
state after the first N bytes with a SHA-256 of those bytes. A load hashes the log's first N bytes
(C speed, no parsing), and only when they are exactly the bytes the index describes does it start
from the saved state and parse the rest; any difference, a missing or damaged index, or one from
another version, means a full parse. So every record is still checked as if the index did not exist:
the index only remembers the checks of bytes that have not changed since. It is a cache: written
without fsync, never required, and rewritten when more than INDEX_MIN_BYTES are not covered.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import sys
import threading
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..durable import NotFollowed, append_line, atomic_write_at, open_file_at, open_private_dir
from ..values import Mutable, mutable

if TYPE_CHECKING:
    from ..images import Blobs

    BlobsFactory = Callable[[], Blobs]  # the session's kept images, made when a record first has one

RECORD_TYPES = frozenset(
    {
        "user_message",
        "assistant_message",
        "tool_call",
        "tool_result",
        "turn_end",
        "compaction",
        "session_skills",
        "recovery",
        "recovery_ack",
        "rewind",
        "interrupted",
        "reasoning",
    }
)
# `interrupted` is replayed as the line that tells the model the person stopped the turn.
# `reasoning`: a reasoning item a response returned ({type: "reasoning", id, summary,
# encrypted_content}), kept as the service sent it and sent back in place on the Responses wire.
REPLAYABLE = frozenset(
    {"user_message", "assistant_message", "tool_call", "tool_result", "interrupted", "reasoning"}
)
SHOWN = frozenset({"user_message", "assistant_message", "tool_result"})  # what a chat panel shows
UNKNOWN_RESULT_TEXT = "The result of this call was never recorded: the command may or may not have run."

INDEX_SUFFIX = ".idx"
INDEX_MAGIC = b"MINO-SESSION-INDEX\n"
INDEX_VERSION = 5  # bump whenever loading checks or derives anything differently
INDEX_MIN_BYTES = 1 << 20  # below this, parsing what the index does not cover takes < 10 ms
CHUNK = 1 << 20
NEAR = 64 * 1024  # records closer than this are read in one go


class LogError(Exception):
    """The session log cannot be loaded; the message says why."""


def utc_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def _open_regular(folder: int, path: Path, flags: int) -> int:
    """Open a session file in `folder`, refusing links (symbolic or hard) and special files."""
    try:
        return open_file_at(folder, path.name, flags, path)
    except NotFollowed as exc:
        raise LogError(str(exc)) from None
    except OSError as exc:
        raise LogError(f"cannot open {path.name}: {exc.strerror}") from None


_PREADV = getattr(os, "preadv", None)  # reads into one reused buffer (not on every platform)


def _pread(fd: int, size: int, offset: int) -> bytes:
    """Exactly `size` bytes at `offset` (pread may return fewer)."""
    data = os.pread(fd, size, offset)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, offset + got)
        if not more:
            raise OSError(errno.EIO, "the session file is shorter than expected")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


@mutable
class Pending(Mutable):
    """A tool call whose result was never recorded."""

    call_id: str
    name: str
    arguments: str
    turn_id: str | None


class _Scan:
    """What loading learns from the records, kept up to date by every append.

    Each field answers one question without reading the log again; the recovery fields give the
    same answers as a scan of every record would (tests/test_sessions.py checks that)."""

    def __init__(self) -> None:
        self.offsets = array("Q")  # byte offset of record seq, at index seq - 1
        self.shown = array("Q")  # seqs of the records a chat panel shows, ascending
        self.links = array("Q")  # for each of those: the seq of the tool_call a result names (0: none)
        self.calls: dict[str, int] = {}  # call_id → seq of its latest tool_call
        # Sets of strings as dicts: a dict of strings is not tracked by the garbage collector, a set
        # is, and a full collection then walks every member (~25 ms at a million records).
        self.results: dict[str, None] = {}  # call_ids that have a tool_result
        self.pending: dict[str, list[int]] = {}  # call_id → seqs of its tool_calls, while it has no result
        self.ended: dict[str, None] = {}  # turn_ids with a turn_end
        self.open_turns: dict[str, None] = {}  # turn_ids without one, in order of first appearance
        self.acked: dict[str, None] = {}  # call_ids a recovery_ack confirmed
        self.recoveries: dict[str, int] = {}  # call_id → seq of its first unacknowledged recovery
        self.compaction = 0  # seq of the latest compaction (0: none)
        self.through = 0  # its through_seq
        self.skills = 0  # seq of the latest session_skills (0: none)
        # turn_id → [its number (1, 2, …), seq of its first user_message, the tools it called: bit i
        # for tool_names[i]]. What a tool is (whether it runs commands) is the registry's to say,
        # asked only when someone wants to know (a rewind); an int a turn keeps a long log small.
        self.turns: dict[str, list[int]] = {}
        self.tool_names: list[str] = []  # each tool name the log's calls use, in order of first use
        self.tool_bits: dict[str, int] = {}  # name → its index in tool_names
        self.rewound: dict[str, None] = {}  # turn_ids a `rewind` record took back

    def add(self, rec: dict[str, Any], offset: int) -> None:
        """Account for one checked record (its seq is the next one)."""
        self.offsets.append(offset)
        seq = len(self.offsets)
        t = rec["type"]
        tid = rec.get("turn_id")
        if tid and tid not in self.ended and tid not in self.open_turns:
            self.open_turns[tid] = None
        if t == "user_message" or t == "assistant_message":
            if t == "user_message" and tid and tid not in self.turns:
                self.turns[tid] = [len(self.turns) + 1, seq, 0]
            self.shown.append(seq)
            self.links.append(0)
        elif t == "tool_call":
            cid = rec["call_id"]
            self.calls[cid] = seq
            if tid in self.turns:
                bit = self.tool_bits.get(rec["name"])
                if bit is None:
                    bit = self.tool_bits[rec["name"]] = len(self.tool_names)
                    self.tool_names.append(rec["name"])
                self.turns[tid][2] |= 1 << bit
            if cid not in self.results:
                self.pending.setdefault(cid, []).append(seq)
        elif t == "tool_result":
            cid = rec["call_id"]
            self.results[cid] = None
            self.pending.pop(cid, None)
            self.shown.append(seq)
            self.links.append(self.calls.get(cid, 0))
        elif t == "turn_end":
            if tid:
                self.ended[tid] = None
                self.open_turns.pop(tid, None)
        elif t == "compaction":
            self.compaction = seq
            self.through = rec["through_seq"]
        elif t == "session_skills":
            self.skills = seq
        elif t == "recovery":
            cid = rec["call_id"]
            if cid not in self.acked and cid not in self.recoveries:
                self.recoveries[cid] = seq
        elif t == "recovery_ack":
            for cid in rec["call_ids"]:
                self.acked[cid] = None
                self.recoveries.pop(cid, None)
        elif t == "rewind":
            for rid in rec["turns"]:
                self.rewound[rid] = None

    # ---- the index file ----------------------------------------------------------------------
    def dump(self, size: int, digest: bytes) -> bytes:
        arrays = (self.offsets, self.shown, self.links)
        head = {
            "version": INDEX_VERSION,
            "byteorder": sys.byteorder,
            "size": size,
            "digest": digest.hex(),
            "lengths": [len(a) for a in arrays],
            "calls": self.calls,
            # results is nearly every call: saved as the difference, loaded sharing the call strings
            "no_result": [c for c in self.calls if c not in self.results],
            "orphan_results": [c for c in self.results if c not in self.calls],
            "pending": self.pending,
            "ended": list(self.ended),
            "open_turns": list(self.open_turns),
            "acked": list(self.acked),
            "recoveries": self.recoveries,
            "compaction": self.compaction,
            "through": self.through,
            "skills": self.skills,
            "turns": self.turns,
            "tool_names": self.tool_names,
            "rewound": list(self.rewound),
        }
        # ASCII: a call_id from the model may hold a lone surrogate (a JSON escape in the log).
        text = json.dumps(head, separators=(",", ":")).encode("ascii")
        body = b"".join([INDEX_MAGIC, len(text).to_bytes(8, "little"), text, *(a.tobytes() for a in arrays)])
        return body + hashlib.sha256(body).digest()

    @classmethod
    def load(cls, data: bytes) -> tuple[_Scan, int, bytes] | None:
        """(state, bytes covered, their SHA-256) from an index file; None when it is not usable."""
        try:
            whole = memoryview(data)
            body = whole[:-32]  # views, not copies: the file can be megabytes
            if body[: len(INDEX_MAGIC)] != INDEX_MAGIC or hashlib.sha256(body).digest() != whole[-32:]:
                return None
            at = len(INDEX_MAGIC)
            n = int.from_bytes(body[at : at + 8], "little")
            head = json.loads(bytes(body[at + 8 : at + 8 + n]))
            if head.get("version") != INDEX_VERSION or head.get("byteorder") != sys.byteorder:
                return None
            scan = cls()
            at += 8 + n
            for name, length in zip(("offsets", "shown", "links"), head["lengths"], strict=True):
                arr = array("Q")
                arr.frombytes(body[at : at + length * arr.itemsize])
                if len(arr) != length:
                    return None
                setattr(scan, name, arr)
                at += length * arr.itemsize
            if at != len(body) or len(scan.shown) != len(scan.links):
                return None
            if not all(isinstance(head[k], dict) for k in ("calls", "pending", "recoveries", "turns")):
                return None
            scan.calls = head["calls"]
            scan.results = dict.fromkeys(scan.calls)
            for cid in head["no_result"]:
                scan.results.pop(cid, None)
            scan.results.update(dict.fromkeys(head["orphan_results"]))
            scan.pending = head["pending"]
            scan.ended = dict.fromkeys(head["ended"])
            scan.open_turns = dict.fromkeys(head["open_turns"])
            scan.acked = dict.fromkeys(head["acked"])
            scan.recoveries = head["recoveries"]
            scan.compaction, scan.through, scan.skills = head["compaction"], head["through"], head["skills"]
            scan.turns = head["turns"]
            scan.tool_names = head["tool_names"]
            if not isinstance(scan.tool_names, list) or not all(isinstance(n, str) for n in scan.tool_names):
                return None
            scan.tool_bits = {name: i for i, name in enumerate(scan.tool_names)}
            scan.rewound = dict.fromkeys(head["rewound"])
            return scan, int(head["size"]), bytes.fromhex(head["digest"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class SessionLog:
    def __init__(self, path: Path, fd: int, folder: int) -> None:
        self.path = path
        self.id = path.name[: -len(".jsonl")]
        self.index_path = path.with_name(path.name + INDEX_SUFFIX)
        self._fd = fd
        # The sessions folder, held while the log is open: the index and a recovery copy are
        # written through it, never through a path a link may have been swapped into since.
        self._folder = folder
        self.notices: list[str] = []
        self._lock = threading.Lock()  # appends (the turn's thread) against reads (pages, replay)
        self._scan = _Scan()
        self._size = 0  # bytes of whole, checked records
        self._hash = hashlib.sha256()  # of those bytes, for the index
        self._indexed = 0  # bytes the index file on disk covers
        self._replay: list[dict[str, Any]] | None = None  # read when first asked for
        self._compaction: dict[str, Any] | None = None
        self._skills: dict[str, Any] | None = None

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, folder: int | None = None) -> SessionLog:
        """Load the log at `path`. `folder`: a descriptor of its folder opened without following a
        link (SessionStore.folder; the log keeps its own copy); without it, the folder is opened
        so from its parent."""
        try:
            if folder is None:
                folder = open_private_dir(path.parent.parent, (path.parent.name,), create=False)
            else:
                folder = os.dup(folder)
        except OSError as exc:
            raise LogError(f"cannot open {path.name}: {exc.strerror or exc}") from None
        try:
            fd = _open_regular(folder, path, os.O_RDWR | os.O_APPEND)
        except BaseException:
            os.close(folder)
            raise
        try:
            log = cls(path, fd, folder)
            log._load(os.fstat(fd).st_size)
            return log
        except BaseException:
            os.close(fd)
            os.close(folder)
            raise

    def _load(self, size: int) -> None:
        start = 0
        saved = _read_index(self._folder, self.index_path.name)
        if saved is not None:
            scan, covered, digest = saved
            if 0 < covered <= size and self._hash_prefix(covered) == digest:
                self._scan, start, self._indexed = scan, covered, covered
            else:
                self._hash = hashlib.sha256()
        cut_at = self._check_from(start, size)
        if cut_at is not None:
            try:
                self._cut_torn_tail(size, cut_at)
            except OSError as exc:  # e.g. no room for the recovery copy: refuse, one line, no traceback
                raise LogError(
                    f"{self.path.name} ends in an incomplete record that could not be repaired: "
                    f"{exc.strerror or exc}"
                ) from None
        if self._size - self._indexed >= INDEX_MIN_BYTES:
            self._write_index()

    def _hash_prefix(self, covered: int) -> bytes:
        """SHA-256 of the log's first `covered` bytes, read in chunks into one buffer."""
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        at = 0
        while at < covered:
            want = min(CHUNK, covered - at)
            if _PREADV is not None:
                n = _PREADV(self._fd, [view[:want]], at)
                part: memoryview | bytes = view[:n]
            else:
                part = os.pread(self._fd, want, at)
                n = len(part)
            if n <= 0:
                break
            self._hash.update(part)
            at += n
        return self._hash.digest() if at == covered else b""

    def _check_from(self, start: int, size: int) -> int | None:
        """Check and account for every record from byte `start` on; the offset to cut a torn tail at.

        Reads a chunk at a time and never copies one: memory stays at about a chunk."""
        scan, fd, digest = self._scan, self._fd, self._hash
        at = start  # file offset of the next unread byte
        head: list[bytes] = []  # the pieces of a line that runs past the chunks read so far
        head_at = start  # file offset of its first byte
        while at < size:
            chunk_at = at
            chunk = os.pread(fd, min(CHUNK, size - at), at)
            if not chunk:
                break
            at += len(chunk)
            pos = 0
            if head:
                nl = chunk.find(b"\n")
                if nl < 0:
                    head.append(chunk)
                    continue
                rec, problem = _checked(b"".join([*head, chunk[:nl]]), len(scan.offsets) + 1)
                if problem is not None:
                    return self._bad_line(head_at, size, problem)
                scan.add(rec, head_at)
                for piece in head:
                    digest.update(piece)
                head = []
                pos = nl + 1
                digest.update(memoryview(chunk)[:pos])
            hashed = pos
            while True:
                end = chunk.find(b"\n", pos)
                if end < 0:
                    break
                rec, problem = _checked(chunk[pos:end], len(scan.offsets) + 1)
                if problem is not None:
                    digest.update(memoryview(chunk)[hashed:pos])
                    return self._bad_line(chunk_at + pos, size, problem)
                scan.add(rec, chunk_at + pos)
                pos = end + 1
            digest.update(memoryview(chunk)[hashed:pos])
            head_at = chunk_at + pos
            if pos < len(chunk):
                head = [chunk[pos:]]
        self._size = head_at
        return head_at if head else None  # a last line without its newline: the append never finished

    def _bad_line(self, offset: int, size: int, problem: str) -> int:
        """A line that fails its check: a torn tail when only padding follows, else damage."""
        self._size = offset
        if self._only_padding(offset, size):
            return offset
        raise LogError(f"{self.path.name} line {len(self._scan.offsets) + 1}: {problem}")

    def _only_padding(self, start: int, size: int) -> bool:
        """Whether the bytes from `start` on are only NULs and newlines (what some file systems leave)."""
        at = start
        while at < size:
            chunk = os.pread(self._fd, min(CHUNK, size - at), at)
            if not chunk:
                break
            if chunk.strip(b"\x00\n"):
                return False
            at += len(chunk)
        return True

    def _cut_torn_tail(self, size: int, cut_at: int) -> None:
        data = _pread(self._fd, size, 0)  # the whole original, for the copy: only on this rare path
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        copy = self.path.with_name(f"{self.path.name}.recovery-{stamp}")
        n = 1
        while _exists_at(self._folder, copy.name):
            n += 1
            copy = self.path.with_name(f"{self.path.name}.recovery-{stamp}-{n}")
        atomic_write_at(self._folder, copy.name, data)  # fsyncs the copy and the folder
        del data
        os.ftruncate(self._fd, cut_at)
        os.fsync(self._fd)
        os.fsync(self._folder)
        self.notices.append(
            f"Session {self.id}: its last record was incomplete (an interrupted write) and was removed; "
            f"the original file is kept as {copy.name}."
        )

    def _write_index(self) -> None:
        """Save the state for the next load. A cache: any failure only means a longer next load."""
        try:
            data = self._scan.dump(self._size, self._hash.digest())
        except ValueError:
            return
        # A fresh temporary file (O_EXCL, never a name someone placed there) renamed in the held
        # folder; not fsynced: a cache, which checks itself when loaded.
        try:
            atomic_write_at(self._folder, self.index_path.name, data, sync=False)
        except OSError:
            return
        self._indexed = self._size

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                if self._size - self._indexed >= INDEX_MIN_BYTES:
                    self._write_index()
                os.close(self._fd)
                self._fd = -1
                os.close(self._folder)
                self._folder = -1

    # ---- appending -----------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        return len(self._scan.offsets) + 1

    def append(self, type_: str, turn_id: str | None = None, **fields: Any) -> dict[str, Any]:
        record: dict[str, Any] = {"seq": self.next_seq, "type": type_}
        if turn_id is not None:
            record["turn_id"] = turn_id
        record["at"] = utc_now()
        record.update(fields)
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        if type_ in REPLAYABLE and self._replay is None:
            self.replay_records()  # loaded first, so this record joins it as it always did
        append_line(self._fd, data)
        with self._lock:
            self._scan.add(record, self._size)
            self._size += len(data)
            self._hash.update(data)
            if type_ in REPLAYABLE:
                if self._replay is not None:
                    self._replay.append(record)  # its seq is past every compaction's through_seq
            elif type_ == "compaction":
                self._compaction = record
                self._replay = None  # selected again from the log when next asked for
            elif type_ == "session_skills":
                self._skills = record
            elif type_ == "rewind":
                self._replay = None  # selected again, without the rewound turns
        return record

    # ---- reading records back ------------------------------------------------------------
    def _span(self, seq: int) -> tuple[int, int]:
        offsets = self._scan.offsets
        return offsets[seq - 1], offsets[seq] if seq < len(offsets) else self._size

    def _read(self, seqs: list[int]) -> dict[int, dict[str, Any]]:
        """The records with these seqs (ascending); records close together are read in one go.
        The caller holds the lock."""
        if self._fd < 0:
            raise LogError(f"session {self.id} is closed")
        out: dict[int, dict[str, Any]] = {}
        i = 0
        while i < len(seqs):
            first_start, end = self._span(seqs[i])
            j = i + 1
            while j < len(seqs):
                start, stop = self._span(seqs[j])
                if start - end > NEAR:
                    break
                end = stop
                j += 1
            data = _pread(self._fd, end - first_start, first_start)
            for seq in seqs[i:j]:
                start, stop = self._span(seq)
                out[seq] = json.loads(data[start - first_start : stop - first_start])
            i = j
        return out

    def read_records(self, first_seq: int = 1) -> Iterator[dict[str, Any]]:
        """Every record from `first_seq` on, read from the file in chunks (tests and tools)."""
        seq = max(first_seq, 1)
        while True:
            with self._lock:
                last = min(len(self._scan.offsets), seq + 999)
                if seq > last:
                    return
                batch = self._read(list(range(seq, last + 1)))
            yield from batch.values()
            seq = last + 1

    def tool_call(self, call_id: str) -> dict[str, Any] | None:
        """The latest `tool_call` record with this call_id."""
        with self._lock:
            seq = self._scan.calls.get(call_id)
            return self._read([seq])[seq] if seq else None

    def page(
        self, before: int | None, limit: int
    ) -> tuple[list[tuple[dict[str, Any], dict[str, Any] | None]], bool]:
        """The latest `limit` records a chat panel shows with seq below `before` (None: no bound),
        oldest first, each with the tool_call a tool_result names; and whether earlier ones exist."""
        with self._lock:
            shown, links = self._scan.shown, self._scan.links
            hi = len(shown) if before is None else bisect_left(shown, before)
            lo = max(0, hi - max(limit, 0))
            seqs = shown[lo:hi].tolist()
            calls = links[lo:hi].tolist()
            records = self._read(sorted(set(seqs) | {c for c in calls if c}))
        return [(records[s], records[c] if c else None) for s, c in zip(seqs, calls, strict=True)], lo > 0

    # ---- recovery (docs/BEHAVIOUR.md, "Recovery") ----------------------------------------
    def pending_calls(self) -> list[Pending]:
        with self._lock:
            seqs = sorted(s for group in self._scan.pending.values() for s in group)
            records = self._read(seqs)
        return [
            Pending(r["call_id"], r.get("name", ""), r.get("arguments", ""), r.get("turn_id"))
            for r in (records[s] for s in seqs)
        ]

    def recover(self) -> None:
        """Mark every call without a result as unknown and close turns that never ended. Never re-runs."""
        for p in self.pending_calls():
            self.append("recovery", p.turn_id, call_id=p.call_id, name=p.name)
            self.append(
                "tool_result", p.turn_id, call_id=p.call_id, status="unknown", output=UNKNOWN_RESULT_TEXT
            )
        for tid in list(self._scan.open_turns):
            self.append("turn_end", tid, status="interrupted", reason="Mino stopped before this turn ended")

    def unacknowledged(self) -> list[dict[str, Any]]:
        """`recovery` records the user has not yet confirmed, one per call (a crash during recovery,
        after `recovery` and before the unknown result, makes the next start write a second one for
        the same call; the question counts calls)."""
        with self._lock:
            seqs = list(self._scan.recoveries.values())
            records = self._read(sorted(seqs))
        return [records[s] for s in seqs]

    # ---- replay --------------------------------------------------------------------------
    def latest_compaction(self) -> dict[str, Any] | None:
        with self._lock:
            if self._compaction is None and self._scan.compaction:
                self._compaction = self._read([self._scan.compaction])[self._scan.compaction]
            return self._compaction

    def session_skills(self) -> dict[str, Any] | None:
        with self._lock:
            if self._skills is None and self._scan.skills:
                self._skills = self._read([self._scan.skills])[self._scan.skills]
            return self._skills

    # ---- turns and rewinds (docs/BEHAVIOUR.md, "Rewind") -------------------------------------
    def turns(self) -> dict[str, tuple[int, int, bool]]:
        """turn_id → (its number in the session, seq of its user_message, whether it ran commands:
        called a tool the registry says runs them, which a rewind does not undo)."""
        from ..tools.registry import runs_commands  # the tools load only when a rewind asks

        with self._lock:
            commands = sum(1 << i for i, name in enumerate(self._scan.tool_names) if runs_commands(name))
            return {
                tid: (n, seq, bool(tools & commands)) for tid, (n, seq, tools) in self._scan.turns.items()
            }

    def rewound(self) -> set[str]:
        """turn_ids taken back by a `rewind` record (a copy)."""
        with self._lock:
            return set(self._scan.rewound)

    def compacted_through(self) -> int:
        """The seq the latest compaction summarised up to (0: none)."""
        with self._lock:
            return self._scan.through

    def records(self, seqs: list[int]) -> dict[int, dict[str, Any]]:
        """The records with these seqs."""
        with self._lock:
            return self._read(sorted(set(seqs)))

    def call_ids(self) -> set[str]:
        """Every call_id of a `tool_call` record (a copy)."""
        with self._lock:
            return set(self._scan.calls)

    def replay_records(self) -> list[dict[str, Any]]:
        """Messages and call/result records after the latest compaction (the rest is bookkeeping)."""
        with self._lock:
            if self._replay is None:
                first = max(self._scan.through, 0) + 1
                if first > len(self._scan.offsets):
                    self._replay = []
                else:
                    start = self._scan.offsets[first - 1]
                    data = _pread(self._fd, self._size - start, start) if self._fd >= 0 else b""
                    lines = data.split(b"\n")[:-1]  # a record never holds a raw newline
                    gone = self._scan.rewound
                    self._replay = [
                        r
                        for r in map(json.loads, lines)
                        if r["type"] in REPLAYABLE and (not gone or r.get("turn_id") not in gone)
                    ]
            return list(self._replay)


def _exists_at(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _read_index(folder: int, name: str) -> tuple[_Scan, int, bytes] | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = _pread(fd, st.st_size, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _Scan.load(data)


def replay_items(records: list[dict[str, Any]], blobs: BlobsFactory | None = None) -> list[dict[str, Any]]:
    """Responses-API input items for replayable records. Every call gets exactly one output, right after it.
    `blobs` gives the session's kept images (core/images.py); without it an image is sent as its name."""
    results = {r["call_id"]: r for r in records if r["type"] == "tool_result"}
    items: list[dict[str, Any]] = []
    for r in records:
        t = r["type"]
        if t == "user_message":
            items.append(user_item(r["text"], r.get("context"), r.get("images"), blobs))
        elif t == "assistant_message":
            text = r["text"]
            if r.get("incomplete"):  # the model sees what the person saw: the text, and that it was cut
                text = "\n\n".join(t for t in (text, cut_short_note(r.get("reason"))) if t)
            items.append(assistant_item(text))
        elif t == "interrupted":
            # An assistant message, so the next user message stays its own message (strict chat
            # templates merge or refuse two of one role in a row); after a partial answer the wire
            # joins the two into one message, the note as its last paragraph.
            items.append(assistant_item(INTERRUPTED_NOTE))
        elif t == "reasoning":
            items.append(r["item"])
        elif t == "tool_call":
            result = results.get(r["call_id"])
            if result is None:
                continue  # a call without a result is never sent (recovery gives every call one)
            items.append(call_item(r["call_id"], r["name"], r["arguments"]))
            items.append(output_item(r["call_id"], result_text(result["status"], result["output"])))
    return items


# Text-only messages carry string content (valid Responses input): chat-completions bridges pass it
# through, where a list of parts was dropped or refused (llama-cpp-python behind LiteLLM).
def user_item(
    text: str,
    context: list[dict[str, Any]] | None = None,
    images: list[dict[str, Any]] | None = None,
    blobs: BlobsFactory | None = None,
) -> dict[str, Any]:
    """A user message; with context items (a user_message record's `context`), the typed text and
    one `input_text` part per item: context needs parts, so a message with any is never a string.
    Its images (the record's `images`) follow as `input_image` parts read from `blobs()`, or as
    their names without `blobs` (a summary request)."""
    if not context and not images:
        return {"type": "message", "role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text or not images else []
    if context:
        from ..context import context_part, from_record

        parts += [{"type": "input_text", "text": context_part(from_record(rec))} for rec in context]
    if images:
        if blobs is None:
            from ..images import placeholder

            parts += [{"type": "input_text", "text": placeholder(rec)} for rec in images]
        else:
            store = blobs()
            parts += [store.part(rec) for rec in images]
    if len(parts) == 1 and parts[0]["type"] == "input_text":  # text only after all: a string
        return {"type": "message", "role": "user", "content": parts[0]["text"]}
    return {"type": "message", "role": "user", "content": parts}


def assistant_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def cut_short_note(reason: object) -> str:
    """What the model is told after an answer the service cut short (e.g. at max_output_tokens)."""
    why = reason if isinstance(reason, str) and reason else "incomplete"
    return f"[This answer was cut short by the model service ({why}).]"


INTERRUPTED_NOTE = "[The person interrupted this turn here. Do not carry it on unless they ask you to.]"


def call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output_item(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def result_text(status: str, output: str) -> str:
    """What the model receives for a result: the status first, so a denial is never mistaken for output."""
    return f"[status: {status}]\n{output}" if output else f"[status: {status}]"


def _checked(line: bytes, expected_seq: int) -> tuple[Any, str | None]:
    """(record, problem) for one line without its newline; problem None when the record is sound."""
    try:
        rec = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None, "not valid JSON"
    return rec, _record_problem(rec, expected_seq)


def _record_problem(rec: Any, expected_seq: int) -> str | None:
    """What is wrong with one parsed record, or None. A change here changes what a load accepts:
    bump INDEX_VERSION with it, so no index vouches for bytes under the old rules."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    seq = rec.get("seq")
    if type(seq) is not int:
        return "missing 'seq'"
    if seq != expected_seq:
        return f"seq {seq} where {expected_seq} was expected"
    t = rec.get("type")
    if t not in RECORD_TYPES:
        return f"unknown record type {t!r}"
    # Recovery puts turn_id and call_ids in sets: a list there would crash start-up, so it is damage.
    if "turn_id" in rec and not isinstance(rec["turn_id"], str):
        return "turn_id must be a string"
    if t == "recovery_ack" and not (
        isinstance(rec.get("call_ids"), list) and all(isinstance(c, str) for c in rec["call_ids"])
    ):
        return "recovery_ack needs a list of call_id strings"
    if t in ("user_message", "assistant_message") and not isinstance(rec.get("text"), str):
        return f"{t} without text"
    if t == "user_message" and "context" in rec:  # replayed as parts: checked like the rest
        from ..context import record_problem

        problem = record_problem(rec["context"])
        if problem is not None:
            return problem
    if t == "user_message" and "images" in rec:
        from ..images import record_problem as image_problem

        problem = image_problem(rec["images"])
        if problem is not None:
            return problem
    if t == "tool_call" and not (
        isinstance(rec.get("call_id"), str)
        and isinstance(rec.get("name"), str)
        and isinstance(rec.get("arguments"), str)
    ):
        return "tool_call needs string call_id, name and arguments"
    if t == "tool_result" and not (
        isinstance(rec.get("call_id"), str)
        and isinstance(rec.get("status"), str)
        and isinstance(rec.get("output"), str)
    ):
        return "tool_result needs string call_id, status and output"
    if t == "compaction" and not (
        isinstance(rec.get("summary"), str) and type(rec.get("through_seq")) is int
    ):
        return "compaction needs summary and through_seq"
    if t == "reasoning" and not (
        isinstance(rec.get("item"), dict) and rec["item"].get("type") == "reasoning"
    ):
        return "reasoning needs an item of type reasoning"
    if t == "recovery" and not isinstance(rec.get("call_id"), str):
        return "recovery needs call_id"
    # The rewound turns leave every later request, so they are checked like recovery's call_ids.
    if t == "rewind" and not (
        isinstance(rec.get("turns"), list) and all(isinstance(x, str) for x in rec["turns"])
    ):
        return "rewind needs a list of turn_id strings"
    return None
