"""Finding 8: a JSON-RPC *response* from the client is an answer to the server's own request, or nothing.

pygls keeps the client's in-flight requests and the server's requests (mino/approve, mino/confirm)
in one dict, so a response carrying the id of the client's own `mino/turn` completed that turn's
future: the turn answered `{"injected": true}`, the pool worker still running it died when it
finished, and after 16 of those the server answered nothing. A real `mino --stdio` over real pipes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_client import NO_ANSWER, Client, contract_problems

from mino_server.testing.scripted_model import ScriptedModel

ROUNDS = 20  # more than the server's 16 pool workers


@pytest.fixture
def client(tmp_path: Path, model: ScriptedModel) -> Iterator[Client]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')  # bash asks in manual mode, on every machine
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
    env.pop("MINO_MODEL", None)
    c = Client(env, ws, handlers={"mino/approve": lambda params: NO_ANSWER})  # answered by the test
    c.initialize(ws, mode="manual")
    yield c
    c.stop()
    assert contract_problems(c) == [], bytes(c.stderr).decode(errors="replace")
    assert b"Traceback" not in c.stderr, bytes(c.stderr).decode(errors="replace")


def approvals(client: Client) -> list[dict[str, Any]]:
    return [r for r in client.incoming_requests if r["method"] == "mino/approve"]


def wait_approval(client: Client, n: int) -> dict[str, Any]:
    """The n-th (0-based) mino/approve the server sent."""
    return client.wait_for(  # type: ignore[no-any-return]
        lambda: approvals(client)[n] if len(approvals(client)) > n else None, what=f"approval {n}"
    )


def respond(client: Client, msg_id: Any, result: Any) -> None:
    client.send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def test_a_response_with_the_id_of_the_clients_own_turn_is_ignored(
    client: Client, model: ScriptedModel, tmp_path: Path
) -> None:
    witness = tmp_path / "ws" / "ran.txt"
    for i in range(ROUNDS):
        model.add(
            {"calls": [{"name": "bash", "arguments": {"command": f"echo {i} >> ran.txt"}}]},
            {"text": f"Real answer {i}."},
        )
        turn = client.start("mino/turn", {"text": f"round {i}"})
        asked = wait_approval(client, i)  # the turn is in flight, waiting for the person
        for _ in range(ROUNDS):
            respond(client, turn.id, {"injected": True})
        client.send({"jsonrpc": "2.0", "id": turn.id, "error": {"code": 1, "message": "injected"}})
        assert client.request("mino/state")["busy"] is True
        respond(client, asked["id"], {"approved": False})
        # A duplicate answer, saying yes this time: the question was answered already.
        respond(client, asked["id"], {"approved": True})
        result = turn.result()
        assert result["status"] == "completed" and result["text"] == f"Real answer {i}.", result
    assert not witness.exists()  # every call was denied: no duplicate "yes" ran one
    assert [e["outcome"] for e in client.events("approval_resolved")] == ["denied"] * ROUNDS
    # Still answering, with every pool worker alive: a turn, then the state.
    model.add({"text": "Still here."})
    assert client.request("mino/turn", {"text": "last"})["text"] == "Still here."
    assert client.request("mino/state")["busy"] is False
    assert b"ignored a response to id" in client.stderr


def test_a_response_to_an_id_the_server_never_issued_is_ignored(client: Client) -> None:
    for bogus in ["mino-1", "mino-999", 1, 0, -5, "x"]:
        respond(client, bogus, {"approved": True})
        client.send({"jsonrpc": "2.0", "id": bogus, "error": {"code": -32000, "message": "no"}})
    assert client.request("mino/state")["busy"] is False
    client.wait_for(lambda: b"ignored a response to id 'mino-999'" in client.stderr, what="the log line")


def test_a_client_request_id_equal_to_a_server_request_id_stays_apart(
    client: Client, model: ScriptedModel, tmp_path: Path
) -> None:
    """The client may pick any id, the server's own included: one must not replace the other."""
    model.add(
        {"calls": [{"name": "bash", "arguments": {"command": "echo yes > approved.txt"}}]},
        {"text": "Ran it."},
    )
    turn = client.start("mino/turn", {"text": "go"})
    asked = wait_approval(client, 0)
    # A client request that reuses the id of the server's pending mino/approve, answered first.
    client.sent_methods[asked["id"]] = "mino/state"
    client.send({"jsonrpc": "2.0", "id": asked["id"], "method": "mino/state"})
    client.wait_for(
        lambda: any(m.get("id") == asked["id"] and "result" in m for m in client.messages),
        what="the answer to the client's request",
    )
    respond(client, asked["id"], {"approved": True})  # still reaches the server's question
    result = turn.result()
    assert result["status"] == "completed" and result["text"] == "Ran it."
    assert (tmp_path / "ws" / "approved.txt").read_text() == "yes\n"
