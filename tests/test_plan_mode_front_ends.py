"""Plan mode through every front end (docs/BEHAVIOUR.md, "Plan mode"): the terminal through a real
pty, the editor server and the ACP agent as subprocesses, against the scripted model.

A plan is explored (read_file, a read-only command), written (a refused write along the way), shown
with `exit_plan_mode` and approved, and the turn goes on in the mode the session had before plan.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from acp_client import AcpClient
from cli_driver import spawn
from helpers import quiet_home
from server_client import servers

from mino_server.testing.scripted_model import ScriptedModel

PROMPT = "You> "
PLAN = "1. Add a greeting to notes.txt\n2. Run the tests"
REFUSED = "Plan mode refused this call without asking the user"


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "call_id": call_id}


def outputs(request: dict[str, Any]) -> dict[str, str]:
    return {i["call_id"]: i["output"] for i in request["input"] if i.get("type") == "function_call_output"}


def script(model: ScriptedModel) -> None:
    """Explore, try to write (refused), present the plan; once approved, edit the file."""
    model.add(
        {
            "calls": [
                call("read_file", "r", path="notes.txt"),
                call("write_file", "w", path="early.txt", content="too soon", mode="create"),
            ]
        },
        {"calls": [call("exit_plan_mode", "p", plan=PLAN)]},
        {"calls": [call("edit_file", "e", path="notes.txt", old_text="hello", new_text="hello, world")]},
        {"text": "Done as planned."},
    )


def check_requests(model: ScriptedModel, mode_after: str) -> None:
    planning, presenting, approved, last = model.requests
    for request in (planning, presenting):
        assert "# Plan mode" in request["instructions"]
        assert "exit_plan_mode" in [t["name"] for t in request["tools"]]
    assert REFUSED in outputs(presenting)["w"]
    assert f"the permission mode is now {mode_after}" in outputs(approved)["p"]
    # Once the plan is approved the request is as any other mode's: not told to plan, no exit tool.
    for request in (approved, last):
        assert "Plan mode" not in request["instructions"]
        assert "exit_plan_mode" not in [t["name"] for t in request["tools"]]


@pytest.fixture
def notes(workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("hello\n")
    return workdir / "notes.txt"


# ---- the terminal ----------------------------------------------------------------------------------
def test_plan_then_carry_it_out_through_the_pty(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, notes: Path
) -> None:
    script(model)
    child = spawn(mino_env, workdir, "--mode", "accept-edits")
    child.expect_exact(PROMPT)
    child.sendline("/mode plan")
    child.expect_exact("Permission mode: plan. Use /mode to change it.")
    child.expect_exact(PROMPT)
    child.sendline("Plan a greeting.")
    child.expect_exact("[Tool: write_file]")
    child.expect_exact("[Tool result: denied]")
    child.expect_exact(REFUSED)
    child.expect_exact("[Tool: exit_plan_mode]")
    child.expect_exact('Plan: "1. Add a greeting to notes.txt\\n2. Run the tests"')
    child.expect_exact("Carry out this plan? [y/N] ")
    child.sendline("y")
    child.expect_exact("Permission mode: accept-edits. Use /mode to change it.")  # the mode before plan
    child.expect_exact("[Tool: edit_file]")  # accept-edits: runs without asking
    child.expect_exact("Assistant> Done as planned.")
    child.expect_exact(PROMPT)
    child.sendline("/mode")
    child.expect_exact("Permission mode: accept-edits. Use /mode to change it.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert notes.read_text() == "hello, world\n"
    assert not (workdir / "early.txt").exists()
    check_requests(model, "accept-edits")


def test_no_keeps_plan_mode_and_tells_the_model(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, notes: Path
) -> None:
    model.add({"calls": [call("exit_plan_mode", "p", plan=PLAN)]}, {"text": "What should change?"})
    child = spawn(mino_env, workdir, "--mode", "plan")
    child.expect_exact("Permission mode: plan. Use /mode to change it.")
    child.expect_exact(PROMPT)
    child.sendline("Plan a greeting.")
    child.expect_exact("Carry out this plan? [y/N] ")
    child.sendline("")  # Enter alone is a no
    child.expect_exact("[Tool result: denied]")
    child.expect_exact("Assistant> What should change?")
    child.expect_exact(PROMPT)
    child.sendline("/mode")
    child.expect_exact("Permission mode: plan. Use /mode to change it.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert "the session stays in plan mode" in outputs(model.requests[1])["p"]
    assert "# Plan mode" in model.requests[1]["instructions"]


def test_started_in_plan_mode_an_approved_plan_goes_on_in_manual(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, notes: Path
) -> None:
    script(model)
    child = spawn(mino_env, workdir, "--mode", "plan")
    child.expect_exact(PROMPT)
    child.sendline("Plan a greeting.")
    child.expect_exact("Carry out this plan? [y/N] ")
    child.sendline("yes")
    child.expect_exact("Permission mode: manual. Use /mode to change it.")
    child.expect_exact("[Tool: edit_file]")
    child.expect_exact("Approve this operation? [y/N/a] ")  # manual asks for the edit
    child.sendline("y")
    child.expect_exact("Assistant> Done as planned.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert notes.read_text() == "hello, world\n"
    check_requests(model, "manual")


def test_the_tool_list_of_other_modes_is_unchanged(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add({"text": "a"})
    child = spawn(mino_env, workdir, "--mode", "manual")
    child.expect_exact(PROMPT)
    child.sendline("hi")
    child.expect_exact("Assistant> a")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    names = [t["name"] for t in model.requests[0]["tools"]]
    assert names == [
        "read_file",
        "bash",
        "write_file",
        "edit_file",
        "skill_view",
        "memory_view",
        "memory_save",
    ]


# ---- the editor server ----------------------------------------------------------------------------
def test_plan_mode_through_the_editor_server(model: ScriptedModel, tmp_path: Path) -> None:
    home = quiet_home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    script(model)
    with servers(home, model.base_url, ws) as make:
        client = make(handlers={"mino/approve": lambda params: {"approved": True}})
        client.request("mino/mode", {"mode": "bypass"})
        client.request("mino/mode", {"mode": "plan"})
        assert client.request("mino/state")["mode"] == "plan"
        result = client.request("mino/turn", {"text": "Plan a greeting."})
        assert result["status"] == "completed"
        (asked,) = [r["params"] for r in client.incoming_requests if r["method"] == "mino/approve"]
        assert asked["tool"] == "exit_plan_mode" and asked["question"] == "Carry out this plan?"
        assert asked["fields"] == [
            {"label": "Plan", "value": "1. Add a greeting to notes.txt\\n2. Run the tests"}
        ]
        decisions = {e["tool"]: e["decision"] for e in client.events("tool_call")}
        assert decisions == {
            "read_file": "run",
            "write_file": "refuse",
            "exit_plan_mode": "ask",
            "edit_file": "show",
        }
        (changed,) = client.events("mode_changed")
        assert changed == {"type": "mode_changed", "turnId": result["turnId"], "mode": "bypass"}
        modes = [s["mode"] for s in client.notifications("mino/stateChanged")]
        assert modes[-1] == "bypass" and "plan" in modes
        assert client.request("mino/state")["mode"] == "bypass"
    assert (ws / "notes.txt").read_text() == "hello, world\n"
    check_requests(model, "bypass")


# ---- ACP --------------------------------------------------------------------------------------------
@pytest.fixture
def acp(mino_env: dict[str, str], workdir: Path) -> Iterator[AcpClient]:
    allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    client = AcpClient(
        mino_env,
        workdir,
        argv=[sys.executable, "-m", "mino_server", "--acp"],
        handlers={"session/request_permission": lambda p: allow},
    )
    try:
        yield client
    finally:
        assert client.close() == 0
        assert client.violations == []


def test_plan_mode_through_acp(model: ScriptedModel, acp: AcpClient, workdir: Path, notes: Path) -> None:
    script(model)
    acp.initialize()
    result = acp.request("session/new", {"cwd": str(workdir), "mcpServers": []})
    sid = result["sessionId"]
    assert "plan" in [m["id"] for m in result["modes"]["availableModes"]]
    (mode_option,) = [o for o in result["configOptions"] if o["id"] == "mode"]
    assert "plan" in [o["value"] for o in mode_option["options"]]
    acp.request("session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "plan"})
    assert acp.prompt(sid, "Plan a greeting.") == {"stopReason": "end_turn"}
    asked = [r["params"] for r in acp.incoming_requests if r["method"] == "session/request_permission"]
    tool_call = asked[0]["toolCall"]
    assert tool_call["title"].startswith("Carry out this plan? exit_plan_mode: 1. Add a greeting")
    shown = tool_call["content"][0]["content"]["text"]
    assert 'Plan: "1. Add a greeting to notes.txt\\n2. Run the tests"' in shown
    assert "Carry out this plan?" in shown
    updates = acp.updates(sid, "current_mode_update")
    assert [u["currentModeId"] for u in updates][-1] == "manual"
    options = acp.updates(sid, "config_option_update")[-1]["configOptions"]
    assert [o["currentValue"] for o in options if o["id"] == "mode"] == ["manual"]
    failed = [u for u in acp.updates(sid, "tool_call_update") if u.get("status") == "failed"]
    assert len(failed) == 1  # the refused write
    assert notes.read_text() == "hello, world\n"  # manual: the edit asked too, and was allowed
    assert len([r for r in acp.incoming_requests if r["method"] == "session/request_permission"]) == 2
    check_requests(model, "manual")
