"""/rewind: take back what turns changed (docs/BEHAVIOUR.md, "Rewind").

The store (checkpoints.py) knows each file's state before Mino's writes and what Mino last put
there; the log knows the turns (their numbers, requests, whether they ran bash) and which were
rewound. A rewind to before turn N:
1. plans, per file written in turn N or later: `restore` (to its state before the first such write),
   `delete` (it did not exist then) or `keep` (its bytes are neither what Mino last wrote nor the
   target: someone else changed it, and a rewind never overwrites work it did not make);
2. asks, through the UI port, with the diffs;
3. appends a `rewind` record to the log (the journal: from here on later requests leave those
   turns out), then per file records in the store what it will put there and replaces the file
   atomically, in the folder opened by the race-safe walk (paths.open_parent), after checking the
   bytes are still the ones the question showed. Only the path the store recorded is written: one
   that now holds a link in any component, or a folder (device, …) where the file was, is kept and
   named (words.PATH_CHANGED), in the plan and again just before the write.
A crash anywhere leaves each file old or restored; running `/rewind N` again finds the restored
ones already at their target and finishes the rest.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING

from .cancel import CancelToken
from .checkpoints import CheckpointStore, same
from .contract import CheckpointFile, CheckpointTurn, Confirmation, FileDiff, KeptFile, RewindAction
from .display import escape_value
from .errors import CommandError, ToolFailure
from .tools.paths import PROTECTED_NAMES, Target, final_name, locate, open_parent
from .tools.project_files import sha256
from .values import Mutable, mutable
from .words import CHANGED_SINCE_MINO, PATH_CHANGED

if TYPE_CHECKING:
    from .conversation import Conversation

TEXT_MAX = 80


@mutable
class FilePlan(Mutable):
    path: str
    action: RewindAction
    target: str | None  # sha256 to put back; None: the file is deleted
    mode: int | None
    current: str | None  # sha256 of the bytes there now (None: absent)
    current_bytes: bytes | None
    done: bool  # already at the target (an interrupted rewind got this far)
    reason: str | None = None


@mutable
class RewindPlan(Mutable):
    n: int
    turns: list[str]  # every turn numbered n or later
    bash: bool
    files: list[FilePlan]

    @property
    def changing(self) -> list[FilePlan]:
        return [f for f in self.files if f.action != "keep"]


def _sha(data: bytes | None) -> str | None:
    return None if data is None else sha256(data)


def _recorded(conv: Conversation, rel: str) -> Target:
    """The path the store recorded (the real path Mino wrote, relative to the working directory),
    only while it still is a real path: no link in any component and no folder, device or the like
    where the file was. Otherwise ToolFailure(PATH_CHANGED): a rewind never writes through a link,
    whose target (.git/config, say) the person was never asked about. The write then opens the
    same components one at a time without following a link (paths.open_parent), so a link swapped
    in after this check stops the write instead of redirecting it."""
    target = locate(conv.workdir, conv.config.home, rel, writing=True)
    if "/".join(target.parts) != rel:
        raise ToolFailure(PATH_CHANGED)
    try:
        st = os.lstat(target.path)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise ToolFailure(f"cannot be looked at: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailure(PATH_CHANGED)
    return target


def _protected(rel: str) -> str | None:
    """The protected folder (.git, .mino, .vscode) a recorded path lies in, named up to it."""
    parts = rel.split("/")
    at = next((i for i, p in enumerate(parts) if p.casefold() in PROTECTED_NAMES), None)
    return None if at is None else "/".join(parts[: at + 1])


def _read(conv: Conversation, rel: str) -> bytes | None:
    found = conv.files.read(_recorded(conv, rel))
    return None if found is None else found.data


def _first_line(text: str) -> str:
    line = text.split("\n", 1)[0]
    value = escape_value(line)
    return value if len(value) <= TEXT_MAX else value[: TEXT_MAX - 1] + "…"


def _store(conv: Conversation) -> CheckpointStore:
    store = conv.checkpoints
    if store is None:
        raise CommandError("No session is selected, so there is nothing to rewind.")
    store.load()
    return store


def _numbered(conv: Conversation) -> dict[str, tuple[int, int, bool]]:
    """The session's turns after the latest compaction (a summary cannot be taken back)."""
    assert conv.log is not None
    through = conv.log.compacted_through()
    return {tid: v for tid, v in conv.log.turns().items() if v[1] > through}


class _Seen:
    """What one call of /rewind or mino/checkpoints learnt of the files, shared by the plans it
    makes for each turn: each file is read and hashed once, and whether its bytes are Mino's (which
    does not depend on the turn) is decided once."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes | None, str | None]] = {}
        self.minos: dict[str, bool] = {}

    def file(self, conv: Conversation, path: str) -> tuple[bytes | None, str | None]:
        if path not in self.files:
            data = _read(conv, path)  # ToolFailure: not kept, the next plan asks again
            self.files[path] = (data, _sha(data))
        return self.files[path]

    def mino(self, path: str, current: bytes | None, sha: str | None, mino: set[str | None]) -> bool:
        if path not in self.minos:
            self.minos[path] = any(same(d, current, sha) for d in mino)
        return self.minos[path]


def plan(conv: Conversation, n: int, seen: _Seen | None = None) -> RewindPlan:
    store = _store(conv)
    numbered = _numbered(conv)
    turns = [tid for tid, (k, _, _) in numbered.items() if k >= n]
    written = store.turns()
    if not any(numbered[t][0] == n for t in turns if t in written):
        raise CommandError(
            f"Turn {n} changed no files that can be rewound; /rewind lists the turns that did."
        )
    seen = _Seen() if seen is None else seen
    files = []
    for path, target, mode, mino in store.targets(set(turns)):
        try:
            current, sha = seen.file(conv, path)
        except ToolFailure as exc:
            files.append(FilePlan(path, "keep", target, mode, None, None, False, str(exc)))
            continue
        action: RewindAction = "delete" if target is None else "restore"
        if sha == target:
            files.append(FilePlan(path, action, target, mode, sha, current, True))
        elif seen.mino(path, current, sha, mino):
            files.append(FilePlan(path, action, target, mode, sha, current, False))
        else:
            files.append(FilePlan(path, "keep", target, mode, sha, current, False, CHANGED_SINCE_MINO))
    bash = any(numbered[t][2] for t in turns)
    return RewindPlan(n, turns, bash, files)


def checkpoint_turns(conv: Conversation) -> list[CheckpointTurn]:
    """The turns that changed files and were not rewound, newest first, each with its plan."""
    if conv.log is None:
        return []
    store = _store(conv)
    written = store.turns()
    numbered = _numbered(conv)
    gone = conv.log.rewound()
    mine = sorted(((numbered[t][0], t) for t in written if t in numbered and t not in gone), reverse=True)
    records = conv.log.records([numbered[t][1] for _, t in mine])
    seen = _Seen()
    out = []
    for n, tid in mine:
        rec = records[numbered[tid][1]]
        p = plan(conv, n, seen)
        out.append(
            CheckpointTurn(
                n=n,
                turnId=tid,
                at=rec.get("at", ""),
                text=_first_line(rec.get("text", "")),
                bash=numbered[tid][2],
                files=[CheckpointFile(path=f.path, action=f.action, reason=f.reason) for f in p.files],
            )
        )
    return out


def turn_number(conv: Conversation, turn_id: str) -> int:
    numbered = _numbered(conv) if conv.log is not None else {}
    if turn_id not in numbered:
        raise CommandError(f"No turn {turn_id!r} in this session that can be rewound.")
    return numbered[turn_id][0]


def diffs(conv: Conversation, p: RewindPlan) -> list[FileDiff]:
    """Each changing file, as it is now (before) and as the rewind leaves it (after; "" when deleted)."""
    from .tools.files import file_diff

    store = _store(conv)
    out = []
    for f in p.changing:
        after = "" if f.target is None else store.blob(f.target)
        try:
            text = after if isinstance(after, str) else after.decode("utf-8")
        except UnicodeDecodeError:
            continue
        d = file_diff(conv.workdir / f.path, f.current_bytes, text)
        if d is not None:
            out.append(d)
    return out


def run(conv: Conversation, p: RewindPlan) -> tuple[list[str], list[KeptFile]]:
    """Carry out a confirmed plan: the journal record first, then each file atomically."""
    assert conv.log is not None
    store = _store(conv)
    conv.log.append("rewind", n=p.n, turns=p.turns, files=[f.path for f in p.files])
    rewound, kept = (
        [],
        [KeptFile(path=f.path, reason=f.reason or CHANGED_SINCE_MINO) for f in p.files if f.action == "keep"],
    )
    for f in p.changing:
        if f.done:
            rewound.append(f.path)
            continue
        try:
            _restore(conv, store, f)
        except _Changed as exc:
            kept.append(KeptFile(path=f.path, reason=str(exc)))
            continue
        rewound.append(f.path)
    return rewound, kept


class _Changed(Exception):
    pass


def _restore(conv: Conversation, store: CheckpointStore, f: FilePlan) -> None:
    """Put one file back through the project-files port (as write_file writes: confined, no link
    followed, atomic, and only while its bytes are still the ones the question showed), or unlink
    it; the store records what goes there first."""
    from .tools.project_files import CHANGED_AFTER_APPROVAL

    try:
        target = _recorded(conv, f.path)
        if f.target is None:
            _delete(store, target, f)
            return
        data = store.blob(f.target)
        conv.files.write(target, data, f.current, lambda found: store.restoring(f.path, f.target))
    except ToolFailure as exc:
        raise _Changed(CHANGED_SINCE_MINO if str(exc) == CHANGED_AFTER_APPROVAL else str(exc)) from None
    except OSError as exc:  # e.g. a full disk: this file stays as it was, and says why
        raise _Changed(f"could not be restored: {exc.strerror or exc}") from None


def _delete(store: CheckpointStore, target: Target, f: FilePlan) -> None:
    """A file Mino created: its name is unlinked in the folder opened by the race-safe walk (the
    port has no delete; an editor's buffer of it, if any, says the file is gone)."""
    from .tools.project_files import read_at

    parent = open_parent(target)
    if parent is None:
        return
    try:
        found = read_at(parent, target)
        if found is None:
            return
        if _sha(found.data) != f.current:  # changed since the question
            raise _Changed(CHANGED_SINCE_MINO)
        store.restoring(f.path, None)  # fsynced before the file goes
        try:
            os.unlink(final_name(target), dir_fd=parent)  # unlinks the name, never follows it
        except FileNotFoundError:
            pass
        os.fsync(parent)
    finally:
        os.close(parent)


def run_with_question(
    conv: Conversation,
    n: int,
    out: Callable[[str], None],
    ask: Callable[[str, list[FileDiff]], bool],
) -> tuple[list[str], list[KeptFile]] | None:
    """/rewind N: the list, the question, and on yes the rewind; None when not confirmed."""
    from .words import BASH_NOT_UNDONE, NOT_REWOUND, rewind_file_line, rewind_question, rewound_line

    p = plan(conv, n)
    lines = [rewind_file_line(f.action, f.path, f.reason, _protected(f.path)) for f in p.files]
    if p.bash:
        lines.append(BASH_NOT_UNDONE)
    question = rewind_question(len(p.changing), n)
    if not ask("\n".join([*lines, question]), diffs(conv, p)):
        out(NOT_REWOUND)
        return None
    result = run(conv, p)
    out(rewound_line(len(result[0]), n))
    for k in result[1]:
        if k.path not in {f.path for f in p.files if f.action == "keep"}:
            out(rewind_file_line("keep", k.path, k.reason))
    return result


def rewind(
    conv: Conversation, n: int, cancel: CancelToken | None, out: Callable[[str], None] = lambda line: None
) -> tuple[list[str], list[KeptFile]] | None:
    """/rewind N (every front end): asks through the conversation's UI, "rewind" kind."""
    if conv.log is None:
        raise CommandError("No session is selected, so there is nothing to rewind.")
    sid = conv.log.id
    cancel = cancel or CancelToken()

    def ask(message: str, shown: list[FileDiff]) -> bool:
        try:
            question = Confirmation(
                kind="rewind", session_id=sid, message=message, diffs=shown, asks_last=True
            )
            return conv.ui.confirm(question, cancel) and not cancel.cancelled
        except Exception:  # a front end that fails to ask has not said yes
            return False

    conv.check_idle()
    conv.busy = True  # no turn starts while files are put back
    try:
        return run_with_question(conv, n, out, ask)
    finally:
        conv.busy = False


def rewind_turn(
    conv: Conversation, turn_id: str, cancel: CancelToken | None
) -> tuple[list[str], list[KeptFile]] | None:
    return rewind(conv, turn_number(conv, turn_id), cancel)
