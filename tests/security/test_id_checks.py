"""Issue 22, finding 8: IDs were checked with re.match on a `^…$` pattern, and `$` also matches
before a trailing newline: "<32 hex digits>\\n" passed as a session ID (and became a file name:
`sessions/<id>\\n.lock`). Every ID check is a full match now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mino_server.acp import mapping
from mino_server.core.contract import ApprovalField
from mino_server.core.sessions import places
from mino_server.core.sessions.store import ID_RE, LogError, SelectionError, SessionStore
from mino_server.server import protocol
from mino_server.server.protocol import ClearParams, ResumeParams, ValidationError

SID = "0123456789abcdef0123456789abcdef"
VARIANTS = [SID + "\n", SID + "\r\n", "\n" + SID, SID + " ", SID.upper()]


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    directory = tmp_path / "sessions"
    directory.mkdir()
    return SessionStore(directory)


def test_the_pattern_takes_only_the_id() -> None:
    assert ID_RE.fullmatch(SID) and ID_RE.match(SID)
    for bad in VARIANTS:
        assert not ID_RE.fullmatch(bad) and not ID_RE.match(bad), repr(bad)


@pytest.mark.parametrize("bad", VARIANTS)
def test_no_file_is_named_after_an_id_with_a_newline(store: SessionStore, bad: str) -> None:
    with pytest.raises(LogError, match="is not a session ID"):
        store.claim(bad, "/w")
    with pytest.raises(LogError, match="is not a session ID"):
        store.open_log(bad)
    with pytest.raises(ValueError, match="is not a session ID"):
        places.path_for(store.dir, bad)
    assert store.holder(bad) is None
    assert sorted(p.name for p in store.dir.iterdir()) == []


def test_a_selection_with_a_trailing_newline_is_refused(store: SessionStore) -> None:
    (store.dir / "active-session.json").write_text(json.dumps({"session_id": SID + "\n"}))
    with pytest.raises(SelectionError, match="does not hold a valid session ID"):
        store.read_selection()


@pytest.mark.parametrize("cls", [ResumeParams, ClearParams])
def test_the_editor_protocol_refuses_a_trailing_newline(cls: type) -> None:
    params = {"id": SID, "typedId": SID}
    protocol.parse(cls, params)
    with pytest.raises(ValidationError, match="got"):
        protocol.parse(cls, {**params, "id": SID + "\n"})


def test_a_line_fragment_with_a_newline_is_not_a_range() -> None:
    assert mapping._LINES.fullmatch("L3-L5")
    assert not mapping._LINES.fullmatch("L3-L5\n")


def test_odd_digits_in_a_lines_field_are_not_a_line_number(tmp_path: Path) -> None:
    """str.isdigit() takes '²', which int() refuses: no traceback, no line."""
    fields = [ApprovalField(label="Path", value="a.py"), ApprovalField(label="Lines", value="²-3")]
    assert mapping.tool_locations(fields, str(tmp_path)) == [{"path": str(tmp_path / "a.py")}]
    fields = [ApprovalField(label="Path", value="a.py"), ApprovalField(label="Lines", value="3-4")]
    assert mapping.tool_locations(fields, str(tmp_path)) == [{"path": str(tmp_path / "a.py"), "line": 3}]
