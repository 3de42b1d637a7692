"""The terminal CLI, driven through a real pty (pexpect) or real pipes, against the scripted model."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pexpect
from cli_driver import piped, spawn
from helpers import texts

from mino_server.core.sessions.log import SessionLog
from mino_server.testing.scripted_model import ScriptedModel

ID = r"([0-9a-f]{32})"
PROMPT = "You> "


def expect_session(child: pexpect.spawn) -> str:
    child.expect(r"Session: " + ID)
    return child.match.group(1)


def test_sessions_a_b_a_transcript_through_a_pty(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        {"text": "The word is pine."},
        {"text": "You have not given me a word in this conversation."},
        {"text": "You asked me to remember pine."},
    )
    child = spawn(mino_env, workdir)
    expect_session(child)
    child.expect_exact("Permission mode: manual. Use /mode to change it.")
    child.expect_exact(PROMPT)
    child.sendline("/new")
    a = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("Remember pine.")
    child.expect_exact("Assistant> The word is pine.")
    child.expect_exact(PROMPT)
    child.sendline("/new")
    b = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("What word?")
    child.expect_exact("Assistant> You have not given me a word in this conversation.")
    child.expect_exact(PROMPT)
    child.sendline(f"/resume {a}")
    assert expect_session(child) == a
    child.expect_exact(PROMPT)
    child.sendline("What word?")
    child.expect_exact("Assistant> You asked me to remember pine.")
    child.expect_exact(PROMPT)
    child.sendline("/sessions")
    child.expect(r"\* " + a + r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert a != b
    assert texts(model.requests[1]) == ["What word?"]
    assert texts(model.requests[2]) == ["Remember pine.", "The word is pine.", "What word?"]


def bash_call(command: str) -> dict:
    return {"calls": [{"name": "bash", "arguments": {"command": command}}]}


def test_bash_approval_yes_and_no_through_the_pty(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        bash_call("echo approved > yes.txt"),
        {"text": "Done."},
        bash_call("echo nope > no.txt"),
        {"text": "OK."},
    )
    child = spawn(mino_env, workdir, "--mode", "manual")
    child.expect_exact(PROMPT)
    child.sendline("make yes.txt")
    child.expect_exact("[Tool: bash]")
    child.expect_exact('Command: "echo approved > yes.txt"')
    child.expect_exact(f'Directory: "{workdir.resolve()}"')
    child.expect_exact(f"a = always: bash echo in {workdir.resolve()}")  # a sandboxed command
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("y")
    child.expect_exact("[Tool result: completed]")
    child.expect_exact("Assistant> Done.")
    child.expect_exact(PROMPT)
    child.sendline("make no.txt")
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("")  # Enter alone is a no
    child.expect_exact("[Tool result: denied]")
    child.expect_exact("Assistant> OK.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert (workdir / "yes.txt").read_text() == "approved\n"
    assert not (workdir / "no.txt").exists()
    denied = model.requests[3]["input"][-1]
    assert denied["type"] == "function_call_output" and "denied" in denied["output"]


def test_piped_input_cannot_approve_and_says_so(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(bash_call("touch x"), {"text": "Understood."})
    proc = piped(mino_env, workdir, "please touch x\n")
    assert proc.returncode == 0, proc.stderr
    assert "nobody can approve; denied." in proc.stdout
    assert "[Tool result: denied]" in proc.stdout
    assert not (workdir / "x").exists()
    assert "\x1b" not in proc.stdout  # no waiting indicator when output is piped


def test_piped_clear_is_refused(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add({"text": "pine"})
    proc = piped(mino_env, workdir, "Remember pine.\n/clear\n")
    assert "Session was not cleared." in proc.stdout
    sid = re.search("Session: " + ID, proc.stdout).group(1)  # type: ignore[union-attr]
    home = Path(mino_env["MINO_HOME"])
    assert (home / "sessions" / f"{sid}.jsonl").stat().st_size > 0


def test_clear_through_the_pty(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add({"text": "pine"}, {"text": "no idea"})
    child = spawn(mino_env, workdir)
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("Remember pine.")
    child.expect_exact(PROMPT)
    child.sendline("/clear")
    child.expect_exact("Type the complete session ID to clear it: ")
    child.sendline("yes")
    child.expect_exact("Session was not cleared.")
    child.expect_exact(PROMPT)
    child.sendline("/clear")
    child.expect_exact("Type the complete session ID to clear it: ")
    child.sendline(f" {sid} ")
    child.expect_exact(f"Cleared session: {sid}")
    child.expect_exact(PROMPT)
    child.sendline("What word?")
    child.expect_exact("Assistant> no idea")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert texts(model.requests[1]) == ["What word?"]


def test_a_second_terminal_gets_its_own_session_and_says_why(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    """Chapter 05 refused a second process; now it starts a new session with one line naming the
    process that has the selected one, and its model request carries only its own history."""
    model.add({"text": "first answer"}, {"text": "second answer"})
    first = spawn(mino_env, workdir)
    a = expect_session(first)
    first.expect_exact(PROMPT)
    first.sendline("one")
    first.expect_exact("Assistant> first answer")
    first.expect_exact(PROMPT)
    proc = piped(mino_env, workdir, "two\n")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    b = re.search(r"Session: " + ID, proc.stdout)
    assert b and b.group(1) != a
    assert lines[0] == (
        f"Session {a} is open in another Mino (pid {first.pid}, in {workdir.resolve()}), "
        "so a new session was started."
    )
    assert "Assistant> second answer" in proc.stdout and "Traceback" not in proc.stderr
    assert texts(model.requests[1]) == ["two"]  # not the first terminal's conversation
    first.sendline("/sessions")
    first.expect(r"\* " + a + r"  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\r\n")  # unmarked: the second one exited
    first.expect_exact(PROMPT)
    first.sendeof()
    first.expect(pexpect.EOF)
    selected = json.loads((Path(mino_env["MINO_HOME"]) / "sessions" / "active-session.json").read_text())
    assert selected == {"session_id": b.group(1)}  # the session most recently created


def test_killed_between_call_and_result_asks_and_runs_nothing_again(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    witness = workdir / "witness"  # inside the working directory: the sandbox lets bash write there
    model.add(bash_call(f"echo ran >> {witness}; sleep 30"))
    child = spawn(mino_env, workdir, "--mode", "bypass")
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("run the slow thing")
    deadline = time.time() + 10
    while not witness.exists() and time.time() < deadline:
        time.sleep(0.02)
    assert witness.exists()
    os.kill(child.pid, signal.SIGKILL)
    child.expect(pexpect.EOF)
    # Start again: the call without a result is marked unknown and the user is asked.
    model.add({"text": "It may have run."})
    child = spawn(mino_env, workdir)
    child.expect_exact("may or may not have run")
    child.expect_exact("[y/N] ")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    child = spawn(mino_env, workdir)
    child.expect_exact("[y/N] ")
    child.sendline("y")
    assert expect_session(child) == sid
    child.expect_exact(PROMPT)
    child.sendline("did it run?")
    child.expect_exact("Assistant> It may have run.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert witness.read_text() == "ran\n"  # executed once, never again
    log = SessionLog.open(Path(mino_env["MINO_HOME"]) / "sessions" / f"{sid}.jsonl")
    statuses = [r["status"] for r in log.read_records() if r["type"] == "tool_result"]
    log.close()
    assert statuses == ["unknown"]


def test_model_500_then_success_is_retried(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add({"status": 500, "error": "boom", "headers": {"Retry-After": "0"}}, {"text": "Recovered."})
    proc = piped(mino_env, workdir, "hi\n")
    assert "Assistant> Recovered." in proc.stdout
    assert len(model.requests) == 2


def test_model_401_is_one_clear_line_and_not_retried(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add({"status": 401, "error": "Incorrect API key provided"})
    proc = piped(mino_env, workdir, "hi\n")
    assert len(model.requests) == 1
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert errors == ["Error: Model request failed: HTTP 401: Incorrect API key provided"]
    assert "Traceback" not in proc.stderr


def test_stream_cut_mid_answer_fails_the_turn_and_the_next_works(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        {"text": "This answer will be cut somewhere in the middle of it.", "cut_after": 6},
        {"text": "Second."},
    )
    proc = piped(mino_env, workdir, "first\nsecond\n")
    assert "Error: Model" in proc.stderr
    assert "Assistant> Second." in proc.stdout
    sid = re.search("Session: " + ID, proc.stdout).group(1)  # type: ignore[union-attr]
    log = SessionLog.open(Path(mino_env["MINO_HOME"]) / "sessions" / f"{sid}.jsonl")
    ends = [r["status"] for r in log.read_records() if r["type"] == "turn_end"]
    log.close()
    assert ends == ["failed", "completed"]
    # The failed turn's line reaches the model merged with the next: never two user messages in a row.
    assert texts(model.requests[1]) == ["first\n\nsecond"]
    assert proc.returncode == 1  # a piped run with a failed turn says so in its exit status


def test_ctrl_c_interrupts_a_slow_stream(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    # 120 words at 0.5 s a word: still streaming a minute later, however slow the machine is, so
    # a lost press is a stream that goes on (expect's 15 s), never a turn that ended by itself.
    slow = " ".join(["one two three four five six seven eight nine ten"] + ["more"] * 110)
    model.add({"text": slow, "delay": 0.5}, {"text": "fine"})
    child = spawn(mino_env, workdir)
    sid = expect_session(child)
    child.expect_exact(PROMPT)
    child.sendline("talk slowly")
    child.expect_exact("Assistant> ")
    child.sendintr()
    child.expect_exact("Interrupted.")
    child.expect_exact(PROMPT)
    child.sendline("again")
    child.expect_exact("Assistant> fine")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    log = SessionLog.open(Path(mino_env["MINO_HOME"]) / "sessions" / f"{sid}.jsonl")
    ends = [r["status"] for r in log.read_records() if r["type"] == "turn_end"]
    log.close()
    assert ends == ["interrupted", "completed"]


def test_bad_config_is_one_line_naming_file_and_key(mino_env: dict[str, str], workdir: Path) -> None:
    home = Path(mino_env["MINO_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("context_window: lots\n")
    proc = piped(mino_env, workdir, "")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"mino: {home / 'config.yaml'}: 'context_window' must be a whole number of tokens, got 'lots'"
    ]


def test_version_and_help(mino_env: dict[str, str], workdir: Path) -> None:
    assert piped(mino_env, workdir, "", "--version").stdout.strip() == "mino 0.13.0"
    assert "mino eval DIR" in piped(mino_env, workdir, "", "--help").stdout
    proc = piped(mino_env, workdir, "", "--bogus")
    assert proc.returncode == 2 and "unknown argument: --bogus" in proc.stderr


def test_home_and_files_are_private(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    model.add({"text": "ok"})
    piped(mino_env, workdir, "hi\n")
    home = Path(mino_env["MINO_HOME"])
    assert home.stat().st_mode & 0o777 == 0o700
    assert (home / "sessions").stat().st_mode & 0o777 == 0o700
    for f in (home / "sessions").iterdir():
        if f.name.endswith(".jsonl") or f.name == "active-session.json":
            assert f.stat().st_mode & 0o777 == 0o600, f
    sel = json.loads((home / "sessions" / "active-session.json").read_text())
    assert re.fullmatch("[0-9a-f]{32}", sel["session_id"])


def test_rewind_through_the_pty(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    """/rewind lists, /rewind 1 shows each file and asks; no keeps everything, yes puts it back and
    the next request no longer sends the rewound turn (docs/BEHAVIOUR.md, "Rewind")."""
    (workdir / "a.txt").write_text("one\n")
    edit = {"name": "edit_file", "arguments": {"path": "a.txt", "old_text": "one", "new_text": "ONE"}}
    model.add({"calls": [edit]}, {"text": "Edited."}, {"text": "Fresh start."})
    child = spawn(mino_env, workdir, "--mode", "accept-edits")
    child.expect_exact(PROMPT)
    child.sendline("shout the word")
    child.expect_exact("Assistant> Edited.")
    child.expect_exact(PROMPT)
    child.sendline("/rewind")
    child.expect(r"1\. \d{4}-\d\d-\d\d \d\d:\d\d UTC 1 file\(s\): shout the word")
    child.expect_exact("Checkpoints of this session: ")
    child.expect_exact(PROMPT)
    child.sendline("/rewind 1")
    child.expect_exact("restore a.txt")
    child.expect_exact("Rewind 1 file(s) to before turn 1? [y/N] ")
    child.sendline("")  # Enter alone is a no
    child.expect_exact("Nothing was rewound.")
    child.expect_exact(PROMPT)
    assert (workdir / "a.txt").read_text() == "ONE\n"
    child.sendline("/rewind 1")
    child.expect_exact("Rewind 1 file(s) to before turn 1? [y/N] ")
    child.sendline("y")
    child.expect_exact("Rewound 1 file(s); the conversation continues from before turn 1.")
    child.expect_exact(PROMPT)
    assert (workdir / "a.txt").read_text() == "one\n"
    child.sendline("start again")
    child.expect_exact("Assistant> Fresh start.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert texts(model.requests[-1]) == ["start again"]


def test_piped_rewind_is_refused(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\n")
    edit = {"name": "edit_file", "arguments": {"path": "a.txt", "old_text": "one", "new_text": "ONE"}}
    model.add({"calls": [edit]}, {"text": "Edited."})
    proc = piped(mino_env, workdir, "shout\n/rewind 1\n", "--mode", "accept-edits")
    assert (
        "Rewind 1 file(s) to before turn 1? [y/N] no — input is piped, so nobody can confirm." in proc.stdout
    )
    assert "Nothing was rewound." in proc.stdout
    assert (workdir / "a.txt").read_text() == "ONE\n"
