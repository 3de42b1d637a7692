"""`mino/history` in pages through a real `mino --stdio`: the latest page for `{}` (what a version-1
client sends), earlier pages with `before`, no gaps, no overlaps, the limit's cap, and every
answer checked against the protocol's classes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_client import Client, contract_problems

from mino_server.testing.scripted_model import ScriptedModel

SID = "e" * 32
AT = "2026-10-21T10:00:00.000Z"


def long_session(home: Path, turns: int) -> list[dict[str, Any]]:
    """A session as Mino writes it; returns the items a chat panel shows, each with its seq."""
    records: list[dict[str, Any]] = []

    def add(type_: str, turn_id: str | None, **fields: Any) -> dict[str, Any]:
        rec = {"seq": len(records) + 1, "type": type_, **({"turn_id": turn_id} if turn_id else {}), "at": AT}
        rec.update(fields)
        records.append(rec)
        return rec

    add("session_skills", None, skills=[])
    shown: list[dict[str, Any]] = []
    for n in range(turns):
        tid = f"{n:016x}"
        r = add("user_message", tid, text=f"question {n}")
        shown.append({"seq": r["seq"], "turnId": tid, "role": "user", "text": f"question {n}"})
        for c in range(n % 3):
            add("tool_call", tid, call_id=f"call_{n}_{c}", name=f"tool_{c}", arguments="{}")
            r = add("tool_result", tid, call_id=f"call_{n}_{c}", status="completed", output=f"out {n}.{c}")
            shown.append(
                {
                    "seq": r["seq"],
                    "turnId": tid,
                    "role": "tool",
                    "text": f"out {n}.{c}",
                    "tool": f"tool_{c}",
                    "status": "completed",
                }
            )
        r = add("assistant_message", tid, text=f"answer {n}")
        shown.append({"seq": r["seq"], "turnId": tid, "role": "assistant", "text": f"answer {n}"})
        add("turn_end", tid, status="completed")
        if n == turns // 2:
            add("compaction", None, summary="the first half", through_seq=len(records) - 4)
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (sessions / "active-session.json").write_text(json.dumps({"session_id": SID}))
    return shown


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Client, list[dict[str, Any]]]]:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')
    shown = long_session(home, 800)
    with ScriptedModel() as model:
        env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
        client = Client(env, ws)
        try:
            client.initialize(ws)
            assert client.request("mino/state")["sessionId"] == SID
            yield client, shown
        finally:
            client.stop()
        assert contract_problems(client) == [], bytes(client.stderr).decode(errors="replace")
        assert b"Traceback" not in client.stderr


def test_the_latest_page_then_earlier_pages_without_gaps_or_overlaps(
    served: tuple[Client, list[dict[str, Any]]],
) -> None:
    client, shown = served
    assert len(shown) > 1000
    for params in (None, {}):  # a version-1 client: no params, or {}
        page = client.request("mino/history", params)
        assert page["items"] == shown[-200:] and page["more"] is True
    for limit in (7, 200, 1000):
        walked: list[dict[str, Any]] = []
        page = client.request("mino/history", {"limit": limit})
        while True:
            assert 0 < len(page["items"]) <= limit
            walked = page["items"] + walked
            if not page["more"]:
                break
            page = client.request("mino/history", {"before": page["items"][0]["seq"], "limit": limit})
        assert walked == shown  # every item once, in order, whatever the page size
    before = None
    for n in range(1, 30):  # pages of one item: each the one just above
        page = client.request("mino/history", {"limit": 1, **({"before": before} if before else {})})
        assert page == {"items": [shown[-n]], "more": True}
        before = page["items"][0]["seq"]


def test_limits_and_bounds(served: tuple[Client, list[dict[str, Any]]]) -> None:
    client, shown = served
    assert client.request("mino/history", {"limit": 5000})["items"] == shown[-1000:]  # capped
    assert client.request("mino/history", {"limit": 0})["items"] == shown[-1:]  # below 1 counts as 1
    assert client.request("mino/history", {"limit": -3})["items"] == shown[-1:]
    assert client.request("mino/history", {"before": 1}) == {"items": [], "more": False}
    assert client.request("mino/history", {"before": -7}) == {"items": [], "more": False}
    assert client.request("mino/history", {"before": 10**12})["items"] == shown[-200:]
    middle = shown[500]["seq"]
    page = client.request("mino/history", {"before": middle, "limit": 3})
    assert page == {"items": shown[497:500], "more": True}
    first = client.request("mino/history", {"before": shown[2]["seq"], "limit": 10})
    assert first == {"items": shown[:2], "more": False}
    err = client.error("mino/history", {"before": "ten"})
    assert err.code == -32602 and "params.before" in err.message
