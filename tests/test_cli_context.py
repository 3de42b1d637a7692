"""`@path` and `@path:A-B` in the terminal (docs/BEHAVIOUR.md, "Editor context"): the same parser as
the editor's chat box; each attached item is shown on one escaped line before the answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pexpect
from cli_driver import piped, spawn
from image_files import data_url, png

from mino_server.testing.scripted_model import ScriptedModel, image_urls

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


def test_a_line_without_at_leaves_the_context_module_unloaded(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    # No @, no mention: core/context.py (~1.5 ms of imports) stays off the start path.
    model.add({"text": "Hi."})
    code = (
        "import sys\nfrom mino_server.main import main\ncode = main([])\n"
        "print('images loaded:', 'mino_server.core.images' in sys.modules)\n"
        "print('context loaded:', 'mino_server.core.context' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input="hello, mail me at home\n", env=mino_env, cwd=workdir,
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Assistant> Hi." in done.stdout and done.stdout.rstrip().endswith("context loaded: False")
    assert "images loaded: False" in done.stdout  # nor anything of images
    assert user_content(model, 0) == "hello, mail me at home"


def test_at_image_through_the_pty(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    (workdir / "shot.png").write_bytes(png(seed=6))
    (tmp_path / "outside.png").write_bytes(png(seed=8))
    (workdir / "link.png").symlink_to(tmp_path / "outside.png")  # leads outside: names no file inside
    model.add({"text": "A picture."}, {"text": "Nothing attached."})
    child = spawn(mino_env, workdir)
    child.expect_exact(PROMPT)
    child.sendline("what is in @shot.png?")
    child.expect_exact("[image: shot.png, PNG 2×1, 72 bytes]\r\n")
    child.expect_exact("Assistant> A picture.")
    child.expect_exact(PROMPT)
    child.sendline("and @link.png?")
    child.expect_exact("Assistant> Nothing attached.")
    assert "[image:" not in (child.before or "")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert image_urls(model.requests[0]) == [data_url(png(seed=6))]
    assert user_content(model, 0)[0] == {"type": "input_text", "text": "what is in @shot.png?"}  # type: ignore[index]
    assert image_urls(model.requests[1]) == [data_url(png(seed=6))]  # the first turn's image, again
    assert user_content(model, 1) == "and @link.png?"  # plain text: the link's target was never read
    assert model.errors == []


def test_a_damaged_at_image_sends_nothing(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    (workdir / "fake.png").write_bytes(png()[:8] + b"not an image at all" * 4)
    done = piped(mino_env, workdir, "see @fake.png\n")
    assert done.returncode == 1
    assert "Not sent: @fake.png: the file starts like a PNG image but its header is damaged." in done.stderr
    assert model.requests == []
