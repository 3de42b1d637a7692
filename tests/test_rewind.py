"""/rewind through the real tools, store and log, against the scripted model (docs/BEHAVIOUR.md, "Rewind")."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import Conversation, RecordingUI, command, texts, turn

from mino_server.core import checkpoints
from mino_server.core.rewind import checkpoint_turns
from mino_server.testing.scripted_model import ScriptedModel


def call(tool: str, /, **arguments: Any) -> dict:
    return {"calls": [{"name": tool, "arguments": arguments}]}


def three_turns(model: ScriptedModel, conversation: Conversation, workdir: Path) -> None:
    """Turn 1 edits a.txt and creates new.txt; turn 2 edits a.txt again and runs bash; turn 3 talks."""
    model.add(
        call("edit_file", path="a.txt", old_text="one", new_text="ONE"),
        call("write_file", path="sub/new.txt", content="fresh\n", mode="create"),
        {"text": "done 1"},
        call("edit_file", path="a.txt", old_text="two", new_text="TWO"),
        call("bash", command="true"),
        {"text": "done 2"},
        {"text": "done 3"},
    )
    assert turn(conversation, "first request\nmore lines").status == "completed"
    assert turn(conversation, "second request").status == "completed"
    assert turn(conversation, "third request").status == "completed"
    assert (workdir / "a.txt").read_text() == "ONE\nTWO\n"


def test_list_restore_delete_and_conversation(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\ntwo\n")
    os.chmod(workdir / "a.txt", 0o640)
    ui = RecordingUI(confirms=[True])
    conversation = agent_factory(ui, mode="bypass")
    three_turns(model, conversation, workdir)
    lines = command(conversation, "/rewind")
    assert lines[0].startswith("2. ") and lines[0].endswith(
        "1 file(s): second request (bash commands are not undone)"
    )
    assert lines[1].startswith("1. ") and lines[1].endswith("2 file(s): first request")
    assert lines[2].startswith("Checkpoints of this session: ") and "/clear deletes them" in lines[2]
    assert (
        conversation.state().checkpointBytes
        == checkpoints.size_of(conversation.config.home, conversation.session_id or "")
        > 0
    )

    out = command(conversation, "/rewind 1")
    assert (
        ui.confirm_messages[-1]
        == "restore a.txt\ndelete sub/new.txt\n(bash commands are not undone)\nRewind 2 file(s) to before turn 1?"
    )
    assert out == ["Rewound 2 file(s); the conversation continues from before turn 1."]
    assert (workdir / "a.txt").read_text() == "one\ntwo\n"
    assert (workdir / "a.txt").stat().st_mode & 0o777 == 0o640
    assert not (workdir / "sub" / "new.txt").exists()
    assert command(conversation, "/rewind")[0] == "Nothing to rewind."

    # Later requests no longer send the rewound turns; the log keeps them and the history marks them.
    model.add({"text": "after"})
    turn(conversation, "fourth request")
    sent = texts(model.requests[-1])
    assert "fourth request" in sent and not any("request" in t and t != "fourth request" for t in sent)
    items, _ = conversation.history()
    assert {i.text for i in items if i.rewound} >= {
        "first request\nmore lines",
        "second request",
        "third request",
    }
    assert [i.rewound for i in items if i.text == "fourth request"] == [None]
    assert sum(1 for r in _records(conversation) if r["type"] == "rewind") == 1


def test_changed_since_mino_wrote_it_is_kept(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\ntwo\n")
    ui = RecordingUI(confirms=[True])
    conversation = agent_factory(ui, mode="bypass")
    three_turns(model, conversation, workdir)
    (workdir / "a.txt").write_text("the person's own work\n")
    assert command(conversation, "/rewind 2") == [
        "Rewound 0 file(s); the conversation continues from before turn 2."
    ]
    assert ui.confirm_messages[-1].startswith("keep a.txt: changed since Mino wrote it\n")
    assert (workdir / "a.txt").read_text() == "the person's own work\n"


def test_no_changes_nothing(model: ScriptedModel, agent_factory, workdir: Path) -> None:
    (workdir / "a.txt").write_text("one\ntwo\n")
    ui = RecordingUI(confirms=[False])
    conversation = agent_factory(ui, mode="bypass")
    three_turns(model, conversation, workdir)
    before = conversation.log.path.read_bytes() if conversation.log else b""
    assert command(conversation, "/rewind 1") == ["Nothing was rewound."]
    assert (workdir / "a.txt").read_text() == "ONE\nTWO\n" and (workdir / "sub" / "new.txt").exists()
    assert conversation.log is not None and conversation.log.path.read_bytes() == before
    assert command(conversation, "/rewind 3")[0].startswith("Turn 3 changed no files")
    assert command(conversation, "/rewind x")[0].startswith("Usage: /rewind [N]")


def test_links_are_not_followed(model: ScriptedModel, agent_factory, workdir: Path, tmp_path: Path) -> None:
    """A folder swapped for a link to outside after the turn: the rewind writes nothing outside."""
    (workdir / "sub").mkdir()
    (workdir / "sub" / "a.txt").write_text("one\n")
    ui = RecordingUI(confirms=[True])
    conversation = agent_factory(ui, mode="bypass")
    model.add(call("edit_file", path="sub/a.txt", old_text="one", new_text="ONE"), {"text": "ok"})
    turn(conversation, "edit")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("ONE\n")
    os.rename(workdir / "sub", workdir / "sub-moved")
    os.symlink(outside, workdir / "sub")
    out = command(conversation, "/rewind 1")
    assert (outside / "a.txt").read_text() == "ONE\n"
    assert out[0] == "Rewound 0 file(s); the conversation continues from before turn 1."
    assert ui.confirm_messages[-1].startswith("keep sub/a.txt: ")


def test_store_is_in_home_not_project_and_clear_removes_it(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    (workdir / "a.txt").write_text("one\ntwo\n")
    git_before = sorted(str(p) for p in (workdir / ".git").rglob("*"))
    ui = RecordingUI(typed=[])
    conversation = agent_factory(ui, mode="bypass")
    three_turns(model, conversation, workdir)
    assert sorted(str(p) for p in (workdir / ".git").rglob("*")) == git_before
    sid = conversation.session_id or ""
    store = checkpoints.folder(conversation.config.home, sid)
    assert (store / "pack").is_file() and (store / "pack").stat().st_mode & 0o777 == 0o600
    # identical bytes are stored once: a.txt's state before turn 2 is not "one\ntwo\n" again
    assert (store / "pack").read_bytes().count(b"one\ntwo\n") == 1
    ui.typed.append(sid)
    command(conversation, "/clear")
    assert not store.exists() and conversation.state().checkpointBytes == 0


def test_interrupted_rewind_is_finished_by_the_next(
    model: ScriptedModel, agent_factory, workdir: Path
) -> None:
    """The journal record and one of two files done (as a SIGKILL would leave it): /rewind N again
    finds that one at its target and restores the other."""
    from mino_server.core import rewind

    (workdir / "a.txt").write_text("one\ntwo\n")
    ui = RecordingUI(confirms=[True])
    conversation = agent_factory(ui, mode="bypass")
    three_turns(model, conversation, workdir)
    p = rewind.plan(conversation, 1)
    assert conversation.log is not None
    conversation.log.append("rewind", n=1, turns=p.turns, files=[f.path for f in p.files])
    store = conversation.checkpoints
    assert store is not None
    store.restoring("sub/new.txt", None)  # recorded, never done: the file is still there
    (workdir / "a.txt").write_text("one\ntwo\n")  # as restored
    assert checkpoint_turns(conversation) == []
    assert command(conversation, "/rewind 1") == [
        "Rewound 2 file(s); the conversation continues from before turn 1."
    ]
    assert not (workdir / "sub" / "new.txt").exists() and (workdir / "a.txt").read_text() == "one\ntwo\n"


def test_torn_store_tail_is_cut(tmp_path: Path) -> None:
    store = checkpoints.CheckpointStore(tmp_path, "s")
    store.keep("t1", "a.txt", b"old", "aa", "bb", 0o644)
    store.close()
    with open(checkpoints.folder(tmp_path, "s") / "pack", "ab") as f:
        f.write(b'{"k":"blob","sha":"cc","n":100}\npartial')
    again = checkpoints.CheckpointStore(tmp_path, "s")
    again.load()
    assert [e.path for e in again.entries] == ["a.txt"] and again.blob("aa") == b"old"
    assert again.size == (checkpoints.folder(tmp_path, "s") / "pack").stat().st_size


def test_after_digest_is_blake3_and_older_sha256_entries_still_match(tmp_path: Path) -> None:
    """A write entry's `after` is BLAKE3 (a checkpoint hashes the new bytes ~4x faster than with
    sha256); stores written before hold a sha256 there, and both must still tell Mino's bytes from
    anyone else's."""
    import hashlib

    store = checkpoints.CheckpointStore(tmp_path, "s")
    store.keep(
        "t1", "a.txt", b"old", hashlib.sha256(b"old").hexdigest(), checkpoints.after_digest(b"new"), 0o644
    )
    store.close()
    again = checkpoints.CheckpointStore(tmp_path, "s")
    again.load()
    after = again.entries[0].after
    assert after is not None and after.startswith("blake3:")
    sha = lambda b: hashlib.sha256(b).hexdigest()  # noqa: E731
    assert checkpoints.same(after, b"new", sha(b"new"))
    assert not checkpoints.same(after, b"new!", sha(b"new!")) and not checkpoints.same(after, None, None)
    assert checkpoints.same(sha(b"new"), b"new", sha(b"new"))  # an older store's after
    assert not checkpoints.same(sha(b"new"), b"other", sha(b"other"))
    assert checkpoints.same(None, None, None) and not checkpoints.same(None, b"", sha(b""))


def _records(conversation: Conversation) -> list[dict]:
    assert conversation.log is not None
    return [json.loads(x) for x in conversation.log.path.read_text().splitlines()]


# ---- the editor server: mino/checkpoints, mino/rewind, mino/confirm kind rewind -----------------
def test_server_checkpoints_and_rewind(model: ScriptedModel, tmp_path: Path) -> None:
    from helpers import quiet_home
    from server_client import servers

    home = quiet_home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    model.add(
        call("edit_file", path="a.txt", old_text="one", new_text="ONE"),
        call("write_file", path="new.txt", content="fresh\n", mode="create"),
        {"text": "done"},
    )
    answers = [False, True]
    with servers(home, model.base_url, ws) as spawn:
        client = spawn(handlers={"mino/confirm": lambda params: {"confirmed": answers.pop(0)}}, mode="bypass")
        result = client.request("mino/turn", {"text": "change things"})
        (t,) = client.request("mino/checkpoints")["turns"]
        assert t["n"] == 1 and t["turnId"] == result["turnId"] and t["text"] == "change things"
        assert t["bash"] is False
        assert t["files"] == [{"path": "a.txt", "action": "restore"}, {"path": "new.txt", "action": "delete"}]
        assert client.request("mino/state")["checkpointBytes"] > 0

        no = client.request("mino/rewind", {"turnId": t["turnId"]})
        assert no["confirmed"] is False and no["rewound"] == [] and (ws / "new.txt").exists()
        yes = client.request("mino/rewind", {"turnId": t["turnId"]})
        assert yes["confirmed"] is True and yes["rewound"] == ["a.txt", "new.txt"] and yes["kept"] == []
        assert (ws / "a.txt").read_text() == "one\ntwo\n" and not (ws / "new.txt").exists()

        asked = [r["params"] for r in client.incoming_requests if r["method"] == "mino/confirm"]
        assert asked[-1]["kind"] == "rewind"
        assert asked[-1]["message"] == "restore a.txt\ndelete new.txt\nRewind 2 file(s) to before turn 1?"
        assert {(d["path"].rsplit("/", 1)[-1], d["before"], d["after"]) for d in asked[-1]["diffs"]} == {
            ("a.txt", "ONE\ntwo\n", "one\ntwo\n"),
            ("new.txt", "fresh\n", ""),
        }
        assert client.request("mino/checkpoints")["turns"] == []
        items = client.request("mino/history")["items"]
        assert items and all(i.get("rewound") is True for i in items)
        assert client.error("mino/rewind", {"turnId": "nope"}).code == -32602
        assert client.request("mino/command", {"line": "/rewind"})["output"][0] == "Nothing to rewind."
