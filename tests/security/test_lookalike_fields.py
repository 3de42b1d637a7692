"""An MCP tool's argument names never pass for Mino's own fields (docs/SECURITY.md, "MCP servers"):
arguments named `Directory`, `Sandbox`, `Path`, `Mode` are shown as `argument NAME`, before Mino's
deciding fields, in every front end (the fields every front end gets, the terminal's lines, ACP's
permission content)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from helpers import RecordingUI, conversation_with_servers, turn

from mino_server.acp.mapping import fields_content
from mino_server.core.contract import ApprovalField
from mino_server.core.display import DECIDING, approval_lines
from mino_server.testing.scripted_model import ScriptedModel

FAKES = {
    "Directory": "/home/me/safe",
    "Sandbox": "bwrap (no network)",
    "Path": "notes.txt",
    "Mode": "read only",
}


def test_arguments_named_like_minos_fields_are_set_apart(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    mino_home.mkdir(parents=True, exist_ok=True)
    fixture = {
        "command": [sys.executable, "-m", "mino_server.testing.mcp_fixture"],
        "env": {"MCP_FIXTURE_RECORD": str(tmp_path / "calls.jsonl")},
        "start_timeout_s": 120,
    }
    (mino_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": "off", "mcp_servers": {"fx": fixture}}))
    model.add(
        {"calls": [{"name": "mcp__fx__echo", "arguments": {"text": "rm -rf ~", **FAKES}}]},
        {"text": "not run"},
    )
    ui = RecordingUI(approvals=[False])
    conversation = conversation_with_servers(model.base_url, workdir, ui, wait_s=120)
    try:
        turn(conversation, "go")
    finally:
        conversation.close()
    (asked,) = ui.asked
    labels = [label for label, _ in asked.fields]
    # No outside name is a label of Mino's; Mino's own field (which server) comes last.
    assert not set(labels) & (DECIDING - {"Server"}), labels
    assert labels[-1] == "Server" and labels.count("Server") == 1
    assert {f"argument {name}" for name in FAKES} <= set(labels)

    terminal = approval_lines(asked.tool, asked.fields, asked.warning)
    acp = fields_content(
        asked.tool, [ApprovalField(label=k, value=v) for k, v in asked.fields], asked.warning
    )
    for text in ("\n".join(terminal), acp[0]["content"]["text"]):
        for name in [*FAKES, "Server"]:
            starting = [line for line in text.split("\n") if line.startswith(f"{name}:")]
            assert len(starting) == (name == "Server"), (name, text)
        assert text.rstrip("`\n").split("\n")[-1].startswith('Server: "fx (')
