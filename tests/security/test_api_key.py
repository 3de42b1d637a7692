"""Finding 10 (kept): the model API key is used only in the Authorization header.

A real `mino` in bypass mode runs a command that tries the ways a command could find the key; the
key must appear in no request body, no tool result, no session file and nowhere else under
MINO_HOME, while the header proves it was really configured. Unsandboxed, a command runs as the
person and can read Mino's own /proc/PID/environ (docs/SECURITY.md says so), so /proc is checked in
the sandboxed run only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_driver import piped

from mino_server.testing.scripted_model import ScriptedModel

KEY = "sk-mino-test-7f3a9c1e5b2d4068"
PROBE = (
    'echo "env=[$MINO_API_KEY][$OPENAI_API_KEY]"; '
    "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-mino-test | sed 's/^/proc-hits=/'; "
    'grep -rs sk-mino-test "$MINO_HOME" ~ 2>/dev/null | head -1; true'
)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_the_key_reaches_only_the_authorization_header(
    sandbox: str, model: ScriptedModel, mino_env: dict[str, str], mino_home: Path, workdir: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text(f"sandbox: {sandbox}\n")
    env = dict(mino_env, MINO_API_KEY=KEY)
    model.add({"calls": [{"name": "bash", "arguments": {"command": PROBE}}]}, {"text": "done"})
    done = piped(env, workdir, "find the key\n", "--mode", "bypass")
    assert "Assistant> done" in done.stdout, done.stdout + done.stderr
    assert all(h.get("authorization") == f"Bearer {KEY}" for h in model.request_headers)
    assert len(model.requests) == 2
    for body in model.requests:
        assert KEY not in json.dumps(body)
    result = model.requests[1]["input"][-1]["output"]
    assert "env=[][]" in result
    if sandbox == "auto":  # unsandboxed, a command runs as you and can read Mino's /proc environ
        assert "proc-hits=0" in result
    for path in mino_home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in done.stdout and KEY not in done.stderr
