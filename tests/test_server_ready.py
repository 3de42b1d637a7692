"""The editor is ready when Mino is: `initialized` starts the store and the session at once, and
`mino/state` and `mino/history` are answered while pygls (~200 ms of imports) is still loading."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from server_client import Client, contract_problems

from mino_server.testing.scripted_model import ScriptedModel

SID = "b" * 32
AT = "2026-10-21T10:00:00.000Z"
HOLD_S = 4.0
# `mino --stdio` with pygls's import held back HOLD_S seconds (a marker on stderr when it goes on).
# The wait is in the module's execution, as a slow import's is: a finder would hold the import lock.
LAUNCH = f"""
import importlib.abc, importlib.machinery, os, sys, time
class Slow(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner
    def create_module(self, spec):
        return self.inner.create_module(spec)
    def exec_module(self, module):
        time.sleep({HOLD_S})
        os.write(2, b"pygls-held-back-until-now\\n")
        self.inner.exec_module(module)
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "mino_server.server.pygls_fence":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        spec.loader = Slow(spec.loader)
        return spec
sys.meta_path.insert(0, Finder())
sys.argv = ["mino", "--stdio"]
from mino_server.main import main
sys.exit(main())
"""


def test_state_and_history_do_not_wait_for_pygls(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / "sessions").mkdir(parents=True)
    ws.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')
    records = [
        {"seq": 1, "type": "user_message", "turn_id": "t1", "at": AT, "text": "question"},
        {"seq": 2, "type": "assistant_message", "turn_id": "t1", "at": AT, "text": "answer"},
        {"seq": 3, "type": "turn_end", "turn_id": "t1", "at": AT, "status": "completed"},
    ]
    (home / "sessions" / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (home / "sessions" / "active-session.json").write_text(json.dumps({"session_id": SID}))
    with ScriptedModel() as model:
        env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
        client = Client(env, ws, argv=[sys.executable, "-c", LAUNCH])
        try:
            client.initialize(ws)
            state = client.request("mino/state", timeout=HOLD_S * 3)
            page = client.request("mino/history", timeout=HOLD_S * 3)
            early = b"pygls-held-back-until-now" not in client.stderr
            assert state["sessionId"] == SID and state["restoreProblem"] is None
            assert page == {
                "items": [
                    {"seq": 1, "turnId": "t1", "role": "user", "text": "question"},
                    {"seq": 2, "turnId": "t1", "role": "assistant", "text": "answer"},
                ],
                "more": False,
            }
            assert early, "mino/state and mino/history waited for pygls"
            # Once pygls is there, the rest goes the usual way.
            model.add({"text": "hello again"})
            result = client.request("mino/turn", {"text": "hello"}, timeout=HOLD_S * 5)
            assert result["status"] == "completed" and result["text"] == "hello again"
        finally:
            client.stop()
        assert contract_problems(client) == [], bytes(client.stderr).decode(errors="replace")
        assert b"Traceback" not in client.stderr
