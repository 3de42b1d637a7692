"""`mino --stdio` as a real subprocess over real pipes, against the scripted model server.

Every test gets its own MINO_HOME and workspace; at teardown every server is shut down and all it
sent is checked against protocol.py (strict), and every byte of its stdout must have been framed.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cancel_points import POINTS, reach
from helpers import mino_env, quiet_home, session_records
from server_client import NO_ANSWER, Client, Spawn, contract_problems, servers

from mino_server.core.commands import HELP
from mino_server.core.sessions.store import Holder, SessionStore
from mino_server.server import docgen
from mino_server.testing.scripted_model import ScriptedModel

SAVE_TEA = {
    "calls": [
        {
            "name": "memory_save",
            "arguments": {
                "name": "likes-tea",
                "type": "user",
                "summary": "Prefers green tea",
                "mode": "create",
            },
        }
    ]
}
LONG_TEXT = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as m:
        yield m


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return quiet_home(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "work space"  # a space, so the file:// URI is percent-encoded
    w.mkdir()
    return w


@pytest.fixture
def spawn(home: Path, ws: Path, model: ScriptedModel) -> Iterator[Spawn]:
    with servers(home, model.base_url, ws) as make:
        yield make


def store(home: Path) -> SessionStore:
    return SessionStore(home / "sessions")


def holder(home: Path, session_id: str) -> Holder | None:
    """Who has the session open, as another process sees it."""
    s = store(home)
    with s.exclusive():
        return s.holder(session_id)


def approve_with(answer: bool) -> Callable[[dict[str, Any]], Any]:
    return lambda params: {"approved": answer}


# ---- lifecycle --------------------------------------------------------------------------------
def test_initialize_state_and_mode_from_options(spawn: Spawn, ws: Path) -> None:
    client = spawn(init=False)
    result = client.initialize(ws, mode="accept-edits")
    assert result["serverInfo"]["name"] == "mino"
    assert result["capabilities"]["experimental"]["mino"]["protocolVersion"] == 4
    state = client.request("mino/state")
    assert re.fullmatch(r"[0-9a-f]{32}", state["sessionId"])
    assert state["restoreProblem"] is None
    assert state["workdir"] == str(ws.resolve())
    assert state["mode"] == "accept-edits"
    assert state["busy"] is False
    logged = [p["message"] for p in client.notifications("window/logMessage")]
    assert f"Session: {state['sessionId']}" in logged
    assert client.notifications("mino/stateChanged")[0]["sessionId"] == state["sessionId"]


def test_requests_before_initialize_and_bad_initialize(spawn: Spawn, tmp_path: Path) -> None:
    client = spawn(init=False)
    assert client.error("mino/state").code == -32002
    missing = tmp_path / "nowhere"
    err = client.error("initialize", {"workspaceFolders": [{"uri": missing.as_uri(), "name": "x"}]})
    assert err.code == -32602 and str(missing) in err.message
    err = client.error("initialize", {"initializationOptions": {"mode": "turbo"}})
    assert err.code == -32602 and "initializationOptions.mode" in err.message
    client.initialize(tmp_path)
    assert client.error("initialize", {}).code == -32600


# ---- turns ------------------------------------------------------------------------------------
def test_streamed_turn(spawn: Spawn, model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT})
    client = spawn()
    client.request("mino/state")  # start-up is done: the notifications below are the turn's own
    before = len(client.notifications("mino/stateChanged"))
    pending = client.start("mino/turn", {"text": "count for me"})
    result = pending.result()
    assert result["status"] == "completed" and result["text"] == LONG_TEXT and "error" not in result
    deltas = client.events("text_delta")
    assert len(deltas) >= 3 and "".join(d["text"] for d in deltas) == LONG_TEXT
    assert all(d["turnId"] == result["turnId"] for d in deltas)
    assert client.events("assistant_message")[-1]["text"] == LONG_TEXT
    assert client.events("turn_end")[-1] == {
        "type": "turn_end",
        "turnId": result["turnId"],
        "status": "completed",
    }
    # Every event of the turn came before its result; busy went true then false around it.
    answer_at = next(i for i, m in enumerate(client.messages) if m.get("id") == pending.id)
    event_at = [i for i, m in enumerate(client.messages) if m.get("method") == "mino/event"]
    assert max(event_at) < answer_at
    assert [s["busy"] for s in client.notifications("mino/stateChanged")][before:] == [True, False]
    items = client.request("mino/history")["items"]
    assert [(i["role"], i["text"]) for i in items] == [("user", "count for me"), ("assistant", LONG_TEXT)]
    assert "count for me" in json.dumps(model.requests[0])


@pytest.mark.parametrize("answer", [True, False])
def test_memory_save_through_mino_approve(
    spawn: Spawn, model: ScriptedModel, home: Path, answer: bool
) -> None:
    model.add(SAVE_TEA, {"text": "Done."})
    client = spawn(handlers={"mino/approve": approve_with(answer)})
    result = client.request("mino/turn", {"text": "Remember that I like green tea."})
    assert result["status"] == "completed"
    (asked,) = [r for r in client.incoming_requests if r["method"] == "mino/approve"]
    params = asked["params"]
    assert params["tool"] == "memory_save" and params["question"] == "Approve this operation?"
    # Chapter 13's screen, in every front end: Memory, Directory, Mode, Type, Summary.
    assert [f["label"] for f in params["fields"]] == ["Memory", "Directory", "Mode", "Type", "Summary"]
    assert (
        params["turnId"] == result["turnId"] and params["workdir"] == client.request("mino/state")["workdir"]
    )
    assert {"label": "Memory", "value": "likes-tea"} in params["fields"]
    assert params["warning"]
    (call,) = client.events("tool_call")
    assert (
        call["decision"] == "ask"
        and call["callId"] == params["callId"]
        and call["fields"] == params["fields"]
    )
    (resolved,) = client.events("approval_resolved")
    assert resolved["outcome"] == ("approved" if answer else "denied")
    (tool_result,) = client.events("tool_result")
    assert tool_result["status"] == ("completed" if answer else "denied")
    assert (home / "memory" / "likes-tea.md").exists() is answer
    if answer:
        assert client.request("mino/memory/list")["memories"][0]["name"] == "likes-tea"
        assert client.request("mino/state")["memory"]["count"] == 1


def test_client_without_approve_handler_has_denied(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    model.add(SAVE_TEA, {"text": "I could not save it."})
    client = spawn()  # answers mino/approve with "method not found"
    result = client.request("mino/turn", {"text": "Remember that I like green tea."})
    assert result["status"] == "completed"
    assert client.events("approval_resolved")[0]["outcome"] == "denied"
    assert client.events("tool_result")[0]["status"] == "denied"
    assert not (home / "memory" / "likes-tea.md").exists()


def test_cancel_during_approval(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    model.add(SAVE_TEA)
    client = spawn(handlers={"mino/approve": lambda params: NO_ANSWER})
    turn = client.start("mino/turn", {"text": "Remember that I like green tea."})
    asked = client.wait_incoming_request("mino/approve")
    client.cancel(turn)
    # The question is never answered (NO_ANSWER) and has no timeout of its own: the cancel alone
    # ended the wait. Causality, not a clock; the client's wait is a hang guard.
    result = turn.result()
    assert result["status"] == "interrupted"
    assert client.events("approval_resolved")[0]["outcome"] == "cancelled"
    # The server withdrew its own request so every surface can dismiss the question.
    assert {"id": asked["id"]} in client.notifications("$/cancelRequest")
    assert not (home / "memory" / "likes-tea.md").exists()
    # A late answer is ignored; the next turn runs (busy was released).
    client.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"approved": True}})
    model.add({"text": "Next."})
    assert client.request("mino/turn", {"text": "next"})["status"] == "completed"
    assert not (home / "memory" / "likes-tea.md").exists()
    sid = client.request("mino/state")["sessionId"]
    client.stop()
    recs = session_records(home, sid)
    ends = [r for r in recs if r["type"] == "turn_end"]
    assert ends[0]["status"] == "interrupted" and ends[1]["status"] == "completed"
    assert [r["status"] for r in recs if r["type"] == "tool_result"] == ["denied"]


@pytest.mark.parametrize("point", list(POINTS))
def test_cancel_request_at_every_point_of_a_turn(
    point: str, spawn: Spawn, model: ScriptedModel, home: Path
) -> None:
    model.add(POINTS[point][0])
    client = spawn(mode="bypass")
    sid = client.request("mino/state")["sessionId"]
    turn = client.start("mino/turn", {"text": "go"})
    reach(point, model, lambda: client.events("text_delta"), lambda: client.events("tool_call"))
    client.cancel(turn)
    assert turn.result()["status"] == "interrupted"
    if "stall" not in POINTS[point][0]:  # the scripted model answers one at a time: not after a stall
        model.add({"text": "Next."})
        assert client.request("mino/turn", {"text": "next"})["status"] == "completed"
    client.stop()
    ends = [r["status"] for r in session_records(home, sid) if r["type"] == "turn_end"]
    assert ends[0] == "interrupted"


def test_busy(spawn: Spawn, model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT, "hold": True})  # held until released: running however slow the machine
    client = spawn()
    turn = client.start("mino/turn", {"text": "slowly"})
    client.wait_for(lambda: client.events("text_delta"), what="the first delta")
    for method, params in [
        ("mino/turn", {"text": "again"}),
        ("mino/sessions/new", {}),
        ("mino/sessions/clear", {"id": "0" * 32, "typedId": "0" * 32}),
        ("mino/compact", {}),
        ("mino/command", {"line": "/new"}),
    ]:
        err = client.error(method, params)
        assert (err.code, err.message) == (-32001, "busy"), method
        assert err.data["running"] == "mino/turn" and "turn is running" in err.data["detail"]
    # Reads, the mode and harmless commands work during a turn.
    assert client.request("mino/state")["busy"] is True
    assert client.request("mino/mode", {"mode": "bypass"})["mode"] == "bypass"
    assert client.request("mino/reasoning", {"effort": "high"})["reasoningEffort"] == "high"
    assert client.request("mino/command", {"line": "/help"})["output"] == HELP
    assert not turn.done
    model.release()
    assert turn.result()["status"] == "completed"
    # Sent right after the result: never busy. The effort set during the turn applies to the next.
    model.add({"reasoning": "Quick.", "text": "ok"})
    assert client.request("mino/turn", {"text": "now"})["status"] == "completed"
    assert model.requests[-1]["reasoning"] == {"effort": "high", "summary": "auto"}
    assert [e["text"] for e in client.events("thinking")] == ["Quick."]
    assert client.request("mino/reasoning", {"effort": None})["reasoningEffort"] is None


# ---- sessions ---------------------------------------------------------------------------------
def test_sessions_list_new_resume_clear(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    model.add({"text": "first answer"})
    client = spawn()
    first = client.request("mino/state")["sessionId"]
    client.request("mino/turn", {"text": "hello"})
    time.sleep(0.02)  # distinct modification times
    second = client.request("mino/sessions/new")["sessionId"]
    assert second != first
    assert client.notifications("mino/stateChanged")[-1]["sessionId"] == second
    listed = client.request("mino/sessions/list")["sessions"]
    assert [s["id"] for s in listed] == [second, first]
    assert [s["active"] for s in listed] == [True, False]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed[0]["updatedAt"])

    err = client.error("mino/sessions/resume", {"id": first[:8]})
    assert err.code == -32602 and "complete session ID" in err.message
    err = client.error("mino/sessions/resume", {"id": "f" * 32})
    assert err.code == -32004 and "No session with ID" in err.message
    assert client.request("mino/sessions/resume", {"id": first})["sessionId"] == first
    assert client.request("mino/history")["items"][0]["text"] == "hello"

    err = client.error("mino/sessions/clear", {"id": second, "typedId": second})
    assert err.code == -32004 and "Only the active session" in err.message
    err = client.error("mino/sessions/clear", {"id": first})
    assert err.code == -32602 and "typedId" in err.message
    wrong = client.request("mino/sessions/clear", {"id": first, "typedId": first[:31]})
    assert wrong["cleared"] is False and client.request("mino/history")["items"]
    right = client.request("mino/sessions/clear", {"id": first, "typedId": f"  {first}\n"})
    assert right["cleared"] is True and right["state"]["sessionId"] == first
    assert client.request("mino/history")["items"] == []
    assert session_records(home, second) == []


def two_sessions_without_selection(home: Path) -> list[str]:
    s = store(home)
    ids = [s.create(), s.create()]
    assert not (home / "sessions" / "active-session.json").exists()
    return ids


@pytest.mark.parametrize("fix", ["resume", "new"])
def test_restore_problem_then_fixed(spawn: Spawn, model: ScriptedModel, home: Path, fix: str) -> None:
    ids = two_sessions_without_selection(home)
    client = spawn()
    state = client.request("mino/state")
    assert state["sessionId"] is None
    assert state["restoreProblem"].startswith("Cannot restore the active session: ")
    assert "2 sessions exist" in state["restoreProblem"]
    result = client.request("mino/turn", {"text": "hello"})
    assert result["status"] == "failed" and "No session is selected" in result["error"]
    assert model.requests == []
    if fix == "resume":
        state = client.request("mino/sessions/resume", {"id": ids[1]})
        assert state["sessionId"] == ids[1]
    else:
        state = client.request("mino/sessions/new")
        assert state["sessionId"] not in ids
    assert state["restoreProblem"] is None
    assert client.notifications("mino/stateChanged")[-1]["restoreProblem"] is None
    selection = json.loads((home / "sessions" / "active-session.json").read_text())
    assert selection["session_id"] == state["sessionId"]


@pytest.mark.parametrize("confirmed", [True, False])
def test_recovery_confirmation_at_start_up(spawn: Spawn, home: Path, confirmed: bool) -> None:
    s = store(home)
    sid = s.create()
    s.save_selection(sid)
    log = s.open_log(sid)
    log.append("user_message", "t1", text="run it")
    log.append("tool_call", "t1", call_id="call_9", name="bash", arguments='{"command": "make deploy"}')
    log.close()  # Mino "stopped" while the command ran: no result was recorded
    client = spawn(handlers={"mino/confirm": lambda params: {"confirmed": confirmed}})
    state = client.request("mino/state")
    (asked,) = [r for r in client.incoming_requests if r["method"] == "mino/confirm"]
    assert asked["params"]["kind"] == "recovery" and asked["params"]["sessionId"] == sid
    assert "make deploy" in asked["params"]["message"]
    if confirmed:
        assert state["sessionId"] == sid and state["restoreProblem"] is None
    else:
        assert state["sessionId"] is None and "was not activated" in state["restoreProblem"]
    client.stop()
    types = [r["type"] for r in session_records(home, sid)]
    assert ("recovery_ack" in types) is confirmed


def test_a_second_server_on_the_home_gets_its_own_session(spawn: Spawn, ws: Path) -> None:
    """Chapter 05 refused a second process; now the second window starts a new session and says so
    (the pid and folder of the window that has the selected one), and both keep working."""
    first = spawn()
    a = first.request("mino/state")["sessionId"]
    second = spawn()
    b = second.request("mino/state")["sessionId"]
    assert a and b and a != b
    shown = [m for m in second.notifications("window/showMessage") if m["type"] == 3]
    assert len(shown) == 1 and shown[0]["message"] == (
        f"Session {a} is open in another Mino (pid {first.proc.pid}, in {ws.resolve()}), "
        "so a new session was started."
    )
    assert first.request("mino/state")["sessionId"] == a  # the first server is unharmed
    assert second.stop() == 0
    assert first.request("mino/state")["busy"] is False


def test_bad_config_is_reported_not_a_crash(spawn: Spawn, home: Path) -> None:
    (home / "config.yaml").write_text("colour: blue\n")
    client = spawn()
    err = client.error("mino/state")
    assert err.code == -32003 and err.data["kind"] == "config"
    assert "config.yaml" in err.message and "colour" in err.message
    assert client.notifications("window/showMessage")[0]["type"] == 1
    assert client.proc.poll() is None


def test_requests_before_initialized_start_the_session(spawn: Spawn) -> None:
    client = spawn(initialized=False)
    assert client.request("mino/state")["sessionId"]
    client.notify("initialized", {})  # late: harmless
    assert client.request("mino/sessions/list")["sessions"][0]["active"] is True


def test_memory_problems_are_shown_and_nothing_to_compact(
    spawn: Spawn, model: ScriptedModel, home: Path
) -> None:
    (home / "memory").mkdir(mode=0o700)
    (home / "memory" / "broken.md").write_text("no front matter here\n")
    model.add({"text": "hi"})
    client = spawn()
    state = client.request("mino/state")
    assert state["memory"]["count"] == 0 and state["memory"]["problems"][0]["file"] == "broken.md"
    client.request("mino/turn", {"text": "hello"})
    (shown,) = [m for m in client.notifications("window/showMessage") if "broken.md" in m["message"]]
    assert shown["type"] == 2 and "were not loaded" in shown["message"]
    listed = client.request("mino/memory/list")
    assert listed["memories"] == [] and listed["problems"][0]["file"] == "broken.md"
    assert client.request("mino/compact") == {"compacted": False, "message": "Nothing to compact."}
    assert [s["busy"] for s in client.notifications("mino/stateChanged")][-2:] == [True, False]
    before = len(client.notifications("mino/stateChanged"))
    assert client.request("mino/command", {"line": "/compact"})["output"] == ["Nothing to compact."]
    assert [s["busy"] for s in client.notifications("mino/stateChanged")][before:] == [True, False]


def test_store_that_cannot_be_opened_is_reported(spawn: Spawn, home: Path) -> None:
    (home / "sessions").write_text("not a folder")
    client = spawn()
    err = client.error("mino/state")
    assert err.code == -32003 and err.data == {"kind": "storage"} and "session store" in err.message


def test_storage_failure_stops_the_chat(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    two_sessions_without_selection(home)
    (home / "sessions" / "active-session.json").mkdir()  # the selection can be read as damaged, never saved
    client = spawn()
    assert "active-session.json" in client.request("mino/state")["restoreProblem"]
    err = client.error("mino/sessions/new")
    assert err.code == -32005 and "Could not save the session selection" in err.message
    again = client.error("mino/turn", {"text": "hello"})
    assert again.code == -32005 and again.message == err.message
    assert client.error("mino/command", {"line": "/help"}).code == -32005
    assert client.request("mino/sessions/list")["sessions"]  # reads still answer
    assert model.requests == []


# ---- commands and params ----------------------------------------------------------------------
def test_commands(spawn: Spawn) -> None:
    client = spawn()
    assert client.request("mino/command", {"line": "/help"})["output"] == HELP
    result = client.request("mino/command", {"line": "/mode bypass"})
    assert result["output"] == ["Permission mode: bypass. Use /mode to change it."]
    assert result["state"]["mode"] == "bypass"
    assert client.notifications("mino/stateChanged")[-1]["mode"] == "bypass"
    assert client.request("mino/command", {"line": "/bogus"})["output"][0].startswith(
        "Unknown command: /bogus"
    )
    cleared = client.request("mino/command", {"line": "/clear"})["output"]
    assert any(line.startswith("Session was not cleared.") for line in cleared)
    sid = client.request("mino/state")["sessionId"]
    assert client.request("mino/command", {"line": "/sessions"})["output"][0].startswith(f"* {sid}")


def test_invalid_params_are_explained(spawn: Spawn) -> None:
    client = spawn()
    cases = [
        ("mino/turn", {"text": 42}, "params.text must be a string"),
        ("mino/turn", {}, "missing the field 'text'"),
        ("mino/turn", {"text": "   "}, "params.text must not be empty"),
        ("mino/turn", {"text": "/new"}, "slash command"),
        ("mino/command", {"line": "hello"}, "must start with /"),
        ("mino/mode", {"mode": "turbo"}, 'one of "manual", "accept-edits", "bypass", "plan"'),
        ("mino/reasoning", {"effort": "max"}, '"minimal", "low", "medium", "high"'),
        ("mino/sessions/resume", {"id": "ABC"}, "32 lowercase hexadecimal"),
        ("mino/state", [1, 2], "params must be an object"),
    ]
    for method, params, expected in cases:
        err = client.error(method, params)
        assert err.code == -32602 and expected in err.message, (method, err.message)
    assert client.request("mino/state")["mode"] == "manual"


# ---- the wire ---------------------------------------------------------------------------------
def test_malformed_input_unknown_methods_and_oversized_messages(spawn: Spawn) -> None:
    client = spawn()

    def next_null_id_error(after: int) -> dict[str, Any]:
        return client.wait_for(
            lambda: next((m for m in client.messages[after:] if m.get("id", 0) is None), None),
            what="an error",
        )["error"]

    seen = len(client.messages)
    client.write_raw(b'Content-Length: 8\r\n\r\n{"jsonrp')
    assert next_null_id_error(seen)["code"] == -32700
    seen = len(client.messages)
    client.write_raw(b"Content-Length: 2\r\n\r\n[]")
    assert next_null_id_error(seen)["code"] == -32600
    seen = len(client.messages)
    client.write_raw(b"X-Nothing: at all\r\n\r\n")
    assert "Content-Length" in next_null_id_error(seen)["message"]
    seen = len(client.messages)
    client.write_raw(b"X-Long: " + b"a" * 20000 + b"\r\nContent-Length: 2\r\n\r\n{}")
    assert "longer than" in next_null_id_error(seen)["message"]
    seen = len(client.messages)
    size = 16 * 1024 * 1024 + 1
    client.write_raw(b"Content-Length: %d\r\n\r\n" % size + b" " * size)
    error = next_null_id_error(seen)
    assert error["code"] == -32600 and str(size) in error["message"] and "16 MiB" in error["message"]

    err = client.error("textDocument/hover", {})
    assert err.code == -32601 and "textDocument/hover" in err.message
    client.notify("workspace/didChangeConfiguration", {"settings": {}})  # ignored
    client.send({"jsonrpc": "1.0", "id": 77, "method": "mino/state"})
    client.wait_for(lambda: any(m.get("id") == 77 for m in client.messages), what="an answer to id 77")
    assert next(m for m in client.messages if m.get("id") == 77)["error"]["code"] == -32600
    assert client.request("mino/state")["sessionId"]  # still up


def test_eof_mid_turn(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    model.add({"text": LONG_TEXT, "hold": True})  # held: still running when the test acts
    client = spawn()
    sid = client.request("mino/state")["sessionId"]
    client.start("mino/turn", {"text": "slowly"})
    client.wait_for(lambda: client.events("text_delta"), what="the first delta")
    client.close_stdin()
    assert client.wait_exit(10) == 1  # an exit without shutdown
    ends = [r for r in session_records(home, sid) if r["type"] == "turn_end"]
    assert [e["status"] for e in ends] == ["interrupted"]
    assert holder(home, sid) is None  # the session was released


def test_shutdown_mid_turn(spawn: Spawn, model: ScriptedModel, home: Path) -> None:
    model.add({"text": LONG_TEXT, "hold": True})  # held: still running when the test acts
    client = spawn()
    sid = client.request("mino/state")["sessionId"]
    turn = client.start("mino/turn", {"text": "slowly"})
    client.wait_for(lambda: client.events("text_delta"), what="the first delta")
    assert client.request("shutdown") is None
    # Answered before shutdown was: the reader took the turn's answer off stdout first (order, not time).
    assert turn.done and turn.result(0)["status"] == "interrupted"
    assert client.error("mino/state").code == -32600
    client.notify("exit")
    assert client.wait_exit(10) == 0
    assert [r["status"] for r in session_records(home, sid) if r["type"] == "turn_end"] == ["interrupted"]


def test_sigterm_releases_the_session(spawn: Spawn, home: Path, ws: Path) -> None:
    client = spawn()
    sid = client.request("mino/state")["sessionId"]
    assert sid and holder(home, sid) == Holder(client.proc.pid, str(ws.resolve()))
    client.proc.terminate()
    assert client.wait_exit(10) == 1
    assert holder(home, sid) is None


# SIGTERM where no Python-level handler can run in time. "inherited": the parent blocked SIGTERM
# and exec kept the mask (the server unblocks it). "main thread deaf": the main thread alone blocks
# it, so the kernel hands it to another thread and the main thread's read() of a silent client is
# never interrupted, the same as a main thread stuck in a C call: the 7 s deadline must not wait
# for the main thread (before, the timer was started by the Python handler: alive for ever).
SIGTERM_SETUPS = {
    "inherited": "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})",
    "main thread deaf": (
        "real = app.raise_on_sigterm\n"
        "def deaf():\n"
        "    real()\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
        "app.raise_on_sigterm = deaf"
    ),
}


@pytest.mark.parametrize("setup", list(SIGTERM_SETUPS))
def test_sigterm_ends_the_server_when_no_handler_can_run(
    setup: str, home: Path, ws: Path, model: ScriptedModel
) -> None:
    script = f"import signal\nfrom mino_server.server import app\n{SIGTERM_SETUPS[setup]}\napp.serve()\n"
    client = Client(mino_env(home, model.base_url), ws, argv=[sys.executable, "-c", script])
    try:
        client.initialize(ws)
        sid = client.request("mino/state")["sessionId"]
        assert sid and holder(home, sid) is not None
        client.proc.terminate()
        assert client.wait_exit(30) == 1  # 30 s: a hang guard; the promise is 7 s
    finally:
        client.stop()
    assert holder(home, sid) is None


STRAY_OUTPUT = """
import os
from mino_server.server import app

answer = app.MinoServer.initialize

def noisy(self, params):
    print("a stray print")                 # Python code writing to stdout
    os.system("echo a child process")      # a child inheriting fd 1
    return answer(self, params)

app.MinoServer.initialize = noisy
app.serve()
"""


def test_nothing_but_frames_on_stdout(home: Path, ws: Path, model: ScriptedModel) -> None:
    client = Client(mino_env(home, model.base_url), ws, argv=[sys.executable, "-c", STRAY_OUTPUT])
    try:
        client.initialize(ws)
        assert client.request("mino/state")["sessionId"]
    finally:
        client.stop()
    assert contract_problems(client) == []
    assert b"a stray print" in client.stderr and b"a child process" in client.stderr


# ---- the protocol document ----------------------------------------------------------------------
def test_protocol_docs_are_generated_from_the_classes() -> None:
    for path, text in docgen.outputs().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is out of date: run `{docgen.REGENERATE}`"


def test_cancel_request_keeps_the_partial_answer_and_the_next_turn_stands_alone(
    spawn: Spawn, model: ScriptedModel, home: Path
) -> None:
    """`$/cancelRequest` mid-stream: the next request sends the interrupted user message, the
    partial answer and the interruption line as their own messages; mino/history marks it."""
    from mino_server.core.sessions.log import INTERRUPTED_NOTE

    model.add({"text": "half an answer", "hold": True}, {"text": "hello"})
    client = spawn()
    turn = client.start("mino/turn", {"text": "Please be SLOW."})
    client.wait_for(lambda: "answer" in "".join(e["text"] for e in client.events("text_delta")))
    client.cancel(turn)
    assert turn.result()["status"] == "interrupted"
    assert client.request("mino/turn", {"text": "Say hello."})["status"] == "completed"
    sent = [(m["role"], m["content"]) for m in model.requests[-1]["input"] if m.get("type") == "message"]
    assert sent[-3:] == [
        ("user", "Please be SLOW."),
        ("assistant", f"half an answer\n\n{INTERRUPTED_NOTE}"),
        ("user", "Say hello."),
    ]
    items = client.request("mino/history", {})["items"]
    assert [(i["role"], i["text"], i.get("interrupted")) for i in items] == [
        ("user", "Please be SLOW.", None),
        ("assistant", "half an answer", True),
        ("user", "Say hello.", None),
        ("assistant", "hello", None),
    ]
