"""SIGKILL a real `mino` while MCP calls are in flight (docs/BEHAVIOUR.md, "MCP servers"): the call
is on disk before it is sent, the next start marks it `unknown` after asking, it is never sent
again, nothing else is lost, and the killed Mino's server does not outlive it (its stdin closes).

The server is the fixture on the official SDK (mino_server/testing/mcp_fixture.py), which appends
every call it receives, fsynced, to a record file: the witness of what was sent. Each cycle makes
completed MCP calls (echo) and then one that sleeps (slow) when the kill lands; the cycles share one
home, so a later start would re-send an earlier call if recovery ever did. MINO_CRASH_MCP_KILLS sets
the number of kills (default 4)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pexpect
import yaml
from harness import sigkill
from helpers import mino_env, read_jsonl, running, wait_until
from invariants import pair_calls, read_log

from mino_server.testing.scripted_model import ScriptedModel

KILLS = int(os.environ.get("MINO_CRASH_MCP_KILLS", "4"))
PROMPT = "You> "


def start(env: dict[str, str], work: Path) -> pexpect.spawn:
    """Mino at its prompt (recovery answered yes) with the fixture's tools offered."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mino_server", "--mode", "bypass"],
        env=env,
        cwd=str(work),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    while child.expect([r"\[y/N\] ", PROMPT]) == 0:
        child.sendline("y")
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        child.sendline("/mcp")
        state = child.expect(["fx: ready", "fx: starting", "fx: failed"])
        child.expect_exact(PROMPT)
        if state == 0:
            return child
        if state == 2:
            raise AssertionError("the fixture server failed to start")
        time.sleep(0.3)
    raise AssertionError("the fixture server never got ready")


def test_sigkill_with_an_mcp_call_in_flight(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    record = tmp_path / "mcp-witness.jsonl"
    fixture = [sys.executable, "-m", "mino_server.testing.mcp_fixture"]
    server = {"command": fixture, "env": {"MCP_FIXTURE_RECORD": str(record)}, "start_timeout_s": 120}
    (home / "config.yaml").write_text(yaml.safe_dump({"sandbox": "off", "mcp_servers": {"fx": server}}))
    sent: list[str] = []  # every token a scripted reply asked the server for
    in_flight: list[str] = []  # the tokens whose call the kill interrupted
    for cycle in range(KILLS + 1):
        with ScriptedModel() as model:
            env = dict(mino_env(home, model.base_url), HOME=str(tmp_path / "user-home"))
            child = start(env, work)
            try:
                done = f"e{cycle}"
                model.add(
                    {"calls": [{"name": "mcp__fx__echo", "arguments": {"text": done}}]},
                    {"text": f"echoed {done}"},
                )
                sent.append(done)
                child.sendline(f"echo {done}")
                child.expect_exact(f"echoed {done}")
                child.expect_exact(PROMPT)
                if cycle == KILLS:  # the last start only checks what the earlier ones left
                    child.sendeof()
                    child.expect(pexpect.EOF)
                    continue
                token = f"s{cycle}"
                model.add(
                    {"calls": [{"name": "mcp__fx__slow", "arguments": {"seconds": 60, "token": token}}]}
                )
                sent.append(token)
                in_flight.append(token)
                child.sendline(f"slow {token}")
                wait_until(
                    lambda token=token: any(
                        r.get("args", {}).get("token") == token for r in read_jsonl(record)
                    ),
                    "slow call at the server",
                )
                server_pid = read_jsonl(record)[-1]["pid"]
                sigkill(child.pid)
                child.expect(pexpect.EOF)
                wait_until(lambda pid=server_pid: not running(pid), "end of the killed Mino's MCP server")
            finally:
                child.close(force=True)
    seen = [r["args"].get("text") or r["args"].get("token") for r in read_jsonl(record) if "tool" in r]
    assert sorted(seen) == sorted(sent), "an MCP call was lost or sent twice"
    (log,) = (home / "sessions").glob("*.jsonl")
    view = read_log(log)
    assert not view.problem and not view.torn
    results, pending = pair_calls(view.records)
    assert pending == []
    calls = [r for r in view.records if r["type"] == "tool_call"]
    by_token = {
        json.loads(c["arguments"]).get("token") or json.loads(c["arguments"]).get("text"): c for c in calls
    }
    for token in in_flight:
        assert results[by_token[token]["seq"]]["status"] == "unknown"
