"""A turn that runs out of file descriptors (docs/BEHAVIOUR.md, "Limits"): one line a person can act
on, defined once in core (words.too_many_files), the turn's records ended, the session loadable,
the chat going on. For real: a driver process lowers RLIMIT_NOFILE and opens descriptors until none
is left, before the turn (the turn's first lazy import fails) or when the model's call is shown
(the tool cannot open its file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mino_server.core.sessions.log import SessionLog
from mino_server.core.words import too_many_files
from mino_server.server.protocol import internal_error_message
from mino_server.testing.scripted_model import ScriptedModel

TESTS = Path(__file__).resolve().parent

DRIVER = r"""
import json, os, resource, sys
sys.path.insert(0, sys.argv[1])
from helpers import RecordingUI, make_conversation
from mino_server.core.cancel import CancelToken

where, workdir, base_url = sys.argv[2], sys.argv[3], sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(512, hard), hard))
held = []

def exhaust():
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass

class UI(RecordingUI):
    def event(self, event):
        super().event(event)
        if where == "tool" and self.events[-1]["type"] == "tool_call" and not held:
            exhaust()

ui = UI()
conversation = make_conversation(base_url, __import__("pathlib").Path(workdir), ui, mode="bypass")
conversation.open(warm_up=False)  # nothing imported in the background: the turn imports its own modules
if where == "start":
    exhaust()
first = conversation.run_turn("go", CancelToken())
for fd in held:
    os.close(fd)
second = conversation.run_turn("again", CancelToken())
session = conversation.session_id
stopped = conversation.stopped
conversation.close()
out = {"first": [first.status, first.error], "second": [second.status, second.text], "stopped": stopped,
       "session": session, "events": ui.events, "limit": min(512, hard)}
print(json.dumps(out))
"""


def drive(where: str, model: ScriptedModel, workdir: Path, tmp_path: Path) -> dict[str, Any]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    # The same mino_server as this test's (a worktree's, not whichever one is installed).
    env = {**os.environ, "MINO_API_KEY": "test-key", "PYTHONPATH": str(TESTS.parent)}
    proc = subprocess.run(
        [sys.executable, str(driver), str(TESTS), where, str(workdir), model.base_url],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return out


def line_for(limit: int) -> str:
    return (
        f"Too many open files (this process's limit, ulimit -n, is {limit}): close other programs or "
        "raise the limit, then try again; nothing was lost."
    )


def records(mino_home: Path, session: str) -> list[dict[str, Any]]:
    (path,) = list(mino_home.rglob(f"{session}.jsonl"))
    log = SessionLog.open(path)  # loads: every record whole and checked
    try:
        return [json.loads(line) for line in path.read_text().splitlines()]
    finally:
        log.close()


@pytest.mark.timeout(200)
def test_out_of_files_before_the_turn_is_one_line_and_nothing_is_written(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    model.add({"text": "fine"})
    out = drive("start", model, workdir, tmp_path)
    assert out["first"] == ["failed", line_for(out["limit"])]
    assert out["second"] == ["completed", "fine"] and out["stopped"] is None
    kinds = [r["type"] for r in records(mino_home, out["session"])]
    assert kinds.count("user_message") == 1 and kinds.count("turn_end") == 1  # the second turn only
    assert len(model.requests) == 1


@pytest.mark.timeout(200)
def test_out_of_files_in_a_tool_ends_the_turn_with_its_records(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "notes.txt").write_text("hello\n")
    model.add({"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}, {"text": "fine"})
    out = drive("tool", model, workdir, tmp_path)
    line = line_for(out["limit"])
    assert out["first"] == ["failed", line]
    (result,) = [e for e in out["events"] if e["type"] == "tool_result"]
    assert result["status"] == "failed" and result["text"] == f"read_file failed: {line}"
    assert out["second"] == ["completed", "fine"] and out["stopped"] is None
    got = records(mino_home, out["session"])
    turn_id = next(r["turn_id"] for r in got if r["type"] == "user_message")
    first = [r for r in got if r.get("turn_id") == turn_id]
    assert [r["type"] for r in first] == ["user_message", "tool_call", "tool_result", "turn_end"], first
    assert first[2]["status"] == "failed" and first[2]["output"] == f"read_file failed: {line}"
    assert first[3]["status"] == "failed" and first[3]["reason"] == line
    # The next turn's request carried the failed call and its output: the history is whole.
    assert len(model.requests) == 2
    outputs = [i for i in model.requests[1]["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and line in outputs[0]["output"]


# `mino -p` itself, its descriptors used up when its turn begins (given back when it returns).
PRINT_DRIVER = r"""
import os, resource, runpy, sys
from mino_server.core.conversation import Conversation
held = []
turn = Conversation.run_turn

def run_turn(self, *args, **kwargs):
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    try:
        return turn(self, *args, **kwargs)
    finally:
        for fd in held:
            os.close(fd)

Conversation.run_turn = run_turn
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
sys.argv = ["mino", *sys.argv[1:]]
runpy.run_module("mino_server.main", run_name="__main__")
"""


@pytest.mark.timeout(200)
def test_print_mode_says_the_line(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    from helpers import mino_env

    # The model's connection may be open already (made at start-up): the call's file is what fails.
    (workdir / "notes.txt").write_text("hello\n")
    model.add({"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]})
    driver = tmp_path / "print_driver.py"
    driver.write_text(PRINT_DRIVER)
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text('sandbox: "off"\n')
    env = {**mino_env(mino_home, model.base_url), "PYTHONPATH": str(TESTS.parent)}
    proc = subprocess.run(
        [sys.executable, str(driver), "-p", "go"],
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"Error: {line_for(256)}", proc.stderr
    assert "Traceback" not in proc.stderr and len(model.requests) <= 1


def test_every_front_end_words_it_the_same() -> None:
    """The catch-alls of the editor server and ACP (jsonrpc.core_error) and `mino -p` use the core's line."""
    from mino_server.jsonrpc import core_error

    exc = OSError(24, "Too many open files", "/usr/lib/python3/decimal.py")
    line = too_many_files(exc)
    assert line is not None and line.startswith("Too many open files (this process's limit, ulimit -n, is ")
    assert internal_error_message(exc) == line
    answer = core_error(exc)
    assert answer is not None and answer.message == line
    wrapped = RuntimeError("cannot read")
    wrapped.__context__ = exc
    assert too_many_files(wrapped) == line
    assert too_many_files(OSError(2, "No such file or directory")) is None
    nfile = too_many_files(OSError(23, "Too many open files in system"))
    assert (
        nfile
        == "Too many open files in system (the system's limit): close other programs, then try again; nothing was lost."
    )


def _probe_fails_first(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """The store's probe fails whole (its modules cannot load: out of descriptors) `times` times,
    then runs for real; returns the list of its calls."""
    from mino_server.core.store import Store

    real = Store._detect_sandbox
    calls: list[int] = []

    def detect(self: Store) -> Any:
        calls.append(1)
        if len(calls) <= times:
            raise OSError(24, "Too many open files", "/usr/lib/python3.11/ctypes")
        return real(self)

    monkeypatch.setattr(Store, "_detect_sandbox", detect)
    return calls


def test_a_probe_that_cannot_load_is_not_started_yet_and_probed_again_before_a_command(
    model: ScriptedModel, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start-up line says so (no traceback, as `mino -p` printed under load), and the first
    command waits for a probe that passes."""
    from helpers import RecordingUI, make_conversation

    from mino_server.core.cancel import CancelToken

    calls = _probe_fails_first(monkeypatch, 1)
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]},
        {"text": "It ran.", "require": "ran"},
    )
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    try:
        startup = conversation.open(warm_up=False)
        assert startup.sandbox_line == "Sandbox: not started yet (Too many open files); commands wait for it"
        result = conversation.run_turn("run it", CancelToken())
    finally:
        conversation.close()
    assert result.status == "completed" and (workdir / "ran.txt").read_text() == "ran\n"
    assert len(calls) == 2  # probed again before the command, not run without a verdict


def test_a_probe_that_never_loads_runs_no_command(
    model: ScriptedModel, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import RecordingUI, make_conversation

    from mino_server.core.cancel import CancelToken

    _probe_fails_first(monkeypatch, 1000)
    model.add({"calls": [{"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}]})
    conversation = make_conversation(model.base_url, workdir, RecordingUI(), mode="bypass")
    try:
        conversation.open(warm_up=False)
        result = conversation.run_turn("run it", CancelToken())
    finally:
        conversation.close()
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("Too many open files (this process's limit")
    assert not (workdir / "ran.txt").exists()  # no verdict, no command
