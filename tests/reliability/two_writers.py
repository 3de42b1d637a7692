"""The crash harness with two writers: two editor windows (`mino --stdio`) on one MINO_HOME run turns
at the same time, and one of them is SIGKILLed mid-turn while the other keeps writing.

Each cycle starts both windows, each asking for its own session back (`initializationOptions.sessionId`,
as a reloaded VS Code window does), answers any recovery question with yes, starts a turn in both
(bash calls that append a unique token to the window's witness file, then a slowly streamed
answer), and SIGKILLs one window at a random moment. The other window must finish its turn, run one
more while the killed window's log is read from outside, and exit cleanly.

Checked after every kill and every start, independently of Mino's loader (invariants.py): every
session loads (a torn tail only where a crash can leave one), records seen on disk at an idle moment
are still there, no bash call ran twice, the survivor's log is whole and consistent, the killed
window's session comes back at the next start with every call that has no result marked unknown
and asked about, and the two windows never write into each other's session.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import HarnessRun, NotOnDisk, finished_turn, sigkill, witness_lines, witness_problems
from invariants import log_consistency, pair_calls, read_log, store_problems

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # server_client lives in tests/

from server_client import Client, RpcError  # noqa: E402

from mino_server.testing.scripted_model import ScriptedModel  # noqa: E402

WINDOWS = ("left", "right")
TURN_TIMEOUT_S = 30.0


@dataclass
class Report:
    kills: int = 0
    cycles: int = 0
    killed_mid_turn: int = 0
    asked: int = 0  # recovery questions answered at a start
    unknown_marked: int = 0
    turns: Counter[str] = field(default_factory=Counter)  # window -> turns it completed
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.kills} kills in {self.cycles} cycles ({self.killed_mid_turn} mid-turn), "
            f"{dict(self.turns)} turns completed, {self.asked} recovery questions, "
            f"{self.unknown_marked} calls marked unknown, {len(self.problems)} problems, {self.seconds:.1f} s"
        )


@dataclass
class Side:
    name: str
    workdir: Path
    session: str | None = None  # the window's own session (kept across restarts, as the extension does)
    client: Client | None = None
    model: ScriptedModel | None = None
    asked: list[dict[str, Any]] = field(default_factory=list)  # mino/confirm params received
    slow_token: str = ""  # the last bash call's token

    @property
    def witness(self) -> Path:
        return self.workdir / "witness.txt"


class TwoWriterRun(HarnessRun):
    report: Report

    def __init__(self, root: Path, seed: int) -> None:
        super().__init__(root, seed, Report())
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.yaml").write_text('sandbox: "off"\n')  # the same on every machine
        self.sides = {name: Side(name, root / f"work-{name}") for name in WINDOWS}
        for side in self.sides.values():
            side.workdir.mkdir(parents=True, exist_ok=True)
        self.tokens: set[str] = set()
        self.on_disk: dict[str, list[dict[str, Any]]] = {}  # session -> records seen at an idle moment

    # ---- the run -------------------------------------------------------------------------
    def cycles(self, kills: int) -> None:
        while self.report.kills < kills:
            self.cycle()
            if len(self.report.problems) > 20:
                break
        self.final_check()

    def token(self) -> str:
        self.call_no += 1
        return f"w{self.cycle_no}k{self.call_no}"

    # ---- windows -------------------------------------------------------------------------
    def start(self, side: Side) -> None:
        """Start the window with its own session and check what start-up did to it."""
        before = self.pending_of(side.session)
        model = ScriptedModel().start()
        env = self.mino_env(model)
        side.asked = []

        def confirm(params: dict[str, Any]) -> dict[str, Any]:
            side.asked.append(params)
            return {"confirmed": True}

        client = Client(env, side.workdir, handlers={"mino/confirm": confirm})
        side.client, side.model = client, model
        options: dict[str, Any] = {"mode": "bypass"}
        if side.session is not None:
            options["sessionId"] = side.session
        client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {},
                "workspaceFolders": [{"uri": side.workdir.resolve().as_uri(), "name": side.name}],
                "initializationOptions": options,
            },
        )
        client.notify("initialized", {})
        sid = client.request("mino/state", timeout=TURN_TIMEOUT_S)["sessionId"]
        if sid is None:
            self.problem(f"{side.name} started without a session")
            return
        if side.session is not None and sid != side.session:
            self.problem(f"{side.name} asked for {side.session} back and got {sid}")
        side.session = sid
        if bool(side.asked) != bool(before):
            self.problem(
                f"{side.name}: recovery asked {len(side.asked)} time(s) with {len(before)} call(s) pending"
            )
        self.report.asked += bool(side.asked)
        view = read_log(self.home / "sessions" / f"{sid}.jsonl")
        if view.problem or view.torn:
            self.problem(f"{side.name}: after start-up its log is damaged: {view.problem or 'torn'}")
            return
        results, pending = pair_calls(view.records)
        if pending:
            self.problem(f"{side.name}: after start-up {len(pending)} call(s) still have no result")
        for call in before:
            result = results.get(call["seq"])
            if result is None or result.get("status") != "unknown":
                self.problem(f"{side.name}: call {call['call_id']} had no result and was not marked unknown")
            else:
                self.report.unknown_marked += 1
        self.keep(sid, view.records)

    def pending_of(self, sid: str | None) -> list[dict[str, Any]]:
        if sid is None:
            return []
        path = self.home / "sessions" / f"{sid}.jsonl"
        return pair_calls(read_log(path).records)[1] if path.exists() else []

    def keep(self, sid: str, records: list[dict[str, Any]]) -> None:
        saved = self.on_disk.get(sid, [])
        if records[: len(saved)] != saved:
            self.problem(f"records of {sid} seen on disk earlier are gone or changed")
        self.on_disk[sid] = records

    def stop(self, side: Side, killed: bool) -> None:
        client, model = side.client, side.model
        side.client = side.model = None
        if client is not None:
            if killed:
                sigkill(client.proc.pid)
                client.wait_exit(10)
            elif client.stop() != 0:
                self.problem(f"{side.name} did not exit cleanly")
            if b"Traceback" in client.stderr:
                self.problem(f"{side.name}: a traceback on stderr: {bytes(client.stderr)[-400:]!r}")
        if model is not None:
            model.stop()
            self.requests.extend(model.requests)
            for e in model.errors:
                if not (killed and e.startswith("unexpected request")):
                    self.problem(f"{side.name}'s scripted model: {e}")

    # ---- a cycle -------------------------------------------------------------------------
    def cycle(self) -> None:
        self.cycle_no += 1
        self.report.cycles += 1
        self.offline_check()
        left, right = self.sides["left"], self.sides["right"]
        try:
            self.start(left)
            self.start(right)
        except (RpcError, TimeoutError, OSError) as exc:
            self.problem(f"a window did not start: {exc}")
            for side in (left, right):
                self.stop(side, killed=True)
            return
        if left.session == right.session:
            self.problem(f"both windows have session {left.session} open")
        victim, survivor = (left, right) if self.rng.random() < 0.5 else (right, left)
        # Every third kill lands while the victim's bash call runs (its result can never be saved),
        # so even a short run proves the unknown-result path; the others at a random moment of its turn.
        in_call = self.cycle_no % 3 == 1
        turns = {
            side.name: self.begin_turn(side, slow_call=in_call and side is victim) for side in (left, right)
        }
        pending, _text = turns[victim.name]
        assert victim.model is not None
        deadline = time.monotonic() + TURN_TIMEOUT_S
        if in_call:
            while witness_lines(victim.witness)[-1:] != [victim.slow_token]:
                if time.monotonic() > deadline:
                    self.problem(f"{victim.name}'s slow bash call never started")
                    break
                time.sleep(0.01)
        else:
            while not victim.model.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(self.rng.uniform(0.0, 0.5))
        mid_turn = not pending._done.is_set()
        self.stop(victim, killed=True)
        self.report.kills += 1
        self.report.killed_mid_turn += mid_turn
        try:
            self.finish_turn(survivor, *turns[survivor.name])
            # The survivor writes on while the killed window's log is read from outside.
            pending, text = self.begin_turn(survivor)
            self.check_loadable(victim)
            self.finish_turn(survivor, pending, text)
        except (RpcError, TimeoutError, OSError) as exc:
            self.problem(f"{survivor.name} stopped working after {victim.name} was killed: {exc}")
        self.stop(survivor, killed=False)
        if survivor.session is not None:
            for p in log_consistency(read_log(self.home / "sessions" / f"{survivor.session}.jsonl")):
                self.problem(f"{survivor.name} exited cleanly but its log is not consistent: {p}")

    def begin_turn(self, side: Side, slow_call: bool = False) -> tuple[Any, str]:
        assert side.client is not None and side.model is not None
        token = self.token()
        replies: list[dict[str, Any]] = []
        for _ in range(1 if slow_call else self.rng.choice([0, 1, 1, 2])):
            call = self.token()
            self.tokens.add(call)
            pattern = (
                "{}; sleep 3" if slow_call else self.rng.choice(["{}", "{}; sleep 0.1", "sleep 0.1; {}"])
            )
            command = pattern.format(f"echo {call} >> witness.txt")
            replies.append({"calls": [{"name": "bash", "arguments": {"command": command}, "call_id": call}]})
            side.slow_token = call
        replies.append({"text": f"done {token} with a few more words to stream", "delay": 0.03})
        side.model.add(*replies)
        text = f"turn {token} in {side.name}"
        return side.client.start("mino/turn", {"text": text}), text

    def finish_turn(self, side: Side, pending: Any, text: str) -> None:
        result = pending.result(TURN_TIMEOUT_S)
        if result["status"] != "completed":
            self.problem(f"{side.name}'s turn ended {result['status']}: {result.get('error')}")
            return
        self.report.turns[side.name] += 1
        assert side.session is not None
        try:
            records, turn_id = finished_turn(self.home / "sessions" / f"{side.session}.jsonl", text)
        except NotOnDisk as exc:
            self.problem(f"{side.name}: {exc}")
            return
        foreign = [r for r in records if r["type"] == "user_message" and not r["text"].endswith(side.name)]
        if foreign:
            self.problem(f"{side.name}'s session holds another window's message: {foreign[0]['text']!r}")
        results, _ = pair_calls(records)
        lines = witness_lines(side.witness)
        for call in records:
            if call["type"] != "tool_call" or call.get("turn_id") != turn_id:
                continue
            result = results.get(call["seq"])
            if result is None:
                self.problem(f"{side.name}: call {call['call_id']} of a finished turn has no result")
            elif result["status"] == "completed" and lines.count(call["call_id"]) != 1:
                self.problem(
                    f"{side.name}: bash call {call['call_id']} completed but ran {lines.count(call['call_id'])} times"
                )
        self.keep(side.session, records)

    def check_loadable(self, side: Side) -> None:
        if side.session is None:
            return
        view = read_log(self.home / "sessions" / f"{side.session}.jsonl")
        if view.problem:
            self.problem(f"the killed window's log cannot be loaded: {view.problem}")
        else:
            self.keep(side.session, view.records)

    # ---- checks --------------------------------------------------------------------------
    def offline_check(self) -> None:
        """No window runs: the whole store and both witness files."""
        for p in store_problems(self.home):
            self.problem(p)
        for side in self.sides.values():
            for p in witness_problems(witness_lines(side.witness), self.tokens):
                self.problem(f"{side.name}: {p}")
        for sid, saved in self.on_disk.items():
            path = self.home / "sessions" / f"{sid}.jsonl"
            view = read_log(path) if path.exists() else None
            if view is None or view.problem:
                self.problem(f"session {sid} is gone or damaged")
            elif view.records[: len(saved)] != saved:
                self.problem(f"records of {sid} that were on disk are lost or changed")

    def final_check(self) -> None:
        """A last clean start and exit of both windows: every log whole and consistent."""
        self.cycle_no += 1
        self.offline_check()
        for side in self.sides.values():
            try:
                self.start(side)
            except (RpcError, TimeoutError, OSError) as exc:
                self.problem(f"{side.name} did not start at the end: {exc}")
        for side in self.sides.values():
            self.stop(side, killed=False)
        for sid in self.on_disk:
            for p in log_consistency(read_log(self.home / "sessions" / f"{sid}.jsonl")):
                self.problem(f"at the end, {sid}: {p}")
