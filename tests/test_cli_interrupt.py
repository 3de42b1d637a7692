"""Ctrl-C in the terminal front end, through a real pty, wherever it arrives (issue 23).

Each test presses Ctrl-C at one point of a turn (or of start-up, a command, exit) and checks the
turn ends `interrupted` on disk and Mino goes on. The scripted model holds each point open far
longer than any test waits (stalls, a 30 s Retry-After, `sleep 60`), so a lost press is a hang
caught by pexpect's timeout, not a race."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pexpect
from cli_driver import spawn
from test_cli import PROMPT, bash_call, expect_session

from mino_server.core.sessions.log import SessionLog
from mino_server.testing.scripted_model import ScriptedModel

WAITING = "waiting for the model"


def inherit_ignored_sigint() -> None:
    """What a background job of a non-interactive shell (`make test &`, a CI or agent runner)
    hands its children: SIGINT ignored, and for good measure blocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def turn_ends(env: dict[str, str], sid: str) -> list[str]:
    log = SessionLog.open(Path(env["MINO_HOME"]) / "sessions" / f"{sid}.jsonl")
    try:
        return [r["status"] for r in log.read_records() if r["type"] == "turn_end"]
    finally:
        log.close()


def interrupted_then_next_turn(child: pexpect.spawn, model: ScriptedModel, next_turn: bool = True) -> None:
    """After the press: `Interrupted.`, the prompt, and a next turn that works (not while the
    scripted model still holds a stalled answer open: it serves one at a time)."""
    child.expect_exact("Interrupted.")
    child.expect_exact(PROMPT)
    if next_turn:
        model.add({"text": "fine"})
        child.sendline("again")
        child.expect_exact("Assistant> fine")
        child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_mid_stream_when_sigint_was_inherited_ignored_and_blocked(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    # The root cause of the lost Ctrl-C: before the fix the pty echoed ^C and the stream went on
    # to "ten" (Python leaves an inherited SIG_IGN alone and never raises KeyboardInterrupt).
    # ... and 50 more words: a minute of stream, so the turn cannot end by itself before the press.
    model.add(
        {"text": " ".join(["one two three four five six seven eight nine ten"] + ["more"] * 50), "delay": 1.0}
    )
    child = spawn(mino_env, workdir, preexec_fn=inherit_ignored_sigint)
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("talk slowly")
    child.expect_exact("Assistant> one")
    child.sendintr()
    interrupted_then_next_turn(child, model)
    assert turn_ends(mino_env, sid) == ["interrupted", "completed"]


def test_ctrl_c_at_the_prompt_when_sigint_was_inherited_ignored(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    child = spawn(mino_env, workdir, preexec_fn=inherit_ignored_sigint)
    child.expect_exact(PROMPT)
    child.sendintr()
    child.expect_exact("^C")
    child.expect_exact(PROMPT)
    model.add({"text": "still here"})
    child.sendline("hi")
    child.expect_exact("Assistant> still here")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)


def test_ctrl_c_before_the_first_delta(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add({"text": "too late", "stall": 60})
    child = spawn(mino_env, workdir)
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("hello")
    child.expect_exact(WAITING)
    child.sendintr()
    interrupted_then_next_turn(child, model, next_turn=False)
    assert turn_ends(mino_env, sid) == ["interrupted"]


def test_ctrl_c_while_a_tool_runs(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add(bash_call("echo started; sleep 60"))
    child = spawn(mino_env, workdir, "--mode", "bypass")
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("run it")
    child.expect_exact('Command: "echo started; sleep 60"')
    time.sleep(0.5)  # into the command (a press before it starts is the approval/stream case)
    child.sendintr()
    child.expect_exact("[Tool result: failed]")
    interrupted_then_next_turn(child, model)
    assert turn_ends(mino_env, sid) == ["interrupted", "completed"]


def test_ctrl_c_at_the_approval_question(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(bash_call("echo never > never.txt"))
    child = spawn(mino_env, workdir, "--mode", "manual")
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("make a file")
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendintr()
    child.expect_exact("[Tool result: denied]")
    interrupted_then_next_turn(child, model)
    assert turn_ends(mino_env, sid) == ["interrupted", "completed"]
    assert not (workdir / "never.txt").exists()


def test_ctrl_c_during_a_retry_back_off(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add({"status": 429, "error": "slow down", "headers": {"Retry-After": "30"}})
    child = spawn(mino_env, workdir)
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("hello")
    child.expect_exact(WAITING)
    deadline = time.monotonic() + 10
    while not model.requests and time.monotonic() < deadline:  # the 429 is answered: back-off
        time.sleep(0.05)
    assert model.requests
    time.sleep(0.2)
    child.sendintr()
    interrupted_then_next_turn(child, model)
    assert turn_ends(mino_env, sid) == ["interrupted", "completed"]


def test_ctrl_c_during_compact(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add(*({"text": f"answer {n}"} for n in range(3)), {"text": "a summary", "stall": 60})
    child = spawn(mino_env, workdir)
    expect_session(child)
    for n in range(3):  # the two most recent turns are kept: three make one to summarise
        child.expect_exact(PROMPT)
        child.sendline(f"turn {n}")
        child.expect_exact(f"answer {n}")
    child.expect_exact(PROMPT)
    child.sendline("/compact")
    child.expect_exact(WAITING)
    child.sendintr()
    child.expect_exact("Compaction interrupted; history is unchanged.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_during_start_up_ends_with_130(mino_env: dict[str, str], workdir: Path) -> None:
    # Sent at once: it lands in start-up (exit 130) or, on a fast start, at the first prompt.
    child = spawn(mino_env, workdir, preexec_fn=inherit_ignored_sigint)
    child.sendintr()  # somewhere in start-up, or at the first prompt
    index = child.expect_exact([pexpect.EOF, PROMPT])
    if index == 1:  # start-up was already over: a press at the prompt
        child.sendeof()
        child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus in (0, 130)
    assert "Traceback" not in (child.before or "")


def test_ctrl_c_during_exit_is_no_traceback(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    child = spawn(mino_env, workdir)
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect_exact("\r\n")  # the end of input was read (a press before it would flush it away)
    try:
        child.sendintr()
    except OSError:  # already gone
        pass
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in (child.before or "")


def test_ctrl_c_during_a_compaction_inside_a_turn(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    home = Path(mino_env["MINO_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("context_window: 1000\n")  # the fourth turn compacts first
    model.add(*({"text": f"answer {n} " + "x" * 800} for n in range(3)), {"text": "summary", "stall": 60})
    child = spawn(mino_env, workdir)
    sid = expect_session(child)
    for n in range(3):
        child.expect_exact(PROMPT)
        child.sendline(f"question {n} " + "y" * 800)
        child.expect_exact(f"answer {n}")
    child.expect_exact(PROMPT)
    child.sendline("question 3")
    deadline = time.monotonic() + 20
    while len(model.requests) < 4 and time.monotonic() < deadline:  # the summary request is out
        time.sleep(0.05)
    assert len(model.requests) == 4 and "tools" not in model.requests[3]
    time.sleep(0.2)
    child.sendintr()
    interrupted_then_next_turn(child, model, next_turn=False)
    assert turn_ends(mino_env, sid) == ["completed"] * 3 + ["interrupted"]
