"""No write into MINO_HOME goes through a link (docs/SECURITY.md, "Writes on the person's behalf").

The threat: MINO_HOME inside a project, or anywhere a sandboxed command can write. A command swaps
`sessions`, `rules`, a session's log, its index, the selection, a lock note, ... for a symbolic link
to a file elsewhere, or for a second (hard) name of one, and Mino would then append to it, replace
it or delete it. Every store's folders are opened from MINO_HOME down without following a link and
its files with O_NOFOLLOW; a file written in place with a second name is refused. What the person
sees is one line naming the path; the file elsewhere is untouched; the session loads again once the
link is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mino_server.core.durable import HARD_LINKED, IS_A_LINK
from mino_server.testing.scripted_model import ScriptedModel

PRECIOUS = "export PATH=$HOME/bin:$PATH\n"
LINK_WORDS = IS_A_LINK.split(";")[0]  # "is a symbolic link"
HARD_WORDS = HARD_LINKED.split(";")[0].replace("{n}", "2")  # "has 2 hard links"


def mino(env: dict[str, str], cwd: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mino_server", "--mode", "bypass"],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def quiet(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text('sandbox: "off"\n')


def one_line(proc: subprocess.CompletedProcess[str], holds: str) -> str:
    """The one line of the run's output that holds `holds`; no traceback anywhere."""
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    lines = [x for x in out.splitlines() if holds in x]
    assert len(lines) == 1, out
    return lines[0]


def first_session(env: dict[str, str], workdir: Path, model: ScriptedModel, home: Path) -> str:
    model.add({"text": "first answer"})
    first = mino(env, workdir, "hello\n")
    assert first.returncode == 0, first.stdout + first.stderr
    return json.loads((home / "sessions" / "active-session.json").read_text())["session_id"]


def test_the_sessions_folder_swapped_for_a_link(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    """Nothing is created, appended or replaced in the folder the link leads to; one line says why."""
    quiet(mino_home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (mino_home / "sessions").symlink_to(elsewhere)
    proc = mino(mino_env, workdir, "hi\n")
    assert proc.returncode == 1
    line = one_line(proc, LINK_WORDS)
    assert line.startswith("mino: ") and f"{mino_home / 'sessions'} {LINK_WORDS}" in line
    assert list(elsewhere.iterdir()) == [] and model.requests == []
    os.unlink(mino_home / "sessions")  # the link gone: Mino starts and chats
    model.add({"text": "fine"})
    again = mino(mino_env, workdir, "hi\n")
    assert again.returncode == 0 and "fine" in again.stdout, again.stdout + again.stderr


def test_a_session_log_with_a_second_name_elsewhere_is_not_appended_to(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    """`<id>.jsonl` replaced by a hard link to a file outside: loading refuses it, nothing appended."""
    quiet(mino_home)
    sid = first_session(mino_env, workdir, model, mino_home)
    log = mino_home / "sessions" / f"{sid}.jsonl"
    kept = log.read_bytes()
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(kept)
    log.unlink()
    os.link(outside, log)
    model.add({"text": "second answer"})
    proc = mino(mino_env, workdir, "again\n")
    line = one_line(proc, HARD_WORDS)
    assert str(log) in line
    assert outside.read_bytes() == kept and len(model.requests) == 1
    outside.unlink()  # one name again: the session loads, the chat goes on
    again = mino(mino_env, workdir, "again\n")
    assert again.returncode == 0 and "second answer" in again.stdout, again.stdout + again.stderr


def test_a_session_log_swapped_for_a_symbolic_link_says_so(mino_home: Path, tmp_path: Path) -> None:
    from mino_server.core.sessions.store import LogError, SessionStore

    sid = "0123456789abcdef0123456789abcdef"
    outside = tmp_path / "outside"
    outside.write_text("")
    (mino_home / "sessions").mkdir(parents=True)
    (mino_home / "sessions" / f"{sid}.jsonl").symlink_to(outside)
    with pytest.raises(LogError) as caught:
        SessionStore(mino_home / "sessions").open_log(sid)
    assert str(caught.value) == f"{mino_home / 'sessions' / sid}.jsonl {IS_A_LINK}"
    assert outside.read_text() == ""


def test_the_index_is_never_written_through_a_name_placed_beside_it(mino_home: Path, tmp_path: Path) -> None:
    """The index's temporary file is a fresh one: a second name of a file outside, placed where a
    temporary name could be guessed, is neither truncated nor written; a link at the index's own
    name is replaced, never followed."""
    from mino_server.core.sessions.log import INDEX_MIN_BYTES, INDEX_SUFFIX, SessionLog

    folder = mino_home / "sessions"
    folder.mkdir(parents=True)
    sid = "0123456789abcdef0123456789abcdef"
    log = folder / f"{sid}.jsonl"
    text = "x" * 1000
    lines = [
        json.dumps(
            {"seq": n, "type": "user_message", "turn_id": "t", "at": "2026-01-01T00:00:00.000Z", "text": text}
        )
        for n in range(1, INDEX_MIN_BYTES // 1000 + 50)
    ]
    log.write_text("\n".join(lines) + "\n")
    outside, linked = tmp_path / "outside", tmp_path / "linked"
    outside.write_text(PRECIOUS)
    linked.write_text(PRECIOUS)
    index = folder / f"{sid}.jsonl{INDEX_SUFFIX}"
    os.link(outside, folder / f"{index.name}.{os.getpid()}.tmp")  # the name Mino used to write first
    index.symlink_to(linked)
    SessionLog.open(log).close()
    assert outside.read_text() == PRECIOUS and linked.read_text() == PRECIOUS
    assert not index.is_symlink() and index.stat().st_size > 0  # the link replaced by the index itself


def test_a_selection_file_swapped_for_a_link_says_so(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path, tmp_path: Path
) -> None:
    quiet(mino_home)
    sid = first_session(mino_env, workdir, model, mino_home)
    selection = mino_home / "sessions" / "active-session.json"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"session_id": sid}) + "\n")
    before = outside.read_bytes()
    selection.unlink()
    selection.symlink_to(outside)
    proc = mino(mino_env, workdir, "/new\n")
    line = one_line(proc, LINK_WORDS)
    assert f"{selection} {LINK_WORDS}" in line
    assert outside.read_bytes() == before


@pytest.mark.parametrize("name", ["{sid}.lock", "sessions.changes"])
def test_a_lock_note_with_a_second_name_elsewhere_is_not_written(
    model: ScriptedModel,
    mino_env: dict[str, str],
    workdir: Path,
    mino_home: Path,
    tmp_path: Path,
    name: str,
) -> None:
    """The claim's note and the change counter are written in place: a hard link in their place
    would rewrite the other name's bytes. The claim refuses with one line; the counter is skipped."""
    quiet(mino_home)
    sid = first_session(mino_env, workdir, model, mino_home)
    note = mino_home / "sessions" / name.format(sid=sid)
    outside = tmp_path / "outside"
    outside.write_text(PRECIOUS)
    note.unlink(missing_ok=True)
    os.link(outside, note)
    model.add({"text": "second answer"})
    proc = mino(mino_env, workdir, "again\n")
    assert outside.read_text() == PRECIOUS
    if name == "{sid}.lock":
        assert proc.returncode == 1
        line = one_line(proc, HARD_WORDS)
        assert line.startswith("mino: Cannot open the session store") and str(note) in line
    else:
        assert proc.returncode == 0 and "second answer" in proc.stdout, proc.stdout + proc.stderr


def test_the_rules_folder_and_its_lock_are_not_written_through_links(
    mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    from mino_server.core.rules import RuleStore

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mino_home.mkdir(parents=True)
    (mino_home / "rules").symlink_to(elsewhere)
    with pytest.raises(OSError) as caught:
        RuleStore(mino_home).add(["bash git status"], "allow", workdir)
    assert str(caught.value) == f"{mino_home / 'rules'} {IS_A_LINK}"
    assert list(elsewhere.iterdir()) == []

    os.unlink(mino_home / "rules")
    (mino_home / "rules").mkdir()
    (mino_home / "rules" / "rules.lock").symlink_to(elsewhere / "made")  # O_CREAT would make it
    with pytest.raises(OSError) as caught:
        RuleStore(mino_home).add(["bash git status"], "allow", workdir)
    assert str(caught.value) == f"{mino_home / 'rules' / 'rules.lock'} {IS_A_LINK}"
    assert list(elsewhere.iterdir()) == []


def test_where_a_session_was_used_is_not_written_through_a_link(mino_home: Path, tmp_path: Path) -> None:
    from mino_server.core.sessions import places

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mino_home.mkdir(parents=True)
    (mino_home / "sessions").symlink_to(elsewhere)
    with pytest.raises(OSError) as caught:
        places.remember(mino_home / "sessions", "0" * 32, places.Place("/w", "title"))
    assert str(caught.value) == f"{mino_home / 'sessions'} {IS_A_LINK}"
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("store", ["checkpoints", "images"])
def test_clear_deletes_nothing_through_a_swapped_folder(mino_home: Path, tmp_path: Path, store: str) -> None:
    """/clear removes the session's checkpoints and images: never a folder a link leads to."""
    from mino_server.core import checkpoints, images

    sid = "0" * 32
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / sid).mkdir(parents=True)
    (elsewhere / sid / "keep").write_text(PRECIOUS)
    mino_home.mkdir(parents=True)
    (mino_home / store).symlink_to(elsewhere)
    (checkpoints if store == "checkpoints" else images).remove(mino_home, sid)
    assert (elsewhere / sid / "keep").read_text() == PRECIOUS


def test_the_checkpoint_pack_with_a_second_name_elsewhere_is_not_appended_to(
    mino_home: Path, tmp_path: Path
) -> None:
    from mino_server.core.checkpoints import CheckpointError, CheckpointStore

    sid = "0" * 32
    folder = mino_home / "checkpoints" / sid
    folder.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.write_text("")
    os.link(outside, folder / "pack")
    with pytest.raises(CheckpointError) as caught:
        CheckpointStore(mino_home, sid).keep(None, "a.txt", None, None, "after", None)
    assert f"{folder / 'pack'} {HARD_WORDS}" in str(caught.value)
    assert outside.read_text() == ""
