"""Native diff for file changes: write_file and edit_file carry the whole file before and after
(`diff {path, before, after}`) on their tool_call event and mino/approve request, taken in prepare()
from the bytes the approval is bound to, when both are UTF-8 text of at most 1 MiB."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_client import Client, contract_problems
from tool_helpers import call

from mino_server.core.cancel import CancelToken
from mino_server.core.contract import DIFF_MAX_BYTES, FileDiff
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.files import EditFileTool, WriteFileTool
from mino_server.testing.scripted_model import ScriptedModel


@pytest.fixture
def ctx(workdir: Path, mino_home: Path) -> ToolContext:
    return ToolContext(
        workdir=workdir.resolve(), home=mino_home, memory_dir=mino_home / "memory", cancel=CancelToken()
    )


def prepared_diff(tool: Any, args: dict[str, Any], ctx: ToolContext) -> FileDiff | None:
    return tool.prepare(tool.validate(args), ctx).diff  # type: ignore[no-any-return]


# ---- prepare() ----------------------------------------------------------------------------------
def test_write_create_overwrite_and_edit_carry_the_whole_file(ctx: ToolContext) -> None:
    wd = ctx.workdir
    new = prepared_diff(WriteFileTool(), {"path": "sub/new.py", "content": "x = 1\n", "mode": "create"}, ctx)
    assert new == FileDiff(path=str(wd / "sub" / "new.py"), before=None, after="x = 1\n")
    assert not (wd / "sub").exists()  # prepare() writes nothing

    (wd / "a.txt").write_text("one\ntwo\nthree\n")
    over = prepared_diff(WriteFileTool(), {"path": "a.txt", "content": "new\n", "mode": "overwrite"}, ctx)
    assert over == FileDiff(path=str(wd / "a.txt"), before="one\ntwo\nthree\n", after="new\n")

    edit = prepared_diff(EditFileTool(), {"path": "a.txt", "old_text": "two", "new_text": "2"}, ctx)
    assert edit == FileDiff(path=str(wd / "a.txt"), before="one\ntwo\nthree\n", after="one\n2\nthree\n")
    assert (wd / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_the_path_is_where_the_write_lands(ctx: ToolContext) -> None:
    wd = ctx.workdir
    (wd / "real.txt").write_text("r\n")
    (wd / "link.txt").symlink_to("real.txt")
    diff = prepared_diff(EditFileTool(), {"path": "link.txt", "old_text": "r", "new_text": "s"}, ctx)
    assert diff is not None and diff.path == str(wd / "real.txt")


def test_no_diff_for_large_binary_or_non_utf8_files(ctx: ToolContext) -> None:
    wd = ctx.workdir
    limit = "a" * DIFF_MAX_BYTES
    fits = prepared_diff(WriteFileTool(), {"path": "big.txt", "content": limit, "mode": "create"}, ctx)
    assert fits is not None and fits.after == limit  # exactly 1 MiB: still shown
    over = limit + "b"
    assert prepared_diff(WriteFileTool(), {"path": "big.txt", "content": over, "mode": "create"}, ctx) is None
    # 1 MiB of characters but more bytes: the limit counts UTF-8 bytes.
    wide = "é" * (DIFF_MAX_BYTES // 2 + 1)
    assert prepared_diff(WriteFileTool(), {"path": "w.txt", "content": wide, "mode": "create"}, ctx) is None

    (wd / "large.txt").write_text("x" * DIFF_MAX_BYTES + "\nend\n")
    edit = {"path": "large.txt", "old_text": "end", "new_text": "END"}
    assert prepared_diff(EditFileTool(), edit, ctx) is None
    call(EditFileTool(), edit, ctx)  # the call itself still works, only without a diff view

    (wd / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    args = {"path": "latin1.txt", "content": "café\n", "mode": "overwrite"}
    assert prepared_diff(WriteFileTool(), args, ctx) is None
    (wd / "nul.bin").write_bytes(b"a\0b")
    args = {"path": "nul.bin", "content": "ab", "mode": "overwrite"}
    assert prepared_diff(WriteFileTool(), args, ctx) is None


# ---- over a real `mino --stdio` -----------------------------------------------------------------
@pytest.fixture
def client(mino_home: Path, workdir: Path, model: ScriptedModel) -> Iterator[Client]:
    mino_home.mkdir(parents=True, exist_ok=True)
    (mino_home / "config.yaml").write_text('sandbox: "off"\n')
    env = dict(os.environ, MINO_HOME=str(mino_home), MINO_BASE_URL=model.base_url, MINO_API_KEY="test")
    seen: list[bool] = []

    def approve(params: dict[str, Any]) -> dict[str, Any]:
        seen.append((workdir / "notes.md").exists())  # the file on disk is untouched while asked
        return {"approved": True}

    c = Client(env, workdir, handlers={"mino/approve": approve})
    c.seen_on_disk = seen  # type: ignore[attr-defined]
    yield c
    c.stop()
    assert contract_problems(c) == [], bytes(c.stderr).decode(errors="replace")
    assert b"Traceback" not in c.stderr


def write_call(path: str, content: str, mode: str = "create") -> dict[str, Any]:
    return {"calls": [{"name": "write_file", "arguments": {"path": path, "content": content, "mode": mode}}]}


def test_approve_and_tool_call_carry_the_diff(client: Client, model: ScriptedModel, workdir: Path) -> None:
    model.add(write_call("notes.md", "# Notes\n"), {"text": "Written."})
    client.initialize(workdir, mode="manual")
    assert client.request("mino/turn", {"text": "write notes"})["status"] == "completed"
    (asked,) = [r["params"] for r in client.incoming_requests if r["method"] == "mino/approve"]
    expected = {"path": str(workdir.resolve() / "notes.md"), "before": None, "after": "# Notes\n"}
    assert asked["diff"] == expected
    (event,) = client.events("tool_call")
    assert event["decision"] == "ask" and event["diff"] == expected
    assert client.seen_on_disk == [False]  # type: ignore[attr-defined]
    assert (workdir / "notes.md").read_text() == "# Notes\n"


def test_a_call_that_runs_without_asking_still_has_its_diff(
    client: Client, model: ScriptedModel, workdir: Path
) -> None:
    (workdir / "a.py").write_text("x = 1\n")
    edit = {"name": "edit_file", "arguments": {"path": "a.py", "old_text": "1", "new_text": "2"}}
    model.add({"calls": [edit]}, write_call("big.txt", "z" * (DIFF_MAX_BYTES + 1)), {"text": "Done."})
    client.initialize(workdir, mode="accept-edits")
    assert client.request("mino/turn", {"text": "edit"})["status"] == "completed"
    assert not [r for r in client.incoming_requests if r["method"] == "mino/approve"]
    edit_event, big_event = client.events("tool_call")
    assert edit_event["decision"] == "show"
    assert edit_event["diff"] == {
        "path": str(workdir.resolve() / "a.py"),
        "before": "x = 1\n",
        "after": "x = 2\n",
    }
    assert "diff" not in big_event  # over 1 MiB: the field is absent, the call runs
    assert (workdir / "a.py").read_text() == "x = 2\n" and (
        workdir / "big.txt"
    ).stat().st_size > DIFF_MAX_BYTES
