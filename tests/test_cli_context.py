"""`@path` and `@path:A-B` in the terminal (docs/BEHAVIOUR.md, "Editor context"): the same parser as
the editor's chat box; each attached item is shown on one escaped line before the answer."""

from __future__ import annotations

from pathlib import Path

import pexpect
from cli_driver import piped, spawn

from mino_server.testing.scripted_model import ScriptedModel

PROMPT = "You> "


def user_content(model: ScriptedModel, n: int) -> object:
    return [i for i in model.requests[n]["input"] if i.get("role") == "user"][-1]["content"]


def test_at_path_through_the_pty(model: ScriptedModel, mino_env: dict[str, str], workdir: Path) -> None:
    (workdir / "notes.txt").write_text("pine\n")
    (workdir / "src").mkdir()
    (workdir / "src" / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    model.add({"text": "Pine and b."}, {"text": "Just text."})
    child = spawn(mino_env, workdir)
    child.expect_exact(PROMPT)
    child.sendline("what is in @notes.txt and @src/app.py:2-3? mail me@example.com")
    child.expect_exact("[Context: notes.txt]\r\n[Context: src/app.py (lines 2-3)]\r\n")
    child.expect_exact("Assistant> Pine and b.")
    child.expect_exact(PROMPT)
    child.sendline("no files here, @nothing")
    child.expect_exact("Assistant> Just text.")
    assert "[Context:" not in (child.before or "")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert user_content(model, 0) == [
        {"type": "input_text", "text": "what is in @notes.txt and @src/app.py:2-3? mail me@example.com"},
        {"type": "input_text", "text": "Context: notes.txt\n```\npine\n```"},
        {"type": "input_text", "text": "Context: src/app.py (lines 2-3)\n```\nb = 2\nc = 3\n```"},
    ]
    assert user_content(model, 1) == "no files here, @nothing"
    assert model.errors == []


def test_a_file_name_cannot_drive_the_terminal(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    name = "evil\x1b[2J\x07.txt"
    (workdir / name).write_text("boo\n")
    model.add({"text": "Seen."})
    done = piped(mino_env, workdir, f"look at @{name}\n")
    assert done.returncode == 0, done.stderr
    assert "[Context: evil\\x1b[2J\\x07.txt]\n" in done.stdout
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert done.stdout.index("[Context: evil") < done.stdout.index("Assistant> Seen.")


def test_a_mention_that_cannot_be_attached_sends_nothing(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("pine\n")
    done = piped(mino_env, workdir, "read @notes.txt:5-9\n")
    assert done.returncode == 1  # piped: a line that was not answered
    assert (
        "Not sent: @notes.txt:5-9: start_line 5 is past the end of notes.txt, which has 1 line."
        in done.stderr
    )
    assert model.requests == []
