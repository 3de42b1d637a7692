"""Project skills (docs/BEHAVIOUR.md, "Skills"): scan, skip with reasons, catalogue, session record, skill_view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mino_server.core import frontmatter, skills
from mino_server.core.cancel import CancelToken
from mino_server.core.decision import decide
from mino_server.core.tools.base import COMPLETED, ArgumentError, ToolContext, ToolFailure
from mino_server.core.tools.skill_view import SkillViewTool


def skill_text(name: str, description: str = "Does a thing.", body: str = "# Steps\n1. go\n") -> str:
    return frontmatter.render([("name", name), ("description", description)], body)


def add(workdir: Path, folder: str, text: str | bytes) -> Path:
    d = workdir / ".mino" / "skills" / folder
    d.mkdir(parents=True, exist_ok=True)
    path = d / "SKILL.md"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_no_skills_folder(tmp_path: Path) -> None:
    assert skills.scan_skills(tmp_path) == ([], [])
    assert skills.render_catalogue([]) is None


def test_scan_in_name_order_and_catalogue(tmp_path: Path) -> None:
    p2 = add(tmp_path, "release", skill_text("release", "Tag and publish a chapter release."))
    p1 = add(tmp_path, "db-migrate", skill_text("db-migrate", "Write: a migration (safely)."))
    (tmp_path / ".mino" / "skills" / "README.md").write_text("notes")  # not a skill folder: ignored
    (tmp_path / ".mino" / "skills" / ".git").mkdir()
    found, problems = skills.scan_skills(tmp_path)
    assert problems == []
    assert found == [
        skills.Skill("db-migrate", "Write: a migration (safely).", p1),
        skills.Skill("release", "Tag and publish a chapter release.", p2),
    ]
    text = skills.render_catalogue(found)
    assert text == (
        skills.CATALOGUE_HEADING + "\n"
        "- db-migrate: Write: a migration (safely).\n"
        "- release: Tag and publish a chapter release."
    )
    assert "skill_view" in skills.CATALOGUE_HEADING
    assert skills.skill_paths(found) == {"db-migrate": p1, "release": p2}


def test_bad_skills_are_skipped_with_a_reason(tmp_path: Path) -> None:
    add(tmp_path, "good", skill_text("good"))
    add(tmp_path, "mismatch", skill_text("other"))
    add(tmp_path, "Bad_Name", skill_text("Bad_Name"))
    add(tmp_path, "no-yaml", "just text\n")
    add(tmp_path, "extra", "---\nname: extra\ndescription: d\nlicense: MIT\n---\n")
    add(tmp_path, "two-lines", skill_text("two-lines", "a\nb"))
    add(tmp_path, "empty-desc", skill_text("empty-desc", ""))
    add(tmp_path, "long-desc", skill_text("long-desc", "d" * 1025))
    add(tmp_path, "huge", skill_text("huge", body="x" * (64 * 1024)))
    add(tmp_path, "latin1", skill_text("latin1", "caf\xe9").encode("latin-1"))
    (tmp_path / ".mino" / "skills" / "missing").mkdir()
    found, problems = skills.scan_skills(tmp_path)
    assert [s.name for s in found] == ["good"]
    reasons = dict(problems)
    assert reasons["mismatch"] == "name 'other' does not match the folder name"
    assert "naming rule" in reasons["Bad_Name"]
    assert reasons["no-yaml"].startswith(
        "SKILL.md needs YAML front matter with string fields name and description"
    )
    assert "unexpected field(s): license" in reasons["extra"]
    assert reasons["two-lines"] == "description must be one line"
    assert reasons["empty-desc"] == "description is empty"
    assert reasons["long-desc"] == "description is 1025 bytes; the limit is 1024 bytes (UTF-8)"
    assert reasons["huge"] == "SKILL.md: larger than 64 KiB"
    assert reasons["latin1"] == "SKILL.md is not valid UTF-8 text"
    assert reasons["missing"] == "no SKILL.md"
    lines = skills.format_problems(tmp_path, problems)
    assert lines[0] == f"Some skills in {tmp_path / '.mino' / 'skills'} were not loaded:"
    assert lines[1] == "  Bad_Name: " + reasons["Bad_Name"]


def test_symlinks_fifos_and_hard_links_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text(skill_text("linked-dir"))
    work = tmp_path / "work"
    add(work, "good", skill_text("good"))
    base = work / ".mino" / "skills"
    (base / "linked-dir").symlink_to(outside)
    (base / "linked-file").mkdir()
    (base / "linked-file" / "SKILL.md").symlink_to(outside / "SKILL.md")
    (base / "fifo").mkdir()
    os.mkfifo(base / "fifo" / "SKILL.md")
    hard = add(work, "hard", skill_text("hard"))
    os.link(hard, tmp_path / "second-name")
    found, problems = skills.scan_skills(work)
    assert [s.name for s in found] == ["good"]
    assert problems == [
        ("fifo", "SKILL.md: not a regular file"),
        ("hard", "SKILL.md: has 2 hard links (only files with a single link are read)"),
        ("linked-dir", "symbolic link (not followed)"),
        ("linked-file", "SKILL.md: symbolic link (not followed)"),
    ]


def test_symlinked_skills_folder_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    add(real, "good", skill_text("good"))
    work = tmp_path / "work"
    (work / ".mino").mkdir(parents=True)
    (work / ".mino" / "skills").symlink_to(real / ".mino" / "skills")
    assert skills.scan_skills(work) == ([], [(".mino/skills", "symbolic link (not followed)")])


def test_catalogue_limit(tmp_path: Path) -> None:
    for i in range(skills.MAX_SKILLS + 2):
        add(tmp_path, f"s{i:03d}", skill_text(f"s{i:03d}"))
    found, problems = skills.scan_skills(tmp_path)
    assert len(found) == skills.MAX_SKILLS
    assert [f for f, _ in problems] == [f"s{i:03d}" for i in (skills.MAX_SKILLS, skills.MAX_SKILLS + 1)]


def test_record_round_trip(tmp_path: Path) -> None:
    add(tmp_path, "b", skill_text("b", "Second: 'quoted' #x"))
    add(tmp_path, "a", skill_text("a", "第一"))
    found, _ = skills.scan_skills(tmp_path)
    record = skills.catalogue_to_record(found)
    assert record == [
        {"name": "a", "description": "第一"},
        {"name": "b", "description": "Second: 'quoted' #x"},
    ]
    assert skills.catalogue_from_record(record, tmp_path) == found
    # The catalogue comes from the record even after the files change: same instructions on resume.
    (tmp_path / ".mino" / "skills" / "a" / "SKILL.md").unlink()
    assert skills.render_catalogue(skills.catalogue_from_record(record, tmp_path)) == skills.render_catalogue(
        found
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "a"},
        [{"name": "a"}],
        [{"name": "A", "description": "d"}],
        [{"name": "a", "description": 1}],
        [{"name": "a", "description": "x\ny"}],
        [{"name": "a", "description": "d"}, {"name": "a", "description": "e"}],
        [{"name": "a", "description": "d", "path": "/etc/passwd"}],
    ],
)
def test_bad_record_is_refused_with_a_reason(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="session_skills"):
        skills.catalogue_from_record(bad, tmp_path)


# ---- skill_view ---------------------------------------------------------------------------------


def make_ctx(tmp_path: Path, skill_map: dict[str, Path]) -> ToolContext:
    return ToolContext(
        workdir=tmp_path, home=tmp_path / "home", memory_dir=tmp_path / "home" / "memory",
        cancel=CancelToken(), skills=skill_map,
    )  # fmt: skip


def test_skill_view_returns_the_skill_file(tmp_path: Path) -> None:
    path = add(tmp_path, "release", skill_text("release"))
    found, _ = skills.scan_skills(tmp_path)
    ctx = make_ctx(tmp_path, skills.skill_paths(found))
    tool = SkillViewTool()
    assert [decide(tool.kind(ctx), m) for m in ("manual", "accept-edits", "bypass")] == ["run", "run", "run"]
    name = tool.validate({"name": "release"})
    result = tool.run(name, ctx, tool.prepare(name, ctx))
    assert (result.status, result.output) == (COMPLETED, path.read_text())


def test_skill_view_refuses_names_outside_the_catalogue(tmp_path: Path) -> None:
    add(tmp_path, "later", skill_text("later"))  # on disk, but not in this session's catalogue
    ctx = make_ctx(tmp_path, {})
    tool = SkillViewTool()
    with pytest.raises(ToolFailure, match="No skill named later in this session's catalogue"):
        tool.run("later", ctx, tool.prepare("later", ctx))
    for bad in ("../x", "a/b", "SKILL.md", ""):
        with pytest.raises(ArgumentError):
            tool.validate({"name": bad})


def test_skill_view_of_a_file_replaced_by_a_symlink_fails_cleanly(tmp_path: Path) -> None:
    path = add(tmp_path, "s", skill_text("s"))
    ctx = make_ctx(tmp_path, {"s": path})
    path.unlink()
    (tmp_path / "secret").write_text("secret")
    path.symlink_to(tmp_path / "secret")
    tool = SkillViewTool()
    with pytest.raises(ToolFailure, match="symbolic link"):
        tool.run("s", ctx, tool.prepare("s", ctx))
