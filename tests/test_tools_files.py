"""read_file, write_file, edit_file and path confinement, on a real disk."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from tool_helpers import call  # tests/ is on sys.path (conftest.py)

from mino_server.core.cancel import CancelToken
from mino_server.core.tools.base import (
    COMPLETED,
    ArgumentError,
    Prepared,
    ToolContext,
    ToolFailure,
    ToolResult,
)
from mino_server.core.tools.files import EditFileTool, FileState, ReadFileTool, WriteFileTool
from mino_server.core.tools.paths import check_path_syntax, locate, resolve_in_workdir

CHANGED = "File changed after approval; nothing was written."


@pytest.fixture
def wd(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def ctx(wd: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(
        workdir=wd, home=tmp_path / "home", memory_dir=tmp_path / "home" / "memory", cancel=CancelToken()
    )


def failure(tool: Any, args: dict[str, Any], ctx: ToolContext) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        call(tool, args, ctx)
    return info.value


# --- paths -------------------------------------------------------------------------------------


def test_syntax_checks_are_pure() -> None:
    with pytest.raises(ArgumentError, match="must not be empty"):
        check_path_syntax("")
    with pytest.raises(ArgumentError, match="NUL"):
        check_path_syntax("a\0b")
    assert check_path_syntax("../anything") == "../anything"  # judged later, on disk


def test_paths_inside_are_resolved(wd: Path) -> None:
    (wd / "src").mkdir()
    assert resolve_in_workdir(wd, "src/a.py") == wd / "src" / "a.py"
    assert resolve_in_workdir(wd, "src/../b.txt") == wd / "b.txt"
    assert resolve_in_workdir(wd, str(wd / "src" / "a.py")) == wd / "src" / "a.py"  # absolute inside
    assert resolve_in_workdir(wd, ".") == wd


@pytest.mark.parametrize("rel", ["../x", "src/../../x", "/etc/passwd", "/"])
def test_paths_outside_are_refused(wd: Path, rel: str) -> None:
    with pytest.raises(ToolFailure, match="outside the working directory"):
        resolve_in_workdir(wd, rel)


def test_sibling_with_common_prefix_is_outside(wd: Path) -> None:
    sibling = wd.parent / (wd.name + "2")
    sibling.mkdir()
    with pytest.raises(ToolFailure, match="outside"):
        resolve_in_workdir(wd, str(sibling / "f"))


def test_symlink_out_refused_symlink_inside_ok(wd: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    (wd / "out").symlink_to(secret)
    (wd / "outdir").symlink_to(tmp_path)
    (wd / "real.txt").write_text("r")
    (wd / "in").symlink_to(wd / "real.txt")
    with pytest.raises(ToolFailure, match="symbolic link"):
        resolve_in_workdir(wd, "out")
    with pytest.raises(ToolFailure, match="symbolic link"):
        resolve_in_workdir(wd, "outdir/new-file")
    assert resolve_in_workdir(wd, "in") == wd / "real.txt"


def test_symlink_loop_is_a_clear_failure(wd: Path) -> None:
    (wd / "loop").symlink_to(wd / "loop")
    with pytest.raises(ToolFailure):
        resolve_in_workdir(wd, "loop")


# --- read_file ---------------------------------------------------------------------------------


def test_read_whole_file_exactly(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_bytes("one\r\ntwo\n三\n".encode())
    result = call(ReadFileTool(), {"path": "a.txt"}, ctx)
    assert result == ToolResult(COMPLETED, "one\r\ntwo\n三\n")


def test_read_line_range(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("".join(f"{i}\n" for i in range(1, 11)))
    tool = ReadFileTool()
    assert call(tool, {"path": "a.txt", "start_line": 3, "end_line": 5}, ctx).output == "3\n4\n5\n"
    assert call(tool, {"path": "a.txt", "start_line": 9}, ctx).output == "9\n10\n"
    assert call(tool, {"path": "a.txt", "end_line": 2}, ctx).output == "1\n2\n"
    assert call(tool, {"path": "a.txt", "start_line": 10, "end_line": 99}, ctx).output == "10\n"
    failed = failure(tool, {"path": "a.txt", "start_line": 11}, ctx)
    assert str(failed) == "start_line 11 is past the end of a.txt, which has 10 lines."


def test_read_counts_a_last_line_without_newline(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("a\nb")
    assert call(ReadFileTool(), {"path": "a.txt", "start_line": 2}, ctx).output == "b"
    assert "which has 2 lines" in str(failure(ReadFileTool(), {"path": "a.txt", "start_line": 3}, ctx))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "a", "start_line": 0}, "must be 1 or more"),
        ({"path": "a", "start_line": 5, "end_line": 4}, "must not be less than"),
        ({"path": "a", "start_line": "1"}, "must be an integer"),
        ({"path": "a", "start_line": True}, "must be an integer"),
        ({"path": ""}, "must not be empty"),
        ({}, "missing required argument 'path'"),
        ({"path": "a", "lines": 3}, "unknown argument"),
    ],
)
def test_read_argument_errors(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        ReadFileTool().validate(args)


def test_read_empty_missing_directory(wd: Path, ctx: ToolContext) -> None:
    (wd / "empty.txt").write_text("")
    (wd / "d").mkdir()
    assert call(ReadFileTool(), {"path": "empty.txt"}, ctx).output == "(empty.txt is empty.)"
    assert str(failure(ReadFileTool(), {"path": "nope.txt"}, ctx)) == "nope.txt does not exist."
    assert str(failure(ReadFileTool(), {"path": "d"}, ctx)) == "d is a directory, not a file."


def test_read_refuses_binary_and_non_utf8(wd: Path, ctx: ToolContext) -> None:
    (wd / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (wd / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert "binary" in str(failure(ReadFileTool(), {"path": "img.png"}, ctx))
    assert "not UTF-8 text" in str(failure(ReadFileTool(), {"path": "latin1.txt"}, ctx))


def test_read_refuses_fifo_without_blocking(wd: Path, ctx: ToolContext) -> None:
    os.mkfifo(wd / "pipe")
    assert "not a regular file" in str(failure(ReadFileTool(), {"path": "pipe"}, ctx))


def test_read_refuses_paths_outside(wd: Path, ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    (wd / "link").symlink_to(tmp_path / "secret")
    assert "outside" in str(failure(ReadFileTool(), {"path": "../secret"}, ctx))
    assert "outside" in str(failure(ReadFileTool(), {"path": "link"}, ctx))


def test_read_cut_at_2000_lines(wd: Path, ctx: ToolContext) -> None:
    (wd / "long.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    out = call(ReadFileTool(), {"path": "long.txt"}, ctx).output
    body, note = out.rsplit("\n", 1)[0], out.rsplit("\n", 1)[1]
    assert body.splitlines() == [str(i) for i in range(1, 2001)]
    assert note == "[Output cut after line 2000 (2000 lines per call); read on with start_line=2001.]"
    rest = call(ReadFileTool(), {"path": "long.txt", "start_line": 2001}, ctx).output
    assert rest.splitlines() == [str(i) for i in range(2001, 2501)]
    exactly = call(ReadFileTool(), {"path": "long.txt", "start_line": 501}, ctx).output
    assert "[Output cut" not in exactly  # 2000 lines and nothing after: no note


def test_read_cut_at_256_kib(wd: Path, ctx: ToolContext) -> None:
    line = "é" * 99 + "\n"  # 199 bytes
    (wd / "wide.txt").write_text(line * 2000)
    out = call(ReadFileTool(), {"path": "wide.txt"}, ctx).output
    text, note = out.rsplit("\n", 1)
    assert note == "[Output cut at 256 KiB inside line 1318; read on with start_line=1318.]"
    assert len(text.encode()) <= 256 * 1024
    assert text.startswith(line * 1317)


def test_read_one_huge_line(wd: Path, ctx: ToolContext) -> None:
    (wd / "min.js").write_text("x" * 300_000)
    out = call(ReadFileTool(), {"path": "min.js"}, ctx).output
    assert out.startswith("x" * 262_144 + "\n[Output cut at 256 KiB inside line 1, which is longer")


def test_read_prepare_shows_fields_and_asks_nothing(wd: Path, ctx: ToolContext) -> None:
    tool = ReadFileTool()
    assert tool.kind(ctx) == "read_only"
    prepared = tool.prepare(tool.validate({"path": "a.txt", "start_line": 2}), ctx)
    assert prepared.fields == [("Path", "a.txt"), ("Directory", str(wd)), ("Lines", "2-end")]


# --- write_file --------------------------------------------------------------------------------


def test_write_create(wd: Path, ctx: ToolContext) -> None:
    tool = WriteFileTool()
    args = tool.validate({"path": "src/new.py", "content": "print('hi')\n", "mode": "create"})
    prepared = tool.prepare(args, ctx)
    assert prepared.state == FileState(wd / "src" / "new.py", None)
    assert prepared.kind is None  # a plain project file: the project_write row
    assert prepared.fields == [
        ("Path", "src/new.py"),
        ("Directory", str(wd)),
        ("Mode", "Create a new file and its folders"),
        ("Content", "print('hi')\n"),
    ]
    assert prepared.warning is None
    assert tool.run(args, ctx, prepared) == ToolResult(COMPLETED, "Wrote 12 bytes to src/new.py")
    assert (wd / "src" / "new.py").read_text() == "print('hi')\n"
    assert stat.S_IMODE((wd / "src" / "new.py").stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in (wd / "src").iterdir()] == ["new.py"]  # no temp file left behind


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_write_create_refuses_existing(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("old")
    failed = failure(WriteFileTool(), {"path": "a.txt", "content": "new", "mode": "create"}, ctx)
    assert str(failed) == "a.txt already exists; use mode 'overwrite' to replace it."
    assert failed.status == "failed"
    assert (wd / "a.txt").read_text() == "old"


def test_write_overwrite_requires_existing(wd: Path, ctx: ToolContext) -> None:
    failed = failure(WriteFileTool(), {"path": "a.txt", "content": "new", "mode": "overwrite"}, ctx)
    assert str(failed) == "a.txt does not exist; use mode 'create' to make a new file."
    assert not (wd / "a.txt").exists()


def test_write_overwrite_keeps_permission_bits(wd: Path, ctx: ToolContext) -> None:
    script = wd / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    tool = WriteFileTool()
    args = tool.validate({"path": "run.sh", "content": "echo new\n", "mode": "overwrite"})
    prepared = tool.prepare(args, ctx)
    assert prepared.state == FileState(script, hashlib.sha256(b"echo old\n").hexdigest())
    assert ("Mode", "Replace the existing file") in prepared.fields
    tool.run(args, ctx, prepared)
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


def test_write_through_symlink_inside_replaces_target(wd: Path, ctx: ToolContext) -> None:
    (wd / "real.txt").write_text("old")
    (wd / "alias.txt").symlink_to("real.txt")
    tool = WriteFileTool()
    args = tool.validate({"path": "alias.txt", "content": "new", "mode": "overwrite"})
    prepared = tool.prepare(args, ctx)
    assert ("Target", str(wd / "real.txt")) in prepared.fields  # the user sees where it lands
    tool.run(args, ctx, prepared)
    assert (wd / "alias.txt").is_symlink()
    assert (wd / "real.txt").read_text() == "new"


def test_write_refuses_outside(wd: Path, ctx: ToolContext, tmp_path: Path) -> None:
    (wd / "escape").symlink_to(tmp_path)
    for path in ["../evil.txt", str(tmp_path / "evil.txt"), "escape/evil.txt"]:
        failed = failure(WriteFileTool(), {"path": path, "content": "x", "mode": "create"}, ctx)
        assert "outside the working directory" in str(failed)
    assert not (tmp_path / "evil.txt").exists()


def test_write_file_changed_after_approval(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("v1")
    tool = WriteFileTool()
    args = tool.validate({"path": "a.txt", "content": "model", "mode": "overwrite"})
    prepared = tool.prepare(args, ctx)
    (wd / "a.txt").write_text("v2 by the user")
    with pytest.raises(ToolFailure) as info:
        tool.run(args, ctx, prepared)
    assert str(info.value) == CHANGED
    assert (wd / "a.txt").read_text() == "v2 by the user"


def test_write_create_when_file_appears_after_approval(wd: Path, ctx: ToolContext) -> None:
    tool = WriteFileTool()
    args = tool.validate({"path": "a.txt", "content": "model", "mode": "create"})
    prepared = tool.prepare(args, ctx)
    (wd / "a.txt").write_text("user")
    with pytest.raises(ToolFailure, match="changed after approval"):
        tool.run(args, ctx, prepared)
    assert (wd / "a.txt").read_text() == "user"


def test_write_file_deleted_after_approval(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("v1")
    tool = WriteFileTool()
    args = tool.validate({"path": "a.txt", "content": "model", "mode": "overwrite"})
    prepared = tool.prepare(args, ctx)
    (wd / "a.txt").unlink()
    with pytest.raises(ToolFailure, match="changed after approval"):
        tool.run(args, ctx, prepared)
    assert not (wd / "a.txt").exists()


def test_write_preview_is_capped_with_a_warning(wd: Path, ctx: ToolContext) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 101))
    tool = WriteFileTool()
    prepared = tool.prepare(tool.validate({"path": "big.txt", "content": content, "mode": "create"}), ctx)
    assert dict(prepared.fields)["Content"] == "".join(f"line {i}\n" for i in range(1, 21))
    assert prepared.warning is not None and prepared.warning.startswith(
        "Preview cut: showing 20 of 100 lines"
    )


def test_write_into_directory_or_special_file_fails(wd: Path, ctx: ToolContext) -> None:
    (wd / "d").mkdir()
    assert "is a directory" in str(
        failure(WriteFileTool(), {"path": "d", "content": "x", "mode": "overwrite"}, ctx)
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "a", "content": "x", "mode": "append"}, "'create' or 'overwrite'"),
        ({"path": "a", "content": "x"}, "missing required argument 'mode'"),
        ({"path": "a", "content": 3, "mode": "create"}, "must be a string"),
        ({"path": "a", "content": "\ud800", "mode": "create"}, "lone surrogate"),
        ({"path": "a\0", "content": "", "mode": "create"}, "NUL"),
    ],
)
def test_write_argument_errors(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        WriteFileTool().validate(args)


def test_write_empty_content_is_allowed(wd: Path, ctx: ToolContext) -> None:
    assert (
        call(WriteFileTool(), {"path": "e", "content": "", "mode": "create"}, ctx).output
        == "Wrote 0 bytes to e"
    )
    assert (wd / "e").read_bytes() == b""


# --- edit_file ---------------------------------------------------------------------------------


def test_edit_once(wd: Path, ctx: ToolContext) -> None:
    target = wd / "a.py"
    target.write_text("def f():\n    return 1\n")
    target.chmod(0o600)
    tool = EditFileTool()
    assert tool.kind(ctx) == "project_write"
    args = tool.validate({"path": "a.py", "old_text": "return 1", "new_text": "return 2"})
    prepared = tool.prepare(args, ctx)
    assert prepared.fields == [
        ("Path", "a.py"),
        ("Directory", str(wd)),
        ("Mode", "Edit the existing file"),
        ("Diff", "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"),
    ]
    assert tool.run(args, ctx, prepared) == ToolResult(COMPLETED, "Edited a.py: replaced 1 occurrence")
    assert target.read_text() == "def f():\n    return 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "nothing here\n",
            "old_text was not found in a.txt (it must occur exactly once); nothing was changed.",
        ),
        ("x = 1\nx = 1\n", "old_text occurs 2 times in a.txt (it must occur exactly once)"),
        ("x = 1x = 1x = 1", "old_text occurs 3 times"),
    ],
)
def test_edit_needs_exactly_one_occurrence(wd: Path, ctx: ToolContext, text: str, message: str) -> None:
    (wd / "a.txt").write_text(text)
    failed = failure(EditFileTool(), {"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2"}, ctx)
    assert str(failed).startswith(message)
    assert failed.status == "failed"
    assert (wd / "a.txt").read_text() == text


def test_edit_counts_overlapping_occurrences(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("aaa")
    assert "occurs 2 times" in str(
        failure(EditFileTool(), {"path": "a.txt", "old_text": "aa", "new_text": "b"}, ctx)
    )


def test_edit_file_changed_after_approval(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("x = 1\n")
    tool = EditFileTool()
    args = tool.validate({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2"})
    prepared = tool.prepare(args, ctx)
    (wd / "a.txt").write_text("x = 1\n# the user typed this\n")
    with pytest.raises(ToolFailure) as info:
        tool.run(args, ctx, prepared)
    assert str(info.value) == CHANGED
    assert (wd / "a.txt").read_text() == "x = 1\n# the user typed this\n"


def test_edit_missing_binary_and_arguments(wd: Path, ctx: ToolContext) -> None:
    (wd / "bin").write_bytes(b"x = 1\0")
    assert "does not exist" in str(
        failure(EditFileTool(), {"path": "no", "old_text": "a", "new_text": "b"}, ctx)
    )
    assert "binary" in str(failure(EditFileTool(), {"path": "bin", "old_text": "x", "new_text": "y"}, ctx))
    with pytest.raises(ArgumentError, match="must not be empty"):
        EditFileTool().validate({"path": "a", "old_text": "", "new_text": "b"})
    with pytest.raises(ArgumentError, match="same as old_text"):
        EditFileTool().validate({"path": "a", "old_text": "b", "new_text": "b"})


def test_edit_delete_text_and_diff_preview_cap(wd: Path, ctx: ToolContext) -> None:
    old = "".join(f"line {i}\n" for i in range(1, 61))
    (wd / "a.txt").write_text("keep\n" + old + "end\n")
    tool = EditFileTool()
    args = tool.validate({"path": "a.txt", "old_text": old, "new_text": ""})
    prepared = tool.prepare(args, ctx)
    assert dict(prepared.fields)["Diff"].startswith("@@ -1,62 +1,2 @@\n keep\n-line 1\n")
    assert prepared.warning is not None and "showing 20 of 63 lines" in prepared.warning
    tool.run(args, ctx, prepared)
    assert (wd / "a.txt").read_text() == "keep\nend\n"


def test_edit_diff_marks_missing_final_newline_readably(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("a\nb")
    tool = EditFileTool()
    prepared = tool.prepare(tool.validate({"path": "a.txt", "old_text": "b", "new_text": "c"}), ctx)
    assert dict(prepared.fields)["Diff"] == "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"


def test_run_rechecks_confinement(wd: Path, ctx: ToolContext, tmp_path: Path) -> None:
    """A link swapped in between the question and the answer cannot redirect the write."""
    (wd / "sub").mkdir()
    tool = WriteFileTool()
    args = tool.validate({"path": "sub/a.txt", "content": "x", "mode": "create"})
    prepared: Prepared = tool.prepare(args, ctx)
    (wd / "sub").rmdir()
    (wd / "sub").symlink_to(tmp_path)
    with pytest.raises(ToolFailure, match="outside"):
        tool.run(args, ctx, prepared)
    assert not (tmp_path / "a.txt").exists()


# --- opening without following links (a folder swapped during the call) -----------------------


def stale_locate(monkeypatch: pytest.MonkeyPatch, ctx: ToolContext, *rels: str) -> None:
    """Paths judged as they are now, used after the disk changed: the race's window, held open."""
    import mino_server.core.tools.files as files_mod

    targets = {(r, w): locate(ctx.workdir, ctx.home, r, writing=w) for r in rels for w in (False, True)}
    monkeypatch.setattr(files_mod, "locate", lambda wd, home, r, *, writing: targets[r, writing])


def swap_for_link(folder: Path, to: Path) -> None:
    folder.rename(folder.with_name(folder.name + ".old"))
    folder.symlink_to(to)


def test_a_folder_swapped_for_a_link_after_resolving_is_not_followed(
    wd: Path, ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE\n")
    (wd / "sub").mkdir()
    (wd / "sub" / "f.txt").write_text("inside\n")
    read = ReadFileTool()
    read_args = read.validate({"path": "sub/f.txt"})
    read_prepared = read.prepare(read_args, ctx)
    write = WriteFileTool()
    write_args = write.validate({"path": "sub/new.txt", "content": "x", "mode": "create"})
    write_prepared = write.prepare(write_args, ctx)
    stale_locate(monkeypatch, ctx, "sub/f.txt", "sub/new.txt")
    swap_for_link(wd / "sub", outside)
    with pytest.raises(ToolFailure) as info:
        read.run(read_args, ctx, read_prepared)
    assert str(info.value) == (
        "sub/f.txt changed while in use: a folder on its path was replaced by a symbolic link; nothing was done."
    )
    with pytest.raises(ToolFailure, match="changed while in use"):
        write.run(write_args, ctx, write_prepared)
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]


def test_a_file_swapped_for_a_link_after_resolving_is_not_followed(
    wd: Path, ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret").write_text("OUTSIDE\n")
    (wd / "f.txt").write_text("inside\n")
    stale_locate(monkeypatch, ctx, "f.txt")
    (wd / "f.txt").unlink()
    (wd / "f.txt").symlink_to(tmp_path / "secret")
    assert "changed while in use" in str(failure(ReadFileTool(), {"path": "f.txt"}, ctx))


def test_write_is_bound_to_the_approved_target(wd: Path, ctx: ToolContext) -> None:
    """A link retargeted after the question, to a file with the same bytes, is still a change."""
    for name in ("a.txt", "b.txt"):
        (wd / name).write_text("same")
    (wd / "alias").symlink_to("a.txt")
    tool = WriteFileTool()
    args = tool.validate({"path": "alias", "content": "new", "mode": "overwrite"})
    prepared = tool.prepare(args, ctx)
    (wd / "alias").unlink()
    (wd / "alias").symlink_to("b.txt")
    with pytest.raises(ToolFailure) as info:
        tool.run(args, ctx, prepared)
    assert str(info.value) == CHANGED
    assert (wd / "a.txt").read_text() == (wd / "b.txt").read_text() == "same"


def test_a_file_on_the_way_is_named_plainly(wd: Path, ctx: ToolContext) -> None:
    (wd / "a.txt").write_text("x")
    assert str(failure(ReadFileTool(), {"path": "a.txt/b"}, ctx)) == "Cannot open a.txt/b: Not a directory."
    failed = failure(WriteFileTool(), {"path": "a.txt/b/c", "content": "x", "mode": "create"}, ctx)
    assert str(failed) == "Cannot open a.txt/b/c: Not a directory."


def test_write_to_a_hard_link_leaves_the_other_name_alone(wd: Path, ctx: ToolContext, tmp_path: Path) -> None:
    """The atomic rename gives the path a new file: an outside name for the same file keeps its bytes."""
    outside = tmp_path / "outside.txt"
    outside.write_text("old")
    os.link(outside, wd / "linked.txt")
    call(WriteFileTool(), {"path": "linked.txt", "content": "new", "mode": "overwrite"}, ctx)
    assert (wd / "linked.txt").read_text() == "new" and outside.read_text() == "old"


def test_write_refuses_a_fifo_without_blocking(wd: Path, ctx: ToolContext) -> None:
    os.mkfifo(wd / "pipe")
    failed = failure(WriteFileTool(), {"path": "pipe", "content": "x", "mode": "overwrite"}, ctx)
    assert str(failed) == "pipe is not a regular file."


def test_create_makes_folders_and_leaves_no_temp_file(wd: Path, ctx: ToolContext) -> None:
    call(WriteFileTool(), {"path": "a/b/c/new.txt", "content": "x", "mode": "create"}, ctx)
    assert (wd / "a" / "b" / "c" / "new.txt").read_text() == "x"
    assert [p.name for p in (wd / "a" / "b" / "c").iterdir()] == ["new.txt"]
