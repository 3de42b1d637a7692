"""Editor context in a turn (docs/BEHAVIOUR.md, "Editor context"): `context` items on mino/turn and
`@path` / `@path:A-B` in typed text, checked before anything is sent or logged, sent as one
`input_text` part per item after the typed text, and kept in the user_message record so every
replay sends the same. Server tests run a real `mino --stdio` against the scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_damaged_user_message, make_conversation, quiet_home, session_records, turn
from image_files import b64, data_url, jpeg, png
from server_client import Spawn, servers

from mino_server.core.cancel import CancelToken
from mino_server.core.context import (
    ITEM_MAX_BYTES,
    MAX_MENTIONS,
    TOTAL_MAX_BYTES,
    ContextError,
    ContextRequest,
    ResolvedItem,
    context_part,
    fence,
    find_mentions,
    resolve_context,
    to_record,
)
from mino_server.core.contract import ContextItem
from mino_server.core.model_client import alternating
from mino_server.core.sessions.log import replay_items, user_item
from mino_server.testing.scripted_model import ScriptedModel, image_urls, input_problems


# ---- the fence and the part ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("x = 1\n", "```\nx = 1\n```"),
        ("x = 1", "```\nx = 1\n```"),  # a newline before the closing fence, never inside the text
        ("", "```\n```"),
        ("a `b` ``c``", "```\na `b` ``c``\n```"),
        ("```py\nx\n```\n", "````\n```py\nx\n```\n````"),
        ("a ````` b", "``````\na ````` b\n``````"),  # longer than the longest run, wherever it is
    ],
)
def test_the_fence_is_longer_than_any_backtick_run(text: str, expected: str) -> None:
    assert fence(text) == expected


def test_the_part_names_the_path_and_lines() -> None:
    assert context_part(ResolvedItem("src/a.py", None, None, "x\n")) == "Context: src/a.py\n```\nx\n```"
    assert context_part(ResolvedItem("a.py", 10, 20, "y")) == "Context: a.py (lines 10-20)\n```\ny\n```"
    assert context_part(ResolvedItem("a.py", 5, None, "y")) == "Context: a.py (lines 5-end)\n```\ny\n```"


# ---- the @ parser -------------------------------------------------------------------------------
@pytest.fixture
def wd(workdir: Path) -> Path:
    (workdir / "src").mkdir()
    (workdir / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 31)))
    (workdir / "notes.txt").write_text("pine\n")
    (workdir / "example.com").mkdir()  # a folder is not a file to attach
    return workdir.resolve()


def mentions(text: str, wd: Path, home: Path) -> list[tuple[str, int | None, int | None]]:
    return [(r.path, r.start_line, r.end_line) for r in find_mentions(text, wd, home)]


def test_mentions_at_the_start_or_after_white_space(wd: Path, mino_home: Path) -> None:
    text = "@notes.txt explain\t@src/app.py:3-5 and @src/app.py:7, then (@notes.txt) x@notes.txt"
    assert mentions(text, wd, mino_home) == [
        ("notes.txt", None, None),
        ("src/app.py", 3, 5),
        ("src/app.py", 7, 7),  # "@path:A" is one line; the comma after it is not part of it
    ]
    assert mentions(f"see @{wd / 'notes.txt'}.", wd, mino_home) == [(str(wd / "notes.txt"), None, None)]
    assert mentions("@notes.txt and @notes.txt", wd, mino_home) == [("notes.txt", None, None)]  # once


def test_an_at_word_naming_no_file_inside_stays_plain_text(wd: Path, mino_home: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside\n")
    (wd / "escape.txt").symlink_to(tmp_path / "secret.txt")
    for text in [
        "mail me@example.com",  # not after white space
        "@example.com is a folder here",
        "@property is a decorator",
        "@../secret.txt",
        f"@{tmp_path / 'secret.txt'}",
        "@escape.txt leads outside through a link",
        "@src/app.py:x-y",
        "@",
    ]:
        assert find_mentions(text, wd, mino_home) == [], text


def test_mino_home_inside_the_workdir_is_never_a_mention(wd: Path) -> None:
    home = wd / ".mino-home"
    home.mkdir()
    (home / "config.yaml").write_text("model: x\n")
    assert find_mentions("@.mino-home/config.yaml", wd, home) == []
    with pytest.raises(ContextError, match=r"MINO_HOME"):
        resolve_context(wd, home, [ContextItem(path=".mino-home/config.yaml", text="x")])


def test_only_the_first_mentions_are_looked_up(wd: Path, mino_home: Path) -> None:
    text = " ".join(["@nothing"] * MAX_MENTIONS + ["@notes.txt"])
    assert find_mentions(text, wd, mino_home) == []


# ---- resolving ----------------------------------------------------------------------------------
def test_items_resolve_relative_to_the_workdir(wd: Path, mino_home: Path) -> None:
    items = [
        ContextItem(path="draft.py", text="unsaved = True\n", startLine=2, endLine=2),  # need not exist
        ContextItem(path=str(wd / "src" / "app.py"), startLine=29),
        ContextItem(path="src/../notes.txt"),
        ContextRequest("src/app.py", 2, 3, where="@src/app.py:2-3"),
    ]
    assert resolve_context(wd, mino_home, items) == [
        ResolvedItem("draft.py", 2, 2, "unsaved = True\n"),
        ResolvedItem("src/app.py", 29, None, "line 29\nline 30\n"),
        ResolvedItem("notes.txt", None, None, "pine\n"),
        ResolvedItem("src/app.py", 2, 3, "line 2\nline 3\n"),
    ]


@pytest.mark.parametrize(
    "item, words",
    [
        (
            ContextItem(path="../outside.txt", text="x"),
            "context[0]: ../outside.txt is outside the working directory",
        ),
        (ContextItem(path="/etc/passwd"), "context[0]: /etc/passwd is outside the working directory"),
        (
            ContextItem(path="escape.txt"),
            "context[0]: escape.txt leads outside the working directory",
        ),
        (ContextItem(path="missing.txt"), "context[0]: missing.txt does not exist"),
        (ContextItem(path="src/app.py", startLine=40), "start_line 40 is past the end of src/app.py"),
        (ContextItem(path="src/app.py", startLine=5, endLine=4), "the last line (4) is before the first (5)"),
        (ContextItem(path="src/app.py", startLine=0), "lines are numbered from 1"),
        (ContextItem(path=""), "the path must be a file name"),
        (ContextItem(path="src"), "src is a directory"),
        (ContextItem(path="a\0b", text="x"), "without NUL bytes"),
    ],
)
def test_items_that_cannot_be_attached(
    wd: Path, mino_home: Path, tmp_path: Path, item: ContextItem, words: str
) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    (wd / "escape.txt").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(ContextError) as info:
        resolve_context(wd, mino_home, [item])
    assert words in str(info.value) and "\n" not in str(info.value)


def test_size_limits_in_utf8_bytes(wd: Path, mino_home: Path) -> None:
    fits = "é" * (ITEM_MAX_BYTES // 2)  # 64 KiB exactly
    (whole,) = resolve_context(wd, mino_home, [ContextItem(path="a", text=fits)])
    assert whole.text == fits and whole.cut is None
    four = [ContextItem(path=f"f{i}", text="x" * ITEM_MAX_BYTES) for i in range(4)]
    assert len(resolve_context(wd, mino_home, four)) == 4  # 256 KiB together: the limit itself
    with pytest.raises(ContextError, match=r"context\[4\]: with it the context items come to 262,145 bytes"):
        resolve_context(wd, mino_home, [*four, ContextItem(path="f5", text="y")])


def test_an_item_over_64_kib_is_cut_with_a_note_not_refused(wd: Path, mino_home: Path) -> None:
    # "x" then two-byte characters: 64 KiB falls in the middle of one, which is left out whole.
    text = "x" + "é" * (ITEM_MAX_BYTES // 2 + 100)
    size = len(text.encode())
    (item,) = resolve_context(wd, mino_home, [ContextItem(path="big.txt", text=text)])
    kept = "x" + "é" * (ITEM_MAX_BYTES // 2 - 1)
    assert item.cut == (ITEM_MAX_BYTES - 1, size)
    assert item.text == (
        f"{kept}\n[Mino cut this item at 65,535 of {size:,} bytes (UTF-8); the rest was not attached. "
        "Read big.txt with read_file to see more.]"
    )
    # Four cut items still fit the 256 KiB of a turn (the notes do not count); a fifth item does not.
    four = [ContextItem(path=f"f{i}", text="y" * 100_000) for i in range(4)]
    assert [i.cut for i in resolve_context(wd, mino_home, four)] == [(ITEM_MAX_BYTES, 100_000)] * 4
    with pytest.raises(ContextError, match="all items together may hold at most 262144 bytes"):
        resolve_context(wd, mino_home, [*four, ContextItem(path="f5", text="z")])


def test_a_large_file_is_cut_as_read_file_cuts_it(wd: Path, mino_home: Path) -> None:
    (wd / "big.log").write_text("x" * 100 + "\n" + "y" * TOTAL_MAX_BYTES)
    (item,) = resolve_context(wd, mino_home, [ContextItem(path="big.log")])
    assert item.text.startswith("x" * 100) and "[Output cut at 256 KiB inside line 2" in item.text
    with pytest.raises(ContextError, match="all items together may hold at most 262144 bytes"):
        resolve_context(wd, mino_home, [ContextItem(path="big.log"), ContextItem(path="notes.txt")])


def test_lone_surrogates_in_a_text_become_replacement_characters(wd: Path, mino_home: Path) -> None:
    (item,) = resolve_context(wd, mino_home, [ContextItem(path="a.txt", text="half \ud83d emoji")])
    assert item.text == "half \ufffd emoji"


# ---- parts on the wire and in the log -----------------------------------------------------------
def test_user_item_is_a_string_without_context_and_parts_with() -> None:
    assert user_item("hello") == {"type": "message", "role": "user", "content": "hello"}
    rec = to_record(ResolvedItem("a.py", 1, 2, "x\n"))
    assert rec == {"path": "a.py", "start_line": 1, "end_line": 2, "text": "x\n"}
    assert user_item("look", [rec])["content"] == [
        {"type": "input_text", "text": "look"},
        {"type": "input_text", "text": "Context: a.py (lines 1-2)\n```\nx\n```"},
    ]


def test_merging_keeps_the_parts_of_a_message_with_context() -> None:
    # A turn that failed before any answer leaves its user message just before the next one.
    records: list[dict[str, Any]] = [
        {"type": "user_message", "text": "failed turn"},
        {
            "type": "user_message",
            "text": "look",
            "context": [to_record(ResolvedItem("a.py", None, None, "x"))],
        },
    ]
    merged = alternating(replay_items(records))
    assert merged == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "failed turn"},
                {"type": "input_text", "text": "look"},
                {"type": "input_text", "text": "Context: a.py\n```\nx\n```"},
            ],
        }
    ]
    assert input_problems({"input": merged}) == []  # the strict bridge takes a user message of text parts
    single = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
    assert input_problems({"input": [single]})  # ...but not a plain message sent as parts


def test_a_damaged_context_record_is_damage(model: ScriptedModel, workdir: Path) -> None:
    assert_damaged_user_message(
        model.base_url,
        workdir,
        {"context": [{"path": 1}]},
        "user_message context items need a string path and text",
    )


def test_the_core_api(model: ScriptedModel, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("pine\n")
    model.add({"text": "seen"}, {"text": "again"})
    conversation = make_conversation(model.base_url, workdir)
    conversation.open()
    result = conversation.run_turn("what word?", CancelToken(), [ContextItem(path="notes.txt")])
    assert result.status == "completed"
    with pytest.raises(ContextError):
        conversation.run_turn("x", CancelToken(), [ContextItem(path="../nope")])
    assert not conversation.busy
    turn(conversation, "next")
    assert model.requests[1]["input"][0] == model.requests[0]["input"][0]  # replayed as first sent
    assert len(model.requests) == 2 and model.errors == []
    conversation.close()


# ---- over a real `mino --stdio` -----------------------------------------------------------------
@pytest.fixture
def home(tmp_path: Path) -> Path:
    return quiet_home(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "work space"
    w.mkdir()
    (w / "src").mkdir()
    (w / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 31)))
    (w / "notes.txt").write_text("pine\n")
    return w


@pytest.fixture
def spawn(home: Path, ws: Path, model: ScriptedModel) -> Iterator[Spawn]:
    with servers(home, model.base_url, ws) as make:
        yield make
    assert model.errors == []


def user_content(request: dict[str, Any], index: int = -1) -> Any:
    return [i for i in request["input"] if i.get("role") == "user"][index]["content"]


SELECTION = {"path": "src/draft.py", "startLine": 3, "endLine": 4, "text": "def f():\n    return '```'\n"}
PARTS = [
    {"type": "input_text", "text": "explain @src/app.py:2-3 please"},
    {
        "type": "input_text",
        "text": "Context: src/draft.py (lines 3-4)\n````\ndef f():\n    return '```'\n````",
    },
    {"type": "input_text", "text": "Context: notes.txt\n```\npine\n```"},
    {"type": "input_text", "text": "Context: src/app.py (lines 2-3)\n```\nline 2\nline 3\n```"},
]


def test_context_items_and_mentions_reach_the_model_as_parts(
    spawn: Spawn, model: ScriptedModel, home: Path, ws: Path
) -> None:
    model.add({"text": "Explained."})
    client = spawn()
    context = [SELECTION, {"path": str(ws.resolve() / "notes.txt")}]
    result = client.request("mino/turn", {"text": "explain @src/app.py:2-3 please", "context": context})
    assert result["status"] == "completed"
    assert user_content(model.requests[0]) == PARTS
    sid = client.request("mino/state")["sessionId"]
    (saved,) = [r for r in session_records(home, sid) if r["type"] == "user_message"]
    assert saved["text"] == "explain @src/app.py:2-3 please"  # sent and kept as typed
    assert saved["context"] == [
        {"path": "src/draft.py", "start_line": 3, "end_line": 4, "text": SELECTION["text"]},
        {"path": "notes.txt", "text": "pine\n"},
        {"path": "src/app.py", "start_line": 2, "end_line": 3, "text": "line 2\nline 3\n"},
    ]
    assert client.request("mino/history")["items"][0]["text"] == "explain @src/app.py:2-3 please"


def test_replay_after_resume_and_restart_sends_the_same_parts(
    spawn: Spawn, model: ScriptedModel, ws: Path
) -> None:
    model.add({"text": "one"}, {"text": "other"}, {"text": "two"}, {"text": "three"})
    client = spawn()
    client.request(
        "mino/turn", {"text": "explain @src/app.py:2-3 please", "context": [SELECTION, {"path": "notes.txt"}]}
    )
    sid = client.request("mino/state")["sessionId"]
    (ws / "notes.txt").write_text("changed since\n")  # the record keeps the text as sent
    client.request("mino/sessions/new")
    client.request("mino/turn", {"text": "elsewhere"})
    client.request("mino/sessions/resume", {"id": sid})
    client.request("mino/turn", {"text": "and now?"})
    assert user_content(model.requests[2], 0) == PARTS
    assert user_content(model.requests[2]) == "and now?"  # a message without context stays a string
    client.stop()
    again = spawn()  # a restart restores the selected session
    assert again.request("mino/state")["sessionId"] == sid
    again.request("mino/turn", {"text": "after a restart"})
    assert user_content(model.requests[3], 0) == PARTS


@pytest.mark.parametrize(
    "context, words",
    [
        ([{"path": "../outside.txt"}], "params.context[0]: ../outside.txt is outside the working directory"),
        (
            [{"path": "notes.txt"}, {"path": "escape.txt"}],
            "params.context[1]: escape.txt leads outside the working directory",
        ),
        (
            [{"path": f"f{i}", "text": "x" * 60_000} for i in range(5)],
            "params.context[4]: with it the context items come to 300,000 bytes",
        ),
        ([{"path": "notes.txt", "startLine": "2"}], "params.context[0].startLine must be a whole number"),
        ([{"path": "a", "text": ""}] * 101, "101 context items; a turn may carry at most 100."),
    ],
)
def test_bad_context_is_refused_before_anything_is_sent_or_logged(
    spawn: Spawn, model: ScriptedModel, home: Path, ws: Path, tmp_path: Path, context: list[Any], words: str
) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    (ws / "escape.txt").symlink_to(tmp_path / "outside.txt")
    client = spawn()
    err = client.error("mino/turn", {"text": "look", "context": context})
    assert err.code == -32602 and err.message.startswith("Invalid params: ") and words in err.message
    assert model.requests == []
    assert session_records(home, client.request("mino/state")["sessionId"]) == []
    model.add({"text": "fine"})  # nothing is left busy
    assert client.request("mino/turn", {"text": "look"})["status"] == "completed"


def test_a_mention_that_cannot_be_attached_is_refused(spawn: Spawn, model: ScriptedModel, ws: Path) -> None:
    client = spawn()
    err = client.error("mino/turn", {"text": "see @src/app.py:40-50"})
    assert (
        err.code == -32602 and "@src/app.py:40-50: start_line 40 is past the end of src/app.py" in err.message
    )
    assert model.requests == []


def test_an_email_address_is_not_a_file_and_a_version_1_turn_is_unchanged(
    spawn: Spawn, model: ScriptedModel, home: Path
) -> None:
    model.add({"text": "Sent."}, {"text": "Plain."})
    client = spawn()
    text = "write to me@example.com and @example.com, cc @nobody"
    assert client.request("mino/turn", {"text": text})["status"] == "completed"
    assert user_content(model.requests[0]) == text  # no items: one string, as before
    assert client.request("mino/turn", {"text": "no context at all"})["status"] == "completed"
    assert user_content(model.requests[1]) == "no context at all"
    sid = client.request("mino/state")["sessionId"]
    assert all("context" not in r for r in session_records(home, sid))


def test_an_item_over_64_kib_is_sent_cut_and_the_person_told(
    spawn: Spawn, model: ScriptedModel, home: Path, ws: Path
) -> None:
    model.add({"text": "read"})
    client = spawn()
    text = "a" * 70_000
    result = client.request("mino/turn", {"text": "look", "context": [{"path": "big.txt", "text": text}]})
    assert result["status"] == "completed"
    part = user_content(model.requests[0])[1]["text"]
    assert part.startswith(
        "Context: big.txt\n```\n" + "a" * ITEM_MAX_BYTES + "\n[Mino cut this item at 65,536 of 70,000"
    )
    (notice,) = client.events("notice")
    assert notice["text"] == (
        "Context item big.txt is 70,000 bytes: the model gets the first 65,536 and a note that it can read "
        "the rest with read_file."
    )
    sid = client.request("mino/state")["sessionId"]
    (saved,) = [r for r in session_records(home, sid) if r["type"] == "user_message"]
    assert saved["context"][0]["text"].endswith("Read big.txt with read_file to see more.]")  # as sent


# ---- images over a real `mino --stdio` (docs/BEHAVIOUR.md, "Images") -------------------------------
def test_images_reach_the_model_and_a_restart_sends_the_same(
    spawn: Spawn, model: ScriptedModel, home: Path, ws: Path
) -> None:
    (ws / "chart.png").write_bytes(png(seed=3))
    model.add({"text": "two pictures"}, {"text": "again"})
    client = spawn()
    pasted = {"mimeType": "image/jpeg", "data": b64(jpeg()), "name": "pasted.jpg"}
    result = client.request("mino/turn", {"text": "compare with @chart.png", "images": [pasted]})
    assert result["status"] == "completed"
    assert image_urls(model.requests[0]) == [data_url(jpeg(), "image/jpeg"), data_url(png(seed=3))]
    (item,) = client.request("mino/history")["items"][:1]
    assert item["text"] == (
        "compare with @chart.png\n[image: pasted.jpg, JPEG 3×2, 35 bytes]\n[image: chart.png, PNG 2×1, 72 bytes]"
    )
    client.stop()
    again = spawn()
    again.request("mino/turn", {"text": "and after a restart?"})
    assert image_urls(model.requests[1]) == image_urls(model.requests[0])


@pytest.mark.parametrize(
    "images, words",
    [
        (
            [
                {"mimeType": "image/png", "data": b64(png())},
                {"mimeType": "image/png", "data": b64(b"\x89PNG\r\n\x1a\n" + b"x" * 30)},
            ],
            "params.images[1]: the file starts like a PNG image but its header is damaged",
        ),
        ([{"mimeType": "text/html", "data": "PGI+"}], "params.images[0]: mimeType must be image/png"),
        (
            [{"mimeType": "image/png", "data": b64(png())}] * 9,
            "params.images[8]: 9 images; a message may carry at most 8",
        ),
        (
            [{"mimeType": "image/png", "data": "A" * 8_000_000}],
            "params.images[0]: the image is about 6,000,000 bytes",
        ),
    ],
)
def test_bad_images_are_refused_before_anything_is_sent_or_logged(
    spawn: Spawn, model: ScriptedModel, home: Path, images: list[Any], words: str
) -> None:
    client = spawn()
    err = client.error("mino/turn", {"text": "look", "images": images})
    assert err.code == -32602 and words in err.message, err.message
    assert model.requests == [] and not (home / "images").exists()
    assert session_records(home, client.request("mino/state")["sessionId"]) == []
