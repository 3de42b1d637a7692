"""`mino --acp` as a real subprocess over real pipes, against the scripted model server.

Every row of the mapping table in docs/PROTOCOL.md ("`mino --acp`"): each test drives the agent
with a plain newline-delimited JSON-RPC client (tests/acp_client.py), which checks every message
the agent sends against the official ACP schema; at teardown every agent is ended by EOF and must
have written nothing but ACP on stdout and no traceback anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_client import NO_ANSWER, AcpClient
from cancel_points import POINTS, reach
from helpers import mino_env, quiet_home, running
from image_files import b64, data_url, gif, png, webp
from rpc_client import RpcError

from mino_server.core.sessions.store import SessionStore
from mino_server.testing.scripted_model import ScriptedModel, image_urls

APPROVE = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
DENY = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
CANCELLED = {"outcome": {"outcome": "cancelled"}}


def write_call(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content, "mode": "create"}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return quiet_home(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "work space"
    w.mkdir()
    (w / "notes.txt").write_text("line one\nline two\nline three\nline four\n")
    return w


@pytest.fixture
def env(home: Path, model: ScriptedModel) -> dict[str, str]:
    return mino_env(home, model.base_url)


Spawn = Callable[..., AcpClient]


@pytest.fixture
def spawn(env: dict[str, str], ws: Path) -> Iterator[Spawn]:
    clients: list[AcpClient] = []

    def make(
        handlers: dict[str, Any] | None = None, args: list[str] | None = None, init: bool = True
    ) -> AcpClient:
        argv = [sys.executable, "-m", "mino_server", "--acp", *(args or [])]
        client = AcpClient(env, ws, argv=argv, handlers=handlers)
        clients.append(client)
        if init:
            client.initialize()
        return client

    yield make
    for client in clients:
        if client.proc.poll() is None:
            assert client.close() == 0
        assert client.violations == []
        assert b"Traceback" not in client.stderr, client.stderr.decode(errors="replace")


def sessions_dir(home: Path) -> Path:
    return home / "sessions"


def records(home: Path, sid: str) -> list[dict[str, Any]]:
    text = (sessions_dir(home) / f"{sid}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def request_texts(model: ScriptedModel, n: int) -> str:
    return json.dumps(model.requests[n])


# ---- initialize, session/new, session/prompt ------------------------------------------------------


def test_initialize_answers_the_capabilities(spawn: Spawn) -> None:
    client = spawn(init=False)
    result = client.initialize()
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "mino" and result["agentInfo"]["version"]
    assert result["agentCapabilities"] == {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
        "mcpCapabilities": {"http": True},
    }
    assert result["authMethods"] == []
    # A second initialize (acplint sends one) gets the same answer; the first one's capabilities stay.
    again = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}
    assert client.request("initialize", again) == result


@pytest.mark.parametrize(
    "version, answer", [("1", 1), ("2", 1), ("one", None), ("1.0", None), (True, None), (-1, None)]
)
def test_a_protocol_version_written_as_a_numeric_string_is_that_number(
    spawn: Spawn, version: Any, answer: int | None
) -> None:
    client = spawn(init=False)
    params = {"protocolVersion": version, "clientCapabilities": {}}
    if answer is None:
        assert client.error("initialize", params).code == -32602
    else:
        assert client.request("initialize", params)["protocolVersion"] == answer  # the integer Mino speaks


def test_no_key_for_openai_offers_an_agent_auth_method_naming_the_variable(
    home: Path, ws: Path, env: dict[str, str]
) -> None:
    """First run in an ACP client: initialize lists one agent auth method (the current schema has no
    env_var kind) whose description names the variable to set (schema-checked by the SDK's
    models), a prompt is -32000 (auth required) before anything is sent or logged."""
    bare = {k: v for k, v in env.items() if k not in ("MINO_BASE_URL", "MINO_API_KEY", "OPENAI_API_KEY")}
    client = AcpClient(bare, ws)
    try:
        result = client.initialize()
        (method,) = result["authMethods"]
        assert method == {
            "id": "api-key",
            "name": "API key",
            "description": (
                "No API key: set OPENAI_API_KEY (or MINO_API_KEY) to use https://api.openai.com/v1, or set "
                'MINO_BASE_URL to a local server\'s /v1 URL; see README.md, "First run", and run `mino doctor` to check.'
            ),
        }
        sid = client.new_session(ws)  # sessions, /help and /sessions work without a key
        client.wait_for(lambda: method["description"] in client.agent_text(sid))  # said in the thread at once
        err = client.error("session/prompt", client.prompt_params(sid, "hello"))
        assert (err.code, err.message) == (-32000, method["description"])
        assert "hello" not in (sessions_dir(home) / f"{sid}.jsonl").read_text()  # nothing logged
        assert client.error("authenticate", {"methodId": "api-key"}).code == -32000  # set it and start again
        assert client.error("authenticate", {"methodId": "oauth"}).code == -32602
        assert client.error("authenticate", {}).code == -32602
    finally:
        assert client.close() == 0
    assert client.violations == []


def test_a_key_or_a_local_server_needs_no_auth(spawn: Spawn) -> None:
    client = spawn()  # the scripted model's loopback URL, no key needed
    assert client.request("authenticate", {"methodId": "api-key"}) == {}


def test_requests_before_initialize_and_unknown_methods(spawn: Spawn, ws: Path) -> None:
    client = spawn(init=False)
    assert client.error("session/new", {"cwd": str(ws), "mcpServers": []}).code == -32600
    client.initialize()
    assert client.error("session/fork", {}).code == -32601
    client.notify("some/notification", {})  # ignored
    assert client.error("session/new", {"cwd": "relative/dir", "mcpServers": []}).code == -32602
    err = client.error("session/new", {"cwd": str(ws / "missing"), "mcpServers": []})
    assert err.code == -32602 and "does not exist" in err.message


def test_new_session_and_a_streamed_turn(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path) -> None:
    model.add({"text": "Hello from the scripted model, in several words", "require": "say hello"})
    client = spawn()
    new = client.request("session/new", {"cwd": str(ws), "mcpServers": []})
    sid = new["sessionId"]
    assert new["modes"]["currentModeId"] == "manual"
    assert [m["id"] for m in new["modes"]["availableModes"]] == ["manual", "accept-edits", "bypass", "plan"]
    (commands,) = client.wait_for(lambda: client.updates(sid, "available_commands_update"))
    assert [c["name"] for c in commands["availableCommands"]] == [
        "compact",
        "mode",
        "sessions",
        "help",
        "clear",
        "rewind",
        "mcp",
        "rules",
    ]
    # saved as the selection, as /new
    assert json.loads((sessions_dir(home) / "active-session.json").read_text())["session_id"] == sid

    pending = client.start("session/prompt", client.prompt_params(sid, "please say hello"))
    assert pending.result() == {"stopReason": "end_turn"}
    chunks = client.updates(sid, "agent_message_chunk")
    assert len(chunks) > 1  # streamed, one chunk per delta
    assert client.agent_text(sid) == "Hello from the scripted model, in several words"
    # every update of the turn came before its result
    answer = client.index_of(lambda m: m.get("id") == pending.id)
    last_update = max(i for i, m in enumerate(client.messages) if m.get("method") == "session/update")
    assert last_update < answer
    types = [r["type"] for r in records(home, sid) if r["type"] != "session_skills"]
    assert types == ["user_message", "assistant_message", "turn_end"]


def test_a_failed_turn_is_an_error_with_one_line(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"status": 500, "error": "the model\nserver broke"}, {"status": 500, "error": "still broken"})
    model.add({"status": 500, "error": "and again"}, {"status": 500, "error": "and again"})
    client = spawn()
    sid = client.new_session(ws)
    err = client.error("session/prompt", client.prompt_params(sid, "hi"), timeout=60)
    assert err.code == -32603
    assert "\n" not in err.message and "500" in err.message


def test_a_turn_limit_is_max_turn_requests(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"text": "cut", "incomplete": "max_output_tokens"})
    client = spawn()
    sid = client.new_session(ws)
    assert client.prompt(sid, "go") == {"stopReason": "max_turn_requests"}


def test_busy_while_a_turn_runs(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [write_call("a.txt", "a")]}, {"text": "second"})
    client = spawn(handlers={"session/request_permission": lambda p: NO_ANSWER})
    sid = client.new_session(ws)
    first = client.start("session/prompt", client.prompt_params(sid, "one"))
    client.wait_incoming_request("session/request_permission")  # the turn waits for a person
    err = client.error("session/prompt", client.prompt_params(sid, "two"))
    assert err.code == -32001 and err.message == "busy" and "turn is running" in err.data["detail"]
    assert client.error("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []}).code == -32001
    other = client.new_session(ws)  # other sessions are not held up
    assert client.prompt(other, "/mode") == {"stopReason": "end_turn"}
    client.notify("session/cancel", {"sessionId": sid})
    assert first.result() == {"stopReason": "cancelled"}
    assert client.prompt(sid, "two") == {"stopReason": "end_turn"}


def test_mcp_servers_are_added_for_the_session_and_asked_about(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, tmp_path: Path
) -> None:
    """The client's servers (here an http one) join the configured ones (a clashing name suffixed),
    start with the session, and every call asks with the server and its arguments shown; ending
    the process stops the stdio server it started."""
    import socket

    import yaml

    record = tmp_path / "calls.jsonl"
    fixture = [sys.executable, "-m", "mino_server.testing.mcp_fixture"]
    config = yaml.safe_load((home / "config.yaml").read_text()) or {}
    config["mcp_servers"] = {
        "fx": {"command": fixture, "env": {"MCP_FIXTURE_RECORD": str(record)}, "start_timeout_s": 120}
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    web_record = tmp_path / "web-calls.jsonl"
    web = subprocess.Popen(
        [*fixture, "--http", str(port)],
        env={**__import__("os").environ, "MCP_FIXTURE_RECORD": str(web_record)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
        ):  # listening before the session starts: its 10 s are the handshake's
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        model.add(
            {"calls": [{"name": "mcp__fx-2__echo", "arguments": {"text": "from the editor"}}]}, {"text": "ok"}
        )

        def allow(params: dict[str, Any]) -> dict[str, Any]:
            option = next(o for o in params["options"] if o["kind"] == "allow_once")
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

        client = spawn(handlers={"session/request_permission": allow})
        server = {"type": "http", "name": "fx", "url": f"http://127.0.0.1:{port}/mcp", "headers": []}
        sid = client.new_session(ws, [server])
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            client.prompt(sid, "/mcp")
            text = client.agent_text(sid)
            if "fx: ready" in text and "fx-2 (from the editor): ready" in text:
                break
            time.sleep(0.2)
        assert "mcp__fx-2__echo" in client.agent_text(sid)
        assert client.prompt(sid, "echo it") == {"stopReason": "end_turn"}
        (asked,) = [r for r in client.incoming_requests if r["method"] == "session/request_permission"]
        shown = json.dumps(asked["params"]["toolCall"])
        assert "mcp__fx-2__echo" in shown and "Server" in shown and "from the editor" in shown
        assert f"127.0.0.1:{port}" in shown
        assert [json.loads(line)["tool"] for line in web_record.read_text().splitlines()] == ["echo"]
        assert not record.exists()  # the configured server was not called
        pids = set(_children(client.proc.pid))
        assert pids  # the configured stdio server runs under the agent
        assert client.close() == 0
        deadline = time.monotonic() + 60  # a hang guard: the loop ends when it happens
        while any(running(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(running(p) for p in pids)  # no orphans once the process ended
    finally:
        web.terminate()
        web.wait(10)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(")")[-1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_a_malformed_mcp_server_is_invalid_params(spawn: Spawn, ws: Path) -> None:
    client = spawn()
    sid = client.new_session(ws)
    for bad in ([{"name": "x"}], [{"name": "x", "type": "sse", "url": "http://127.0.0.1:1/"}], "no"):
        err = client.error("session/new", {"cwd": str(ws), "mcpServers": bad})
        assert err.code == -32602 and "mcpServers" in err.message
        # session/load reads them through the same function (Agent.client_mcp_servers)
        err = client.error("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": bad})
        assert err.code == -32602 and "mcpServers" in err.message


# ---- tool calls and permissions -------------------------------------------------------------------


def test_an_outside_sandbox_permission_names_the_risk_and_ends_with_the_deciding_fields(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    # Issue 22, finding 5: the model's long reason must not be the last thing read before answering.
    args = {
        "command": "make deploy",
        "outside_sandbox": True,
        "reason": "it pushes \u201cSandbox: bwrap\u201d",
    }
    model.add({"calls": [{"name": "bash", "arguments": args}]}, {"text": "done"})
    client = spawn(handlers={"session/request_permission": lambda p: DENY})
    sid = client.new_session(ws)
    client.prompt(sid, "deploy")
    (asked,) = [r for r in client.incoming_requests if r["method"] == "session/request_permission"]
    call = asked["params"]["toolCall"]
    assert call["title"] == "Run OUTSIDE the sandbox? bash: make deploy"
    shown = call["content"][0]["content"]["text"].split("\n")
    assert shown == [
        "```",
        "[Tool: bash]",
        'Command: "make deploy"',
        'Reason: "it pushes \u201cSandbox: bwrap\u201d"',
        f'Directory: "{ws.resolve()}"',
        'Sandbox: "none (requested)"',
        "Run OUTSIDE the sandbox?",
        "```",
    ]


def test_approval_through_request_permission(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [write_call("out.txt", "written\n")]}, {"text": "done"})
    client = spawn(handlers={"session/request_permission": lambda p: APPROVE})
    sid = client.new_session(ws)
    assert client.prompt(sid, "write it") == {"stopReason": "end_turn"}
    assert (ws / "out.txt").read_text() == "written\n"
    (asked,) = [r for r in client.incoming_requests if r["method"] == "session/request_permission"]
    params = asked["params"]
    assert params["sessionId"] == sid
    assert params["options"] == [
        {"optionId": "allow_once", "name": "Approve", "kind": "allow_once"},
        {"optionId": "reject_once", "name": "Deny", "kind": "reject_once"},
        # a write in the project: a rule can cover it
        {"optionId": "allow_always", "name": "Always in this project", "kind": "allow_always"},
        {"optionId": "reject_always", "name": "Never in this project", "kind": "reject_always"},
    ]
    call = params["toolCall"]
    assert call["kind"] == "edit" and call["status"] == "pending" and call["title"] == "write_file: out.txt"
    # the diff first: clients that show one item of a tool call (CodeCompanion.nvim) show the first
    diff, fields, always = call["content"]
    assert always["content"]["text"] == f"a = always: write out.txt in {os.path.realpath(ws)}"
    assert diff == {
        "type": "diff",
        "path": str(ws.resolve() / "out.txt"),
        "oldText": None,
        "newText": "written\n",
    }
    shown = fields["content"]["text"]
    assert shown.startswith("```\n[Tool: write_file]\n") and 'Path: "out.txt"' in shown
    assert 'Content: "written\\n"' in shown  # the escaped value, as every front end shows it

    calls = client.updates(sid, "tool_call")
    (start,) = [u for u in calls if u["toolCallId"] == call["toolCallId"]]
    assert start["status"] == "pending" and start["kind"] == "edit"
    # rawInput: the model's arguments as it sent them; title and content keep the escaped display
    assert start["rawInput"] == {"path": "out.txt", "content": "written\n", "mode": "create"}
    assert start["locations"] == [{"path": str(ws.resolve() / "out.txt")}]
    assert start["content"] == call["content"][:2]  # the permission adds what `always` keeps
    statuses = [u["status"] for u in client.updates(sid, "tool_call_update")]
    assert statuses == ["in_progress", "completed"]
    # the tool call was shown before the question, the question before it ran
    shown_at = client.index_of(
        lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call"
    )
    asked_at = client.index_of(lambda m: m.get("method") == "session/request_permission")
    assert shown_at < asked_at


OLD_APPROVE = {"outcome": {"outcome": "selected", "optionId": "approve"}}  # version 2's ID: now a denial


@pytest.mark.parametrize("answer", [DENY, CANCELLED, "error", OLD_APPROVE])
def test_deny_cancelled_and_errors_are_denials(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, answer: Any
) -> None:
    model.add({"calls": [write_call("out.txt", "x")]}, {"text": "the turn goes on", "require": "denied"})
    handlers = {} if answer == "error" else {"session/request_permission": lambda p: answer}
    client = spawn(handlers=handlers)
    sid = client.new_session(ws)
    assert client.prompt(sid, "write it") == {"stopReason": "end_turn"}
    assert not (ws / "out.txt").exists()
    (end,) = client.updates(sid, "tool_call_update")
    assert end["status"] == "failed"
    assert end["content"][0]["content"]["text"] == (
        "```\n[status: denied]\nThe user denied this operation; nothing was done.\n```"
    )
    assert client.agent_text(sid) == "the turn goes on"


def test_cancel_during_an_approval(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path) -> None:
    model.add({"calls": [write_call("out.txt", "x")]})
    client = spawn(handlers={"session/request_permission": lambda p: NO_ANSWER})
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "write it"))
    asked = client.wait_incoming_request("session/request_permission")
    client.notify("session/cancel", {"sessionId": sid})
    # Denied at once, not after an answer: the question is not answered before the turn has ended
    # (and has no timeout of its own), so the cancel alone ended it. Causality, not a clock.
    assert pending.result() == {"stopReason": "cancelled"}
    client.answer(asked, APPROVE)  # too late: ignored
    (end,) = client.updates(sid, "tool_call_update")
    assert end["status"] == "failed" and "interrupted the turn" in end["content"][0]["content"]["text"]
    assert not (ws / "out.txt").exists()
    types = [r["type"] for r in records(home, sid)]
    assert types[-1] == "turn_end" and records(home, sid)[-1]["status"] == "interrupted"
    # the session goes on
    model.add({"text": "still here"})
    assert client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert not (ws / "out.txt").exists()


@pytest.mark.parametrize("point", list(POINTS))
def test_session_cancel_at_every_point_of_a_turn(
    point: str, spawn: Spawn, model: ScriptedModel, ws: Path, home: Path
) -> None:
    model.add(POINTS[point][0])
    client = spawn(args=["--mode", "bypass"])
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "go"))
    reach(
        point,
        model,
        lambda: client.updates(sid, "agent_message_chunk"),
        lambda: client.updates(sid, "tool_call"),
    )
    client.notify("session/cancel", {"sessionId": sid})
    assert pending.result() == {"stopReason": "cancelled"}
    ends = [r for r in records(home, sid) if r["type"] == "turn_end"]
    assert [r["status"] for r in ends] == ["interrupted"]


def test_unknown_tool_is_shown_as_a_failed_call(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [{"name": "launch_rockets", "arguments": {}}]}, {"text": "ok"})
    client = spawn()
    sid = client.new_session(ws)
    client.prompt(sid, "go")
    (call,) = client.updates(sid, "tool_call")
    assert call["status"] == "failed" and call["title"] == "launch_rockets" and call["kind"] == "other"
    assert "Unknown tool" in call["content"][0]["content"]["text"]


# ---- session/set_mode and slash commands ----------------------------------------------------------


def test_set_mode_belongs_to_each_session(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [write_call("a.txt", "a")]}, {"text": "done"})
    client = spawn()  # no permission handler: anything asked would be denied
    first = client.new_session(ws)
    second = client.new_session(ws)
    assert client.request("session/set_mode", {"sessionId": first, "modeId": "accept-edits"}) == {}
    (update,) = client.wait_for(lambda: client.updates(first, "current_mode_update"))
    assert update == {"sessionUpdate": "current_mode_update", "currentModeId": "accept-edits"}
    assert client.updates(second, "current_mode_update") == []
    client.prompt(first, "write")
    assert (ws / "a.txt").read_text() == "a"  # accept-edits ran it without asking
    assert not any(r["method"] == "session/request_permission" for r in client.incoming_requests)
    err = client.error("session/set_mode", {"sessionId": first, "modeId": "yolo"})
    assert err.code == -32602 and "manual, accept-edits, bypass, plan" in err.message
    assert client.error("session/set_mode", {"sessionId": "0" * 32, "modeId": "manual"}).code == -32002


def test_mode_given_on_the_command_line(spawn: Spawn, ws: Path) -> None:
    client = spawn(args=["--mode", "bypass"])
    result = client.request("session/new", {"cwd": str(ws), "mcpServers": []})
    assert result["modes"]["currentModeId"] == "bypass"


def test_slash_commands(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path) -> None:
    model.add({"text": "remembered"})
    client = spawn()
    sid = client.new_session(ws)
    client.prompt(sid, "a message to clear")

    def said(*blocks: Any) -> str:
        before = len(client.agent_text(sid))
        assert client.prompt(sid, *blocks) == {"stopReason": "end_turn"}
        return client.agent_text(sid)[before:]

    assert "/compact" in said("/help") and "/clear ID" in said("/help")
    assert said("/mode bypass") == "Permission mode: bypass. Use /mode to change it.\n"
    assert client.updates(sid, "current_mode_update")[-1]["currentModeId"] == "bypass"
    assert f"* {sid}" in said("/sessions")
    assert "start a new thread" in said("/new")
    assert "Unknown command: /frobnicate" in said("/frobnicate")
    assert "Session was not cleared" in said("/clear")
    assert "Session was not cleared" in said(f"/clear {'0' * 32}")
    assert records(home, sid)  # untouched
    assert f"Cleared session: {sid}" in said(f"/clear {sid}")
    assert records(home, sid) == []
    assert len(model.requests) == 1  # no command reached the model


# ---- context: resource and resource_link blocks ---------------------------------------------------


def test_resources_become_context_items(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path) -> None:
    model.add({"text": "seen"})
    client = spawn()
    sid = client.new_session(ws)
    link = {"type": "resource_link", "uri": (ws / "notes.txt").as_uri() + "#L2-3", "name": "notes.txt"}
    selection = {
        "type": "resource",
        "resource": {
            "uri": (ws / "draft.py").as_uri() + "#L5:6",
            "text": "x = ```1```\n",
            "mimeType": "text/x-python",
        },
    }
    whole = {"type": "resource_link", "uri": (ws / "notes.txt").as_uri(), "name": "notes.txt"}
    client.prompt(sid, "look at these", {"type": "text", "text": "and this"}, link, selection, whole)
    sent = json.loads(request_texts(model, 0))
    (user,) = [i for i in sent["input"] if i.get("role") == "user"]
    parts = [p["text"] for p in user["content"]]
    assert parts == [
        "look at these\n\nand this",  # text blocks join with a blank line
        "Context: notes.txt (lines 2-3)\n```\nline two\nline three\n```",
        "Context: draft.py (lines 5-6)\n````\nx = ```1```\n````",  # a fence longer than the run inside
        "Context: notes.txt\n```\nline one\nline two\nline three\nline four\n```",
    ]
    (saved,) = [r for r in records(home, sid) if r["type"] == "user_message"]
    assert saved["text"] == parts[0]  # the record keeps the items: a resume sends exactly the same
    assert [(c["path"], c.get("start_line"), c.get("end_line")) for c in saved["context"]] == [
        ("notes.txt", 2, 3),
        ("draft.py", 5, 6),
        ("notes.txt", None, None),
    ]


@pytest.mark.parametrize(
    "block, words",
    [
        (
            {"type": "resource_link", "uri": "file:///etc/passwd", "name": "passwd"},
            "outside the working directory",
        ),
        ({"type": "resource_link", "uri": "https://example.com/x", "name": "x"}, "file:// URI"),
        ({"type": "resource", "resource": {"uri": "file:///x", "blob": "AAAA"}}, "blob resource"),
        ({"type": "image", "data": "AAAA", "mimeType": "image/png"}, "not a PNG, JPEG, GIF or WebP image"),
        ({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, "audio block"),
        ({"type": "resource_link", "uri": "file:///x#frag", "name": "x"}, "#L10-20"),
    ],
)
def test_bad_context_is_refused_before_anything_is_sent(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, block: dict[str, Any], words: str
) -> None:
    client = spawn()
    sid = client.new_session(ws)
    err = client.error("session/prompt", client.prompt_params(sid, "look", block))
    assert err.code == -32602 and words in err.message and "prompt[1]" in err.message
    assert model.requests == [] and records(home, sid) == []


def test_context_text_over_64_kib_is_cut_with_a_note(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"text": "read it"})
    client = spawn()
    sid = client.new_session(ws)
    big = {"type": "resource", "resource": {"uri": (ws / "big.txt").as_uri(), "text": "x" * 100_000}}
    result = client.request("session/prompt", client.prompt_params(sid, "look", big))
    assert result == {"stopReason": "end_turn"}
    part = model.requests[0]["input"][-1]["content"][1]["text"]
    assert part.startswith(
        "Context: big.txt\n```\n" + "x" * (64 * 1024) + "\n[Mino cut this item at 65,536 of 100,000"
    )
    shown = "".join(u["content"]["text"] for u in client.updates(sid, "agent_message_chunk"))
    assert "Context item big.txt is 100,000 bytes: the model gets the first 65,536" in shown
    # The 256 KiB of all items together stays an error.
    five = [{**big, "resource": {**big["resource"], "uri": (ws / f"b{i}.txt").as_uri()}} for i in range(5)]
    err = client.error("session/prompt", client.prompt_params(sid, "look", *five))
    assert err.code == -32602 and "all items together may hold at most 262144 bytes" in err.message
    assert len(model.requests) == 1


# ---- images ----------------------------------------------------------------------------------------


def test_an_image_reaches_the_model_through_load_and_a_restart(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path
) -> None:
    shot = {"type": "image", "mimeType": "image/png", "data": b64(png(seed=7)), "uri": "file:///tmp/shot.png"}
    model.add({"text": "a picture"}, {"text": "again"}, {"text": "after a restart"})
    client = spawn()
    sid = client.new_session(ws)
    assert client.prompt(sid, "what is this?", shot) == {"stopReason": "end_turn"}
    assert image_urls(model.requests[0]) == [data_url(png(seed=7))]
    (saved,) = [r for r in records(home, sid) if r["type"] == "user_message"]
    assert saved["images"][0]["name"] == "shot.png" and "data" not in json.dumps(saved["images"])
    # session/load in a second process (the first has closed): the replay names the image...
    client.close()
    second = spawn()
    second.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    replayed = "".join(u["content"]["text"] for u in second.updates(sid, "user_message_chunk"))
    assert "what is this?\n[image: shot.png, PNG 2×1, 72 bytes]" in replayed
    # ...and the next request sends the very same data URL.
    assert second.prompt(sid, "and now?") == {"stopReason": "end_turn"}
    assert image_urls(model.requests[1]) == image_urls(model.requests[0])
    second.close()
    third = spawn()
    third.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    assert third.prompt(sid, "once more") == {"stopReason": "end_turn"}
    assert image_urls(model.requests[2]) == [data_url(png(seed=7))]
    assert model.errors == []


def test_an_image_alone_and_an_image_file_link(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    (ws / "diagram.gif").write_bytes(gif())
    model.add({"text": "seen"}, {"text": "seen too"})
    client = spawn()
    sid = client.new_session(ws)
    assert client.prompt(sid, {"type": "image", "mimeType": "image/webp", "data": b64(webp())}) == {
        "stopReason": "end_turn"
    }
    assert image_urls(model.requests[0]) == [data_url(webp(), "image/webp")]
    link = {"type": "resource_link", "uri": (ws / "diagram.gif").as_uri(), "name": "diagram.gif"}
    assert client.prompt(sid, "and this", link) == {"stopReason": "end_turn"}
    assert image_urls(model.requests[1])[-1] == data_url(gif(), "image/gif")


@pytest.mark.parametrize(
    "blocks, words",
    [
        (
            [{"type": "image", "mimeType": "image/png", "data": "A" * (8 * 1024 * 1024)}],
            "prompt[1]: the image is about 6,291,456 bytes; an image may be at most 5,242,880 bytes",
        ),
        (
            [{"type": "image", "mimeType": "image/png", "data": b64(png()[:8] + b"\x00" * 40)}],
            "prompt[1]: the file starts like a PNG image but its header is damaged",
        ),
        (
            [{"type": "image", "mimeType": "image/gif", "data": b64(png())}],
            "prompt[1]: its bytes are a PNG image, not 'image/gif' as declared",
        ),
        ([{"type": "image", "mimeType": "image/png", "data": "%%%"}], "prompt[1]: data is not valid base64"),
        (
            [{"type": "image", "mimeType": "image/png", "data": b64(png(seed=i))} for i in range(9)],
            "prompt[9] is image 9; a prompt may carry at most 8 images",
        ),
    ],
)
def test_bad_images_are_refused_naming_the_block(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, blocks: list[Any], words: str
) -> None:
    client = spawn()
    sid = client.new_session(ws)
    err = client.error("session/prompt", client.prompt_params(sid, "look", *blocks))
    assert err.code == -32602 and words in err.message, err.message
    assert model.requests == [] and records(home, sid) == [] and not (home / "images").exists()


# ---- many sessions, session/list, session/load ----------------------------------------------------


def test_two_sessions_with_their_own_directories(
    spawn: Spawn, model: ScriptedModel, tmp_path: Path, home: Path
) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for d, word in ((alpha, "apricot"), (beta, "blueberry")):
        d.mkdir()
        (d / "fruit.txt").write_text(f"{word}\n")
    client = spawn(handlers={"session/request_permission": lambda p: APPROVE})
    a = client.new_session(alpha)
    b = client.new_session(beta)
    read = {"name": "read_file", "arguments": {"path": "fruit.txt"}}
    model.add({"calls": [read]}, {"text": "alpha saw it", "require": "apricot"})
    client.prompt(a, "alpha-first")
    model.add({"calls": [read]}, {"text": "beta saw it", "require": "blueberry"})
    client.prompt(b, "beta-first")
    model.add({"text": "alpha again", "require": ["alpha-first", "apricot"]})
    time.sleep(0.05)  # "newest" is by modification time, which file systems keep in coarse ticks (~4 ms)
    client.prompt(a, "alpha-second")
    assert model.errors == []
    last = request_texts(model, 4)
    assert "beta" not in last and "blueberry" not in last  # each request carries only its own history
    assert "alpha" not in request_texts(model, 2) and "apricot" not in request_texts(model, 3)
    (loc,) = [u for u in client.updates(b, "tool_call")][0]["locations"]
    assert loc["path"] == str(beta.resolve() / "fruit.txt")

    listed = client.request("session/list", {})["sessions"]
    assert [s["sessionId"] for s in listed][:2] == [a, b]  # newest first (a was written last)
    by_id = {s["sessionId"]: s for s in listed}
    assert by_id[a]["cwd"] == str(alpha.resolve()) and by_id[b]["cwd"] == str(beta.resolve())
    assert by_id[a]["title"] == "alpha-first"
    assert all(s["updatedAt"].endswith("Z") and "T" in s["updatedAt"] for s in listed)
    only_beta = client.request("session/list", {"cwd": str(beta)})["sessions"]
    assert [s["sessionId"] for s in only_beta] == [b]


def test_load_replays_before_answering_with_isolation(
    spawn: Spawn, model: ScriptedModel, tmp_path: Path, ws: Path, home: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    model.add({"text": "answer A"}, {"text": "answer B"})
    first = spawn()
    a = first.new_session(ws)
    first.prompt(a, "question A")
    b = first.new_session(ws)
    first.prompt(b, "question B")
    assert first.close() == 0

    second = spawn()
    pending = second.start("session/load", {"sessionId": a, "cwd": str(other), "mcpServers": []})
    result = pending.result()
    assert result["modes"]["currentModeId"] == "manual"
    replay = [
        m["params"]["update"]
        for m in second.messages[: second.index_of(lambda m: m.get("id") == pending.id)]
        if m.get("method") == "session/update"
    ]
    assert replay == [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "question A"}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "answer A"}},
    ]
    second.wait_for(lambda: second.updates(a, "available_commands_update"))
    model.add({"text": "A again", "require": ["question A", "answer A"]})
    second.prompt(a, "follow-up")
    assert model.errors == []
    assert "question B" not in request_texts(model, 2) and "answer B" not in request_texts(model, 2)
    # the load moved the session: session/list reports the new directory
    listed = {s["sessionId"]: s for s in second.request("session/list", {})["sessions"]}
    assert listed[a]["cwd"] == str(other.resolve()) and listed[b]["cwd"] == str(ws.resolve())
    assert json.loads((sessions_dir(home) / "active-session.json").read_text())["session_id"] == a


def test_load_errors(spawn: Spawn, ws: Path) -> None:
    client = spawn()
    for bad in ("abc", "0" * 31 + "G", 42, "0" * 32 + "\n"):  # a trailing newline: issue 22, finding 8
        err = client.error("session/load", {"sessionId": bad, "cwd": str(ws), "mcpServers": []})
        assert err.code == -32002 and "Not a complete session ID" in err.message
    err = client.error("session/load", {"sessionId": "0" * 32, "cwd": str(ws), "mcpServers": []})
    assert err.code == -32002 and "No session with ID" in err.message
    assert client.error("session/prompt", client.prompt_params("0" * 32, "hi")).code == -32002


@pytest.mark.parametrize("approved", [True, False])
def test_recovery_on_load(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, approved: bool) -> None:
    store = SessionStore(sessions_dir(home))
    sid = store.create()
    log = store.open_log(sid)
    log.append("user_message", "t1", text="deploy it")
    log.append("tool_call", "t1", call_id="call_9", name="bash", arguments='{"command": "make deploy"}')
    log.close()  # Mino "stopped" while the command ran: no result was recorded
    client = spawn(handlers={"session/request_permission": lambda p: APPROVE if approved else DENY})
    pending = client.start("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    asked = client.wait_incoming_request("session/request_permission")
    call = asked["params"]["toolCall"]
    assert call["kind"] == "other" and call["title"] == f"Recover session {sid}"
    assert "make deploy" in call["content"][0]["content"]["text"]
    assert "never runs a command from history again" in call["content"][0]["content"]["text"]
    if approved:
        pending.result()
        assert "recovery_ack" in [r["type"] for r in records(home, sid)]
        tool = [u for u in client.updates(sid, "tool_call")]
        assert tool and tool[0]["status"] == "failed"  # its result is `unknown`
        assert "never recorded" in tool[0]["content"][0]["content"]["text"]
    else:
        err = pending.error()
        assert err.code == -32004 and "was not activated" in err.message
        assert client.error("session/prompt", client.prompt_params(sid, "hi")).code == -32002
        assert "recovery_ack" not in [r["type"] for r in records(home, sid)]
    results = [r for r in records(home, sid) if r["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["unknown"]  # nothing ran again, either way
    assert model.requests == []


# ---- the process ----------------------------------------------------------------------------------


def test_nothing_but_acp_on_stdout(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [{"name": "bash", "arguments": {"command": "echo to-stdout; echo to-stderr >&2"}}]})
    model.add({"text": "ran"})
    client = spawn(args=["--mode", "bypass"])
    client.write_raw(b"this is not json\n")
    client.write_raw(b'[{"jsonrpc": "2.0", "id": 99, "method": "initialize"}]\n')
    client.write_raw(b"\n")
    sid = client.new_session(ws)
    client.prompt(sid, "run it")
    errors = [m["error"] for m in client.messages if "error" in m]
    assert [e["code"] for e in errors] == [-32700, -32600]
    (end,) = client.updates(sid, "tool_call_update")[-1:]
    assert "to-stdout" in end["content"][0]["content"]["text"]
    assert client.close() == 0  # EOF ends it; the fixture checks every stdout line


def test_eof_during_a_turn_ends_it(spawn: Spawn, model: ScriptedModel, ws: Path, home: Path) -> None:
    model.add({"text": "slow", "stall": 120})
    client = spawn()
    sid = client.new_session(ws)
    client.start("session/prompt", client.prompt_params(sid, "wait"))
    client.wait_for(lambda: model.requests, what="the model request")
    # EOF ended the turn before its 120 s stall could: the exit's own wait (90 s) is the bound
    assert client.close(timeout=90) == 0
    assert records(home, sid)[-1]["type"] == "turn_end"


def test_acp_costs_nothing_on_the_other_paths(tmp_path: Path, env: dict[str, str], ws: Path) -> None:
    """`mino --help`, the terminal and `--stdio` never import the ACP front end."""

    def imported(args: list[str]) -> str:
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "mino_server", *args],
            input=b"",
            capture_output=True,
            env=env,
            cwd=ws,
            timeout=60,
        )
        return run.stderr.decode(errors="replace")

    for args in (["--help"], [], ["--stdio"]):
        modules = imported(args)
        assert "mino_server.main" in modules  # the measurement saw the imports
        assert "mino_server.acp" not in modules, args
    acp_path = imported(["--acp"])
    assert "mino_server.acp.app" in acp_path
    assert "pydantic" not in acp_path  # the SDK is the tests' schema oracle, not a run-time cost


# ---- many connections on one home -----------------------------------------------------------------

# Sessions claimed one by one (the store rules of "many editor windows on one home"); a tree that
# still locks the whole store per process refuses a second process outright.
many_connections = pytest.mark.skipif(
    not hasattr(__import__("mino_server.core.store", fromlist=["Store"]).Store, "claim"),
    reason="this tree's store still takes one lock per process (no per-session claims yet)",
)


@many_connections
def test_a_session_open_in_another_process_is_in_use(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    first = spawn()
    sid = first.new_session(ws)
    second = spawn()
    load = {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
    err = second.error("session/load", load)
    assert err.code == -32006
    assert f"pid {first.proc.pid}" in err.message and str(ws.resolve()) in err.message
    assert err.data == {"sessionId": sid, "pid": first.proc.pid, "workdir": str(ws.resolve())}
    second.new_session(ws)  # the second process is unharmed
    assert first.close() == 0  # an editor that exits closes its sessions
    second.request("session/load", load)


@many_connections
def test_a_terminal_beside_acp_on_one_home(
    spawn: Spawn, model: ScriptedModel, ws: Path, env: dict[str, str]
) -> None:
    model.add({"text": "acp answer"}, {"text": "terminal answer", "require": "from the terminal"})
    client = spawn()
    sid = client.new_session(ws)  # also the selection a terminal start-up would pick
    client.prompt(sid, "from the editor")
    terminal = subprocess.run(
        [sys.executable, "-m", "mino_server"],
        input=b"from the terminal\n",
        capture_output=True,
        env=env,
        cwd=ws,
        timeout=60,
    )
    out = terminal.stdout.decode()
    assert terminal.returncode == 0, terminal.stderr.decode()
    assert f"Session {sid} is open in another Mino (pid {client.proc.pid}, in {ws.resolve()})" in out
    assert "terminal answer" in out
    assert "from the editor" not in json.dumps(model.requests[1])  # its own new session
    model.add({"text": "acp again", "require": ["from the editor", "acp answer"]})
    assert client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert model.errors == []
    listed = client.request("session/list", {})["sessions"]
    assert len(listed) == 2
    (theirs,) = [s for s in listed if s["sessionId"] != sid]
    assert theirs["_meta"] == {"mino": {"cwdKnown": False}}  # used only in the terminal so far


def test_the_front_end_names_the_contracts_modes() -> None:
    """mapping.py keeps its own copy so that `initialize` needs no core import; it must not drift."""
    from mino_server.acp import mapping
    from mino_server.core.contract import MODES

    assert mapping.MODES == MODES
    assert set(mapping.MODE_NAMES) == set(MODES) == set(mapping.MODE_DESCRIPTIONS)


def test_loading_a_session_this_process_has_open_reopens_it(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    """An editor reopening its thread: the same process loads the session again and replays it."""
    model.add({"text": "first answer"})
    client = spawn()
    sid = client.new_session(ws)
    client.prompt(sid, "first question")
    pending = client.start("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    pending.result()
    replayed = client.updates(sid, "user_message_chunk")
    assert [u["content"]["text"] for u in replayed] == ["first question"]
    model.add({"text": "second answer", "require": ["first question", "first answer"]})
    assert client.prompt(sid, "second question") == {"stopReason": "end_turn"}
    assert model.errors == []


def test_rewind_through_request_permission(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    """/rewind as an ACP command: the list, then /rewind 1 asks with the diff first (docs/BEHAVIOUR.md, "Rewind")."""
    (ws / "a.txt").write_text("one\n")
    model.add(
        {
            "calls": [
                {"name": "edit_file", "arguments": {"path": "a.txt", "old_text": "one", "new_text": "ONE"}}
            ]
        },
        {"calls": [{"name": "bash", "arguments": {"command": "true"}}]},
        {"text": "done"},
    )
    client = spawn(args=["--mode", "bypass"], handlers={"session/request_permission": lambda p: APPROVE})
    sid = client.new_session(ws)
    client.prompt(sid, "change a")
    assert (ws / "a.txt").read_text() == "ONE\n"

    def said(text: str) -> str:
        before = len(client.agent_text(sid))
        assert client.prompt(sid, text) == {"stopReason": "end_turn"}
        return client.agent_text(sid)[before:]

    listed = said("/rewind")
    assert listed.startswith("1. ") and "1 file(s): change a (bash commands are not undone)" in listed
    assert "Rewound 1 file(s); the conversation continues from before turn 1." in said("/rewind 1")
    assert (ws / "a.txt").read_text() == "one\n"
    (asked,) = [r for r in client.incoming_requests if r["method"] == "session/request_permission"]
    call = asked["params"]["toolCall"]
    assert call["title"] == "Rewind 1 file(s) to before turn 1?" and call["kind"] == "edit"
    assert call["content"][0] == {
        "type": "diff",
        "path": str(ws.resolve() / "a.txt"),
        "oldText": "ONE\n",
        "newText": "one\n",
    }
    assert "restore a.txt\n(bash commands are not undone)" in call["content"][1]["content"]["text"]
    assert said("/rewind").startswith("Nothing to rewind.\nCheckpoints of this session: ")


# ---- ACP as the editors use it: config options, usage, titles, resume, close, client files ---------


def fs_client(
    spawn: Spawn, buffers: dict[Path, str], read: bool = True, write: bool = True, **handlers: Any
) -> AcpClient:
    """A client that holds `buffers` (real path → unsaved text) and offers fs/* for them; a path
    without a buffer is answered from disk, as an editor does. Every write lands in `buffers`."""

    def read_text(params: dict[str, Any]) -> Any:
        path = Path(params["path"])
        return {"content": buffers[path] if path in buffers else path.read_text()}

    def write_text(params: dict[str, Any]) -> Any:
        buffers[Path(params["path"])] = params["content"]
        return {}

    table: dict[str, Any] = {
        "session/request_permission": lambda p: APPROVE,
        "fs/read_text_file": read_text,
        "fs/write_text_file": write_text,
    }
    table.update({k.replace("__", "/"): v for k, v in handlers.items()})
    client = spawn(handlers=table, init=False)
    client.request(
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": read, "writeTextFile": write}}},
    )
    return client


def asked(client: AcpClient, method: str) -> list[dict[str, Any]]:
    return [r["params"] for r in client.incoming_requests if r["method"] == method]


def edit_call(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


def test_config_options_pick_the_mode_and_the_model_per_session(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path
) -> None:
    (home / "config.yaml").write_text(
        'sandbox: "off"\nmodel: small-model\nmodels: [large-model, small-model]\n'
    )
    client = spawn()
    result = client.request("session/new", {"cwd": str(ws), "mcpServers": []})
    sid = result["sessionId"]
    mode, model_option, thought = result["configOptions"]
    assert thought["id"] == thought["category"] == "thought_level" and thought["currentValue"] == "default"
    assert [o["value"] for o in thought["options"]] == ["default", "minimal", "low", "medium", "high"]
    assert mode == {
        "id": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "manual",
        "options": mode["options"],
    }
    assert [o["value"] for o in mode["options"]] == ["manual", "accept-edits", "bypass", "plan"]
    assert model_option == {
        "id": "model",
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": "small-model",
        "options": [
            {"value": "small-model", "name": "small-model"},
            {"value": "large-model", "name": "large-model"},
        ],
    }
    assert result["modes"]["currentModeId"] == "manual"  # modes stay for clients without config options

    answer = client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "large-model"}
    )
    assert [o["currentValue"] for o in answer["configOptions"]] == ["manual", "large-model", "default"]
    other = client.new_session(ws)  # another session keeps the configured model
    model.add({"text": "from large"}, {"text": "from small"})
    client.prompt(sid, "hello")
    client.prompt(other, "hello")
    assert [r["model"] for r in model.requests] == ["large-model", "small-model"]

    answer = client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "bypass"}
    )
    assert [o["currentValue"] for o in answer["configOptions"]] == ["bypass", "large-model", "default"]
    client.wait_for(lambda: client.updates(sid, "current_mode_update"))
    assert client.updates(sid, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "bypass"}
    ]
    for bad in (
        {"configId": "model", "value": "gpt-unknown"},
        {"configId": "mode", "value": "yolo"},
        {"configId": "temperature", "value": "1"},
        {"configId": "model", "value": 3},
        {"configId": "thought_level", "value": "max"},
    ):
        assert client.error("session/set_config_option", {"sessionId": sid, **bad}).code == -32602
    # the thought level: sent as the reasoning effort, and the summaries come back as thoughts
    answer = client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "high"}
    )
    assert [o["currentValue"] for o in answer["configOptions"]] == ["bypass", "large-model", "high"]
    model.add({"reasoning": "Greeting; keep it short.", "text": "hi"})
    client.prompt(sid, "hello again")
    assert model.requests[-1]["reasoning"] == {"effort": "high", "summary": "auto"}
    thoughts = client.updates(sid, "agent_thought_chunk")
    assert [t["content"]["text"] for t in thoughts] == ["Greeting; keep it short.\n"]
    assert "Greeting" not in json.dumps(client.updates(sid, "agent_message_chunk"))
    client.request(
        "session/set_config_option", {"sessionId": sid, "configId": "thought_level", "value": "default"}
    )
    # session/set_mode stays, and the config options follow it
    client.request("session/set_mode", {"sessionId": sid, "modeId": "accept-edits"})
    client.wait_for(lambda: client.updates(sid, "config_option_update"))
    (update,) = client.updates(sid, "config_option_update")
    assert [o["currentValue"] for o in update["configOptions"]] == ["accept-edits", "large-model", "default"]
    assert client.close() == 0

    # the model picked in a session is picked again when it is resumed or loaded
    again = spawn()
    for method in ("session/resume", "session/load"):
        result = again.request(method, {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        assert [o["currentValue"] for o in result["configOptions"]] == ["manual", "large-model", "default"]
    model.add({"text": "still large"})
    again.prompt(sid, "and now?")
    assert model.requests[-1]["model"] == "large-model"


def test_usage_update_after_every_response_that_reports_usage(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add(
        {
            "calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
            "usage": {"input_tokens": 1200},
        },
        {"text": "no usage reported", "usage": None},
    )
    client = spawn()
    sid = client.new_session(ws)
    client.prompt(sid, "read")
    assert client.updates(sid, "usage_update") == [
        {"sessionUpdate": "usage_update", "used": 1200, "size": 128000}
    ]


def test_a_session_gets_its_title_from_its_first_message(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    client = spawn()
    sid = client.new_session(ws)
    client.prompt(sid, "\n   Fix the \x1b[31mparser\u200b  bug\nand more lines")
    client.prompt(sid, "a second message")
    (info,) = client.updates(sid, "session_info_update")
    assert info["title"] == "Fix the \\x1b[31mparser\\u200b bug"  # escaped: nothing invisible
    assert info["updatedAt"].endswith("Z")
    long = client.new_session(ws)
    client.prompt(long, "word " * 40)
    (info,) = client.updates(long, "session_info_update")
    assert len(info["title"]) == 80 and info["title"].endswith("…")
    titles = {s["sessionId"]: s.get("title") for s in client.request("session/list", {})["sessions"]}
    assert titles[sid] == "Fix the \\x1b[31mparser\\u200b bug" and titles[long] == info["title"]
    assert client.close() == 0
    again = spawn()
    again.request("session/resume", {"sessionId": sid, "cwd": str(ws)})
    again.wait_for(lambda: again.updates(sid, "session_info_update"))  # a reopened thread is told its title
    assert again.updates(sid, "session_info_update")[0]["title"] == "Fix the \\x1b[31mparser\\u200b bug"


def test_resume_is_load_without_the_replay(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"text": "answer A"})
    first = spawn()
    sid = first.new_session(ws)
    first.prompt(sid, "question A")
    assert first.close() == 0
    second = spawn()
    result = second.request("session/resume", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    assert result["modes"]["currentModeId"] == "manual" and len(result["configOptions"]) == 3
    second.wait_for(lambda: second.updates(sid, "available_commands_update"))
    assert (
        second.updates(sid, "user_message_chunk") == [] and second.updates(sid, "agent_message_chunk") == []
    )
    model.add({"text": "A again", "require": ["question A", "answer A"]})
    second.prompt(sid, "follow-up")
    assert model.errors == []
    assert second.error("session/resume", {"sessionId": "0" * 32, "cwd": str(ws)}).code == -32002
    assert second.error("session/resume", {"sessionId": "nope", "cwd": str(ws)}).code == -32002


@many_connections
def test_close_cancels_the_turn_and_frees_the_session_for_another_process_at_once(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add({"calls": [write_call("out.txt", "x")]})
    first = spawn(handlers={"session/request_permission": lambda p: NO_ANSWER})
    sid = first.new_session(ws)
    pending = first.start("session/prompt", first.prompt_params(sid, "write it"))
    first.wait_incoming_request("session/request_permission")
    assert first.request("session/close", {"sessionId": sid}) == {}
    assert pending.result() == {"stopReason": "cancelled"}
    assert not (ws / "out.txt").exists()
    # the first process still runs; the session is free for a second one at once
    second = spawn()
    second.request("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    assert first.error("session/prompt", first.prompt_params(sid, "again")).code == -32002
    assert first.error("session/close", {"sessionId": sid}).code == -32002
    assert first.error("session/close", {"sessionId": "0" * 32}).code == -32002
    first.new_session(ws)  # the process is unharmed


def test_raw_input_is_the_models_arguments(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    args = {"command": "echo \x1b[2J hi"}
    model.add({"calls": [{"name": "bash", "arguments": args}]}, {"text": "done"})
    client = spawn(handlers={"session/request_permission": lambda p: DENY})
    sid = client.new_session(ws)
    client.prompt(sid, "run")
    (start,) = client.updates(sid, "tool_call")
    assert start["rawInput"] == args  # data for the client, as the model sent it
    assert start["title"] == "bash: echo \\x1b[2J hi"  # what a person reads stays escaped
    assert "\x1b" not in json.dumps([start["title"], start["content"]], ensure_ascii=False)


def test_a_client_with_fs_reads_its_buffers_and_writes_through_it(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    notes = ws.resolve() / "notes.txt"
    buffers = {notes: "unsaved buffer text\n"}
    model.add(
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"calls": [edit_call("notes.txt", "unsaved", "edited")], "require": "unsaved buffer text"},
        {"calls": [write_call("new.txt", "made\n")]},
        {"calls": [{"name": "bash", "arguments": {"command": "true"}}]},
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "done"},
    )
    client = fs_client(spawn, buffers)
    sid = client.new_session(ws)
    client.prompt(sid, "edit my notes", timeout=60)
    assert model.errors == []
    # the model got the buffer, the approval showed it, the write went to the client, not the disk
    assert "unsaved buffer text" in request_texts(model, 1) and "line one" not in request_texts(model, 1)
    (edit, write) = [a["toolCall"] for a in asked(client, "session/request_permission")][:2]
    assert edit["content"][0]["oldText"] == "unsaved buffer text\n"
    assert edit["content"][0]["newText"] == "edited buffer text\n"
    assert buffers[notes] == "edited buffer text\n" and buffers[ws.resolve() / "new.txt"] == "made\n"
    assert (
        notes.read_text() == "line one\nline two\nline three\nline four\n" and not (ws / "new.txt").exists()
    )
    writes = asked(client, "fs/write_text_file")
    assert [(w["sessionId"], w["path"]) for w in writes] == [
        (sid, str(notes)),
        (sid, str(ws.resolve() / "new.txt")),
    ]
    # after bash, the file is read again through the client (no earlier read is trusted)
    reads = [r["path"] for r in asked(client, "fs/read_text_file")]
    assert reads.count(str(notes)) >= 4  # read_file, the approval, the write's check, read_file after bash
    assert "edited buffer text" in request_texts(model, 5)


def test_a_client_without_fs_is_never_asked(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    model.add({"calls": [edit_call("notes.txt", "one", "ONE")]}, {"text": "done"})
    client = fs_client(spawn, {}, read=False, write=False)
    sid = client.new_session(ws)
    client.prompt(sid, "edit")
    assert (ws / "notes.txt").read_text().startswith("line ONE\n")
    assert asked(client, "fs/read_text_file") == [] and asked(client, "fs/write_text_file") == []


def test_an_fs_write_is_bound_to_the_text_the_client_returned(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    notes = ws.resolve() / "notes.txt"
    buffers = {notes: "one\n"}

    def approve_then_type(params: dict[str, Any]) -> Any:
        buffers[notes] = "one, typed on after the question\n"
        return APPROVE

    model.add(
        {"calls": [edit_call("notes.txt", "one", "two")]},
        {"text": "done", "require": "changed after approval"},
    )
    client = fs_client(spawn, buffers, session__request_permission=approve_then_type)
    sid = client.new_session(ws)
    client.prompt(sid, "edit")
    assert model.errors == []
    assert (
        buffers[notes] == "one, typed on after the question\n" and asked(client, "fs/write_text_file") == []
    )
    (end,) = client.updates(sid, "tool_call_update")[-1:]
    assert end["status"] == "failed"


@pytest.mark.parametrize(
    "read, expected",
    [
        (
            lambda p: (_ for _ in ()).throw(RpcError(-32603, "buffer\n\x1b[2Jis gone")),
            "The editor could not read notes.txt: buffer \\x1b[2Jis gone.",
        ),
        (lambda p: {"content": 42}, "The editor's answer for notes.txt is not text; nothing was read."),
        (lambda p: "just a string", "The editor's answer for notes.txt is not text; nothing was read."),
    ],
)
def test_a_hostile_or_failing_client_read_fails_the_one_call(
    spawn: Spawn, model: ScriptedModel, ws: Path, read: Any, expected: str
) -> None:
    model.add(
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "goes on", "require": expected},
    )
    client = fs_client(spawn, {}, fs__read_text_file=read)
    sid = client.new_session(ws)
    assert client.prompt(sid, "read") == {"stopReason": "end_turn"}
    assert model.errors == []


def test_a_failing_client_write_writes_nothing_and_says_so(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    def refuse(params: dict[str, Any]) -> Any:
        raise RpcError(-32603, "read-only buffer")

    expected = "The editor could not write notes.txt: read-only buffer; nothing was written."
    model.add({"calls": [edit_call("notes.txt", "one", "ONE")]}, {"text": "goes on", "require": expected})
    client = fs_client(spawn, {}, fs__write_text_file=refuse)
    sid = client.new_session(ws)
    assert client.prompt(sid, "edit") == {"stopReason": "end_turn"}
    assert model.errors == [] and (ws / "notes.txt").read_text().startswith("line one\n")


def test_cancel_works_while_the_client_never_answers_a_read(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add({"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})
    client = fs_client(spawn, {}, fs__read_text_file=lambda p: NO_ANSWER)
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "read"))
    client.wait_incoming_request("fs/read_text_file")
    client.notify("session/cancel", {"sessionId": sid})
    assert pending.result() == {"stopReason": "cancelled"}


def test_an_answer_too_long_to_read_fails_the_read_it_answered(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add(
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "goes on", "require": "longer than"},
    )
    client = fs_client(spawn, {}, fs__read_text_file=lambda p: NO_ANSWER)
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "read"))
    request = client.wait_incoming_request("fs/read_text_file")
    head = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"content": ""}})[:-3].encode()
    client.write_raw(head + b"x" * (33 * 1024 * 1024) + b'"}}\n')
    assert pending.result(timeout=60) == {"stopReason": "end_turn"}
    assert model.errors == []
    client.violations.clear()  # the -32600 answer to the skipped line has no id the SDK expects


@many_connections
def test_rewind_restores_through_the_client(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    notes = ws.resolve() / "notes.txt"
    buffers = {notes: "buffer one\n"}
    model.add({"calls": [edit_call("notes.txt", "one", "ONE")]}, {"text": "done"})
    client = fs_client(spawn, buffers)
    sid = client.new_session(ws)
    client.prompt(sid, "change it")
    assert buffers[notes] == "buffer ONE\n"
    client.prompt(sid, "/rewind 1")
    assert buffers[notes] == "buffer one\n"  # the state before the turn, as the client held it
    assert notes.read_text().startswith("line one\n")


def test_the_readme_editor_snippets_say_what_the_editors_need() -> None:
    """README, "In other editors": the JSON snippets parse and start `mino --acp`; avante's passes
    what Mino reads from the environment (avante gives an agent PATH and its `env` only) and keeps
    Mino's approvals on."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("### In other editors", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```json\n(.*?)```", section, re.S)
    assert len(snippets) == 2  # Zed, JetBrains
    for text in snippets:
        (server,) = json.loads(text)["agent_servers"].values()
        assert server["args"] == ["--acp"] and server["command"].endswith("/bin/mino")
    zed = json.loads(snippets[0])["agent_servers"]["Mino"]
    assert (
        zed["default_mode"] in ("manual", "accept-edits", "bypass")
        and "model" in zed["default_config_options"]
    )
    assert "Configure ACP Agents" in section
    avante = re.search(r"```lua\nrequire\(\"avante\"\).*?```", section, re.S)
    assert avante is not None
    for needed in (
        "MINO_BASE_URL",
        "MINO_API_KEY",
        "HOME = ",
        "MINO_HOME",
        "auto_approve_tool_permissions = false",
    ):
        assert needed in avante.group(), needed


# ---- cancel means stop ----------------------------------------------------------------------------


def interrupted_then_next(requests: list[dict[str, Any]]) -> list[Any]:
    """The messages of the request after an interrupted turn (role, content), without the front item."""
    return [(m["role"], m["content"]) for m in requests[-1]["input"] if m.get("type", "message") == "message"]


def test_a_cancelled_turn_is_kept_and_the_next_prompt_stands_alone(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path
) -> None:
    """Cancel after the answer streamed (the scripted reply holds back its end): the log keeps the
    user message, the partial answer marked interrupted and an `interrupted` record; the next
    request sends them as separate messages with the line telling the model not to carry on, and
    session/load shows the partial answer marked."""
    from mino_server.core.sessions.log import INTERRUPTED_NOTE

    model.add({"text": "I am being very slow about this", "hold": True}, {"text": "hello"})
    client = spawn()
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "Please be SLOW."))
    client.wait_for(lambda: "slow about this" in client.agent_text(sid), what="the streamed answer")
    client.notify("session/cancel", {"sessionId": sid})
    assert pending.result() == {"stopReason": "cancelled"}
    assert client.prompt(sid, "Please SAY hello after the cancel.") == {"stopReason": "end_turn"}
    messages = interrupted_then_next(model.requests)
    assert messages[-3:] == [
        ("user", "Please be SLOW."),
        ("assistant", f"I am being very slow about this\n\n{INTERRUPTED_NOTE}"),
        ("user", "Please SAY hello after the cancel."),
    ]
    records = [json.loads(line) for line in (sessions_dir(home) / f"{sid}.jsonl").read_text().splitlines()]
    kinds = [
        (r["type"], r.get("text"), r.get("interrupted"), r.get("status"))
        for r in records
        if r["type"] != "session_skills"
    ]
    assert kinds[:4] == [
        ("user_message", "Please be SLOW.", None, None),
        ("assistant_message", "I am being very slow about this", True, None),
        ("interrupted", None, None, None),
        ("turn_end", None, None, "interrupted"),
    ]
    assert client.close() == 0

    second = spawn()
    load = second.start("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
    load.result()
    shown = [u["content"]["text"] for u in second.updates(sid) if u["sessionUpdate"].endswith("_chunk")]
    assert shown[:2] == ["Please be SLOW.", "I am being very slow about this\n\n[interrupted]"]


def test_a_turn_cancelled_before_any_answer_still_tells_the_model(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    from mino_server.core.sessions.log import INTERRUPTED_NOTE

    model.add({"calls": [write_call("a.txt", "a")]}, {"text": "hello"})
    client = spawn(handlers={"session/request_permission": lambda p: NO_ANSWER})
    sid = client.new_session(ws)
    pending = client.start("session/prompt", client.prompt_params(sid, "write it"))
    client.wait_incoming_request("session/request_permission")
    client.notify("session/cancel", {"sessionId": sid})
    assert pending.result() == {"stopReason": "cancelled"}
    assert client.prompt(sid, "no, just say hello") == {"stopReason": "end_turn"}
    items = model.requests[-1]["input"]
    tail = [(i.get("type"), i.get("role"), i.get("content")) for i in items][-5:]
    assert tail[0] == ("message", "user", "write it")
    assert [t[0] for t in tail[1:3]] == ["function_call", "function_call_output"]
    assert tail[3:] == [
        ("message", "assistant", INTERRUPTED_NOTE),
        ("message", "user", "no, just say hello"),
    ]
    assert not (ws / "a.txt").exists()


# ---- editors that do not answer -------------------------------------------------------------------


def slow_editor(home: Path) -> None:
    (home / "config.yaml").write_text('sandbox: "off"\nclient_timeout_s: 1\n')


def test_a_read_the_editor_never_answers_fails_the_call_and_the_turn_goes_on(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path
) -> None:
    slow_editor(home)
    line = "The editor did not answer fs/read_text_file for notes.txt within 1 s; nothing was read."
    model.add(
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "goes on", "require": line},
        {"text": "next"},
    )
    client = fs_client(spawn, {}, fs__read_text_file=lambda p: NO_ANSWER)
    sid = client.new_session(ws)
    assert client.prompt(sid, "read") == {"stopReason": "end_turn"}
    assert model.errors == []
    # The answer that comes after the time allowed is ignored; the session is not busy.
    (request,) = [r for r in client.incoming_requests if r["method"] == "fs/read_text_file"]
    client.answer(request, {"content": "late"})
    assert client.prompt(sid, "again") == {"stopReason": "end_turn"}
    assert model.errors == []


@pytest.mark.parametrize("writes_anyway", [True, False])
def test_a_write_the_editor_never_answers_counts_only_if_the_file_holds_it(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, writes_anyway: bool
) -> None:
    """As avante does: the editor writes the file and never answers. The call is completed when
    the file holds the approved content, and fails with nothing written when it does not."""
    slow_editor(home)

    def write_text(params: dict[str, Any]) -> Any:
        if writes_anyway:
            Path(params["path"]).write_text(params["content"])
        return NO_ANSWER

    expected = (
        "[status: completed]\nWrote 3 bytes to new.txt (the editor wrote it without answering)"
        if writes_anyway
        else "The editor did not answer fs/write_text_file for new.txt within 1 s; nothing was written."
    )
    model.add({"calls": [write_call("new.txt", "new")]}, {"text": "goes on", "require": expected})
    client = fs_client(spawn, {}, fs__write_text_file=write_text)
    sid = client.new_session(ws)
    assert client.prompt(sid, "write") == {"stopReason": "end_turn"}
    assert model.errors == []
    assert (ws / "new.txt").exists() is writes_anyway
    (done,) = [
        u for u in client.updates(sid, "tool_call_update") if u.get("status") in ("completed", "failed")
    ]
    assert done["status"] == ("completed" if writes_anyway else "failed")


HOLDER = """
import sys, time
from pathlib import Path
from mino_server.core.sessions.store import SessionStore
store = SessionStore(Path(sys.argv[1]))
claim = store.claim(sys.argv[2], "/elsewhere")
if sys.argv[3] == "exiting":
    claim.mark_exiting()
print("held", flush=True)
time.sleep(float(sys.argv[4]))
claim.release()
"""


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_opening_a_session_whose_holder_is_exiting_waits_for_it(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, method: str
) -> None:
    """An editor reopened at once: the old process still holds the session while it exits. The
    load waits for it (up to 5 s) instead of answering -32006; a holder that is not exiting is
    refused at once, as before."""
    sid = SessionStore(sessions_dir(home)).create()
    params = {"sessionId": sid, "cwd": str(ws), "mcpServers": []}
    client = spawn()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(sessions_dir(home)), sid, "staying", "30"], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert client.error(method, params).code == -32006
    finally:
        holder.kill()
        holder.wait()
    exiting = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(sessions_dir(home)), sid, "exiting", "1"], stdout=subprocess.PIPE
    )
    try:
        assert exiting.stdout is not None and exiting.stdout.readline() == b"held\n"
        assert "modes" in client.request(method, params)
        assert exiting.wait(timeout=30) == 0  # it released the session itself: the load waited
    finally:
        exiting.kill()
        exiting.wait()


def test_file_tools_carry_absolute_locations_on_the_call_and_the_permission(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add(
        {"calls": [edit_call("notes.txt", "line two", "LINE TWO")]},
        {"calls": [{"name": "read_file", "arguments": {"path": "notes.txt", "start_line": 3}}]},
        {"text": "done"},
    )
    client = spawn(handlers={"session/request_permission": lambda p: APPROVE})
    sid = client.new_session(ws)
    assert client.prompt(sid, "edit") == {"stopReason": "end_turn"}
    where = str(ws / "notes.txt")
    (asked,) = [r["params"] for r in client.incoming_requests if r["method"] == "session/request_permission"]
    assert asked["toolCall"]["locations"] == [{"path": where}]
    edit, read = client.updates(sid, "tool_call")
    assert edit["locations"] == [{"path": where}]
    assert read["locations"][0]["path"] == where


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
def test_an_mcp_servers_elicitation_is_a_permission_request(
    spawn: Spawn, model: ScriptedModel, ws: Path, home: Path, tmp_path: Path, answer: str
) -> None:
    """elicitation/create from an MCP server during its tool call: the person is asked through
    session/request_permission with the server's message and fields escaped; yes accepts with the
    defaults shown, no declines."""
    import yaml

    fixture = [sys.executable, "-m", "mino_server.testing.mcp_fixture"]
    servers = {"fx": {"command": fixture, "start_timeout_s": 120}}
    (home / "config.yaml").write_text(yaml.safe_dump({"sandbox": "off", "mcp_servers": servers}))
    expected = (
        "action=accept data={'proceed': True, 'note': 'none'}" if answer == "allow_once" else "action=decline"
    )
    model.add({"calls": [{"name": "mcp__fx__ask", "arguments": {}}]}, {"text": "ok", "require": expected})
    outcome = {"outcome": {"outcome": "selected", "optionId": answer}}
    client = spawn(handlers={"session/request_permission": lambda p: outcome}, args=["--mode", "bypass"])
    sid = client.new_session(ws)
    deadline = time.monotonic() + 120  # the fixture's start can be slow on a loaded machine
    while "ready" not in client.agent_text(sid):
        assert time.monotonic() < deadline, "the fixture server did not start"
        client.prompt(sid, "/mcp")  # lists the servers and their states
        time.sleep(0.5)
    assert client.prompt(sid, "ask me", timeout=120) == {"stopReason": "end_turn"}
    assert model.errors == []
    (asked,) = [r["params"] for r in client.incoming_requests if r["method"] == "session/request_permission"]
    call = asked["toolCall"]
    assert call["title"] == "MCP server question" and call["kind"] == "other"
    text = call["content"][0]["content"]["text"]
    assert 'Message: "Deploy to \\x1b[31mproduction\\x1b[0m?"' in text
    assert 'field proceed: "true (boolean; go ahead \\x1b[31mnow\\x1b[0m)"' in text
    assert 'field note: "none (string; anything to add)"' in text
    assert 'Server: "fx"\nYes sends the defaults shown; no declines.\nAnswer the server?' in text
    assert "\x1b" not in json.dumps(asked, ensure_ascii=False)
