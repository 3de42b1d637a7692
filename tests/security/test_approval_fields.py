"""Finding 9: padding must not push a field's beginning out of view.

`cp ~/.ssh/id_rsa ./pub/ ;` + 4,000 spaces + `npm run lint` showed only `npm run lint"` on screen at the
question. The core now shows every field through display.field_value (runs collapsed with their
count, over-long values cut in the middle with a warning line), once, for every front end.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from cli_driver import spawn
from helpers import RecordingUI, make_conversation, turn
from server_client import Client, contract_problems

from mino_server.core.display import FIELD_HEAD_CHARS, FIELD_TAIL_CHARS
from mino_server.testing.scripted_model import ScriptedModel

PADDED = "cp ~/.ssh/id_rsa ./pub/ ;" + " " * 4000 + "npm run lint"
PADDED_SHOWN = "cp ~/.ssh/id_rsa ./pub/ ;\\{4000 spaces}npm run lint"
LONG = "cp ~/.ssh/id_rsa ./pub/ ; " + "true; " * 2000 + "npm run lint"
LONG_CUT = len(LONG) - FIELD_HEAD_CHARS - FIELD_TAIL_CHARS
CUT_WARNING = (
    f"Command is too long to show in full: {LONG_CUT} of its {len(LONG)} characters are not shown "
    "(cut from the middle). Deny unless you trust what you cannot see."
)
COLUMNS, ROWS = 200, 50  # cli_driver.spawn's terminal
QUESTION = re.compile(r"Approve this operation\? \[y/N(?:/a)?\] ")


def bash_call(command: str) -> dict:
    return {"calls": [{"name": "bash", "arguments": {"command": command}}]}


def ask_through_the_pty(model: ScriptedModel, env: dict[str, str], workdir: Path, command: str) -> str:
    """The terminal output from the real `[Tool: bash]` line up to the question (denied)."""
    model.add(bash_call(command), {"text": "Not run."})
    child = spawn(env, workdir, "--mode", "manual")
    child.logfile_read = transcript = io.StringIO()
    child.expect_exact("You> ")
    child.sendline("tidy up")
    child.expect(QUESTION)  # `[y/N/a]` where a rule could cover the command
    child.sendline("n")
    child.expect_exact("[Tool result: denied]")
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    out = transcript.getvalue()
    start = out.index("[Tool: bash]")
    found = QUESTION.search(out, start)
    assert found is not None
    return out[start : found.start()]


def rows(block: str) -> int:
    return sum(max(1, math.ceil(len(line) / COLUMNS)) for line in block.split("\r\n"))


def test_padded_command_is_shown_whole_at_the_question(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    block = ask_through_the_pty(model, mino_env, workdir, PADDED)
    assert block.startswith(f'[Tool: bash]\r\nCommand: "{PADDED_SHOWN}"\r\nDirectory: "')
    assert rows(block) < 10
    assert not (workdir / "pub").exists()


def test_over_long_command_keeps_its_start_on_screen_and_says_what_is_cut(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    block = ask_through_the_pty(model, mino_env, workdir, LONG)
    lines = block.split("\r\n")
    assert lines[1].startswith('Command: "cp ~/.ssh/id_rsa ./pub/ ; true; true; ')
    assert f"\\{{{LONG_CUT} characters not shown}}" in lines[1]
    assert lines[1].endswith('true; npm run lint"')
    assert CUT_WARNING in lines
    # The whole block and the question fit the screen: the command's start is in view when asked.
    assert rows(block) + 1 <= ROWS


def test_the_core_shows_the_same_fields_to_every_front_end(model: ScriptedModel, workdir: Path) -> None:
    model.add(bash_call(PADDED), bash_call(LONG), {"text": "done"})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui, mode="manual")
    conversation.open()
    try:
        turn(conversation, "go")
    finally:
        conversation.close()
    padded, long = ui.asked
    assert dict(padded.fields)["Command"] == PADDED_SHOWN and padded.warning is None
    assert long.warning == CUT_WARNING
    for request, event in zip(ui.asked, ui.of_type("tool_call"), strict=True):
        assert [(f["label"], f["value"]) for f in event["fields"]] == request.fields
        assert event["warning"] == request.warning


@pytest.fixture
def client(tmp_path: Path, model: ScriptedModel) -> Iterator[Client]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
    env.pop("MINO_MODEL", None)
    c = Client(env, ws, handlers={"mino/approve": lambda params: {"approved": False}})
    c.initialize(ws, mode="manual")
    yield c
    c.stop()
    assert contract_problems(c) == [], bytes(c.stderr).decode(errors="replace")


def test_the_editor_gets_the_same_fields_and_warning(client: Client, model: ScriptedModel) -> None:
    model.add(bash_call(PADDED), bash_call(LONG), {"text": "done"})
    assert client.request("mino/turn", {"text": "go"})["status"] == "completed"
    padded, long = (r["params"] for r in client.incoming_requests if r["method"] == "mino/approve")
    assert padded["fields"][0] == {"label": "Command", "value": PADDED_SHOWN} and padded["warning"] is None
    assert long["fields"][0]["value"].startswith("cp ~/.ssh/id_rsa ./pub/ ; true; ")
    assert long["warning"] == CUT_WARNING
    events = client.events("tool_call")
    assert [(e["fields"], e["warning"]) for e in events] == [
        (padded["fields"], None),
        (long["fields"], CUT_WARNING),
    ]
