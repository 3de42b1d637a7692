"""An off-the-shelf LSP client library (pygls's LanguageClient) drives `mino --stdio` end to end.

PROTOCOL.md promises that any LSP client can drive the server: this uses the library's own
initialize/shutdown/exit and its generic request/notification machinery for the mino/* methods.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from mino_server.testing.scripted_model import ScriptedModel


@pytest.mark.asyncio
async def test_pygls_language_client_runs_a_turn_with_an_approval(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')
    save = {
        "name": "memory_save",
        "arguments": {"name": "editor", "type": "user", "summary": "Uses VS Code", "mode": "create"},
    }
    with ScriptedModel([{"calls": [save]}, {"text": "Saved it."}]) as model:
        env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
        client = LanguageClient("mino-test", "1")
        events: list[Any] = []
        approvals: list[Any] = []

        @client.feature("mino/event")
        def on_event(params: Any) -> None:
            events.append(params)

        @client.feature("mino/approve")
        def on_approve(params: Any) -> dict[str, bool]:
            approvals.append(params)
            return {"approved": True}

        await client.start_io(sys.executable, "-m", "mino_server", "--stdio", env=env, cwd=str(ws))
        try:
            result = await client.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
                    initialization_options={"mode": "manual"},
                )
            )
            assert result.server_info is not None and result.server_info.name == "mino"
            client.initialized(types.InitializedParams())
            turn = await client.protocol.send_request_async("mino/turn", {"text": "Remember my editor."})
            assert turn.status == "completed" and turn.text == "Saved it."
            assert approvals and approvals[0].tool == "memory_save"
            assert [e.type for e in events][-1] == "turn_end"
            assert (home / "memory" / "editor.md").exists()
            await client.shutdown_async(None)
            client.exit(None)
        finally:
            server = client._server
            if server is not None and server.returncode is None:
                try:
                    await asyncio.wait_for(server.wait(), 10)
                except TimeoutError:
                    server.kill()
            await client.stop()
        assert server is not None and server.returncode == 0
