"""Context usage: a `usage` event after every response that reported a count, State.usage with the
latest, saved on the turn's turn_end so a resumed session shows it; zero and absent counts are
unknown (no event, no usage), as llama.cpp servers and LiteLLM's bridge report them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import RecordingUI, make_conversation, turn
from server_client import Client

from mino_server.testing.scripted_model import ScriptedModel


def test_usage_event_state_and_resume(model: ScriptedModel, workdir: Path) -> None:
    model.add({"text": "one", "usage": {"input_tokens": 52_480, "output_tokens": 12}})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    assert conversation.state().usage is None
    result = turn(conversation, "hello")
    (event,) = ui.of_type("usage")
    assert event == {
        "type": "usage",
        "turnId": result.turnId,
        "inputTokens": 52_480,
        "outputTokens": 12,
        "contextWindow": conversation.config.context_window,
    }
    usage = conversation.state().usage
    assert usage is not None and (usage.inputTokens, usage.contextWindow) == (52_480, 128_000)
    assert conversation.log is not None
    end = json.loads(conversation.log.path.read_text().splitlines()[-1])
    assert end["type"] == "turn_end" and end["usage"] == {"input_tokens": 52_480, "output_tokens": 12}
    sid = conversation.session_id
    conversation.close()

    again = make_conversation(model.base_url, workdir)  # a restart restores the selected session's usage
    again.open()
    assert again.session_id == sid
    restored = again.state().usage
    assert restored is not None and restored.inputTokens == 52_480
    again.close()


def test_zero_or_absent_usage_is_unknown(model: ScriptedModel, workdir: Path) -> None:
    model.add({"text": "a", "usage": {"input_tokens": 0, "output_tokens": 0}}, {"text": "b", "usage": None})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    turn(conversation, "one")
    turn(conversation, "two")
    assert ui.of_type("usage") == [] and conversation.state().usage is None
    conversation.close()


def test_the_editor_receives_usage(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    model.add({"text": "hi", "usage": {"input_tokens": 1000, "output_tokens": 5}})
    env = dict(os.environ, MINO_HOME=str(mino_home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
    client = Client(env, workdir)
    try:
        client.initialize(workdir)
        assert client.request("mino/state")["usage"] is None
        client.request("mino/turn", {"text": "hello"})
        events = [n for n in client.notifications("mino/event") if n["type"] == "usage"]
        assert [(e["inputTokens"], e["contextWindow"]) for e in events] == [(1000, 128_000)]
        assert client.request("mino/state")["usage"] == {"inputTokens": 1000, "contextWindow": 128_000}
    finally:
        client.stop()
