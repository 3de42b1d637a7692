"""The bash tool with real processes: output, exit codes, caps, timeouts, cancel, leftovers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from tool_helpers import (  # tests/ is on sys.path (conftest.py)
    live_with,
    returned_before_the_sleeps_ended,
    run_bash,
    sleep_marker,
)

from mino_server.core.cancel import Cancelled, CancelToken
from mino_server.core.tools.base import COMPLETED, FAILED, ArgumentError, ToolContext, ToolResult
from mino_server.core.tools.bash import BashTool

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="needs /proc to inspect processes"
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    wd = tmp_path / "proj"
    wd.mkdir()
    return ToolContext(
        workdir=wd.resolve(), home=tmp_path, memory_dir=tmp_path / "memory", cancel=CancelToken()
    )


def test_output_and_exit_code(ctx: ToolContext) -> None:
    result = run_bash({"command": "echo out; echo err >&2; pwd; exit 3"}, ctx)
    assert result == ToolResult(COMPLETED, f"out\nerr\n{ctx.workdir}\n[exit code: 3]")


def test_no_output_and_no_final_newline(ctx: ToolContext) -> None:
    assert run_bash({"command": "true"}, ctx).output == "[exit code: 0]"
    assert run_bash({"command": "printf abc"}, ctx).output == "abc\n[exit code: 0]"


def test_stdin_is_empty(ctx: ToolContext) -> None:
    assert run_bash({"command": "cat; echo done"}, ctx).output == "done\n[exit code: 0]"


def test_output_keeps_head_and_tail(ctx: ToolContext) -> None:
    result = run_bash({"command": "echo START; head -c 200000 /dev/zero | tr '\\0' x; echo; echo END"}, ctx)
    out = result.output
    assert out.startswith("START\nxxx")
    assert out.endswith("xxx\nEND\n[exit code: 0]")
    total = 6 + 200000 + 1 + 4
    assert f"bytes of output cut; {total} bytes in all ...]" in out
    assert len(out) < 70 * 1024


def test_killed_by_signal(ctx: ToolContext) -> None:
    assert run_bash({"command": "kill -9 $$"}, ctx).output == "[killed by SIGKILL]"


def test_timeout_kills_the_whole_group(ctx: ToolContext) -> None:
    marker = sleep_marker()
    started = time.monotonic()
    result = run_bash({"command": f"echo begun; sleep {marker} & sleep {marker}", "timeout_s": 1}, ctx)
    assert returned_before_the_sleeps_ended(started, marker)
    assert result == ToolResult(FAILED, "begun\n[timed out after 1 s; process group killed]")
    assert live_with(marker) == []


def test_timeout_sends_sigterm_first(ctx: ToolContext) -> None:
    """A command gets the chance to clean up, and what it prints then is kept."""
    result = run_bash(
        {"command": "trap 'echo cleaning up; exit 1' TERM; sleep 30 & wait", "timeout_s": 0.3}, ctx
    )
    assert result == ToolResult(FAILED, "cleaning up\n[timed out after 0.3 s; process group killed]")


def test_timeout_escalates_to_sigkill(ctx: ToolContext) -> None:
    marker = sleep_marker()
    result = run_bash(
        {"command": f"trap '' TERM; sleep {marker} & trap '' TERM; sleep {marker}", "timeout_s": 0.3}, ctx
    )
    assert result.status == FAILED
    assert live_with(marker) == []


def test_background_processes_do_not_outlive_the_call(ctx: ToolContext) -> None:
    marker = sleep_marker()
    started = time.monotonic()
    result = run_bash({"command": f"sleep {marker} & echo started"}, ctx)
    assert returned_before_the_sleeps_ended(started, marker)  # it did not wait for the background
    assert result.output == "started\n[exit code: 0]"
    assert live_with(marker) == []


def test_a_daemon_that_left_the_group_is_ended_without_hanging_the_call(ctx: ToolContext) -> None:
    marker = sleep_marker()
    pid_file = ctx.workdir / "pid"
    started = time.monotonic()
    try:
        command = (
            f"setsid bash -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep {marker}' & "
            "while [ ! -e pid ]; do sleep 0.01; done; echo ok"
        )
        result = run_bash({"command": command}, ctx)
        assert returned_before_the_sleeps_ended(started, marker)  # it held our pipe until it was ended
        assert result.output == "ok\n[exit code: 0]"
        assert live_with(marker) == []  # it left the group and the session, and still ended
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), 9)
            except ProcessLookupError:
                pass


def test_cancel_kills_the_group_and_raises(ctx: ToolContext) -> None:
    marker = sleep_marker()
    timer = threading.Timer(0.3, ctx.cancel.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        run_bash({"command": f"sleep {marker} & sleep {marker}"}, ctx)
    assert returned_before_the_sleeps_ended(started, marker)  # the cancel ended them
    assert live_with(marker) == []


def test_already_cancelled_runs_nothing(ctx: ToolContext) -> None:
    ctx.cancel.cancel()
    with pytest.raises(Cancelled):
        run_bash({"command": "touch ran"}, ctx)
    assert not (ctx.workdir / "ran").exists()


def test_fields_kind_and_validation(ctx: ToolContext) -> None:
    tool = BashTool()
    assert tool.kind(ctx) == "other"
    prepared = tool.prepare(tool.validate({"command": "ls -la"}), ctx)
    assert prepared.fields == [("Command", "ls -la"), ("Directory", str(ctx.workdir)), ("Sandbox", "none")]
    assert prepared.kind is None
    assert tool.validate({"command": "x"}).timeout_s == 120
    assert tool.validate({"command": "x", "timeout_s": 600}).timeout_s == 600
    assert tool.validate({"command": "x", "outside_sandbox": False}).outside_sandbox is False
    assert tool.validate({"command": "x", "outside_sandbox": None, "reason": None}).reason is None
    asked = tool.validate({"command": "x", "outside_sandbox": True, "reason": "git commit"})
    assert (asked.outside_sandbox, asked.reason) == (True, "git commit")
    for bad, message in [
        ({}, "missing required argument 'command'"),
        ({"command": ""}, "must not be empty"),
        ({"command": "a\0b"}, "NUL"),
        ({"command": "x", "timeout_s": 0}, "more than 0"),
        ({"command": "x", "timeout_s": 601}, "at most 600"),
        ({"command": "x", "timeout_s": "5"}, "number of seconds"),
        ({"command": "x", "timeout_s": True}, "number of seconds"),
        ({"command": "x", "cwd": "/"}, "unknown argument"),
        (
            {"command": "x", "outside_sandbox": "yes", "reason": "r"},
            "'outside_sandbox' must be true or false",
        ),
        ({"command": "x", "outside_sandbox": True}, "'reason' is required with outside_sandbox: true"),
        ({"command": "x", "outside_sandbox": True, "reason": ""}, "'reason' must not be empty"),
        ({"command": "x", "outside_sandbox": True, "reason": 3}, "'reason' must be a string"),
        ({"command": "x", "reason": "why"}, "'reason' goes only with outside_sandbox: true"),
    ]:
        with pytest.raises(ArgumentError, match=message):
            tool.validate(bad)


def test_schema_is_strict_and_names_the_new_arguments() -> None:
    params = BashTool.parameters
    assert params["additionalProperties"] is False and params["required"] == ["command"]
    assert params["properties"]["outside_sandbox"]["type"] == "boolean"
    assert params["properties"]["reason"] == {
        "type": "string",
        "minLength": 1,
        "description": "Only with outside_sandbox: why the command cannot run in the sandbox.",
    }
