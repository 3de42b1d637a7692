"""Many editor windows and terminals on one MINO_HOME (docs/BEHAVIOUR.md, "The store lock").

Real processes only: `mino --stdio` servers over real pipes (one per "window", each with its own
workspace and its own scripted model, so every request a model received came from that window) and
the terminal `mino` in a pty. Every server's messages are checked against protocol.py at teardown.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest
from cli_driver import spawn as spawn_cli
from helpers import mino_env, quiet_home, texts
from server_client import Client, contract_problems

from mino_server.core.tools.memory_tools import CHANGED_MESSAGE
from mino_server.testing.scripted_model import ScriptedModel

ID = r"([0-9a-f]{32})"
PROMPT = "You> "
STREAMED = "one two three four five six seven eight nine ten eleven twelve"


@dataclass
class Window:
    name: str
    client: Client
    model: ScriptedModel
    ws: Path

    @property
    def pid(self) -> int:
        return self.client.proc.pid

    def state(self) -> dict[str, Any]:
        return self.client.request("mino/state")  # type: ignore[no-any-return]

    def sid(self) -> str:
        return self.state()["sessionId"]  # type: ignore[no-any-return]

    def infos(self) -> list[dict[str, Any]]:
        return [m for m in self.client.notifications("window/showMessage") if m["type"] == 3]

    def changed(self) -> int:
        return len(self.client.notifications("mino/sessionsChanged"))


OpenWindow = Callable[..., Window]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return quiet_home(tmp_path)


@pytest.fixture
def open_window(home: Path, tmp_path: Path) -> Iterator[OpenWindow]:
    windows: list[Window] = []

    def make(
        name: str,
        session_id: str | None = None,
        mode: str | None = None,
        handlers: dict[str, Any] | None = None,
        ws: Path | None = None,
    ) -> Window:
        model = ScriptedModel().start()
        if ws is None:
            ws = tmp_path / f"project {name}"
            ws.mkdir(exist_ok=True)
        client = Client(mino_env(home, model.base_url), ws, handlers=handlers)
        options: dict[str, Any] = {}
        if session_id is not None:
            options["sessionId"] = session_id
        if mode is not None:
            options["mode"] = mode
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "capabilities": {},
            "workspaceFolders": [{"uri": ws.resolve().as_uri(), "name": name}],
        }
        if options:
            params["initializationOptions"] = options
        client.request("initialize", params)
        client.notify("initialized", {})
        window = Window(name, client, model, ws.resolve())
        windows.append(window)
        return window

    yield make
    for w in windows:
        w.client.stop()
        w.model.stop()
    for w in windows:
        stderr = bytes(w.client.stderr).decode(errors="replace")
        assert contract_problems(w.client) == [], stderr
        assert "Traceback" not in stderr, stderr
        assert w.model.errors == [], w.model.errors


def selection(home: Path) -> str:
    return json.loads((home / "sessions" / "active-session.json").read_text())["session_id"]  # type: ignore[no-any-return]


def log_texts(home: Path, sid: str) -> list[str]:
    lines = (home / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    return [r["text"] for r in map(json.loads, lines) if r["type"] in ("user_message", "assistant_message")]


def in_use(session_id: str, pid: int, workdir: Path) -> str:
    return (
        f"Session {session_id} is open in another Mino (pid {pid}, in {workdir}); a session can be open in "
        "one place at a time. Nothing was changed."
    )


def started_new(session_id: str, pid: int, workdir: Path) -> str:
    return f"Session {session_id} is open in another Mino (pid {pid}, in {workdir}), so a new session was started."


# ---- windows ------------------------------------------------------------------------------------
def test_three_windows_turn_at_once_each_with_its_own_history(open_window: OpenWindow, home: Path) -> None:
    a = open_window("a")
    sid_a = a.sid()
    b = open_window("b")
    sid_b = b.sid()
    c = open_window("c")
    sid_c = c.sid()
    windows = [a, b, c]
    assert len({sid_a, sid_b, sid_c}) == 3
    # Each later window's start-up pick was the one just created by the window before it.
    assert [m["message"] for m in b.infos()] == [started_new(sid_a, a.pid, a.ws)]
    assert [m["message"] for m in c.infos()] == [started_new(sid_b, b.pid, b.ws)]
    assert a.infos() == []
    for w in windows:
        # Each stream is held before its last event until released: all three are surely streaming
        # at once, however slow the machine (a timed stream, 0.08 s a word, once ended too early).
        w.model.add({"text": f"{w.name}: {STREAMED}", "hold": True}, {"text": f"{w.name} again"})
    turns = [w.client.start("mino/turn", {"text": f"first from {w.name}"}) for w in windows]
    for w in windows:  # every window's model is streaming before any turn has ended
        w.client.wait_for(lambda w=w: w.client.events("text_delta"), what=f"{w.name} streaming")
    assert not any(t._done.is_set() for t in turns)
    for w in windows:
        w.model.release()
    assert [t.result()["status"] for t in turns] == ["completed"] * 3
    for w in windows:
        assert w.client.request("mino/turn", {"text": f"second from {w.name}"})["status"] == "completed"
        assert texts(w.model.requests[1]) == [
            f"first from {w.name}",
            f"{w.name}: {STREAMED}",
            f"second from {w.name}",
        ]
    for w, sid in zip(windows, (sid_a, sid_b, sid_c), strict=True):
        assert log_texts(home, sid) == [
            f"first from {w.name}",
            f"{w.name}: {STREAMED}",
            f"second from {w.name}",
            f"{w.name} again",
        ]


def test_resume_and_clear_of_a_session_open_elsewhere_change_nothing(
    open_window: OpenWindow, home: Path
) -> None:
    a = open_window("a")
    sid_a = a.sid()
    b = open_window("b")
    sid_b = b.sid()
    b.model.add({"text": "kept"})
    assert b.client.request("mino/turn", {"text": "keep this"})["status"] == "completed"
    b_log = (home / "sessions" / f"{sid_b}.jsonl").read_bytes()
    chosen = selection(home)
    listed = {s["id"]: s for s in a.client.request("mino/sessions/list")["sessions"]}
    assert listed[sid_a]["active"] is True and listed[sid_a]["openElsewhere"] is False
    assert listed[sid_b]["active"] is False and listed[sid_b]["openElsewhere"] is True

    err = a.client.error("mino/sessions/resume", {"id": sid_b})
    assert err.code == -32006 and err.message == in_use(sid_b, b.pid, b.ws)
    assert err.data == {"sessionId": sid_b, "pid": b.pid, "workdir": str(b.ws)}
    # Before any other refusal: clearing a session that is not this window's is -32004 otherwise.
    err = a.client.error("mino/sessions/clear", {"id": sid_b, "typedId": sid_b})
    assert err.code == -32006 and err.message == in_use(sid_b, b.pid, b.ws)
    result = a.client.request("mino/command", {"line": f"/resume {sid_b}"})
    assert result["output"] == [in_use(sid_b, b.pid, b.ws)] and result["state"]["sessionId"] == sid_a
    lines = a.client.request("mino/command", {"line": "/sessions"})["output"]
    assert any(line.startswith(f"* {sid_a}  ") and line.endswith("UTC") for line in lines)
    assert any(
        line.startswith(f"  {sid_b}  ") and line.endswith(f"UTC  (open elsewhere: pid {b.pid}, in {b.ws})")
        for line in lines
    )
    # Nothing changed: not the window, not the selection, not the other window's log.
    assert a.sid() == sid_a and b.sid() == sid_b
    assert selection(home) == chosen
    assert (home / "sessions" / f"{sid_b}.jsonl").read_bytes() == b_log
    assert a.client.error("mino/sessions/clear", {"id": sid_b, "typedId": "no"}).code == -32006

    before = a.changed()
    assert b.client.stop() == 0  # the window closes: its session is free
    a.client.wait_for(lambda: a.changed() > before, what="mino/sessionsChanged")
    listed = {s["id"]: s for s in a.client.request("mino/sessions/list")["sessions"]}
    assert listed[sid_b]["openElsewhere"] is False
    assert a.client.request("mino/sessions/resume", {"id": sid_b})["sessionId"] == sid_b
    assert selection(home) == sid_b  # the session most recently resumed


def test_reload_with_session_id_gets_the_window_its_own_session(open_window: OpenWindow, home: Path) -> None:
    a = open_window("a")
    sid_a = a.sid()
    a.model.add({"text": "The word is pine."})
    a.client.request("mino/turn", {"text": "Remember pine."})
    b = open_window("b")
    sid_b = b.sid()
    assert selection(home) == sid_b
    assert a.client.stop() == 0
    # The reloaded window asks for its own session: restored, although the selection names another.
    a2 = open_window("a2", session_id=sid_a, ws=a.ws)
    assert a2.sid() == sid_a and a2.infos() == []
    assert selection(home) == sid_a  # it counts as a resume
    a2.model.add({"text": "pine"})
    a2.client.request("mino/turn", {"text": "What word?"})
    assert texts(a2.model.requests[0]) == ["Remember pine.", "The word is pine.", "What word?"]
    # A reload races the old server: the new one waits (up to a second) for the old one to let go.
    a3 = open_window("a3", session_id=sid_a, ws=a.ws, handlers={})
    time.sleep(0.2)
    assert a2.client.stop() == 0
    assert a3.sid() == sid_a and a3.infos() == []
    # Its own session is open elsewhere (and stays so): the start-up table decides, here the
    # selection, which is open in a3, so this window starts a new session and says so.
    c = open_window("c", session_id=sid_b)
    sid_c = c.sid()
    assert sid_c not in (sid_a, sid_b)
    assert [m["message"] for m in c.infos()] == [started_new(sid_a, a3.pid, a3.ws)]
    # Anything that is not a complete ID is ignored.
    d = open_window("d", session_id="../../etc/passwd")
    assert d.sid() not in (sid_a, sid_b, sid_c)


def test_sessions_changed_goes_to_the_other_windows_only(open_window: OpenWindow, home: Path) -> None:
    a = open_window("a")
    a.sid()
    b = open_window("b")
    sid_b = b.sid()
    a.client.wait_for(lambda: a.changed() >= 1, what="B opened a session")
    own = b.changed()
    for action in (
        lambda: b.client.request("mino/sessions/new"),
        lambda: b.client.request("mino/sessions/clear", {"id": b.sid(), "typedId": b.sid()}),
        lambda: b.client.request("mino/sessions/resume", {"id": sid_b}),
    ):
        seen = a.changed()
        action()
        a.client.wait_for(lambda seen=seen: a.changed() > seen, what="mino/sessionsChanged")
    time.sleep(1.2)  # two more polls
    assert b.changed() == own  # its own changes are not news to B
    c = open_window("c")
    c.sid()
    b.client.wait_for(lambda: b.changed() > own, what="C opened a session")
    time.sleep(1.2)
    seen_a, seen_b = a.changed(), b.changed()
    os.kill(c.pid, signal.SIGKILL)  # a killed window cannot say goodbye: the others notice it died
    c.client.wait_exit(10)
    for w, seen in ((a, seen_a), (b, seen_b)):
        w.client.wait_for(lambda w=w, seen=seen: w.changed() > seen, what="C's session closed")


# ---- memory -------------------------------------------------------------------------------------
def save(name: str, summary: str, mode: str = "create") -> dict[str, Any]:
    return {
        "calls": [
            {
                "name": "memory_save",
                "arguments": {"name": name, "type": "user", "summary": summary, "mode": mode},
            }
        ]
    }


def test_a_memory_save_waits_for_another_process_holding_the_save_lock(
    open_window: OpenWindow, home: Path
) -> None:
    a = open_window("a", mode="bypass")
    a.model.add(save("likes-tea", "Prefers green tea"), {"text": "saved"})
    fd = os.open(home / "memory.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another process is between its check and its write
        turn = a.client.start("mino/turn", {"text": "remember my tea"})
        a.client.wait_for(lambda: a.client.events("tool_call"), what="the save")
        time.sleep(0.5)
        assert not (home / "memory" / "likes-tea.md").exists() and not turn._done.is_set()
    finally:
        os.close(fd)
    assert turn.result()["status"] == "completed"
    assert "Prefers green tea" in (home / "memory" / "likes-tea.md").read_text()


def test_an_approved_memory_save_writes_nothing_when_another_window_changed_it(
    open_window: OpenWindow, home: Path
) -> None:
    answer = threading.Event()

    def approve_later(params: dict[str, Any]) -> dict[str, Any]:
        answer.wait(15)
        return {"approved": True}

    a = open_window("a", handlers={"mino/approve": approve_later})
    b = open_window("b", mode="bypass")
    a.model.add(save("likes-tea", "Prefers green tea"), {"text": "done a"})
    b.model.add(save("likes-tea", "Prefers black tea"), {"text": "done b"})
    turn_a = a.client.start("mino/turn", {"text": "remember green"})
    a.client.wait_incoming_request("mino/approve")  # A's question is open: nothing is locked meanwhile
    assert b.client.request("mino/turn", {"text": "remember black"})["status"] == "completed"
    answer.set()
    assert turn_a.result()["status"] == "completed"
    (result,) = a.client.events("tool_result")
    assert result["status"] == "failed" and result["text"] == CHANGED_MESSAGE
    assert "Prefers black tea" in (home / "memory" / "likes-tea.md").read_text()


# ---- terminals ----------------------------------------------------------------------------------
def cli_env(home: Path, model: ScriptedModel) -> dict[str, str]:
    return dict(mino_env(home, model.base_url), PYTHONUNBUFFERED="1")


def expect_session(child: pexpect.spawn) -> str:
    child.expect(r"Session: " + ID)
    return child.match.group(1)  # type: ignore[no-any-return]


def test_two_terminals_on_one_home(home: Path, tmp_path: Path) -> None:
    ws1, ws2 = tmp_path / "one", tmp_path / "two"
    ws1.mkdir()
    ws2.mkdir()
    with ScriptedModel([{"text": "first"}]) as m1, ScriptedModel([{"text": "second"}]) as m2:
        t1 = spawn_cli(cli_env(home, m1), ws1)
        s1 = expect_session(t1)
        t1.expect_exact(PROMPT)
        t2 = spawn_cli(cli_env(home, m2), ws2)
        t2.expect_exact(started_new(s1, t1.pid, ws1.resolve()))
        s2 = expect_session(t2)
        t2.expect_exact(PROMPT)
        t1.sendline("hello one")
        t2.sendline("hello two")
        t1.expect_exact("Assistant> first")
        t2.expect_exact("Assistant> second")
        t1.expect_exact(PROMPT)
        t2.expect_exact(PROMPT)
        t1.sendline(f"/resume {s2}")
        t1.expect_exact(in_use(s2, t2.pid, ws2.resolve()))
        t1.expect_exact(PROMPT)
        t1.sendline("/sessions")
        t1.expect_exact(f"(open elsewhere: pid {t2.pid}, in {ws2.resolve()})")
        t1.expect_exact(PROMPT)
        t2.sendline("/clear")  # a terminal clears its own session: nobody else has it open
        t2.expect_exact("Type the complete session ID to clear it: ")
        t2.sendline(s2)
        t2.expect_exact(f"Cleared session: {s2}")
        t2.expect_exact(PROMPT)
        for t in (t1, t2):
            t.sendeof()
            t.expect(pexpect.EOF)
            t.close()
            assert t.exitstatus == 0
        assert texts(m1.requests[0]) == ["hello one"] and texts(m2.requests[0]) == ["hello two"]
    assert selection(home) == s2  # the session most recently cleared
    assert log_texts(home, s1) == ["hello one", "first"] and log_texts(home, s2) == []


def test_terminal_and_window_both_ways(open_window: OpenWindow, home: Path, tmp_path: Path) -> None:
    term_ws = tmp_path / "terminal"
    term_ws.mkdir()
    with ScriptedModel([{"text": "from the terminal"}]) as model:
        t = spawn_cli(cli_env(home, model), term_ws)
        s_t = expect_session(t)
        t.expect_exact(PROMPT)
        w = open_window("w")  # a window after a terminal
        s_w = w.sid()
        assert [m["message"] for m in w.infos()] == [started_new(s_t, t.pid, term_ws.resolve())]
        err = w.client.error("mino/sessions/resume", {"id": s_t})
        assert err.code == -32006 and err.message == in_use(s_t, t.pid, term_ws.resolve())
        t.sendline(f"/resume {s_w}")
        t.expect_exact(in_use(s_w, w.pid, w.ws))
        t.expect_exact(PROMPT)
        seen = w.changed()
        t.sendline("hi")
        t.expect_exact("Assistant> from the terminal")
        t.expect_exact(PROMPT)
        t.sendeof()
        t.expect(pexpect.EOF)
        t.close()
        assert t.exitstatus == 0
        w.client.wait_for(lambda: w.changed() > seen, what="the terminal closed its session")
    with ScriptedModel([{"text": "terminal two"}]) as model:  # a terminal after a window
        t2 = spawn_cli(cli_env(home, model), term_ws)
        t2.expect_exact(started_new(s_w, w.pid, w.ws))
        s_t2 = expect_session(t2)
        t2.expect_exact(PROMPT)
        t2.sendline(f"/resume {s_t}")  # the first terminal's session is free again
        assert expect_session(t2) == s_t
        t2.expect_exact(PROMPT)
        t2.sendeof()
        t2.expect(pexpect.EOF)
        t2.close()
    assert s_t2 not in (s_t, s_w)
    assert selection(home) == s_t


def test_creating_and_switching_from_four_processes_at_once_never_race(home: Path, tmp_path: Path) -> None:
    """Chapter 05's promise, now under the short store lock: four terminals create and resume
    sessions at the same time; every session file is whole, the selection is whole and names one of
    them, and every /new made its own."""
    import subprocess

    with ScriptedModel() as model:
        procs = []
        for i in range(4):
            ws = tmp_path / f"t{i}"
            ws.mkdir()
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "mino_server"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=cli_env(home, model),
                    cwd=ws,
                    text=True,
                )
            )
        outs = [p.communicate("/new\n/new\n/sessions\n/new\n", timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outs]
    shown = [re.findall(r"^Session: " + ID, out, re.M) for out, _ in outs]
    assert all(len(ids) == 4 for ids in shown)  # start-up and three /new, each its own
    made = [sid for ids in shown for sid in ids[1:]]
    assert len(set(made)) == len(made) == 12  # every /new its own session
    files = {p.name[:32] for p in (home / "sessions").glob("*.jsonl")}
    assert {sid for ids in shown for sid in ids} <= files
    assert selection(home) in {ids[-1] for ids in shown}  # the last /new of one of them
    assert not list((home / "sessions").glob(".*.tmp"))  # no half-made selection left behind


def test_piped_terminal_keeps_chapter_05_lines_when_alone(home: Path, tmp_path: Path) -> None:
    """One process alone sees exactly what it did before: no "open elsewhere" words anywhere."""
    import subprocess

    with ScriptedModel([{"text": "ok"}]) as model:
        proc = subprocess.run(
            [sys.executable, "-m", "mino_server"],
            input="hi\n/sessions\n",
            env=cli_env(home, model),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert proc.returncode == 0, proc.stderr
    assert "elsewhere" not in proc.stdout and "another Mino" not in proc.stdout
