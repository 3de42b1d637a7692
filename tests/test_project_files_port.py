"""The port for what a client can do for the file tools (core/tools/project_files.py), proved with a
fake client: an editor whose unsaved buffers differ from the disk. The file tools read and write
through it, Mino's own path checks come first, and an approved write stays bound to what the port
returned. (ACP's fs/read_text_file and fs/write_text_file are one such implementation:
acp/session.py ClientFiles, tested over a real mino --acp in tests/test_acp.py.)"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import BinaryIO

import pytest
from helpers import RecordingUI, turn

from mino_server.core.cancel import CancelToken
from mino_server.core.config import load_config
from mino_server.core.conversation import Conversation
from mino_server.core.store import Store
from mino_server.core.tools.base import ToolContext, ToolFailure
from mino_server.core.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from mino_server.core.tools.paths import Target
from mino_server.core.tools.project_files import (
    CHANGED_AFTER_APPROVAL,
    BeforeWrite,
    FileBytes,
    ProjectFiles,
    sha256,
)
from mino_server.testing.scripted_model import ScriptedModel


class EditorBuffers:
    """A client holding files in memory (its buffers), by real path; everything it was asked is kept."""

    def __init__(self, files: dict[Path, str]) -> None:
        self.files = dict(files)
        self.calls: list[tuple[str, Path]] = []

    def open(self, target: Target) -> BinaryIO | None:
        self.calls.append(("open", target.path))
        text = self.files.get(target.path)
        return None if text is None else io.BytesIO(text.encode("utf-8"))

    def read(self, target: Target) -> FileBytes | None:
        self.calls.append(("read", target.path))
        text = self.files.get(target.path)
        return None if text is None else FileBytes(text.encode("utf-8"), 0o644)

    def write(
        self, target: Target, data: bytes, expected: str | None, before_write: BeforeWrite | None = None
    ) -> None:
        self.calls.append(("write", target.path))
        found = self.read(target)
        if (None if found is None else sha256(found.data)) != expected:
            raise ToolFailure(CHANGED_AFTER_APPROVAL)
        if before_write is not None:
            before_write(found)
        self.files[target.path] = data.decode("utf-8")


def _ctx(tmp_path: Path, files: ProjectFiles) -> ToolContext:
    wd = tmp_path / "proj"
    wd.mkdir()
    home = tmp_path / "home"
    return ToolContext(
        workdir=wd.resolve(), home=home, memory_dir=home / "memory", cancel=CancelToken(), files=files
    )


def _run(tool, args, ctx):  # type: ignore[no-untyped-def]
    parsed = tool.validate(args)
    return tool.run(parsed, ctx, tool.prepare(parsed, ctx))


def test_the_file_tools_read_and_write_through_the_port_not_the_disk(tmp_path: Path) -> None:
    buffers = EditorBuffers({})
    ctx = _ctx(tmp_path, buffers)
    on_disk = ctx.workdir / "a.txt"
    on_disk.write_text("saved on disk\n")
    buffers.files[on_disk] = "unsaved in the editor\n"

    assert _run(ReadFileTool(), {"path": "a.txt"}, ctx).output == "unsaved in the editor\n"
    edit = {"path": "a.txt", "old_text": "unsaved", "new_text": "edited"}
    assert _run(EditFileTool(), edit, ctx).status == "completed"
    assert buffers.files[on_disk] == "edited in the editor\n"
    new = {"path": "new.txt", "content": "made by the client\n", "mode": "create"}
    assert _run(WriteFileTool(), new, ctx).status == "completed"
    assert buffers.files[ctx.workdir / "new.txt"] == "made by the client\n"
    # the disk was never touched
    assert on_disk.read_text() == "saved on disk\n" and not (ctx.workdir / "new.txt").exists()


def test_a_write_is_bound_to_what_the_client_returned_when_the_person_was_asked(tmp_path: Path) -> None:
    buffers = EditorBuffers({})
    ctx = _ctx(tmp_path, buffers)
    path = ctx.workdir / "a.txt"
    buffers.files[path] = "one\n"
    tool = EditFileTool()
    parsed = tool.validate({"path": "a.txt", "old_text": "one", "new_text": "two"})
    prepared = tool.prepare(parsed, ctx)
    buffers.files[path] = "one, typed on after the question\n"  # the person kept typing
    with pytest.raises(ToolFailure, match="changed after approval"):
        tool.run(parsed, ctx, prepared)
    assert buffers.files[path] == "one, typed on after the question\n"


def test_mino_judges_the_path_before_the_port_sees_it(tmp_path: Path) -> None:
    buffers = EditorBuffers({})
    ctx = _ctx(tmp_path, buffers)
    for args in ({"path": "../outside.txt"}, {"path": str(ctx.home / "SOUL.md")}):
        with pytest.raises(ToolFailure):
            _run(ReadFileTool(), args, ctx)
    assert buffers.calls == []


def test_a_conversation_hands_its_port_to_every_turn(model: ScriptedModel, workdir: Path) -> None:
    path = workdir.resolve() / "notes.txt"
    buffers = EditorBuffers({path: "from the buffer\n"})
    model.add({"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}, {"text": "done"})
    env = dict(os.environ, MINO_BASE_URL=model.base_url, MINO_API_KEY="test-key")
    conversation = Conversation(Store(load_config(env=env)), workdir, RecordingUI(), files=buffers)
    conversation.open()
    try:
        assert turn(conversation, "read my notes").status == "completed"
    finally:
        conversation.close()
    outputs = [i for i in model.requests[1]["input"] if i.get("type") == "function_call_output"]
    assert "from the buffer" in json.dumps(outputs)
    assert buffers.calls == [("open", path)]
