"""Project skills (docs/BEHAVIOUR.md, "Skills"): `<workdir>/.mino/skills/NAME/SKILL.md`, a catalogue in the instructions.

The catalogue (names and descriptions) is scanned once per session and saved as a `session_skills`
record, so a resumed session sends the same instructions; skill_view reads a SKILL.md on demand.
Skills come from the project, which may be a repository someone else wrote, so reading is as careful
as for memories: symlinks are not followed, special files are never opened, sizes are capped, and
every skipped skill has a reason.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import field
from pathlib import Path

from . import frontmatter
from .values import Frozen, frozen

SKILLS_DIR = Path(".mino") / "skills"
SKILL_FILE = "SKILL.md"
FIELDS: tuple[str, ...] = ("name", "description")
MAX_DESCRIPTION_BYTES = 1024  # one line of catalogue each; also the Agent Skills limit
MAX_SKILL_BYTES = 64 * 1024  # skill_view returns the whole file as one tool result
MAX_SKILLS = 100  # the catalogue goes with every request: at most ~100 KiB of descriptions

CATALOGUE_HEADING = (
    "Project skills (guides the user wrote for this project in .mino/skills). When a task matches a "
    "skill's description, read its full instructions with skill_view before starting:"
)

Problem = tuple[str, str]  # (folder name, reason)


@frozen
class Skill(Frozen):
    name: str
    description: str
    path: Path  # the SKILL.md file
    # The SKILL.md bytes' hash when scanned ("" from a session record): what consent is bound to,
    # not part of the catalogue's value.
    sha256: str = field(default="", compare=False)
    size: int = field(default=0, compare=False)  # SKILL.md's characters, for the consent question


class SkillError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def description_problem(description: str) -> str | None:
    return frontmatter.one_line_problem("description", description, MAX_DESCRIPTION_BYTES)


def read_skill_file(path: Path) -> str:
    """The text of one SKILL.md, read without following links or opening special files."""
    try:
        data = frontmatter.read_regular_file(path, MAX_SKILL_BYTES)
    except FileNotFoundError:
        raise SkillError(f"no {SKILL_FILE}") from None
    except frontmatter.FileRejected as exc:
        raise SkillError(f"{SKILL_FILE}: {exc.reason}") from None
    except OSError as exc:
        raise SkillError(f"cannot read {SKILL_FILE}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{SKILL_FILE} is not valid UTF-8 text") from None


def _load_skill(folder: Path) -> Skill:
    path = folder / SKILL_FILE
    text = read_skill_file(path)
    try:
        doc = frontmatter.parse(text, FIELDS)
    except frontmatter.FrontMatterError as exc:
        raise SkillError(
            f"{SKILL_FILE} needs YAML front matter with string fields name and description ({exc.reason})"
        ) from None
    name, description = doc.fields["name"], doc.fields["description"]
    if name != folder.name:
        raise SkillError(f"name '{frontmatter.shown(name)}' does not match the folder name")
    problem = description_problem(description)
    if problem:
        raise SkillError(problem)
    return Skill(name, description, path, hashlib.sha256(text.encode("utf-8")).hexdigest(), len(text))


_ABSENT = "absent"
_OK = "ok"
_NOT_A_FOLDER = "not a folder"


def _folder_status(path: Path) -> str:
    """_OK, _ABSENT, or why this folder is not used (a symlink is never followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _ABSENT
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "symbolic link (not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return _NOT_A_FOLDER
    return _OK


def scan_skills(workdir: Path) -> tuple[list[Skill], list[Problem]]:
    """The project's usable skills in name order and the skipped ones as (folder name, reason)."""
    skills_dir = workdir / SKILLS_DIR
    for part in (SKILLS_DIR.parent, SKILLS_DIR):
        status = _folder_status(workdir / part)
        if status == _ABSENT:
            return [], []
        if status != _OK:
            return [], [(str(part), status)]
    try:
        with os.scandir(skills_dir) as it:
            names = sorted(e.name for e in it if not e.name.startswith("."))
    except OSError as exc:
        return [], [(str(SKILLS_DIR), f"cannot read the skills folder: {exc.strerror or exc}")]
    skills: list[Skill] = []
    problems: list[Problem] = []
    for name in names:
        folder = skills_dir / name
        status = _folder_status(folder)
        if status in (_NOT_A_FOLDER, _ABSENT):
            continue  # a README beside the skill folders, or gone since the listing: not a skill
        if status != _OK:
            problems.append((name, status))
            continue
        if not frontmatter.valid_name(name):
            problems.append((name, f"folder name does not follow the naming rule ({frontmatter.NAME_RULE})"))
            continue
        try:
            skill = _load_skill(folder)
        except SkillError as exc:
            problems.append((name, exc.reason))
            continue
        if len(skills) >= MAX_SKILLS:
            problems.append((name, f"over the catalogue limit of {MAX_SKILLS} skills"))
            continue
        skills.append(skill)
    return skills, problems


CONSENT_KIND = "skills"


def consent_digest(workdir: Path, skills: Iterable[Skill]) -> str:
    """What a yes to a scanned catalogue is bound to: the folder and every SKILL.md's bytes (not
    only the descriptions shown: skill_view returns the rest later)."""
    from .consent import digest

    parts = [str(workdir / SKILLS_DIR)]
    for s in sorted(skills, key=lambda s: s.name):
        parts += [s.name, s.sha256]
    return digest(CONSENT_KIND, *parts)


def format_problems(workdir: Path, problems: Sequence[Problem]) -> list[str]:
    return frontmatter.problem_lines(f"Some skills in {workdir / SKILLS_DIR} were not loaded:", problems)


def render_catalogue(skills: Iterable[Skill]) -> str | None:
    """The text appended to the instructions, or None when there are no skills."""
    ordered = sorted(skills, key=lambda s: s.name)
    if not ordered:
        return None
    return "\n".join([CATALOGUE_HEADING, *(f"- {s.name}: {s.description}" for s in ordered)])


def skill_paths(skills: Iterable[Skill]) -> dict[str, Path]:
    """name -> SKILL.md, for ToolContext.skills."""
    return {s.name: s.path for s in skills}


def catalogue_to_record(skills: Iterable[Skill]) -> list[dict[str, str]]:
    """The `skills` value of a session_skills record: [{name, description}] in name order."""
    return [{"name": s.name, "description": s.description} for s in sorted(skills, key=lambda s: s.name)]


def catalogue_from_record(obj: object, workdir: Path) -> list[Skill]:
    """The catalogue saved in a session_skills record; paths point into the current working directory.

    Raises ValueError with a reason when the record is not a list of valid {name, description}.
    """
    if not isinstance(obj, list):
        raise ValueError("session_skills: skills is not a list")
    skills: list[Skill] = []
    for item in obj:
        if not isinstance(item, dict) or set(item) != {"name", "description"}:
            raise ValueError("session_skills: each skill must have exactly name and description")
        name, description = item["name"], item["description"]
        if not isinstance(name, str) or not isinstance(description, str):
            raise ValueError("session_skills: name and description must be strings")
        if not frontmatter.valid_name(name):
            raise ValueError(f"session_skills: bad skill name {name!r}")
        problem = description_problem(description)
        if problem:
            raise ValueError(f"session_skills: skill {name}: {problem}")
        skills.append(Skill(name, description, workdir / SKILLS_DIR / name / SKILL_FILE))
    if len({s.name for s in skills}) != len(skills):
        raise ValueError("session_skills: a skill name appears twice")
    return sorted(skills, key=lambda s: s.name)
