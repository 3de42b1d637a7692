"""Images in a user message (docs/BEHAVIOUR.md, "Images"): checked by their bytes before anything is
sent or logged, sent as `input_image` parts, kept content-addressed under MINO_HOME so every later
request, a resume and a restart send the same data URL, shown by name in the history, removed by
/clear. The front ends' own tests (ACP, the editor server, the terminal) are beside theirs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import RecordingUI, assert_damaged_user_message, command, make_conversation, turn
from image_files import b64, data_url, gif, jpeg, png, webp

from mino_server.core import images
from mino_server.core.cancel import CancelToken
from mino_server.core.context import ContextRequest, find_mentions
from mino_server.core.errors import ContextError
from mino_server.core.sessions.log import user_item
from mino_server.testing.scripted_model import ScriptedModel, image_urls, input_problems


# ---- checking -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data, mime, size",
    [(png(3, 2), "image/png", (3, 2)), (jpeg(5, 4), "image/jpeg", (5, 4)), (gif(4, 5), "image/gif", (4, 5))]
    + [(webp(6, 7), "image/webp", (6, 7))],
)
def test_each_kind_is_known_by_its_bytes(data: bytes, mime: str, size: tuple[int, int]) -> None:
    image = images.from_base64(b64(data), mime, "shot", "prompt[1]")
    assert (image.mime, (image.width, image.height), image.data) == (mime, size, data)
    assert images.check(data, None, "x", "@x").mime == mime  # a file has no declared type: its bytes say


@pytest.mark.parametrize(
    "data, mime, words",
    [
        (png()[:8] + os.urandom(64), "image/png", "starts like a PNG image but its header is damaged"),
        (b"GIF89a\x00\x00\x00\x00", "image/gif", "starts like a GIF image but its header is damaged"),
        (b"\xff\xd8\xff\xe0garbage", "image/jpeg", "starts like a JPEG image but its header is damaged"),
        (b"RIFF\xff\xff\xff\xffWEBPVP8L", "image/webp", "starts like a WebP image but its header is damaged"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/png", "not a PNG, JPEG, GIF or WebP image"),
        (jpeg(), "image/png", "its bytes are a JPEG image, not 'image/png' as declared"),
    ],
)
def test_hostile_bytes_are_refused_naming_the_item(data: bytes, mime: str, words: str) -> None:
    with pytest.raises(ContextError) as info:
        images.from_base64(b64(data), mime, "x", "prompt[2]")
    assert str(info.value).startswith("prompt[2]: ") and words in str(info.value)


def test_sizes_types_and_base64() -> None:
    big = png() + b"\x00" * (images.MAX_IMAGE_BYTES - len(png()) + 1)
    with pytest.raises(
        ContextError, match=r"prompt\[0\]: the image is 5,242,881 bytes; an image may be at most"
    ):
        images.from_base64(b64(big), "image/png", "x", "prompt[0]")
    # A huge base64 text is refused by its length, before anything is decoded.
    with pytest.raises(ContextError, match="an image may be at most 5,242,880 bytes"):
        images.from_base64("A" * (100 * 1024 * 1024), "image/png", "x", "prompt[0]")
    with pytest.raises(ContextError, match="data is not valid base64"):
        images.from_base64("iVBORw0KGgo!!!!", "image/png", "x", "prompt[0]")
    with pytest.raises(ContextError, match="mimeType must be image/png, image/jpeg, image/gif or image/webp"):
        images.from_base64(b64(png()), "image/svg+xml", "x", "prompt[0]")
    with pytest.raises(ContextError, match="data must be the image's bytes in base64"):
        images.from_base64(None, "image/png", "x", "prompt[0]")
    wrapped = "\n".join(b64(png())[i : i + 8] for i in range(0, len(b64(png())), 8))
    assert images.from_base64(wrapped, "IMAGE/PNG", "x", "p").data == png()  # line breaks, type case
    with pytest.raises(ContextError, match="9 images; a message may carry at most 8"):
        images.too_many(9)
    images.too_many(8)


def test_a_name_is_one_short_line() -> None:
    image = images.check(png(), None, "a\nb\x1b[31m" + "x" * 500, "w")
    assert "\n" not in image.name and len(image.name) == images.MAX_NAME_CHARS


# ---- in a turn ------------------------------------------------------------------------------------
def _image_turn(conversation: Any, text: str, *data: bytes) -> Any:
    pictures = [images.check(d, None, f"shot{i}.png", f"image[{i}]") for i, d in enumerate(data)]
    return conversation.run_turn(text, CancelToken(), (), pictures)


def test_an_image_reaches_the_model_and_every_later_request_sends_the_same(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    model.add({"text": "a cat"}, {"text": "still a cat"}, {"text": "yes"})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    assert _image_turn(conversation, "what is this?", png(seed=1), gif()).status == "completed"
    first = model.requests[0]["input"][-1]
    assert first["content"][0] == {"type": "input_text", "text": "what is this?"}
    assert first["content"][1] == {
        "type": "input_image",
        "image_url": data_url(png(seed=1)),
        "detail": "auto",
    }
    assert image_urls(model.requests[0]) == [data_url(png(seed=1)), data_url(gif(), "image/gif")]
    turn(conversation, "and now?")
    assert image_urls(model.requests[1]) == image_urls(model.requests[0])
    sid = conversation.session_id
    assert sid is not None
    # The record names the bytes; the line stays small.
    lines = (mino_home / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    line = next(x for x in lines if json.loads(x)["type"] == "user_message")
    rec = json.loads(line)
    assert len(line) < 1000 and rec["images"][0]["sha256"] == images.check(png(seed=1), None, "", "").sha256
    assert rec["images"][0] == {
        "name": "shot0.png",
        "mime": "image/png",
        "size": len(png(seed=1)),
        "sha256": rec["images"][0]["sha256"],
        "width": 2,
        "height": 1,
    }
    blob = mino_home / "images" / sid / rec["images"][0]["sha256"]
    assert blob.read_bytes() == png(seed=1) and (blob.stat().st_mode & 0o777) == 0o600
    conversation.close()
    # A restart: a new conversation on the same home sends the same data URL.
    again = make_conversation(model.base_url, workdir)
    again.open()
    assert again.session_id == sid
    turn(again, "after a restart")
    assert image_urls(model.requests[2]) == image_urls(model.requests[0])
    assert model.errors == [] and input_problems(model.requests[2]) == []
    # The history shows the image by name.
    items, _ = again.history()
    assert (
        items[0].text
        == "what is this?\n[image: shot0.png, PNG 2×1, 72 bytes]\n[image: shot1.png, GIF 4×5, 14 bytes]"
    )
    again.close()


def test_an_image_alone_and_a_summary_by_name(model: ScriptedModel, workdir: Path) -> None:
    model.add({"text": "seen"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    assert _image_turn(conversation, "", webp()).status == "completed"
    assert model.requests[0]["input"][-1]["content"] == [
        {"type": "input_image", "image_url": data_url(webp(), "image/webp"), "detail": "auto"}
    ]
    assert model.errors == []
    rec = {"name": "a.png", "mime": "image/png", "size": 70, "sha256": "0" * 64, "width": 2, "height": 1}
    # Without the store (the compaction summary's request) an image is its name.
    assert user_item("look", None, [rec]) == {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_text", "text": "[image: a.png, PNG 2×1, 70 bytes]"},
        ],
    }
    conversation.close()


def test_a_missing_or_changed_blob_is_a_notice_and_the_text_still_loads(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    model.add({"text": "ok"}, {"text": "ok"}, {"text": "ok"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    _image_turn(conversation, "two pictures", png(seed=2), png(seed=3))
    sid = conversation.session_id
    assert sid is not None
    conversation.close()
    folder = mino_home / "images" / sid
    one, two = sorted(folder.iterdir(), key=lambda p: p.read_bytes() != png(seed=2))
    one.unlink()
    two.write_bytes(
        png(seed=9)[: two.stat().st_size].ljust(two.stat().st_size, b"\x00")
    )  # same size, other bytes
    ui = RecordingUI()
    again = make_conversation(model.base_url, workdir, ui)
    startup = again.open()
    assert again.session_id == sid  # the session loads
    assert any("shot0.png" in n and "missing from Mino's image store" in n for n in startup.notices)
    turn(again, "again")
    content = model.requests[1]["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "two pictures"}
    assert (
        "[image: shot0.png, PNG 2×1, 72 bytes; missing from Mino's image store; not sent]"
        == content[1]["text"]
    )
    assert "changed in Mino's image store; not sent" in content[2]["text"]
    assert image_urls(model.requests[1]) == []
    notices = [e["text"] for e in ui.of_type("notice")]
    assert len(notices) == 2 and all(
        n.startswith("An image of this session could not be sent again") for n in notices
    )
    again.close()
    # The whole folder gone: the session still loads; the next request says so.
    import shutil

    shutil.rmtree(folder)
    third = make_conversation(model.base_url, workdir, RecordingUI())
    third.open()
    turn(third, "once more")
    assert image_urls(model.requests[2]) == [] and model.errors == []
    assert len(third.ui.of_type("notice")) == 2  # type: ignore[attr-defined]
    third.close()


def test_clear_removes_the_images_with_the_history(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    model.add({"text": "ok"})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    _image_turn(conversation, "x", png())
    sid = conversation.session_id
    assert (mino_home / "images" / sid).is_dir()
    ui.typed.append(sid)
    command(conversation, "/clear")
    assert not (mino_home / "images" / sid).exists()
    conversation.close()


def test_nothing_is_kept_or_sent_when_an_image_is_refused(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    nine = [images.check(png(seed=i), None, "p", f"image[{i}]") for i in range(9)]
    with pytest.raises(ContextError, match="9 images; a message may carry at most 8"):
        conversation.run_turn("x", CancelToken(), (), nine)
    assert model.requests == [] and not (mino_home / "images").exists() and not conversation.busy
    conversation.close()


def test_a_damaged_images_record_is_damage(model: ScriptedModel, workdir: Path) -> None:
    assert_damaged_user_message(
        model.base_url,
        workdir,
        {"images": [{"sha256": "../x"}]},
        "user_message images need a name, a known mime",
    )


# ---- image files: @shot.png, a file item without text --------------------------------------------
@pytest.fixture
def wd(workdir: Path, tmp_path: Path) -> Path:
    (workdir / "shot.png").write_bytes(png(seed=4))
    (workdir / "notes.txt").write_text("pine\n")
    (workdir / "fake.png").write_bytes(png()[:8] + b"garbage" * 10)
    (tmp_path / "outside.png").write_bytes(png(seed=5))
    (workdir / "link.png").symlink_to(tmp_path / "outside.png")
    return workdir.resolve()


def test_an_at_image_is_attached_as_an_image(model: ScriptedModel, wd: Path, mino_home: Path) -> None:
    model.add({"text": "ok"})
    conversation = make_conversation(model.base_url, wd)
    conversation.open()
    text = "look at @shot.png and @notes.txt"
    result = conversation.run_turn(text, CancelToken(), find_mentions(text, wd, mino_home))
    assert result.status == "completed"
    content = model.requests[0]["input"][-1]["content"]
    assert content[0]["text"] == text  # sent as typed
    assert content[1]["text"].startswith("Context: notes.txt")  # a text file stays a context item
    assert image_urls(model.requests[0]) == [data_url(png(seed=4))]
    conversation.close()


def test_hostile_image_files(model: ScriptedModel, wd: Path, mino_home: Path) -> None:
    conversation = make_conversation(model.base_url, wd)
    conversation.open()
    # A link that leads outside names no file inside: `@link.png` stays plain text.
    assert find_mentions("@link.png", wd, mino_home) == []
    # Named directly (an editor's item), it is refused like read_file refuses it; nothing is read.
    with pytest.raises(ContextError, match="link.png leads outside the working directory"):
        conversation.run_turn("x", CancelToken(), [ContextRequest("link.png", where="@link.png")])
    # A PNG header on garbage.
    with pytest.raises(
        ContextError, match="@fake.png: the file starts like a PNG image but its header is damaged"
    ):
        conversation.run_turn("x", CancelToken(), [ContextRequest("fake.png", where="@fake.png")])
    # An image in MINO_HOME, which the model cannot read either.
    (mino_home / "secret.png").write_bytes(png())
    assert not images.is_image_file(wd, mino_home, str(mino_home / "secret.png"))
    with pytest.raises(ContextError, match="MINO_HOME"):
        conversation.run_turn(
            "x", CancelToken(), [ContextRequest(str(mino_home / "secret.png"), where="item")]
        )
    assert model.requests == []
    conversation.close()


def test_text_only_turns_and_a_resume_import_nothing_of_images(model: ScriptedModel, workdir: Path) -> None:
    """Start-up and a text-only turn stay as light as before images (docs/ARCHITECTURE.md)."""
    import subprocess
    import sys

    model.add({"text": "a"}, {"text": "b"})
    code = (
        "import sys\nsys.path.insert(0, 'tests')\nfrom helpers import make_conversation\n"
        "from mino_server.core.cancel import CancelToken\n"
        f"from pathlib import Path\nurl, wd = {model.base_url!r}, Path({str(workdir)!r})\n"
        "a = make_conversation(url, wd); a.open(); a.run_turn('hi', CancelToken()); a.close()\n"
        "b = make_conversation(url, wd); b.open(); b.run_turn('again', CancelToken()); b.history(); b.close()\n"
        "print('images imported:', 'mino_server.core.images' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("images imported: False") and len(model.requests) == 2


def test_compaction_summarises_an_image_by_name_and_counts_it_as_a_few_tokens(
    model: ScriptedModel, workdir: Path
) -> None:
    from mino_server.core.compaction import IMAGE_CHARS, item_chars

    big = png() + b"\x00" * (4 * 1024 * 1024)  # its base64 is 5.6 million characters
    item = user_item("x", None, [images.check(big, None, "b.png", "w").record()], lambda: _FakeBlobs())
    assert item_chars(item) == 16 + 1 + IMAGE_CHARS
    model.add(*({"text": f"answer {n}"} for n in range(3)), {"text": "a summary"}, {"text": "after"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    _image_turn(conversation, "turn 0 with a picture", png(seed=12))
    turn(conversation, "turn 1")
    turn(conversation, "turn 2")
    assert image_urls(model.requests[2]) == [data_url(png(seed=12))]  # still sent, uncompacted
    assert command(conversation, "/compact")[-1].startswith("Compacted the older history")
    summary_request = json.dumps(model.requests[3], ensure_ascii=False)
    assert image_urls(model.requests[3]) == [] and "[image: shot0.png, PNG 2×1, 72 bytes]" in summary_request
    turn(conversation, "turn 3")
    assert image_urls(model.requests[4]) == []  # the summarised turn is no longer sent
    assert model.errors == []
    conversation.close()


class _FakeBlobs:
    def part(self, rec: dict[str, Any]) -> dict[str, Any]:
        return {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}
