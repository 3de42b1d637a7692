"""The crash harness: real turns in a real `mino`, SIGKILLed at random points, checked after every kill.

One run is a series of cycles over one MINO_HOME and one working directory. Each cycle starts `mino
--mode bypass` in a pty (through faulthook, so a kill can also land exactly on a durable OS call),
answers the recovery question with yes, checks what start-up did, then drives random steps — turns
with bash calls, memory saves and file writes (new files, and files of the session's own that later
turns overwrite), /new, /clear, /resume, /compact, /rewind N — against a fresh scripted
model until the process is killed: by a timer at a random moment, by the hook at the N-th durable
operation (before it, after it, or with a torn write), or at the prompt when the steps run out.

What the harness knows (the ledger) is compared with the disk after every kill and at every idle
prompt: every session loads (a torn tail only where a crash could leave one), seq is contiguous, no
bash call ran twice (each appends its unique token to a witness file in the working directory),
every call without a result is marked unknown and was asked about, no memory or project file is
half-written (each is absent or exactly one version the model sent), the selection is one of the
sessions and is the one last shown, and every turn Mino reported done is still on disk. A rewind
Mino reported done left every file it named exactly as it was before that turn (or deleted); a
rewind the kill interrupted is run again at the next start (`/rewind N`) and must finish the job.

All randomness comes from one seed, so a failure is replayed by running the same seed again.
"""

from __future__ import annotations

import json
import re
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faulthook
import pexpect
from harness import HarnessRun, NotOnDisk, finished_turn, sigkill, witness_lines, witness_problems
from invariants import (
    log_consistency,
    memory_problems,
    pair_calls,
    read_log,
    read_selection,
    session_files,
    store_problems,
)

from mino_server.core.memory import render_memory
from mino_server.testing.scripted_model import ScriptedModel

SID = r"Session: ([0-9a-f]{32})"
PROMPT = "You> "
MEMORY_NAMES = ("mem-a", "mem-b", "mem-c")
EXPECT_TIMEOUT_S = 20.0


class Killed(Exception):
    """The process died (as planned): the cycle ends."""


@dataclass
class Ledger:
    """What the harness asked for and what Mino reported done."""

    tokens: set[str] = field(default_factory=set)  # every bash token a model reply asked for
    writes: dict[str, bytes] = field(default_factory=dict)  # write_file path -> the only content sent
    mem_versions: dict[str, list[str]] = field(default_factory=dict)  # name -> file texts, in order
    mem_floor: dict[str, int] = field(default_factory=dict)  # name -> oldest version still allowed
    # session -> its records as seen at an idle prompt: they must stay on disk (until a /clear)
    on_disk: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    selection: str | None = None  # the session last shown with "Session: <id>"
    may_select: set[str] = field(default_factory=set)  # a /resume target a kill may leave selected
    new_after: set[str] | None = None  # during /new: the sessions before it (any other may be selected)
    # files a session's turns overwrite (each session has its own): path -> every content sent
    versions: dict[str, set[bytes]] = field(default_factory=dict)
    # turn text -> the out/ folder just before it was sent (path -> bytes)
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)
    # a /rewind N answered yes whose "Rewound" line was not seen: (session, N, path -> bytes or None)
    pending_rewind: tuple[str, str, dict[str, bytes | None]] | None = None


@dataclass
class Before:
    """The selected session as found on disk before a start: what start-up must repair and ask about."""

    sid: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    torn: bool = False
    pending: list[dict[str, Any]] = field(default_factory=list)
    unacked: set[str] = field(default_factory=set)


@dataclass
class Report:
    kills: int = 0
    cycles: int = 0
    kill_modes: Counter[str] = field(default_factory=Counter)
    crash_ops: Counter[str] = field(default_factory=Counter)  # kinds of durable operations killed at
    steps: Counter[str] = field(default_factory=Counter)
    asked: int = 0  # recovery questions answered
    unknown_marked: int = 0  # calls marked unknown at start-up
    torn_repaired: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.kills} kills in {self.cycles} cycles ({dict(self.kill_modes)}), crash ops "
            f"{dict(self.crash_ops)}, steps {dict(self.steps)}, {self.asked} recovery questions, "
            f"{self.unknown_marked} calls marked unknown, {self.torn_repaired} torn tails repaired, "
            f"{len(self.problems)} problems, {self.seconds:.1f} s"
        )


def unacked_recoveries(records: list[dict[str, Any]]) -> set[str]:
    """Call IDs of recovery records no later recovery_ack covers (positional, like pair_calls)."""
    outstanding: list[str] = []
    for r in records:
        if r["type"] == "recovery":
            outstanding.append(r.get("call_id", ""))
        elif r["type"] == "recovery_ack":
            acked = set(r.get("call_ids", []))
            outstanding = [c for c in outstanding if c not in acked]
    return set(outstanding)


class CrashRun(HarnessRun):
    report: Report

    def __init__(self, root: Path, seed: int) -> None:
        super().__init__(root, seed, Report())
        self.workdir = root / "work"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.witness = self.workdir / "witness.txt"
        self.ledger = Ledger()
        self.op_counts: list[int] = []  # durable operations of cycles that ran all their steps

    # ---- the run -------------------------------------------------------------------------
    def cycles(self, kills: int) -> None:
        while self.report.kills < kills:
            self.cycle(kill=True)
        self.cycle(kill=False)  # a last clean start and exit: everything must be whole

    def env(self, model: ScriptedModel, ops_log: Path) -> dict[str, str]:
        return faulthook.environ(self.mino_env(model), PYTHONUNBUFFERED="1", MINO_TEST_OPS_LOG=str(ops_log))

    def cycle(self, kill: bool) -> None:
        self.cycle_no += 1
        self.report.cycles += 1
        before = self.offline_check()
        ops_log = self.root / f"ops-{self.cycle_no}.log"
        model = ScriptedModel().start()
        env = self.env(model, ops_log)
        mode = "clean"
        timer: threading.Timer | None = None
        if kill:
            # Every tenth cycle kills while a bash command runs (its result can never be saved), so
            # even a short run proves the unknown-result question; the rest kill at random.
            mode = "in-call" if self.cycle_no % 10 == 2 else self.rng.choice(["timer", "op", "op"])
            if mode == "op":
                n = self.rng.randint(1, self.ops_hint())
                how = self.rng.choice(["before", "after", "torn"])
                env["MINO_TEST_CRASH_AT"] = f"{n}:{how}"
        child = pexpect.spawn(
            sys.executable,
            ["-m", "faulthook", "--mode", "bypass"],
            env=env,
            cwd=str(self.workdir),
            encoding="utf-8",
            timeout=EXPECT_TIMEOUT_S,
            dimensions=(50, 200),
        )
        if mode == "timer":
            # A cycle takes about a second; later kills would mostly land at the idle prompt.
            timer = threading.Timer(self.rng.uniform(0.0, 1.2), sigkill, (child.pid,))
            timer.start()
        try:
            self.start_up(child, before)
            pending = self.ledger.pending_rewind
            if pending is not None and pending[0] == self.ledger.selection:
                self.report.steps["rewind:finished"] += 1
                self.rewind(child, pending[1], pending[2])  # the next /rewind N finishes the job
            if mode == "in-call":
                self.kill_in_call(child, model)
            for _ in range(self.rng.randint(2, 7)):
                self.step(child, model)
            if kill:
                mode += "->idle"  # the planned kill did not come: kill it at the prompt instead
                sigkill(child.pid)
                child.expect(pexpect.EOF)
            else:
                child.sendeof()
                child.expect(pexpect.EOF)
        except (Killed, pexpect.EOF, OSError):
            pass
        except pexpect.TIMEOUT:
            self.problem(f"Mino hung (no expected output in {EXPECT_TIMEOUT_S:g} s): {child.before[-300:]!r}")
            sigkill(child.pid)
        finally:
            if timer is not None:
                timer.cancel()
            child.close(force=True)
            model.stop()
            self.requests.extend(model.requests)
            for e in model.errors:
                if not e.startswith("unexpected request"):  # a kill can leave scripted replies unused
                    self.problem(f"scripted model: {e}")
        if kill:
            if child.signalstatus == signal.SIGKILL:
                self.report.kills += 1
                self.report.kill_modes[mode] += 1
            else:
                self.problem(f"Mino ended by itself (exit {child.exitstatus}) instead of being killed")
        elif child.exitstatus != 0:
            self.problem(f"the clean run exited with {child.exitstatus}")
        self.learn_ops(ops_log, env.get("MINO_TEST_CRASH_AT"), complete=mode.endswith("idle") or not kill)
        if not kill:
            self.offline_check()
            for path in session_files(self.home):
                for p in log_consistency(read_log(path)):
                    self.problem(f"after a clean exit, {path.name}: {p}")

    def learn_ops(self, ops_log: Path, crash_at: str | None, complete: bool) -> None:
        try:
            lines = ops_log.read_text().splitlines()
        except FileNotFoundError:
            lines = []
        ops_log.unlink(missing_ok=True)
        if crash_at and lines and lines[-1].split()[0] == crash_at.split(":")[0]:
            kind, how = lines[-1].split()[1], crash_at.split(":")[1]
            how = "after" if how == "torn" and kind != "write" else how  # only a write can be torn
            self.report.crash_ops[f"{kind}/{how}"] += 1
        elif complete:
            self.op_counts.append(len(lines))

    def ops_hint(self) -> int:
        """About as many durable operations as a whole cycle makes, so op kills spread over all of it."""
        recent = sorted(self.op_counts[-15:])
        return recent[len(recent) // 2] if recent else 40

    # ---- start-up ------------------------------------------------------------------------
    def start_up(self, child: pexpect.spawn, before: Before) -> None:
        seen = ""
        asked = False
        while True:
            i = child.expect(
                [r"\[y/N\] ", PROMPT, r"Cannot restore the active session: [^\r\n]*", r"mino: [^\r\n]*"]
            )
            seen += child.before + (child.after if isinstance(child.after, str) else "")
            if i == 0:
                asked = True
                child.sendline("y")
            elif i == 1:
                break
            else:
                self.problem(f"start-up failed: {child.after.strip()}")
                raise Killed()
        ids = re.findall(SID, seen)
        if not ids:
            self.problem(f"start-up showed no session: {seen[-300:]!r}")
            raise Killed()
        sid = ids[-1]
        self.ledger.selection, self.ledger.may_select, self.ledger.new_after = sid, set(), None
        if "were not loaded" in seen:
            self.problem(f"start-up skipped memory files: {seen!r}")
        self.check_started(sid, before, asked, seen)

    def check_started(self, sid: str, before: Before, asked: bool, seen: str) -> None:
        """Mino is at its prompt after a start: the selected log is whole, recovered and acknowledged."""
        if before.sid is not None and sid != before.sid:
            self.problem(f"start-up selected {sid}, but the selection on disk was {before.sid}")
            return
        to_ask = {c["call_id"] for c in before.pending} | before.unacked
        if asked != bool(to_ask):
            self.problem(
                f"recovery question {'asked' if asked else 'not asked'} with {len(before.pending)} pending "
                f"call(s) and {len(before.unacked)} unacknowledged recovery record(s)"
            )
        count = re.search(r"has (\d+) tool call\(s\) whose result was never recorded", seen)
        if asked and (count is None or int(count.group(1)) != len(to_ask)):
            self.problem(f"the recovery question counts {count and count.group(1)} calls, not {len(to_ask)}")
        self.report.asked += asked
        if before.torn:
            if "its last record was incomplete" not in seen:
                self.problem("a torn tail was repaired without telling the user")
            if not list((self.home / "sessions").glob(f"{sid}.jsonl.recovery-*")):
                self.problem("a torn tail was cut without a recovery copy")
            self.report.torn_repaired += 1
        view = read_log(self.home / "sessions" / f"{sid}.jsonl")
        if view.problem or view.torn:
            self.problem(f"after start-up the selected log is damaged: {view.problem or 'torn'}")
            return
        if view.records[: len(before.records)] != before.records:
            self.problem("start-up changed or dropped records that were on disk")
        results, pending = pair_calls(view.records)
        if pending:
            self.problem(f"after start-up {len(pending)} call(s) still have no result")
        for call in before.pending:
            result = results.get(call["seq"])
            if result is None or result.get("status") != "unknown":
                self.problem(f"call {call['call_id']} had no result and was not marked unknown")
            else:
                self.report.unknown_marked += 1
        if unacked_recoveries(view.records):
            self.problem("after start-up a recovery record is still unacknowledged")
        self.ledger.on_disk[sid] = view.records
        if read_selection(self.home)[0] != sid:
            self.problem(f"start-up showed {sid} but active-session.json says otherwise")

    # ---- steps ---------------------------------------------------------------------------
    def step(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        kind = self.rng.choices(
            ["turn", "new", "clear", "resume", "compact", "rewind"], weights=[12, 2, 2, 2, 1, 3]
        )[0]
        self.report.steps[kind] += 1
        getattr(self, f"step_{kind}")(child, model)

    def expect(self, child: pexpect.spawn, pattern: str) -> None:
        """Wait for exact text; a failed turn is a problem (no faults are injected in this harness)."""
        i = child.expect([re.escape(pattern), r"Error: [^\r\n]*"])
        if i == 1:
            self.problem(f"a turn failed: {child.after.strip()}")
            raise Killed()

    def new_call(self) -> str:
        self.call_no += 1
        return f"c{self.cycle_no}k{self.call_no}"

    def tool_call(self, call_id: str) -> dict[str, Any]:
        kind = self.rng.choices(["bash", "memory_save", "write_file", "overwrite"], weights=[6, 2, 2, 3])[0]
        if kind == "bash":
            self.ledger.tokens.add(call_id)
            command = self.rng.choice(["{}", "sleep 0.1; {}", "{}; sleep 0.1"]).format(
                f"echo {call_id} >> witness.txt"
            )
            args: dict[str, Any] = {"command": command}
        elif kind == "memory_save":
            name = self.rng.choice(MEMORY_NAMES)
            details = "" if self.rng.random() < 0.5 else f"details of {call_id}\n" * self.rng.randint(1, 400)
            type_ = self.rng.choice(["user", "project"])
            summary = f"fact {call_id}"
            mode = "overwrite" if (self.home / "memory" / f"{name}.md").exists() else "create"
            args = {"name": name, "type": type_, "summary": summary, "mode": mode}
            if details:
                args["details"] = details
            self.ledger.mem_versions.setdefault(name, []).append(render_memory(name, type_, summary, details))
        elif kind == "overwrite":  # a file of this session's that later turns change and /rewind puts back
            kind = "write_file"
            path = f"out/s{(self.ledger.selection or '')[:8]}-{self.rng.randint(0, 1)}.txt"
            content = f"{call_id} " * self.rng.randint(1, 3000)
            self.ledger.versions.setdefault(path, set()).add(content.encode())
            mode = "overwrite" if (self.workdir / path).exists() else "create"
            args = {"path": path, "content": content, "mode": mode}
        else:
            path = f"out/{call_id}.txt"
            content = f"{call_id} " * self.rng.randint(1, 3000)
            self.ledger.writes[path] = content.encode()
            args = {"path": path, "content": content, "mode": "create"}
        return {"name": kind, "arguments": args, "call_id": call_id}

    def snapshot(self) -> dict[str, bytes]:
        out = self.workdir / "out"
        if not out.is_dir():
            return {}
        return {
            f"out/{p.name}": p.read_bytes()
            for p in out.iterdir()
            if p.is_file() and not p.name.startswith(".")
        }

    def step_turn(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        sid = self.ledger.selection
        assert sid is not None
        token = self.new_call()
        replies: list[dict[str, Any]] = []
        for _ in range(self.rng.choice([0, 1, 1, 2])):
            replies.append(
                {"calls": [self.tool_call(self.new_call()) for _ in range(self.rng.randint(1, 2))]}
            )
        final: dict[str, Any] = {"text": f"done {token} with a few more words to stream"}
        if self.rng.random() < 0.3:
            final["delay"] = 0.02
        model.add(*replies, final)
        text = f"turn {token}"
        self.ledger.snapshots[text] = self.snapshot()
        child.sendline(text)
        self.expect(child, f"done {token} with a few more words to stream")
        child.expect_exact(PROMPT)
        self.check_idle(sid, text)

    def kill_in_call(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        """A turn whose bash call is still running when Mino is killed."""
        call_id = self.new_call()
        self.ledger.tokens.add(call_id)
        command = f"echo {call_id} >> witness.txt; sleep 10"
        model.add({"calls": [{"name": "bash", "arguments": {"command": command}, "call_id": call_id}]})
        child.sendline(f"turn {call_id}")
        deadline = time.monotonic() + EXPECT_TIMEOUT_S
        while call_id not in witness_lines(self.witness):
            if time.monotonic() > deadline:
                self.problem("the slow bash call never started")
                break
            time.sleep(0.01)
        sigkill(child.pid)
        raise Killed()

    def step_new(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        known = {p.name[:32] for p in session_files(self.home)}
        self.ledger.new_after = known
        child.sendline("/new")
        child.expect(SID)
        sid = child.match.group(1)
        child.expect_exact(PROMPT)
        if sid in known:
            self.problem(f"/new chose an existing session {sid}")
        self.ledger.selection, self.ledger.new_after = sid, None
        self.ledger.on_disk[sid] = []
        if read_selection(self.home)[0] != sid:
            self.problem(f"/new showed {sid} before saving the selection")

    def step_clear(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        sid = self.ledger.selection
        assert sid is not None
        self.ledger.on_disk[sid] = []  # from here on the history may be gone: that is the point
        child.sendline("/clear")
        child.expect_exact("Type the complete session ID to clear it: ")
        child.sendline(sid)
        child.expect_exact(f"Cleared session: {sid}")
        child.expect_exact(PROMPT)
        view = read_log(self.home / "sessions" / f"{sid}.jsonl")
        if view.records or view.torn:
            self.problem(f"/clear reported done but {sid} still holds {len(view.records)} records")

    def step_compact(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        """/compact: a kill may land during the summary request or the compaction append."""
        sid = self.ledger.selection
        assert sid is not None
        records = read_log(self.home / "sessions" / f"{sid}.jsonl").records
        through = max((r["through_seq"] for r in records if r["type"] == "compaction"), default=0)
        replay = ("user_message", "assistant_message", "tool_call", "tool_result")
        # A rewound turn is no longer sent to the model, so it is not compacted either: counting
        # it, the harness waited 20 s for a summary after Mino had said "Nothing to compact.".
        rewound = {t for r in records if r["type"] == "rewind" for t in r["turns"]}
        turns = {
            r.get("turn_id")
            for r in records
            if r["seq"] > through and r["type"] in replay and r.get("turn_id") not in rewound
        }
        if len(turns) > 2:  # the last two turns are never summarised (docs/BEHAVIOUR.md, "Compaction")
            model.add({"text": f"Summary {self.new_call()}: the user ran commands.", "delay": 0.01})
            expected = "Compacted the older history into a summary"
            self.report.steps["compact:summarised"] += 1
        else:
            expected = "Nothing to compact."
        child.sendline("/compact")
        i = child.expect([re.escape(expected), r"Compaction failed[^\r\n]*"])
        if i == 1:
            self.problem(f"/compact: {child.after.strip()}")
            raise Killed()
        child.expect_exact(PROMPT)
        view = read_log(self.home / "sessions" / f"{sid}.jsonl")
        saved = self.ledger.on_disk.get(sid, [])
        if view.problem or view.records[: len(saved)] != saved:
            self.problem(f"/compact changed or dropped records of {sid}")
        self.ledger.on_disk[sid] = view.records

    def step_rewind(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        """/rewind, then /rewind N of a listed turn, answered yes: a kill may land anywhere in it."""
        child.sendline("/rewind")
        i = child.expect([r"Nothing to rewind\.", r"Checkpoints of this session: [^\r\n]*"])
        listing = child.before
        child.expect_exact(PROMPT)
        turns = re.findall(r"(\d+)\. [^\r\n]*? file\(s\): (turn c\d+k\d+)", listing)
        if i == 1 and not turns:
            self.problem(f"/rewind listed no turn the harness can read: {listing[-500:]!r}")
        if i == 0 or not turns:
            self.report.steps["rewind:nothing"] += 1
            return
        n, text = self.rng.choice(turns)
        before = self.ledger.snapshots.get(text)
        if before is None:
            self.problem(f"/rewind listed {text!r}, a turn the harness never sent")
            return
        self.rewind(child, n, before)

    def rewind(
        self, child: pexpect.spawn, n: str, before: dict[str, bytes] | dict[str, bytes | None]
    ) -> None:
        sid = self.ledger.selection
        assert sid is not None
        child.sendline(f"/rewind {n}")
        i = child.expect(
            [rf"Rewind \d+ file\(s\) to before turn {n}\? \[y/N\] ", r"Turn \d+ changed no files[^\r\n]*"]
        )
        if i == 1:
            child.expect_exact(PROMPT)
            if self.ledger.pending_rewind is not None:
                self.problem(f"an interrupted /rewind {n} could not be finished: {child.after.strip()}")
            self.ledger.pending_rewind = None
            return
        plan = re.findall(r"(restore|delete|keep) (out/[^\s:]+)(: [^\r\n]*)?", child.before)
        for action, path, why in plan:
            if action == "keep":  # only this session's turns touch its files: nothing else changed them
                self.problem(f"/rewind {n} keeps {path}{why}")
        expected = {
            path: (None if action == "delete" else before.get(path))
            for action, path, _ in plan
            if action != "keep"
        }
        self.ledger.pending_rewind = (sid, n, expected)
        child.sendline("y")
        self.expect(child, f"the conversation continues from before turn {n}.")
        child.expect_exact(PROMPT)
        self.ledger.pending_rewind = None
        self.report.steps["rewind:done"] += 1
        for path, content in expected.items():
            now = (self.workdir / path).read_bytes() if (self.workdir / path).is_file() else None
            if now != content:
                self.problem(f"/rewind {n} reported done but {path} is not as it was before that turn")

    def step_resume(self, child: pexpect.spawn, model: ScriptedModel) -> None:
        others = [p.name[:32] for p in session_files(self.home) if p.name[:32] != self.ledger.selection]
        if not others:
            return self.step_new(child, model)
        target = self.rng.choice(others)
        self.ledger.may_select = {target}
        child.sendline(f"/resume {target}")
        i = child.expect([SID, r"\[y/N\] ", r"Cannot resume[^\r\n]*"])
        if i == 1:
            self.problem(
                f"/resume {target} asked a recovery question: a non-active session had pending calls"
            )
            child.sendline("y")
            child.expect(SID)
        elif i == 2:
            self.problem(f"resume failed: {child.after.strip()}")
            raise Killed()
        child.expect_exact(PROMPT)
        self.ledger.selection, self.ledger.may_select = target, set()
        view = read_log(self.home / "sessions" / f"{target}.jsonl")
        if view.records[: len(self.ledger.on_disk.get(target, []))] != self.ledger.on_disk.get(target, []):
            self.problem(f"/resume {target}: records it had before are gone")
        self.ledger.on_disk[target] = view.records

    # ---- checks --------------------------------------------------------------------------
    def check_idle(self, sid: str, text: str) -> None:
        """Mino said the turn is done: its records, results and effects are on disk now."""
        try:
            records, tid = finished_turn(self.home / "sessions" / f"{sid}.jsonl", text)
        except NotOnDisk as exc:
            self.problem(f"{sid}: {exc}")
            return
        saved = self.ledger.on_disk.get(sid, [])
        if records[: len(saved)] != saved:
            self.problem(f"{sid}: records seen on disk earlier are gone or changed")
        self.ledger.on_disk[sid] = records
        calls = {r["seq"]: r for r in records if r["type"] == "tool_call" and r.get("turn_id") == tid}
        results, _ = pair_calls(records)
        for seq, call in calls.items():
            result = results.get(seq)
            if result is None:
                self.problem(f"call {call['call_id']} of a finished turn has no result")
                continue
            if result["status"] != "completed":
                continue
            args = json.loads(call["arguments"])
            if call["name"] == "bash":
                n = witness_lines(self.witness).count(call["call_id"])
                if n != 1:
                    self.problem(f"bash call {call['call_id']} completed but ran {n} times")
            elif call["name"] == "write_file" and args["path"] in self.ledger.versions:
                path = self.workdir / args["path"]  # a later call of the same turn may have overwritten it
                if not path.is_file() or path.read_bytes() not in self.ledger.versions[args["path"]]:
                    self.problem(
                        f"write_file {args['path']} completed but the file is none of the versions sent"
                    )
            elif call["name"] == "write_file":
                path = self.workdir / args["path"]
                if not path.is_file() or path.read_bytes() != self.ledger.writes[args["path"]]:
                    self.problem(f"write_file {args['path']} completed but the file is not what was sent")
            elif call["name"] == "memory_save":
                name = args["name"]
                expected = render_memory(name, args["type"], args["summary"], args.get("details", ""))
                versions = self.ledger.mem_versions[name]
                path = self.home / "memory" / f"{name}.md"
                actual = path.read_text() if path.is_file() else None
                if actual != expected:
                    later = actual in versions and versions.index(actual) > versions.index(expected)
                    if not later:
                        self.problem(f"memory {name} saved but the file holds something else")
                else:
                    self.ledger.mem_floor[name] = max(
                        self.ledger.mem_floor.get(name, 0), versions.index(expected)
                    )

    def offline_check(self) -> Before:
        """Mino is not running: check the whole store and workdir, and learn what start-up must do."""
        for p in store_problems(self.home):
            self.problem(p)
        for p in memory_problems(self.home / "memory"):
            self.problem(p)
        for name, versions in self.ledger.mem_versions.items():
            path = self.home / "memory" / f"{name}.md"
            if not path.is_file():
                if name in self.ledger.mem_floor:
                    self.problem(f"memory {name} was saved and is gone")
                continue
            text = path.read_text()
            if text not in versions:
                self.problem(f"memory {name} is none of the versions sent: half-written?")
            elif versions.index(text) < self.ledger.mem_floor.get(name, 0):
                self.problem(f"memory {name} went back to an older version")
        for p in witness_problems(witness_lines(self.witness), self.ledger.tokens):
            self.problem(p)
        out = self.workdir / "out"
        if out.is_dir():
            for path in out.iterdir():
                rel = f"out/{path.name}"
                if rel in self.ledger.versions:
                    if path.read_bytes() not in self.ledger.versions[rel]:
                        self.problem(f"{rel} is none of the versions sent: half-written?")
                elif rel not in self.ledger.writes:
                    if not path.name.startswith("."):
                        self.problem(f"unexpected file {rel}")
                elif path.read_bytes() != self.ledger.writes[rel]:
                    self.problem(f"{rel} is half-written")
        sid, _ = read_selection(self.home)
        expected = self.ledger.selection
        if expected is not None and sid != expected:
            new_after = self.ledger.new_after
            allowed = sid in self.ledger.may_select or (
                new_after is not None and sid is not None and sid not in new_after
            )
            if not allowed:
                self.problem(f"the selection is {sid}, but Mino last showed {expected}")
        for session, saved in self.ledger.on_disk.items():
            path = self.home / "sessions" / f"{session}.jsonl"
            if not saved:
                continue
            if not path.is_file():
                self.problem(f"session {session} is gone")
            elif read_log(path).records[: len(saved)] != saved:
                self.problem(f"records of {session} that were on disk are lost or changed")
        before = Before(sid=sid)
        if sid is None:
            files = session_files(self.home)
            if len(files) == 1:
                before.sid = files[0].name[:32]
        if before.sid is not None:
            path = self.home / "sessions" / f"{before.sid}.jsonl"
            if path.is_file():
                view = read_log(path)
                before.records, before.torn = view.records, view.torn
                before.pending = pair_calls(view.records)[1]
                before.unacked = unacked_recoveries(view.records)
        return before
