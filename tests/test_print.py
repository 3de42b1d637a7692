"""`mino -p`: one turn for scripts and CI, over real pipes and a real pty (docs/BEHAVIOUR.md,
"One-shot: mino -p")."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pexpect
from cli_driver import MINO, spawn
from helpers import mino_env, quiet_home

from mino_server.core import consent
from mino_server.core import instructions as ins
from mino_server.testing.scripted_model import ScriptedModel

ANSWER = "The answer is 42.\nSecond line."


def run(
    env: dict[str, str], cwd: Path, *args: str, stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MINO, *args], input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _setup(tmp_path: Path, model: ScriptedModel) -> tuple[dict[str, str], Path, Path]:
    home = quiet_home(tmp_path)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return mino_env(home, model.base_url), home, work


def _selection(home: Path) -> bytes | None:
    path = home / "sessions" / "active-session.json"
    return path.read_bytes() if path.exists() else None


def test_text_stdout_is_the_answer_only(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    model.add({"text": ANSWER})
    done = run(env, work, "-p", "What is it?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert (
        "Session: " in done.stderr
        and "Permission mode: manual. Calls that would ask are denied" in done.stderr
    )
    assert "What is it?" in json.dumps(model.requests[0]["input"])
    assert _selection(home) is None  # never selected: a person's terminal stays where it was


def test_prompt_from_stdin_with_dash(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add({"text": "ok"})
    done = run(env, work, "-p", "-", stdin="Summarise:\nline one\nline two\n")
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert "line one\\nline two" in json.dumps(model.requests[0]["input"])


def test_whitespace_only_prompt_is_a_clear_usage_error(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    for args, stdin in ((["-p", "  \n\t "], ""), (["-p", "-"], " \n\n")):
        done = run(env, work, *args, stdin=stdin)
        assert done.returncode == 2 and done.stdout == ""
        assert "the prompt is empty (only white space)" in done.stderr and "Traceback" not in done.stderr
    assert model.requests == [] and list(home.glob("sessions/*.jsonl")) == []


def test_usage_errors_exit_2(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    for args, says in (
        (["-p"], "-p needs the prompt"),
        (["-p", "x", "--output-format", "yaml"], "unknown --output-format 'yaml'"),
        (["--resume", "0" * 32], "--resume goes with -p PROMPT"),
        (["--output-format", "json"], "--output-format goes with -p PROMPT"),
        (["-p", "x", "--stdio"], "does not go with --stdio or --acp"),
        (["-p", "x", "--resume", "abc"], "not a complete session ID: 'abc'"),
        (["-p", "x", "--resume", "f" * 32], f"no session with ID {'f' * 32}"),
    ):
        done = run(env, work, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr and done.stdout == "" and "Traceback" not in done.stderr
    assert model.requests == []


def test_json_is_one_object_with_the_result(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": ANSWER, "usage": {"input_tokens": 1234, "output_tokens": 7}},
    )
    done = run(env, work, "-p", "go", "--output-format", "json")
    assert done.returncode == 0
    result = json.loads(done.stdout)  # one object, nothing else on stdout
    assert set(result) == {"sessionId", "status", "text", "usage", "toolCalls", "error"}
    assert result["status"] == "completed" and result["text"] == ANSWER and result["error"] is None
    assert result["toolCalls"] == [{"tool": "bash", "status": "denied"}]  # manual: nobody can approve
    assert result["usage"]["inputTokens"] == 1234 and len(result["sessionId"]) == 32
    assert "cannot ask; denied" in done.stderr


def test_the_mode_allows_what_it_allows(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add(
        {
            "calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "out.txt", "content": "made\n", "mode": "create"},
                }
            ]
        },
        {"text": "written"},
    )
    done = run(env, work, "-p", "write it", "--mode", "accept-edits", "--output-format", "json")
    assert json.loads(done.stdout)["toolCalls"] == [{"tool": "write_file", "status": "completed"}]
    assert (work / "out.txt").read_text() == "made\n"


def test_stream_json_is_events_then_the_result(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add({"calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}, {"text": ANSWER})
    (work / "a.txt").write_text("hello\n")
    done = run(env, work, "-p", "read a.txt", "--output-format", "stream-json")
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line is one JSON object
    types = [line["type"] for line in lines]
    assert types[-1] == "result" and types[-2] == "turn_end"
    assert "tool_call" in types and "tool_result" in types and "text_delta" in types
    assert types.index("tool_call") < types.index("tool_result") < types.index("assistant_message")
    assert "".join(line["text"] for line in lines if line["type"] == "text_delta") == ANSWER
    result = lines[-1]
    assert result["status"] == "completed" and result["text"] == ANSWER
    assert result["toolCalls"] == [{"tool": "read_file", "status": "completed"}]


def test_a_failing_model_exits_1_with_the_error(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add({"status": 400, "error": "the backend fell over"})
    done = run(env, work, "-p", "hi", "--output-format", "json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "failed" and "the backend fell over" in result["error"]
    assert "Error: " in done.stderr

    model.add({"text": "partial", "fail": "stream broke"})
    done = run(env, work, "-p", "hi")
    assert done.returncode == 1 and "stream broke" in done.stderr


def test_resume_continues_a_session_and_leaves_the_selection(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    (home / "sessions").mkdir()
    model.add({"text": "first answer"})
    first = json.loads(run(env, work, "-p", "remember 7", "--output-format", "json").stdout)
    selected = b'{"session_id": "' + b"a" * 32 + b'"}\n'
    (home / "sessions" / "active-session.json").write_bytes(selected)
    model.add({"require": ["remember 7", "first answer"], "text": "It was 7."})
    done = run(env, work, "-p", "what was it?", "--resume", first["sessionId"], "--output-format", "json")
    second = json.loads(done.stdout)
    assert (
        done.returncode == 0 and second["sessionId"] == first["sessionId"] and second["text"] == "It was 7."
    )
    assert model.errors == []
    assert _selection(home) == selected


def test_resume_is_refused_while_the_session_is_open_elsewhere(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    child = spawn(env, work)  # an interactive terminal on a new session
    try:
        child.expect(r"Session: ([0-9a-f]{32})")
        sid = child.match.group(1)
        child.expect_exact("You> ")
        done = run(env, work, "-p", "hi", "--resume", sid, "--output-format", "json")
        assert done.returncode == 1 and "open in another Mino" in done.stderr
        result = json.loads(done.stdout)
        assert result["status"] == "failed" and "open in another Mino" in result["error"]
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert model.requests == []


def test_agents_md_is_never_asked_and_only_accepted_content_is_sent(
    model: ScriptedModel, tmp_path: Path
) -> None:
    env, home, work = _setup(tmp_path, model)
    (work / "AGENTS.md").write_text("Answer in French.\n")
    model.add({"text": "a"})
    done = run(env, work, "-p", "hi", "--output-format", "stream-json")
    assert "[y/N]" not in done.stdout + done.stderr
    assert "were not sent: they were not accepted before" in done.stderr
    notices = [json.loads(line) for line in done.stdout.splitlines() if '"notice"' in line]
    assert notices and "not accepted before" in notices[0]["text"]
    assert "Answer in French." not in model.requests[0]["instructions"]

    consent.remember(home, ins.CONSENT_KIND, ins.find(work).digest, "test")
    model.add({"text": "b"})
    done = run(env, work, "-p", "hi")
    assert done.returncode == 0 and "not accepted" not in done.stderr
    assert "Answer in French." in model.requests[1]["instructions"]


# ---- output: big, slow, closed, non-blocking, a terminal -------------------------------------------


def _big(model: ScriptedModel) -> str:
    text = "".join(f"{i:07d} lorem ipsum dolor sit amet\n" for i in range(30_000))  # ~1 MB
    assert len(text) >= 1_000_000
    model.add({"text": text, "chunk": 4096})
    return text


def _read_slowly(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdout is not None
    got = bytearray()
    reads = 0
    while chunk := proc.stdout.read1(4096):
        got += chunk
        reads += 1
        if reads % 16 == 0:
            time.sleep(0.05)  # a slow reader: the pipe fills and mino waits
    return bytes(got)


def test_a_1mb_answer_read_slowly_arrives_whole(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    for fmt in ("text", "json", "stream-json"):
        text = _big(model)
        proc = subprocess.Popen(
            [*MINO, "-p", "big", "--output-format", fmt],
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        got = _read_slowly(proc)
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
        if fmt == "text":
            assert got.decode() == text
        elif fmt == "json":
            assert json.loads(got)["text"] == text
        else:
            lines = [json.loads(line) for line in got.splitlines()]
            assert lines[-1]["type"] == "result" and lines[-1]["text"] == text


def test_a_non_blocking_pipe_still_gets_everything(model: ScriptedModel, tmp_path: Path) -> None:
    """A parent that leaves the pipe O_NONBLOCK (Node does): writes wait for room instead of failing."""
    env, _, work = _setup(tmp_path, model)
    text = _big(model)
    read_end, write_end = os.pipe()
    flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    proc = subprocess.Popen(
        [*MINO, "-p", "big"],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        got = bytearray()
        while chunk := reader.read1(4096):
            got += chunk
            time.sleep(0.001)
    assert proc.wait(timeout=60) == 0
    assert got.decode() == text


def test_a_reader_that_goes_away_ends_the_run_cleanly(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    _big(model)
    proc = subprocess.Popen(
        [*MINO, "-p", "big", "--output-format", "stream-json"],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    json.loads(proc.stdout.readline())  # like `| head -1`
    proc.stdout.close()
    assert proc.wait(timeout=60) == 1
    err = proc.stderr.read().decode()
    assert "stdout was closed before the result was written" in err and "Traceback" not in err


def test_sigterm_interrupts_the_turn_and_exits_1(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    model.add({"text": "slow", "stall": 30})
    proc = subprocess.Popen(
        [*MINO, "-p", "hi", "--output-format", "json"],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not model.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and b"Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "interrupted"
    (log,) = (home / "sessions").glob("*.jsonl")
    assert '"turn_end"' in log.read_text().splitlines()[-1]  # the log ends consistent


def test_in_a_terminal_the_answer_is_sanitised(model: ScriptedModel, tmp_path: Path) -> None:
    env, _, work = _setup(tmp_path, model)
    model.add({"text": "clear\x1b[2J screen \x1b]0;title\x07 done"})
    child = spawn(env, work, "-p", "hi")
    try:
        child.expect(pexpect.EOF)
        shown = child.before
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "\x1b[2J" not in shown and "\x1b]0;" not in shown and "done" in shown


def test_many_runs_in_a_shell_loop_leave_the_selection_alone(model: ScriptedModel, tmp_path: Path) -> None:
    env, home, work = _setup(tmp_path, model)
    for name in ("a.txt", "b.txt", "c.txt"):
        (work / name).write_text(name)
        model.add({"text": f"summary of {name}"})
    script = 'for f in *.txt; do mino_cmd -p "Summarise $f" || exit 1; done'
    done = subprocess.run(
        ["bash", "-c", f'mino_cmd() {{ {" ".join(MINO)} "$@"; }}; {script}'],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "summary of a.txt\nsummary of b.txt\nsummary of c.txt\n"
    assert _selection(home) is None
    assert len(list((home / "sessions").glob("*.jsonl"))) == 3


def test_sigint_during_the_stream_records_the_interrupted_turn_before_exit(
    model: ScriptedModel, tmp_path: Path
) -> None:
    """The interrupt lands while the main thread waits for the turn: the turn still ends with its
    records (the partial answer, `interrupted`, turn_end) written by this process, not by the next
    start's recovery, and the status is 1."""
    env, home, work = _setup(tmp_path, model)
    model.add({"text": "streamed before the stop", "hold": True})
    proc = subprocess.Popen(
        [*MINO, "-p", "hi", "--output-format", "stream-json"],
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    seen = ""
    while "stop" not in seen:  # the whole text has streamed; the reply holds back its end
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        event = json.loads(line)
        if event.get("type") == "text_delta":
            seen += event["text"]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and b"Traceback" not in err, err
    result = json.loads(out.splitlines()[-1])
    assert result["status"] == "interrupted" and result["text"] == "streamed before the stop"
    (log,) = (home / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["type"], r.get("interrupted")) for r in records if r["type"] != "session_skills"] == [
        ("user_message", None),
        ("assistant_message", True),
        ("interrupted", None),
        ("turn_end", None),
    ]
    assert records[-1]["status"] == "interrupted" and records[-1]["reason"] == "Interrupted."
