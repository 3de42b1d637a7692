"""Hostile input, fuzzed with hypothesis: memory and skill folders, session files, tool arguments.

Every case must end in a clear, short error (or a normal result), never an exception, and nothing
outside MINO_HOME and the working directory may change (OutsideGuard snapshots the rest of tmp_path,
which holds the folder every symlink and hard link in these cases points to).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_driver import MINO
from fuzz import (
    FILE_KINDS,
    NAMES,
    SCALE,
    OutsideGuard,
    a_log,
    front_matter,
    fuzz,
    is_regular,
    make_entry,
    make_outside,
)
from helpers import Conversation, RecordingUI, conversation_on
from hypothesis import given
from hypothesis import strategies as st
from invariants import read_log, request_consistency
from tally import TALLY

from mino_server.core import frontmatter, memory, opening, skills
from mino_server.core.cancel import CancelToken
from mino_server.core.commands import run_command
from mino_server.core.config import load_config
from mino_server.core.tools.base import ArgumentError, Prepared, ToolContext, ToolFailure, ToolResult
from mino_server.core.tools.bash import BashTool
from mino_server.core.tools.memory_tools import MemorySaveTool, MemoryViewTool
from mino_server.core.tools.skill_view import SkillViewTool
from mino_server.core.words import startup_lines
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = pytest.mark.timeout(120 * SCALE)

SECRET = b"---\nname: secret\ntype: user\nsummary: outside MINO_HOME, never to be read or changed\n---\n"
MAX_REASON = 400  # a reason is one line a person reads: a huge value must not be echoed into it


def short_line(text: str, what: str) -> None:
    assert isinstance(text, str) and text.strip(), what
    assert "\n" not in text and len(text) <= MAX_REASON, f"{what}: {text[:200]!r}… ({len(text)} chars)"


def agent_at(home: Path, workdir: Path, base_url: str, ui: RecordingUI, mode: str = "bypass") -> Conversation:
    env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=base_url, MINO_API_KEY="test-key")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text('sandbox: "off"\n')  # no bwrap probe per example
    return conversation_on(load_config(env=env, mode=mode), workdir, ui)


def ctx_for(home: Path, workdir: Path, skill_list: list[Any] | None = None) -> ToolContext:
    return ToolContext(
        workdir=workdir.resolve(),
        home=home,
        memory_dir=home / "memory",
        cancel=CancelToken(),
        skills={s.name: s.path for s in skill_list or []},
    )


def call_tool(tool: Any, args: Any, ctx: ToolContext, run: bool = True) -> ToolResult | str:
    """validate, prepare, run like the turn loop; a clean refusal is returned as its message."""
    try:
        valid = tool.validate(args)
        prepared = tool.prepare(valid, ctx)
        assert isinstance(prepared, Prepared)
        return tool.run(valid, ctx, prepared) if run else "prepared"
    except (ArgumentError, ToolFailure) as exc:
        assert str(exc).strip() and "Traceback" not in str(exc)
        return str(exc)


FILE_NAMES = st.one_of(
    NAMES.map(lambda n: n + ".md"),
    st.sampled_from([".hidden.md", "x.txt", "UPPER.md", "..md", "a.md.md", "uses-pnpm.md", "README"]),
).filter(lambda n: n not in ("", ".", "..") and "/" not in n and "\x00" not in n and len(n.encode()) < 200)
GOOD = b"<good>"
CONTENT = st.one_of(st.just(GOOD), front_matter(("name", "type", "summary")))


# ---- the memory folder ------------------------------------------------------------------------------


def test_memory_folder_fuzz(tmp_path: Path) -> None:
    outside = make_outside(tmp_path, SECRET)
    counter = itertools.count()

    @fuzz(120)
    @given(entries=st.lists(st.tuples(FILE_NAMES, st.sampled_from(FILE_KINDS), CONTENT), max_size=6))
    def case(entries: list[tuple[str, str, bytes]]) -> None:
        home = tmp_path / f"case{next(counter)}" / "home"
        memdir = home / "memory"
        memdir.mkdir(parents=True)
        for name, kind, content in entries:
            stem = name.removesuffix(".md")
            if content == GOOD:
                content = (
                    memory.render_memory(stem, "user", "a fact").encode()
                    if frontmatter.valid_name(stem)
                    else b""
                )
            make_entry(memdir / name, kind, content, outside)
        guard = OutsideGuard(tmp_path, [home])
        TALLY.fuzz_cases += 1
        loaded, problems = memory.load_memories(memdir)
        for e in loaded:
            assert frontmatter.valid_name(e.name) and e.path == memdir / f"{e.name}.md" and is_regular(e.path)
        for file_name, reason in problems:
            assert (memdir / file_name).parent == memdir
            short_line(reason, f"memory problem for {file_name!r}")
        for text in memory.format_problems(memdir, problems):
            assert "\n" not in text
        index = memory.render_index(loaded)
        assert index is None or len(index.encode()) <= memory.MAX_INDEX_BYTES
        ctx = ctx_for(home, tmp_path / "work")
        for name, _, _ in entries:
            stem = name.removesuffix(".md")
            result = call_tool(MemoryViewTool(), {"name": stem}, ctx)
            if isinstance(result, ToolResult):
                assert any(e.name == stem for e in loaded)
            save = {"name": stem, "type": "user", "summary": "new fact", "mode": "overwrite"}
            call_tool(MemorySaveTool(), save, ctx, run=False)
        assert guard.changed() == []
        shutil.rmtree(home.parent, ignore_errors=True)  # later guards walk only their own case

    case()


# ---- the skills folder --------------------------------------------------------------------------------


FOLDERS = st.one_of(NAMES, st.sampled_from(["UPPER", ".hidden", "..x", "a b"])).filter(
    lambda n: n not in ("", ".", "..") and "/" not in n and "\x00" not in n and len(n.encode()) < 200
)
TOP = st.sampled_from(["normal", "normal", "normal", "mino-is-a-file", "mino-is-a-link", "skills-is-a-file"])


def test_skills_folder_fuzz(tmp_path: Path) -> None:
    outside = make_outside(tmp_path, SECRET)
    counter = itertools.count()

    @fuzz(80)
    @given(
        top=TOP,
        entries=st.lists(
            st.tuples(
                FOLDERS,
                st.sampled_from(("folder", "folder", "link-out", "file")),
                st.sampled_from(FILE_KINDS),
                CONTENT,
            ),
            max_size=5,
        ),
    )
    def case(top: str, entries: list[tuple[str, str, str, bytes]]) -> None:
        workdir = tmp_path / f"case{next(counter)}" / "work"
        workdir.mkdir(parents=True)
        if top == "mino-is-a-file":
            (workdir / ".mino").write_text("not a folder")
        elif top == "mino-is-a-link":
            os.symlink(outside, workdir / ".mino")
        elif top == "skills-is-a-file":
            (workdir / ".mino").mkdir()
            (workdir / ".mino" / "skills").write_text("not a folder")
        else:
            (workdir / ".mino" / "skills").mkdir(parents=True)
            for folder, folder_kind, kind, content in entries:
                path = workdir / ".mino" / "skills" / folder
                if os.path.lexists(path):
                    continue
                if folder_kind == "link-out":
                    os.symlink(outside, path)
                elif folder_kind == "file":
                    path.write_bytes(content)
                else:
                    if content == GOOD:
                        content = f"---\nname: {folder}\ndescription: does things\n---\nbody\n".encode()
                    make_entry(path / "SKILL.md", kind, content, outside)
        guard = OutsideGuard(tmp_path, [workdir])
        TALLY.fuzz_cases += 1
        found, problems = skills.scan_skills(workdir)
        for s in found:
            assert frontmatter.valid_name(s.name) and is_regular(s.path)
            assert s.path.resolve().is_relative_to(workdir.resolve())
        for folder, reason in problems:
            short_line(reason, f"skill problem for {folder!r}")
        ctx = ctx_for(tmp_path / "home", workdir, found)
        for folder, *_ in entries:
            call_tool(SkillViewTool(), {"name": folder}, ctx)
        assert guard.changed() == []
        shutil.rmtree(workdir.parent, ignore_errors=True)  # later guards walk only their own case

    case()


# ---- memory and skills through a whole turn -----------------------------------------------------------


def test_hostile_memory_and_skills_through_a_turn(model: ScriptedModel, tmp_path: Path) -> None:
    outside = make_outside(tmp_path, SECRET)
    counter = itertools.count()

    @fuzz(15)
    @given(
        memories=st.lists(st.tuples(FILE_NAMES, st.sampled_from(FILE_KINDS), CONTENT), max_size=4),
        skill_files=st.lists(st.tuples(FOLDERS, st.sampled_from(FILE_KINDS), CONTENT), max_size=3),
    )
    def case(memories: list[tuple[str, str, bytes]], skill_files: list[tuple[str, str, bytes]]) -> None:
        root = tmp_path / f"case{next(counter)}"
        home, workdir = root / "home", root / "work"
        for name, kind, content in memories:
            make_entry(home / "memory" / name, kind, b"" if content == GOOD else content, outside)
        for folder, kind, content in skill_files:
            make_entry(
                workdir / ".mino" / "skills" / folder / "SKILL.md",
                kind,
                b"" if content == GOOD else content,
                outside,
            )
        workdir.mkdir(parents=True, exist_ok=True)
        guard = OutsideGuard(tmp_path, [home, workdir])
        TALLY.fuzz_cases += 1
        ui = RecordingUI()
        conversation = agent_at(home, workdir, model.base_url, ui)
        conversation.open()
        try:
            model.add({"text": "fine"})
            outcome = conversation.run_turn("hello", CancelToken())
            assert outcome.status == "completed", outcome
            for problems in ui.problems:
                for _, reason in problems:
                    short_line(reason, "memory problem shown")
            for notice in ui.of_type("notice"):
                for line in notice["text"].splitlines()[1:]:
                    assert len(line) <= MAX_REASON + 80, line[:200]
        finally:
            conversation.close()
        assert guard.changed() == []
        shutil.rmtree(root, ignore_errors=True)  # later guards walk only their own case

    case()


# ---- session files --------------------------------------------------------------------------------------


def test_session_file_fuzz(model: ScriptedModel, tmp_path: Path) -> None:
    make_outside(tmp_path, SECRET)
    counter = itertools.count()
    sid, other = "e" * 32, "f" * 32

    @fuzz(80)
    @given(data=a_log(), how=st.sampled_from(["start-up", "start-up", "resume"]))
    def case(data: bytes, how: str) -> None:
        root = tmp_path / f"case{next(counter)}"
        home, workdir = root / "home", root / "work"
        sessions = home / "sessions"
        sessions.mkdir(parents=True)
        workdir.mkdir()
        path = sessions / f"{sid}.jsonl"
        path.write_bytes(data)
        selected = sid if how == "start-up" else other
        if how == "resume":
            (sessions / f"{other}.jsonl").write_bytes(b"")
        (sessions / "active-session.json").write_text(json.dumps({"session_id": selected}))
        guard = OutsideGuard(tmp_path, [home, workdir])
        TALLY.fuzz_cases += 1
        ui = RecordingUI(confirms=[True, True])
        conversation = agent_at(home, workdir, model.base_url, ui)
        try:
            lines = startup_lines(conversation.open())
            if how == "resume":
                lines = []
                run_command(conversation, f"/resume {sid}", lines.append, lambda p: None)
            if conversation.session_id == sid:
                model.add({"text": "ok"})
                sent = len(model.requests)
                outcome = conversation.run_turn("hello", CancelToken())
                assert outcome.status == "completed", outcome
                for p in request_consistency(model.requests[sent], strict_ids=False):
                    raise AssertionError(f"request after loading a hostile log: {p}")
                view = read_log(path)
                assert view.problem is None and not view.torn, view.problem
            else:
                problem = [x for x in lines if "cannot be loaded" in x or "Cannot resume" in x]
                assert len(problem) == 1, lines
                short_line(problem[0], "unloadable session")
                assert path.read_bytes() == data  # an unloadable log is never rewritten
        finally:
            conversation.close()
        assert guard.changed() == []
        shutil.rmtree(root, ignore_errors=True)  # later guards walk only their own case

    case()


def test_hostile_session_store_entries(model: ScriptedModel, tmp_path: Path) -> None:
    """Session files and the selection as links, FIFOs, folders and garbage: reported, never followed."""
    outside = make_outside(tmp_path, SECRET)
    sid = "a" * 32
    for n, (what, kind) in enumerate(
        itertools.product(["session", "selection"], ["symlink-out", "fifo", "dir", "hardlink", "garbage"])
    ):
        root = tmp_path / f"case{n}"
        home, workdir = root / "home", root / "work"
        sessions = home / "sessions"
        sessions.mkdir(parents=True)
        workdir.mkdir()
        good = json.dumps({"seq": 1, "type": "user_message", "turn_id": "t", "at": "x", "text": "q"}) + "\n"
        target = sessions / (f"{sid}.jsonl" if what == "session" else "active-session.json")
        if what == "selection":
            (sessions / f"{sid}.jsonl").write_text(good)
        else:
            (sessions / "active-session.json").write_text(json.dumps({"session_id": sid}))
        if kind == "garbage":  # damage before a whole record: not a torn tail, so not loadable
            target.write_bytes(b"\xff\xfenot a record\n" + good.encode())
        else:
            make_entry(target, kind, b"", outside)
        guard = OutsideGuard(tmp_path, [home, workdir])
        TALLY.fuzz_cases += 1
        conversation = agent_at(home, workdir, model.base_url, RecordingUI())
        try:
            lines = startup_lines(conversation.open())
        finally:
            conversation.close()
        # Every case, a hard link to the outside file included (its bytes are no session and no
        # selection), is refused with exactly one line.
        restore = [x for x in lines if x.startswith("Cannot restore the active session: ")]
        assert len(restore) == 1, (what, kind, lines)
        short_line(restore[0], f"{what} {kind}")
        assert guard.changed() == [], (what, kind)
        shutil.rmtree(root, ignore_errors=True)  # later guards walk only their own case


# ---- tool arguments -------------------------------------------------------------------------------------

PATHS = st.one_of(
    st.sampled_from(
        [
            "a.txt",
            "dir/b.txt",
            "new.txt",
            "link-in",
            "link-out/x.txt",
            "link-file-out",
            "dangling",
            "fifo",
            "dir",
            ".",
            "../outside/secret.md",
            "../outside/new.txt",
            "a.txt/../../outside/secret.md",
            "/etc/passwd",
            "~/x",
            "dir/../../x",
            "",
        ]
    ),
    st.text(alphabet="./-_~ aé\\\x00\n", max_size=24),
)
VALUES = st.one_of(
    st.integers(-5, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.just("x" * 300_000),
    st.text(max_size=20),
)


def args_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    text = st.one_of(st.text(max_size=40), st.just("line one\n"), VALUES)
    shapes: dict[str, dict[str, st.SearchStrategy[Any]]] = {
        "read_file": {"path": st.one_of(PATHS, VALUES), "start_line": VALUES, "end_line": VALUES},
        "write_file": {
            "path": st.one_of(PATHS, VALUES),
            "content": text,
            "mode": st.one_of(st.sampled_from(["create", "overwrite", "append"]), VALUES),
        },
        "edit_file": {"path": st.one_of(PATHS, VALUES), "old_text": text, "new_text": text},
        "memory_save": {
            "name": st.one_of(NAMES, VALUES),
            "type": st.one_of(st.sampled_from(memory.MEMORY_TYPES), VALUES),
            "summary": text,
            "details": text,
            "mode": st.one_of(st.sampled_from(["create", "overwrite"]), VALUES),
        },
        "memory_view": {"name": st.one_of(NAMES, VALUES)},
        "skill_view": {"name": st.one_of(NAMES, VALUES)},
        "bash": {"command": st.one_of(st.just("echo hi"), VALUES), "timeout_s": VALUES},
    }
    return st.fixed_dictionaries({}, optional={**shapes[tool], "extra": VALUES})


def make_workdir(workdir: Path, outside: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "a.txt").write_text("line one\nline two\n")
    (workdir / "dir").mkdir(exist_ok=True)
    (workdir / "dir" / "b.txt").write_text("b\n")
    for name, target in (
        ("link-in", workdir / "a.txt"),
        ("link-out", outside),
        ("link-file-out", outside / "secret.md"),
    ):
        if not os.path.lexists(workdir / name):
            os.symlink(target, workdir / name)
    if not os.path.lexists(workdir / "dangling"):
        os.symlink(outside / "not-yet", workdir / "dangling")
    if not os.path.lexists(workdir / "fifo"):
        os.mkfifo(workdir / "fifo")


@pytest.mark.parametrize(
    "tool", ["read_file", "write_file", "edit_file", "memory_save", "memory_view", "skill_view"]
)
def test_tool_argument_fuzz_through_the_turn_loop(model: ScriptedModel, tmp_path: Path, tool: str) -> None:
    outside = make_outside(tmp_path, SECRET)
    home, workdir = tmp_path / "home", tmp_path / "work"
    make_workdir(workdir, outside)
    guard = OutsideGuard(tmp_path, [home, workdir])
    conversation = agent_at(home, workdir, model.base_url, RecordingUI())
    conversation.open()

    @fuzz(40)
    @given(args=args_for(tool), raw=st.sampled_from([None, None, None, "{", "[]", '"x"', "null", "{}" * 3]))
    def case(args: dict[str, Any], raw: str | None) -> None:
        TALLY.fuzz_cases += 1
        make_workdir(workdir, outside)  # a write may have replaced a fixture; the links stay
        arguments: Any = raw if raw is not None else args
        model.add({"calls": [{"name": tool, "arguments": arguments}]}, {"text": "ok"})
        outcome = conversation.run_turn("go", CancelToken())
        assert outcome.status == "completed", outcome
        assert conversation.log is not None
        result = [r for r in conversation.log.read_records() if r["type"] == "tool_result"][-1]
        assert result["status"] in ("completed", "failed", "invalid_arguments", "denied"), result
        # Tool results may quote the model's own path back; they must still be a message, not a crash.
        assert result["output"].strip() and "Traceback" not in result["output"], result
        assert guard.changed() == [], guard.changed()
        assert opening.clear(conversation, conversation.session_id)  # keep each request small

    try:
        case()
    finally:
        conversation.close()


def test_bash_argument_fuzz_validate_and_prepare(tmp_path: Path) -> None:
    """bash arguments (never run here): a clean refusal or a display, whatever the model sends."""
    ctx = ctx_for(tmp_path / "home", tmp_path)

    @fuzz(60)
    @given(args=args_for("bash"))
    def case(args: dict[str, Any]) -> None:
        TALLY.fuzz_cases += 1
        call_tool(BashTool(), args, ctx, run=False)

    case()


def test_memory_dir_replaced_by_hostile_entries(model: ScriptedModel, tmp_path: Path) -> None:
    """MINO_HOME/memory as a file, a FIFO or a dangling link: memory_save refuses, nothing leaks.

    (A memory folder that is a symlink to a real folder is the user's own setup, e.g. synced notes:
    Mino follows it for reading and writing alike, so it is not a case here.)
    """
    outside = make_outside(tmp_path, SECRET)
    for n, kind in enumerate(["file", "fifo", "symlink-dangling"]):
        root = tmp_path / f"case{n}"
        home, workdir = root / "home", root / "work"
        workdir.mkdir(parents=True)
        make_entry(home / "memory", kind, b"not a folder", outside)
        guard = OutsideGuard(tmp_path, [home, workdir])
        TALLY.fuzz_cases += 1
        conversation = agent_at(home, workdir, model.base_url, RecordingUI())
        conversation.open()
        args = {"name": "x", "type": "user", "summary": "s", "mode": "create"}
        model.add({"calls": [{"name": "memory_save", "arguments": args}]}, {"text": "ok"})
        outcome = conversation.run_turn("go", CancelToken())
        assert conversation.log is not None
        results = [r for r in conversation.log.read_records() if r["type"] == "tool_result"]
        conversation.close()
        assert outcome.status == "completed", (kind, outcome)
        assert [r["status"] for r in results] == ["failed"], (kind, results)
        changed = guard.changed()
        assert changed == [], (kind, changed)
        shutil.rmtree(root)


def test_undecodable_bytes_piped_into_the_cli(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    """Python reads them as lone surrogates; they are saved and sent as U+FFFD, not a traceback."""
    model.add({"text": "got it"}, {"text": "got it"})
    for locale in ("C", "C.UTF-8"):
        env = dict(mino_env, LC_ALL=locale)
        proc = subprocess.run(
            MINO,
            input=b"hi \xff\xfe there\n",
            env=env,
            cwd=workdir,
            capture_output=True,
        )
        TALLY.fuzz_cases += 1
        assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
        assert proc.returncode == 0 and b"Assistant> got it" in proc.stdout, proc.stdout
    for body in model.requests:
        sent = [i for i in body["input"] if i.get("role") == "user"]
        assert sent[-1]["content"] == "hi \ufffd\ufffd there"
