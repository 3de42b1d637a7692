"""MCP servers as tools (docs/BEHAVIOUR.md, "MCP servers"), against the fixture server on the
official SDK (mino_server/testing/mcp_fixture.py) run as a real stdio subprocess: names, the
decision table, what the question shows, results, isError, a server dying mid-call, cancel
(`notifications/cancelled` arrives), the API key variables, one start per session, no orphans."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import (
    RecordingUI,
    conversation_with_servers,
    make_conversation,
    mino_env,
    quiet_home,
    read_jsonl,
    running,
    session_records,
    turn,
    wait_until,
)
from rpc_client import HANG_S
from server_client import Client

from mino_server.core import opening
from mino_server.core.cancel import CancelToken
from mino_server.core.mcp import (
    MAX_TOOL_NAME,
    ServerSpec,
    parse_servers,
    server_env,
    tool_name,
    with_client_servers,
)
from mino_server.testing.scripted_model import ScriptedModel

FIXTURE = [sys.executable, "-m", "mino_server.testing.mcp_fixture"]
MINO = [sys.executable, "-m", "mino_server.main"]


def write_config(home: Path, servers: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"sandbox": "off", "mcp_servers": servers}))


# The fixture's start (Python and the SDK's server side) can take over 10 s on a loaded machine:
# the tests give it longer, and test the 10 s default apart.
SLOW_START = 120


def fixture_server(record: Path, **more: Any) -> dict[str, Any]:
    env = {"MCP_FIXTURE_RECORD": str(record), **more.pop("env", {})}
    return {"command": FIXTURE, "env": env, "start_timeout_s": SLOW_START, **more}


@pytest.fixture
def record(mino_home: Path, tmp_path: Path) -> Path:
    """The fixture server configured as `fx`; returns the file it records each call in."""
    record = tmp_path / "calls.jsonl"
    write_config(mino_home, {"fx": fixture_server(record)})
    return record


# ---- names, configuration, environment ------------------------------------------------------------


def test_tool_names_are_safe_bounded_and_unique() -> None:
    taken: set[str] = set()
    assert tool_name("git", "git_status", taken) == "mcp__git__git_status"
    assert tool_name("my server", "do.it/now", taken) == "mcp__my_server__do_it_now"
    long = tool_name("s" * 40, "t" * 40, taken)
    assert len(long) == MAX_TOOL_NAME and long.startswith("mcp__sss")
    again = tool_name("s" * 40, "t" * 40, taken)
    assert again != long and len(again) == MAX_TOOL_NAME and again.endswith("_2")
    assert tool_name("a.b", "c", taken) == "mcp__a_b__c" and tool_name("a_b", "c", taken) == "mcp__a_b__c_2"


def test_client_servers_never_replace_configured_ones() -> None:
    configured = (ServerSpec(name="git", command=("git-server",)),)
    client = [ServerSpec(name="git", url="http://127.0.0.1:1/mcp", origin="client")]
    merged = with_client_servers(configured, client)
    assert [(s.name, s.origin) for s in merged] == [("git", "config"), ("git-2", "client")]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ([], "must be a mapping of server names"),
        ({"git": {"command": "uvx mcp-server-git"}}, 'write it as ["uvx", "mcp-server-git"]'),
        ({"git": {}}, "needs exactly one of 'command'"),
        ({"git": {"command": ["x"], "url": "http://h"}}, "needs exactly one of 'command'"),
        ({"w": {"url": "ftp://h"}}, "'mcp_servers.w.url' must start with http:// or https://"),
        ({"w": {"url": "http://h", "env": {}}}, "'mcp_servers.w.env' is for a server started as a command"),
        ({"g": {"command": ["x"], "allow": "all"}}, "'mcp_servers.g.allow' must be a list of tool names"),
        ({"g": {"command": ["x"], "env": {"A": 1}}}, "'mcp_servers.g.env' must be a mapping of names"),
        ({"g": {"command": ["x"], "tools": []}}, "unknown key 'tools'"),
        ({"a\x1b[2Jb": {"command": ["x"]}}, "a server name must be 1 to 64 printable characters"),
        ({"g": {"command": ["x"], "start_timeout_s": 0}}, "'mcp_servers.g.start_timeout_s' must be a number"),
    ],
)
def test_bad_configuration_is_one_clear_line(raw: Any, says: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_servers(raw, "mcp_servers")
    assert says in str(info.value)


def test_a_bad_mcp_servers_entry_stops_mino_with_the_file_and_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home, {"git": {"command": "uvx mcp-server-git"}})
    env = mino_env(home, "http://127.0.0.1:9/v1")
    done = subprocess.run([*MINO, "-p", "hi"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{home / 'config.yaml'}: 'mcp_servers.git.command' must be a list" in done.stderr


def test_the_start_is_bounded(model: ScriptedModel, workdir: Path, mino_home: Path) -> None:
    """A server that never answers the handshake fails after its start timeout (10 s unless set)."""
    assert parse_servers({"s": {"command": ["x"]}}, "m")[0].start_timeout_s == 10.0
    write_config(mino_home, {"mute": {"command": ["sleep", "600"], "start_timeout_s": 1}})
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, wait_s=60)
    try:
        (status,) = conversation.state().mcp or []
        assert status.state == "failed" and status.error == "did not start within 1 s"
    finally:
        conversation.close()


def test_servers_do_not_see_the_api_key_variables_unless_env_names_them() -> None:
    base = {"MINO_API_KEY": "k1", "OPENAI_API_KEY": "k2", "MY_MODEL_KEY": "k3", "PATH": "/bin"}
    hidden = frozenset({"MINO_API_KEY", "OPENAI_API_KEY", "MY_MODEL_KEY"})
    plain = server_env(ServerSpec(name="s", command=("x",)), hidden, base)
    assert plain == {"PATH": "/bin"}
    named = server_env(ServerSpec(name="s", command=("x",), env=(("OPENAI_API_KEY", "mine"),)), hidden, base)
    assert named == {"PATH": "/bin", "OPENAI_API_KEY": "mine"}


# ---- calls through the core ----------------------------------------------------------------------


def test_a_call_asks_shows_server_and_arguments_and_returns_the_text(
    model: ScriptedModel, workdir: Path, record: Path
) -> None:
    model.add(
        {"calls": [{"name": "mcp__fx__echo", "arguments": {"text": "hi\x1b[31m"}, "call_id": "c1"}]},
        {"text": "done"},
    )
    ui = RecordingUI(approvals=[True])
    conversation = conversation_with_servers(model.base_url, workdir, ui)
    try:
        names = [t["name"] for t in model_tools(conversation)]
        assert "mcp__fx__echo" in names and "read_file" in names
        result = turn(conversation, "echo it")
        assert result.status == "completed"
        (asked,) = ui.asked
        assert asked.tool == "mcp__fx__echo"
        arg, server = asked.fields  # Mino's field last; the server's names set apart
        assert server[0] == "Server" and server[1].startswith("fx (") and "mcp_fixture" in server[1]
        assert arg == ("argument text", "hi\\x1b[31m")  # escaped like every field
        output = json.loads(json.dumps(model.requests[1]["input"]))[-1]
        assert output["type"] == "function_call_output" and "hi" in output["output"]
        assert [r["tool"] for r in read_jsonl(record)] == ["echo"]
        state = conversation.state().mcp
        assert state is not None and [(s.name, s.state, s.tools) for s in state] == [("fx", "ready", 9)]
    finally:
        conversation.close()


def model_tools(conversation: Any) -> list[dict[str, Any]]:
    from mino_server.core.tools.registry import tool_schemas

    return tool_schemas(conversation.turn_tools())


@pytest.mark.parametrize(
    ("mode", "allow", "asks"),
    [
        ("manual", [], True),
        ("manual", ["echo"], True),
        ("accept-edits", [], True),
        ("accept-edits", ["echo"], False),
        ("bypass", [], False),
    ],
)
def test_the_decision_table_for_mcp_tools(
    model: ScriptedModel,
    workdir: Path,
    mino_home: Path,
    tmp_path: Path,
    mode: str,
    allow: list[str],
    asks: bool,
) -> None:
    record = tmp_path / "calls.jsonl"
    write_config(mino_home, {"fx": fixture_server(record, allow=allow)})
    model.add({"calls": [{"name": "mcp__fx__echo", "arguments": {"text": "x"}}]}, {"text": "ok"})
    ui = RecordingUI(approvals=[False])  # a question is denied: nothing reaches the server
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode=mode)
    try:
        turn(conversation, "go")
        (call,) = ui.of_type("tool_call")
        assert call["decision"] == ("ask" if asks else "show")
        assert len(ui.asked) == (1 if asks else 0)
        assert len(read_jsonl(record)) == (0 if asks else 1)
    finally:
        conversation.close()


def test_is_error_other_content_and_escape_sequences(
    model: ScriptedModel, workdir: Path, record: Path
) -> None:
    model.add(
        {
            "calls": [
                {"name": "mcp__fx__fail", "arguments": {"text": "x"}, "call_id": "a"},
                {"name": "mcp__fx__picture", "arguments": {}, "call_id": "b"},
                {"name": "mcp__fx__hostile", "arguments": {"who": "me"}, "call_id": "c"},
            ]
        },
        {"text": "ok"},
    )
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        turn(conversation, "go")
        results = {e["callId"]: e for e in ui.of_type("tool_result")}
        assert results["a"]["status"] == "failed" and "failed on purpose: x" in results["a"]["text"]
        assert results["b"]["status"] == "completed"
        assert results["b"]["text"] == "a picture:\n[image content not shown]"
        assert "\x1b" not in results["c"]["text"] and "\x07" not in results["c"]["text"]
        sent = json.dumps(model.requests[0]["tools"]) + json.dumps(model.requests[1]["input"])
        assert "\\u001b" not in sent and "\\u0007" not in sent  # neither description nor result
    finally:
        conversation.close()


def test_a_result_the_sdk_refuses_fails_the_call_and_keeps_the_server(
    model: ScriptedModel, workdir: Path, record: Path
) -> None:
    """The SDK raises RuntimeError for a result it will not take (structured content against the
    tool's output schema, say) while the server runs on: that call fails, the server keeps its tools."""
    model.add({"calls": [{"name": "mcp__fx__echo", "arguments": {"text": "x"}}]}, {"text": "ok"})
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        assert conversation.mcp is not None
        connection = conversation.mcp.servers[0].connection

        async def refuse(tool: str, arguments: dict[str, Any]) -> Any:
            raise RuntimeError("Invalid structured content returned by tool echo")

        connection.session.call_tool = refuse  # type: ignore[union-attr]
        turn(conversation, "go")
        (result,) = ui.of_type("tool_result")
        assert result["status"] == "failed"
        assert result["text"] == "MCP error: Invalid structured content returned by tool echo"
        (status,) = conversation.state().mcp or []
        assert status.state == "ready" and status.tools > 0
        assert not [e for e in ui.of_type("notice") if e["text"].startswith("MCP server fx")]
    finally:
        conversation.close()


def test_a_server_dying_mid_call_fails_the_call_once_and_its_tools_go(
    model: ScriptedModel, workdir: Path, record: Path
) -> None:
    model.add(
        {"calls": [{"name": "mcp__fx__die", "arguments": {"text": "x"}}]}, {"text": "ok"}, {"text": "two"}
    )
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        turn(conversation, "go")
        (result,) = ui.of_type("tool_result")
        assert result["status"] == "failed" and result["text"].startswith(
            "MCP server fx stopped during the call"
        )
        turn(conversation, "again")
        lines = [e["text"] for e in ui.of_type("notice") if e["text"].startswith("MCP server fx")]
        assert len(lines) == 1 and "stopped" in lines[0]
        assert not any(t["name"].startswith("mcp__fx") for t in model.requests[2]["tools"])
        assert [r["tool"] for r in read_jsonl(record)] == ["die"]
        state = conversation.state().mcp
        assert state is not None and state[0].state == "failed" and state[0].error
    finally:
        conversation.close()


def test_a_server_exiting_while_idle_is_one_line_at_once(
    model: ScriptedModel, workdir: Path, record: Path
) -> None:
    model.add(
        {"calls": [{"name": "mcp__fx__quit_later", "arguments": {"seconds": 0.3}}]},
        {"text": "ok"},
        {"text": "b"},
    )
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        turn(conversation, "go")
        wait_until(lambda: (conversation.state().mcp or [])[0].state == "failed", "the server marked failed")
        (status,) = conversation.state().mcp or []
        assert status.state == "failed" and status.error == "stopped: the server closed its connection"
        turn(conversation, "again")
        lines = [e["text"] for e in ui.of_type("notice") if e["text"].startswith("MCP server fx")]
        assert lines == ["MCP server fx: stopped: the server closed its connection"]
        assert not any(t["name"].startswith("mcp__fx") for t in model.requests[2]["tools"])
    finally:
        conversation.close()


def test_a_server_that_cannot_start_is_one_line_and_nothing_else_breaks(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "calls.jsonl"
    write_config(
        mino_home,
        {"gone": {"command": [str(tmp_path / "no-such-program")]}, "fx": fixture_server(record)},
    )
    model.add({"text": "hello"})
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui)
    try:
        assert turn(conversation, "hi").status == "completed"
        lines = [e["text"] for e in ui.of_type("notice") if e["text"].startswith("MCP server")]
        assert lines == [
            f"MCP server gone: cannot start the program: No such file or directory ({tmp_path / 'no-such-program'})"
        ]
        states = {s.name: s.state for s in conversation.state().mcp or []}
        assert states == {"gone": "failed", "fx": "ready"}
    finally:
        conversation.close()


def test_cancel_sends_notifications_cancelled_and_never_resends(
    model: ScriptedModel, workdir: Path, mino_home: Path, record: Path
) -> None:
    model.add({"calls": [{"name": "mcp__fx__slow", "arguments": {"seconds": 60}}]}, {"text": "after"})
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    cancel = CancelToken()
    try:
        box: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: box.update(r=conversation.run_turn("go", cancel)))
        worker.start()
        wait_until(lambda: read_jsonl(record), "the slow call at the server")
        cancel.cancel()
        worker.join(60)
        assert box["r"].status == "interrupted"
        wait_until(lambda: len(read_jsonl(record)) >= 2, "notifications/cancelled at the server")
        assert [r.get("tool") or r.get("cancelled") for r in read_jsonl(record)] == ["slow", "slow"]
        assert "cancelled" in read_jsonl(record)[1]
        sid = conversation.session_id
    finally:
        conversation.close()
    # Reopened: the call is answered (interrupted), nothing is sent again.
    again = make_conversation(model.base_url, workdir, RecordingUI())
    again.open()
    try:
        assert again.session_id == sid
    finally:
        again.close()
    assert len([r for r in read_jsonl(record) if "tool" in r]) == 1
    results = [r for r in session_records(mino_home, sid or "") if r["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["failed"]


def test_servers_start_once_and_stop_with_the_conversation(
    model: ScriptedModel, workdir: Path, monkeypatch: pytest.MonkeyPatch, record: Path
) -> None:
    env_call = {"calls": [{"name": "mcp__fx__env", "arguments": {}}]}
    model.add(env_call, {"text": "ok"}, env_call, {"text": "two"})
    # Set before the servers start (their environment is fixed then): the key variables stay hidden.
    monkeypatch.setenv("MINO_API_KEY", "secret")
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        hub = conversation.mcp
        turn(conversation, "go")
        opening.new_session(conversation)  # a new session in the same conversation keeps the same servers
        assert conversation.mcp is hub
        turn(conversation, "two")
        assert [r["text"] for r in ui.of_type("tool_result")] == ["visible: none", "visible: none"]
        (pid,) = {r["pid"] for r in read_jsonl(record)}  # both calls reached the one server process
    finally:
        conversation.close()
    wait_until(lambda: not running(pid), "the server to exit")


def test_no_mcp_import_without_servers(workdir: Path) -> None:
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, 'tests');"
        "from helpers import make_conversation, RecordingUI; from mino_server.core import opening;"
        "a = make_conversation('http://127.0.0.1:9/v1', Path(sys.argv[1]), RecordingUI()); a.open();"
        "opening.new_session(a); a.turn_tools(); a.state(); a.close();"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mino_server.core.mcp'))))"
    )
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, str(workdir)], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---- front ends -----------------------------------------------------------------------------------


def test_print_mode_waits_for_servers_and_sigterm_cancels_the_call(
    model: ScriptedModel, tmp_path: Path
) -> None:
    home = quiet_home(tmp_path)
    record = tmp_path / "calls.jsonl"
    write_config(home, {"fx": fixture_server(record)})
    work = tmp_path / "work"
    work.mkdir()
    model.add({"calls": [{"name": "mcp__fx__slow", "arguments": {"seconds": 60}}]}, {"text": "after"})
    proc = subprocess.Popen(
        [*MINO, "-p", "go", "--mode", "bypass", "--output-format", "json"],
        env=mino_env(home, model.base_url),
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the server's start (up to SLOW_START) comes first here
    wait_until(lambda: read_jsonl(record), "the slow call at the server", SLOW_START + HANG_S)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "interrupted"
    assert result["toolCalls"] == [{"tool": "mcp__fx__slow", "status": "failed"}]
    wait_until(lambda: len(read_jsonl(record)) >= 2, "notifications/cancelled at the server")
    assert "cancelled" in read_jsonl(record)[-1]
    assert not running(read_jsonl(record)[0]["pid"])


def test_the_editor_server_reports_mcp_state(model: ScriptedModel, tmp_path: Path) -> None:
    home = quiet_home(tmp_path)
    record = tmp_path / "calls.jsonl"
    write_config(home, {"fx": fixture_server(record), "gone": {"command": [str(tmp_path / "nothing")]}})
    work = tmp_path / "work"
    work.mkdir()
    client = Client(mino_env(home, model.base_url), work)
    try:
        client.initialize(work)

        servers: list[dict[str, Any]] = []

        def started() -> bool:
            nonlocal servers
            servers = client.request("mino/state").get("mcp") or []
            return bool(servers) and all(s["state"] != "starting" for s in servers)

        wait_until(started, "every server started or failed", SLOW_START + HANG_S)
        # Each change is pushed as mino/stateChanged, not only answered; the push may reach the
        # client just after the answer that already saw the change.
        client.wait_for(
            lambda: servers in [n.get("mcp") for n in client.notifications("mino/stateChanged")],
            HANG_S,
            "the servers' final state pushed as mino/stateChanged",
        )
        by_name = {s["name"]: s for s in servers}
        assert by_name["fx"]["state"] == "ready" and by_name["fx"]["tools"] == 9
        assert by_name["gone"]["state"] == "failed" and "cannot start the program" in by_name["gone"]["error"]
        lines = client.request("mino/command", {"line": "/mcp"})
        assert "fx: ready" in json.dumps(lines) and "mcp__fx__echo" in json.dumps(lines)
        # $/cancelRequest on the turn cancels the call: the server hears notifications/cancelled.
        model.add({"calls": [{"name": "mcp__fx__slow", "arguments": {"seconds": 60}}]}, {"text": "after"})
        client.request("mino/mode", {"mode": "bypass"})
        pending = client.start("mino/turn", {"text": "be slow"})
        client.wait_for(
            lambda: any(r.get("tool") == "slow" for r in read_jsonl(record)), HANG_S, "the slow call"
        )
        client.cancel(pending)
        assert pending.result(HANG_S)["status"] == "interrupted"
        client.wait_for(
            lambda: any("cancelled" in r for r in read_jsonl(record)), HANG_S, "notifications/cancelled"
        )
    finally:
        assert client.stop() == 0
    pids = {r["pid"] for r in read_jsonl(record)}
    assert all(not running(p) for p in pids)


def spawn_once_fx_is_ready(env: dict[str, str], workdir: Path, *args: str) -> tuple[Any, list[str]]:
    """`mino` in a pty, at its prompt once the `fx` server is ready; and every byte it wrote so far
    and will write (to check that no raw escape sequence reached the terminal)."""
    from cli_driver import spawn
    from test_cli import PROMPT

    child = spawn(env, workdir, *args, timeout=60)
    raw: list[str] = []
    child.logfile_read = type(
        "Sink", (), {"write": lambda self, s: raw.append(s), "flush": lambda self: None}
    )()
    child.expect_exact(PROMPT)
    deadline = time.monotonic() + SLOW_START
    while time.monotonic() < deadline:  # the tools are offered once the server is ready
        child.sendline("/mcp")
        index = child.expect(["fx: ready", "fx: starting"])
        child.expect_exact(PROMPT)
        if index == 0:
            break
        time.sleep(0.5)
    return child, raw


def test_the_terminal_asks_shows_escaped_and_ctrl_c_cancels_the_call(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, record: Path
) -> None:
    import pexpect
    from test_cli import PROMPT

    model.add(
        {"calls": [{"name": "mcp__fx__hostile", "arguments": {"who": "me\x1b]0;x\x07"}}]},
        {"text": "first done"},
        {"calls": [{"name": "mcp__fx__slow", "arguments": {"seconds": 60}}]},
    )
    child, raw = spawn_once_fx_is_ready(mino_env, workdir)
    child.sendline("/mcp")
    child.expect_exact("mcp__fx__echo")
    child.expect_exact(PROMPT)
    child.sendline("say hello")
    child.expect_exact("[Tool: mcp__fx__hostile]")
    child.expect_exact('argument who: "me\\x1b]0;x\\x07"')
    child.expect_exact('Server: "fx (')
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("y")
    child.expect_exact("Assistant> first done")
    child.expect_exact(PROMPT)
    child.sendline("be slow")
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("y")
    wait_until(
        lambda: any(r.get("tool") == "slow" for r in read_jsonl(record)), "the slow call at the server"
    )
    child.sendintr()
    child.expect_exact("[Tool result: failed]")
    child.expect_exact("Interrupted.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    screen = "".join(raw)
    assert "\x1b]0;pwned" not in screen and "\x1b]0;x" not in screen and "\x07" not in screen
    assert [r.get("tool") or "cancelled" for r in read_jsonl(record)] == ["hostile", "slow", "cancelled"]
    assert not running(read_jsonl(record)[0]["pid"])


def test_doctor_checks_the_programs_cheaply(tmp_path: Path) -> None:
    from mino_server.core.doctor import run_doctor

    home = tmp_path / "home"
    write_config(
        home,
        {
            "ok": {"command": [sys.executable]},
            "gone": {"command": ["no-such-mcp-program"]},
            "web": {"url": "http://127.0.0.1:9/mcp"},
        },
    )
    env = {"MINO_HOME": str(home), "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    (check,) = [c for c in run_doctor(3, env=env).checks if c.name == "mcp"]
    assert check.ok is False and check.needed is False
    assert (
        "gone: no-such-mcp-program not found" in check.found
        and "web: http://127.0.0.1:9/mcp (not contacted)" in check.found
    )
    assert check.fix and "mcp_servers.gone.command" in check.fix


def test_the_terminal_asks_an_elicitation_and_print_mode_declines_it(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, record: Path
) -> None:
    """A server's elicitation/create in the terminal: its message and fields escaped, then
    `Answer the server? [y/N]`; yes accepts with the defaults shown. `mino -p` declines it."""
    import pexpect
    from test_cli import PROMPT

    ask = {"calls": [{"name": "mcp__fx__ask", "arguments": {}}]}
    model.add(ask, {"text": "asked", "require": "action=accept data={'proceed': True, 'note': 'none'}"})
    child, raw = spawn_once_fx_is_ready(mino_env, workdir, "--mode", "bypass")
    child.sendline("ask me")
    child.expect_exact("[MCP server question]")
    child.expect_exact('Message: "Deploy to \\x1b[31mproduction\\x1b[0m?"')
    child.expect_exact('field proceed: "true (boolean; go ahead \\x1b[31mnow\\x1b[0m)"')
    child.expect_exact('Server: "fx"')
    child.expect_exact("Answer the server? [y/N] ")
    child.sendline("y")
    child.expect_exact("Assistant> asked")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and model.errors == []
    assert "\x1b[31m" not in "".join(raw)

    model.add(ask, {"text": "declined", "require": "action=decline"})
    done = subprocess.run(
        [*MINO, "-p", "ask me", "--mode", "bypass"],
        env=mino_env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=SLOW_START + 60,
    )
    assert done.returncode == 0, done.stderr
    assert "Answer the server?" in done.stderr and "cannot ask" in done.stderr
    assert done.stdout == "declined\n" and model.errors == []


def test_the_editor_server_asks_an_elicitation_through_mino_confirm(
    model: ScriptedModel, tmp_path: Path
) -> None:
    home = quiet_home(tmp_path)
    record = tmp_path / "calls.jsonl"
    write_config(home, {"fx": fixture_server(record)})
    work = tmp_path / "work"
    work.mkdir()
    client = Client(
        mino_env(home, model.base_url), work, handlers={"mino/confirm": lambda p: {"confirmed": True}}
    )
    try:
        client.initialize(work, mode="bypass")

        def ready() -> bool:
            servers = client.request("mino/state").get("mcp") or []
            return any(s["name"] == "fx" and s["state"] == "ready" for s in servers)

        wait_until(ready, "the fixture server", SLOW_START + HANG_S)
        expected = "action=accept data={'proceed': True, 'note': 'none'}"
        model.add({"calls": [{"name": "mcp__fx__ask", "arguments": {}}]}, {"text": "ok", "require": expected})
        assert client.request("mino/turn", {"text": "ask me"})["status"] == "completed"
        assert model.errors == []
        (asked,) = [r["params"] for r in client.incoming_requests if r["method"] == "mino/confirm"]
        assert asked["kind"] == "elicitation"
        assert 'Message: "Deploy to \\x1b[31mproduction\\x1b[0m?"' in asked["message"]
        assert "\x1b" not in asked["message"]
    finally:
        assert client.stop() == 0
