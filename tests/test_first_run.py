"""The first run (issue 29): no key for OpenAI's endpoint is said before any request, over a pty and
pipes; a local server without a key works as before; connection errors name the base URL and where
it came from (flag, environment, config.yaml, default); a wrong path (no /v1) says so."""

from __future__ import annotations

import os
from pathlib import Path

import pexpect
from cli_driver import piped, spawn
from helpers import free_port

from mino_server.core.config import load_config
from mino_server.testing.scripted_model import ScriptedModel

NO_KEY = (
    "No API key: set OPENAI_API_KEY (or MINO_API_KEY) to use https://api.openai.com/v1, or set "
    'MINO_BASE_URL to a local server\'s /v1 URL; see README.md, "First run", and run `mino doctor` to check.'
)


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("MINO_API_KEY", "OPENAI_API_KEY", "MINO_BASE_URL")
    }
    return {**env, "MINO_HOME": str(home), "PYTHONUNBUFFERED": "1", **extra}


def test_config_records_where_base_url_and_key_came_from(mino_home: Path) -> None:
    cfg = load_config(env={"MINO_HOME": str(mino_home)})
    assert (cfg.base_url_source, cfg.base_url_origin) == ("default", "the default base URL")
    assert cfg.api_key is None and cfg.api_key_source is None
    assert cfg.setup_problem() is not None
    (mino_home / "config.yaml").write_text("base_url: http://127.0.0.1:1/v1\napi_key_env: MY_KEY\n")
    cfg = load_config(env={"MINO_HOME": str(mino_home), "MY_KEY": "k"})
    assert cfg.base_url_origin == f"base URL from {mino_home / 'config.yaml'}"
    assert (cfg.api_key, cfg.api_key_source) == ("k", "MY_KEY")
    env = {
        "MINO_HOME": str(mino_home),
        "MINO_BASE_URL": "http://127.0.0.1:2/v1",
        "MINO_API_KEY": "m",
        "MY_KEY": "k",
    }
    cfg = load_config(env=env)
    assert (cfg.base_url_origin, cfg.api_key_source) == ("base URL from MINO_BASE_URL", "MINO_API_KEY")
    cfg = load_config(base_url="http://127.0.0.1:3/v1/", env=env)
    assert (cfg.base_url, cfg.base_url_origin) == ("http://127.0.0.1:3/v1", "base URL from --base-url")
    assert cfg.setup_problem() is None  # not OpenAI's: a local server may need no key


def test_setup_problem_only_for_openai_without_a_key(mino_home: Path) -> None:
    env = {"MINO_HOME": str(mino_home)}
    problem = load_config(env=env).setup_problem()
    assert problem is not None
    assert (problem.problem, problem.variable, problem.baseUrl) == (
        "no-api-key",
        "OPENAI_API_KEY",
        "https://api.openai.com/v1",
    )
    assert problem.message == NO_KEY
    assert load_config(env={**env, "OPENAI_API_KEY": "k"}).setup_problem() is None
    assert load_config(env={**env, "MINO_API_KEY": "k"}).setup_problem() is None
    assert load_config(base_url="http://localhost:11434/v1", env=env).setup_problem() is None
    (mino_home / "config.yaml").write_text(
        "api_key_env: OPENROUTER_API_KEY\nbase_url: https://API.openai.com/v1\n"
    )
    problem = load_config(
        env={**env, "OPENAI_API_KEY": "ignored: config names another variable"}
    ).setup_problem()
    assert problem is not None and problem.variable == "OPENROUTER_API_KEY"
    assert problem.message.startswith("No API key: set OPENROUTER_API_KEY (or MINO_API_KEY) to use")


def test_first_run_without_a_key_piped(mino_home: Path, workdir: Path) -> None:
    done = piped(bare_env(mino_home), workdir, "hello\n", timeout=30)
    assert done.returncode == 1  # a line did not get an answer (README, "Exit status")
    assert NO_KEY in done.stdout.splitlines()  # said once at start-up, before anything is typed
    assert done.stderr.splitlines() == [f"Error: {NO_KEY}"]  # and as the turn's reason: nothing sent
    assert "Model request failed" not in done.stdout + done.stderr
    sessions = list((mino_home / "sessions").glob("*.jsonl"))
    assert all(
        "hello" not in p.read_text() for p in sessions
    )  # nothing logged: the line is not lost in a half turn


def test_first_run_without_a_key_through_a_pty(mino_home: Path, workdir: Path) -> None:
    child = spawn(bare_env(mino_home), workdir)
    child.expect_exact(NO_KEY)
    child.expect_exact("You> ")
    child.sendline("hello")
    child.expect_exact(f"Error: {NO_KEY}")
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0  # a terminal left with Ctrl-D exits 0


def test_first_run_with_a_key_piped(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    model.add({"text": "Hello."})
    env = bare_env(mino_home, OPENAI_API_KEY="sk-test", MINO_BASE_URL=model.base_url)
    done = piped(env, workdir, "hello\n")
    assert done.returncode == 0, done.stderr
    assert "Assistant> Hello." in done.stdout and "No API key" not in done.stdout
    assert model.request_headers[0]["authorization"] == "Bearer sk-test"


def test_local_server_without_a_key_works_as_before(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    model.add({"text": "Hello."})
    child = spawn(bare_env(mino_home, MINO_BASE_URL=model.base_url), workdir)
    child.expect_exact("You> ")
    child.sendline("hello")
    child.expect_exact("Assistant> Hello.")
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert "No API key" not in (child.before or "")
    assert "authorization" not in model.request_headers[0]


def test_unreachable_port_names_the_url_and_its_source(mino_home: Path, workdir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = piped(bare_env(mino_home, MINO_BASE_URL=url), workdir, "hello\n")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: Model request failed: connection refused ({url}, base URL from MINO_BASE_URL) (after 4 attempts)"
    ]
    (mino_home / "config.yaml").write_text(f"base_url: {url}\n")
    done = piped(bare_env(mino_home), workdir, "hello\n")
    assert f"({url}, base URL from {mino_home / 'config.yaml'})" in done.stderr
    done = piped(bare_env(mino_home), workdir, "hello\n", "--base-url", url)
    assert f"({url}, base URL from --base-url)" in done.stderr


def test_wrong_path_is_a_404_that_names_the_url(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    root = model.base_url.removesuffix("/v1")  # the classic slip: the server's root without /v1
    done = piped(bare_env(mino_home, MINO_BASE_URL=root), workdir, "hello\n")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: Model request failed: HTTP 404: ")
    assert line.endswith(f"(POST {root}/responses; base URL from MINO_BASE_URL: does it need /v1?)")
    model.errors.clear()  # the scripted model recorded the unexpected path: that is this test's point


def test_editor_server_state_carries_the_setup_problem(mino_home: Path, workdir: Path) -> None:
    """`mino --stdio` without a key for OpenAI: State.setup says what is missing (the extension's
    banner), mino/turn fails with the same line before anything is sent; with a key it is absent."""
    import sys

    from server_client import Client, contract_problems

    client = Client(bare_env(mino_home), workdir, argv=[sys.executable, "-m", "mino_server", "--stdio"])
    try:
        client.initialize(workdir)
        state = client.request("mino/state")
        assert state["setup"] == {
            "problem": "no-api-key",
            "message": NO_KEY,
            "variable": "OPENAI_API_KEY",
            "baseUrl": "https://api.openai.com/v1",
            "readme": str(Path(__file__).resolve().parent.parent / "README.md"),
        }
        result = client.request("mino/turn", {"text": "hello"})
        assert result["status"] == "failed" and result["error"] == NO_KEY
    finally:
        client.stop()
    assert contract_problems(client) == []
    client = Client(
        bare_env(mino_home, OPENAI_API_KEY="k"),
        workdir,
        argv=[sys.executable, "-m", "mino_server", "--stdio"],
    )
    try:
        client.initialize(workdir)
        assert "setup" not in client.request("mino/state")  # additive: absent when nothing is missing
    finally:
        client.stop()
