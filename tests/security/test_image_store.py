"""Issue 25, images: what is kept under MINO_HOME is read back as carefully as it was written.

Attacks on the image store (MINO_HOME/images/<session>/<sha256>), which anything that can write
MINO_HOME could try: a blob swapped for a link to another file, the session's folder swapped for a
link to a folder holding a file of the right name, a blob grown past 5 MiB. None of them is sent:
each image is read without following links and its sha256 checked before every request; the
message goes with the image's name and a notice instead, and the session still loads.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers import RecordingUI, make_conversation, turn  # noqa: E402
from image_files import png  # noqa: E402

from mino_server.core import images  # noqa: E402
from mino_server.core.cancel import CancelToken  # noqa: E402
from mino_server.testing.scripted_model import ScriptedModel, image_urls  # noqa: E402


def _session_with_an_image(model: ScriptedModel, workdir: Path) -> tuple[str, str]:
    model.add({"text": "ok"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    image = images.check(png(seed=21), None, "shot.png", "w")
    conversation.run_turn("look", CancelToken(), (), [image])
    sid = conversation.session_id
    assert sid is not None
    conversation.close()
    return sid, image.sha256


def _next_request(model: ScriptedModel, workdir: Path) -> tuple[dict, list[str]]:
    model.add({"text": "again"})
    ui = RecordingUI()
    conversation = make_conversation(model.base_url, workdir, ui)
    conversation.open()
    turn(conversation, "again")
    conversation.close()
    return model.requests[-1], [e["text"] for e in ui.of_type("notice")]


def test_a_blob_swapped_for_a_link_is_not_followed(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    sid, sha = _session_with_an_image(model, workdir)
    blob = mino_home / "images" / sid / sha
    (tmp_path / "other.png").write_bytes(blob.read_bytes())  # even the same bytes, through a link
    blob.unlink()
    blob.symlink_to(tmp_path / "other.png")
    request, notices = _next_request(model, workdir)
    assert image_urls(request) == [] and any("shot.png" in n for n in notices)


def test_a_session_folder_swapped_for_a_link_is_not_followed(
    model: ScriptedModel, workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    sid, sha = _session_with_an_image(model, workdir)
    folder = mino_home / "images" / sid
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(folder, elsewhere)
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    request, notices = _next_request(model, workdir)
    assert image_urls(request) == [] and any("shot.png" in n for n in notices)


def test_a_blob_grown_past_the_limit_is_not_read(
    model: ScriptedModel, workdir: Path, mino_home: Path
) -> None:
    sid, sha = _session_with_an_image(model, workdir)
    blob = mino_home / "images" / sid / sha
    with blob.open("ab") as f:
        f.truncate(images.MAX_IMAGE_BYTES + 1)
    fd = os.open(blob.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:  # refused by its size, before a byte is read (the sha256 check would refuse it read whole)
        assert images._blob_at(fd, sha) is None
    finally:
        os.close(fd)
    request, notices = _next_request(model, workdir)
    assert image_urls(request) == [] and any("changed in Mino's image store" in n for n in notices)
    assert model.errors == []
