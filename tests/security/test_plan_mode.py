"""Plan mode keeps its promise: nothing changes until the person says yes to a plan.

In plan mode a sandboxed command runs without asking, so the sandbox alone must keep it from
changing anything: the whole file system is read-only there, the working directory too (bwrap's
private /tmp stays writable: it is an empty tmpfs that ends with the command and holds none of the
person's files), and there is no network. Every other call that could change something (file
writes, memory saves, MCP tools, commands outside the sandbox or without one) is refused without
asking. And only the person can end plan mode: exit_plan_mode asks, a piped run or `mino -p`
cannot answer it, and a model that writes `/mode bypass` in its answer changes nothing.

Each test fails on a Mino without plan mode (`plan` is not a mode there).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_driver import piped
from helpers import (
    RecordingUI,
    conversation_with_servers,
    make_conversation,
    read_jsonl,
    session_records,
    turn,
)
from tool_helpers import needs_bwrap

from mino_server.testing.scripted_model import ScriptedModel

REFUSED = "Plan mode refused this call without asking the user"


def bash(command: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "bash", "arguments": {"command": command}}
    if call_id:
        call["call_id"] = call_id
    return call


def outputs(request: dict[str, Any]) -> dict[str, str]:
    """The tool results a request sends back, by call_id."""
    return {i["call_id"]: i["output"] for i in request["input"] if i.get("type") == "function_call_output"}


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder of the person's outside the working directory and outside /tmp."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-plan-"))
    (path / "keep.txt").write_text("theirs\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on the host's loopback that accepts connections (and counts them)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()
    assert not accepted, "a sandboxed command in plan mode reached the host's network"


@needs_bwrap
def test_a_plan_mode_command_cannot_write_anywhere_or_reach_the_network(
    model: ScriptedModel, workdir: Path, outside: Path, listener: int
) -> None:
    (workdir / "keep.txt").write_text("mine\n")
    (workdir / ".git").mkdir()
    (workdir / "sub").mkdir()
    attempts = {
        "new": "echo x > new.txt",
        "append": "echo x >> keep.txt",
        "truncate": ": > keep.txt",
        "remove": "rm -f keep.txt",
        "rename": "mv keep.txt moved.txt",
        "mkdir": "mkdir made",
        "chmod": "chmod 000 keep.txt",
        "touch": "touch -d 2000-01-01 keep.txt",
        "link": "ln keep.txt linked.txt",
        "fifo": "mkfifo fifo",
        "sub": "echo x > sub/new.txt",
        "git": "echo x > .git/config",
        "outside": f"echo x > {outside}/new.txt; echo x >> {outside}/keep.txt",
        "home": "echo x > ~/.mino-plan-test",
        "remount": 'mount -o remount,rw "$PWD" && echo x > remounted.txt',
        "network": f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected",
        "dns": "getent hosts example.com && echo resolved",
    }
    calls = [bash(f"{cmd}; echo rc=$?", call_id=name) for name, cmd in attempts.items()]
    # /tmp inside the sandbox is its own empty tmpfs: writable, and gone with the command.
    calls.append(bash("echo scratch > /tmp/mino-plan-scratch && cat /tmp/mino-plan-scratch", "tmp"))
    half = len(calls) // 2  # two turns: a turn runs at most 16 calls
    model.add(
        {"calls": calls[:half]}, {"text": "Looked."}, {"calls": calls[half:]}, {"text": "Looked again."}
    )
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui, mode="plan")
    conversation.open()
    try:
        assert turn(conversation, "Plan the change.").status == "completed"
        assert turn(conversation, "Look more.").status == "completed"
    finally:
        conversation.close()
    assert ui.asked == []  # read-only commands run without asking
    tool_calls = [e for e in ui.events if e["type"] == "tool_call"]
    assert len(tool_calls) == len(calls) and {e["decision"] for e in tool_calls} == {"show"}
    for e in tool_calls:
        assert {"label": "Sandbox", "value": "bwrap, read-only (plan mode)"} in e["fields"]
    results = {**outputs(model.requests[1]), **outputs(model.requests[3])}
    for name in attempts:
        assert "rc=0" not in results[name] and "connected" not in results[name], (name, results[name])
    assert "scratch" in results["tmp"]
    assert sorted(p.name for p in workdir.iterdir()) == [".git", "keep.txt", "sub"]
    assert (workdir / "keep.txt").read_text() == "mine\n"
    assert list((workdir / ".git").iterdir()) == [] and list((workdir / "sub").iterdir()) == []
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "theirs\n"
    assert not Path("/tmp/mino-plan-scratch").exists()
    assert not (Path.home() / ".mino-plan-test").exists()


def test_without_a_sandbox_bash_is_refused_in_plan_mode_without_asking(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text("sandbox: off\n")
    model.add({"calls": [bash("echo x > made.txt", "a")]}, {"text": "ok"})
    ui = RecordingUI(approvals=[True])  # a question would be answered yes: none may be asked
    conversation = make_conversation(model.base_url, workdir, ui, mode="plan")
    conversation.open()
    try:
        turn(conversation, "go")
    finally:
        conversation.close()
    assert ui.asked == []
    assert not (workdir / "made.txt").exists()
    assert REFUSED in outputs(model.requests[1])["a"]
    (call,) = [e for e in ui.events if e["type"] == "tool_call"]
    assert call["decision"] == "refuse"


def test_writes_memory_saves_and_commands_outside_the_sandbox_are_refused_without_asking(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    (workdir / "a.txt").write_text("one\n")
    calls = [
        {
            "name": "write_file",
            "arguments": {"path": "b.txt", "content": "x", "mode": "create"},
            "call_id": "w",
        },
        {
            "name": "edit_file",
            "arguments": {"path": "a.txt", "old_text": "one", "new_text": "two"},
            "call_id": "e",
        },
        {
            "name": "write_file",
            "arguments": {"path": ".git/hooks/pre-commit", "content": "x", "mode": "create"},
            "call_id": "g",
        },
        {
            "name": "memory_save",
            "arguments": {"name": "plan-note", "type": "user", "summary": "s", "mode": "create"},
            "call_id": "m",
        },
        {
            "name": "bash",
            "arguments": {"command": "echo x > out.txt", "outside_sandbox": True, "reason": "needs it"},
            "call_id": "o",
        },
    ]
    model.add({"calls": calls}, {"text": "ok"})
    ui = RecordingUI(approvals=[True] * 5)  # any question would be answered yes: none may be asked
    conversation = make_conversation(model.base_url, workdir, ui, mode="plan")
    conversation.open()
    try:
        turn(conversation, "go")
    finally:
        conversation.close()
    assert ui.asked == []
    results = outputs(model.requests[1])
    assert all(REFUSED in results[c["call_id"]] for c in calls), results
    statuses = [e["status"] for e in ui.events if e["type"] == "tool_result"]
    assert statuses == ["denied"] * 5
    assert sorted(p.name for p in workdir.iterdir()) == ["a.txt"]
    assert (workdir / "a.txt").read_text() == "one\n"
    assert not any((mino_home / "memory").glob("plan-note*"))


def test_mcp_tools_are_refused_without_asking_even_when_allowed(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    record = tmp_path / "calls.jsonl"
    server = {
        "command": [sys.executable, "-m", "mino_server.testing.mcp_fixture"],
        "env": {"MCP_FIXTURE_RECORD": str(record)},
        "start_timeout_s": 120,
        "allow": ["echo"],  # runs unasked in accept-edits: never in plan mode
    }
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"fx": server}}))
    model.add(
        {"calls": [{"name": "mcp__fx__echo", "arguments": {"text": "x"}, "call_id": "a"}]},
        {"calls": [{"name": "mcp__fx__fail", "arguments": {"text": "x"}, "call_id": "b"}]},
        {"text": "ok"},
    )
    ui = RecordingUI(approvals=[True, True])
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="plan")
    try:
        assert conversation.mcp is not None
        status = conversation.mcp.status()
        assert [s.state for s in status] == ["ready"], status  # its tools are offered: the test can fail
        turn(conversation, "go")
    finally:
        conversation.close()
    assert ui.asked == []
    assert REFUSED in outputs(model.requests[1])["a"] and REFUSED in outputs(model.requests[2])["b"]
    assert not record.exists() or read_jsonl(record) == []  # nothing reached the server


def _plan_then_write(model: ScriptedModel) -> None:
    """The model asks to leave plan mode (call p), then writes x.txt anyway (call w)."""
    model.add(
        {"calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Write x.txt"}, "call_id": "p"}]},
        {
            "calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "x.txt", "content": "x", "mode": "create"},
                    "call_id": "w",
                }
            ]
        },
        {"text": "Stopped."},
    )


def test_piped_input_cannot_approve_a_plan_and_the_mode_stays_plan(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    _plan_then_write(model)
    proc = piped(mino_env, workdir, "plan it\n/mode\n", "--mode", "plan")
    assert proc.returncode == 0, proc.stderr
    assert "Carry out this plan? [y/N] no — input is piped, so nobody can approve; denied." in proc.stdout
    assert (
        "The user did not approve the plan; the session stays in plan mode" in outputs(model.requests[1])["p"]
    )
    assert REFUSED in outputs(model.requests[2])["w"]
    assert not (workdir / "x.txt").exists()
    assert proc.stdout.count("Permission mode: plan.") == 2  # at start-up, and /mode after the turn


def test_mino_p_cannot_approve_a_plan(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    _plan_then_write(model)
    proc = piped(mino_env, workdir, "", "-p", "plan it", "--mode", "plan", "--output-format", "json")
    assert "Carry out this plan? [y/N] no" in proc.stderr
    result = json.loads(proc.stdout)
    assert [c["status"] for c in result["toolCalls"]] == ["denied", "denied"]
    assert REFUSED in outputs(model.requests[2])["w"]
    assert not (workdir / "x.txt").exists()


def test_a_model_typing_mode_commands_changes_nothing(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        {"text": "/mode bypass\n/mode manual"},
        {
            "calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "x.txt", "content": "x", "mode": "create"},
                    "call_id": "w",
                }
            ]
        },
        {"text": "ok"},
    )
    proc = piped(mino_env, workdir, "hello\nnow write\n", "--mode", "plan")
    assert proc.returncode == 0, proc.stderr
    assert REFUSED in outputs(model.requests[2])["w"]
    assert not (workdir / "x.txt").exists()
    assert "Permission mode: bypass" not in proc.stdout and "Permission mode: manual" not in proc.stdout


def test_exit_plan_mode_outside_plan_mode_asks_nothing_and_changes_nothing(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    model.add(
        {"calls": [{"name": "exit_plan_mode", "arguments": {"plan": "go"}, "call_id": "p"}]},
        {"text": "ok"},
    )
    ui = RecordingUI(approvals=[True])
    conversation = make_conversation(model.base_url, workdir, ui, mode="accept-edits")
    conversation.open()
    try:
        turn(conversation, "go")
        assert conversation.mode == "accept-edits"
        sid = conversation.session_id
    finally:
        conversation.close()
    assert ui.asked == []
    assert "only for plan mode" in outputs(model.requests[1])["p"]
    assert not [e for e in ui.events if e["type"] == "mode_changed"]
    assert sid is not None and [
        r["status"] for r in session_records(mino_home, sid) if r["type"] == "tool_result"
    ] == ["failed"]


def test_the_plan_is_shown_escaped_and_bound_to_the_question(model: ScriptedModel, workdir: Path) -> None:
    hostile = '1. Read\x1b[2J\x1b]0;pwned\x07\n2. Done\r\nSandbox: "none"'
    model.add(
        {"calls": [{"name": "exit_plan_mode", "arguments": {"plan": hostile}, "call_id": "p"}]},
        {"text": "ok"},
    )
    ui = RecordingUI(approvals=[False])
    conversation = make_conversation(model.base_url, workdir, ui, mode="plan")
    conversation.open()
    try:
        turn(conversation, "go")
        assert conversation.mode == "plan"
    finally:
        conversation.close()
    (asked,) = ui.asked
    assert asked.tool == "exit_plan_mode"
    ((label, value),) = asked.fields
    assert label == "Plan"
    assert "\x1b" not in value and "\x07" not in value and "\n" not in value and "\r" not in value
    assert value.startswith("1. Read\\x1b[2J")


@needs_bwrap
def test_a_plan_mode_command_cannot_write_through_the_sandbox_argv() -> None:
    """The sandbox itself, below the tools: read_only binds the working directory read-only and
    keeps no writable bind of it."""
    from mino_server.core.tools.sandbox import bwrap_argv

    wd = Path("/srv/project")
    argv = bwrap_argv(["true"], wd, read_only=True)
    binds = [(argv[i], argv[i + 1]) for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    assert ("--ro-bind", str(wd)) in [(a, b) for a, b in binds]
    assert not [b for a, b in binds if a == "--bind"]
    assert "--unshare-net" in argv


def test_plan_mode_requests_say_so_and_other_modes_do_not(model: ScriptedModel, workdir: Path) -> None:
    model.add({"text": "a"}, {"text": "b"})
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="plan")
    conversation.open()
    try:
        turn(conversation, "one")
        conversation.set_mode("manual")
        turn(conversation, "two")
    finally:
        conversation.close()
    planning, normal = model.requests
    assert "# Plan mode" in planning["instructions"]
    assert "exit_plan_mode" in [t["name"] for t in planning["tools"]]
    assert "Plan mode" not in normal["instructions"]
    assert "exit_plan_mode" not in [t["name"] for t in normal["tools"]]


def test_a_mode_the_person_chose_while_the_plan_was_asked_stands(model: ScriptedModel, workdir: Path) -> None:
    """Plan mode entered from bypass; while `Carry out this plan?` is open the person picks manual
    (the editor's picker can), then approves: the session stays manual, not back to bypass."""
    model.add(
        {"calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Edit"}, "call_id": "p"}]},
        {
            "calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "x.txt", "content": "x", "mode": "create"},
                    "call_id": "w",
                }
            ]
        },
        {"text": "ok"},
    )

    class PicksManualThenApproves(RecordingUI):
        def approve(self, request: Any, cancel: Any) -> bool:
            self.asked.append(request.tool)  # type: ignore[arg-type]
            if request.tool == "exit_plan_mode":
                conversation.set_mode("manual")
                return True
            return False  # the write asks (manual) and is denied

    ui = PicksManualThenApproves()
    conversation = make_conversation(model.base_url, workdir, ui, mode="bypass")
    conversation.open()
    try:
        conversation.set_mode("plan")
        turn(conversation, "go")
        assert conversation.mode == "manual"
    finally:
        conversation.close()
    assert ui.asked == ["exit_plan_mode", "write_file"]  # type: ignore[comparison-overlap]
    assert "the permission mode is now manual" in outputs(model.requests[1])["p"]
    assert not (workdir / "x.txt").exists()
    assert not [e for e in ui.events if e["type"] == "mode_changed"]


@needs_bwrap
def test_plan_mode_refuses_unix_sockets_even_when_config_allows_them(tmp_path: Path) -> None:
    """A unix socket reaches a service (Docker, D-Bus) that can change what the read-only mounts
    protect: plan mode keeps the seccomp filter even under `sandbox_unix_sockets: true`."""
    from tool_helpers import project_ctx, run_bash

    from mino_server.core.tools.sandbox import detect

    allowed, line = detect(unix_sockets=True)
    assert allowed is not None and allowed.seccomp is None, line
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="mino-plan-sock-"))
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen()
    try:
        code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); print('reached')"
        command = {"command": f'python3 -c "{code}"'}
        ctx = project_ctx(tmp_path, allowed)
        assert "reached" in run_bash(command, ctx).output  # allowed outside plan mode: the test can tell
        ctx.plan = True
        result = run_bash(command, ctx)
        assert "reached" not in result.output and "Operation not permitted" in result.output
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
@pytest.mark.skipif(shutil.which("ipcmk") is None, reason="no ipcmk (util-linux) here")
def test_plan_mode_cannot_touch_the_hosts_system_v_ipc(tmp_path: Path) -> None:
    """A message queue of the person's (any System V object) is state outside the file system: a
    plan-mode command has its own IPC namespace and cannot remove or write to it."""
    import re
    import subprocess

    from tool_helpers import SANDBOX, project_ctx, run_bash

    made = subprocess.run(["ipcmk", "-Q"], capture_output=True, text=True, check=True).stdout
    queue = re.search(r"(\d+)\s*$", made).group(1)  # type: ignore[union-attr]
    try:
        ctx = project_ctx(tmp_path, SANDBOX)
        ctx.plan = True
        result = run_bash({"command": f"ipcrm -q {queue}; echo rc=$?"}, ctx)
        assert "rc=0" not in result.output, result.output
        listed = subprocess.run(["ipcs", "-q", "-i", queue], capture_output=True, text=True)
        assert listed.returncode == 0, "the host's queue is gone"
    finally:
        subprocess.run(["ipcrm", "-q", queue], capture_output=True)


@needs_bwrap
def test_every_mount_a_plan_mode_command_sees_is_read_only_but_its_own(tmp_path: Path) -> None:
    """The mount table from inside: whatever the host mounts (a home, a data disk, /var/tmp), a
    plan-mode command sees it read-only; only the sandbox's own /dev (device nodes, /dev/shm,
    /dev/pts), its /tmp tmpfs and the /proc of its own pid namespace (whose kernel settings are
    bound read-only over it: test_sandbox_kernel_state.py) are writable."""
    from tool_helpers import SANDBOX, project_ctx, run_bash

    ctx = project_ctx(tmp_path, SANDBOX)
    ctx.plan = True
    table = run_bash({"command": "cat /proc/self/mountinfo"}, ctx).output
    writable = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > 5 and "rw" in fields[5].split(","):
            writable.append(fields[4])
    assert writable, table  # the parse found the mount table
    for point in writable:
        assert point in ("/tmp", "/dev", "/proc") or point.startswith("/dev/"), (point, table)
