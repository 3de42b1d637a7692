"""What the model is told each turn: SOUL.md, the accepted project instructions (AGENTS.md), the
session's skills catalogue and the memory index, with the consent AGENTS.md and skills need
(docs/BEHAVIOUR.md, "Project instructions: AGENTS.md", "Skills", "Memory").

One per conversation (conversation.py holds it as `briefing`). What it remembers belongs to the
active session: the skills catalogue, a declined AGENTS.md content; `session_changed` forgets it
when the conversation switches sessions. What a person is asked goes through the front end's UI.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .cancel import CancelToken
from .config import Config
from .contract import Confirmation, MemoryProblem, Notice, ProjectInstructions
from .sessions.log import SessionLog
from .ui import UI
from .words import SKILLS_NOT_LOADED, skills_consent_not_saved, skills_question

if TYPE_CHECKING:
    from .memory import MemoryEntry, ProblemTracker
    from .skills import Skill


class Briefing:
    def __init__(self, config: Config, workdir: Path, ui: UI) -> None:
        self.config = config
        self.workdir = workdir
        self.ui = ui
        # Project instructions (AGENTS.md): whether a person can be asked (False for piped and `-p`
        # runs: only content accepted before is sent), and the content declined in this session.
        self.asks_person = True
        self._instructions_declined: str | None = None
        self._instructions_left_out: str | None = None  # the content a notice already named
        self._skills: list[Skill] | None = None
        self._memory_tracker: ProblemTracker | None = None
        self._force_memory_report = True

    def session_changed(self) -> None:
        """Another session became the active one: its skills are its own, a no holds for its
        session only, and memory problems are reported again."""
        self._skills = None
        self._instructions_declined = None
        self._force_memory_report = True

    # ---- the memory index ----------------------------------------------------------------
    def memory_snapshot(self) -> tuple[list[MemoryEntry], list[tuple[str, str]]]:
        from .memory import load_memories

        return load_memories(self.config.memory_dir)

    def memory_index(self) -> str | None:
        from .memory import ProblemTracker, render_index

        entries, problems = self.memory_snapshot()
        if self._memory_tracker is None:
            self._memory_tracker = ProblemTracker()
        if self._memory_tracker.report(problems, force=self._force_memory_report):
            self.ui.memory_problems(
                str(self.config.memory_dir), [MemoryProblem(file=f, reason=r) for f, r in problems]
            )
        self._force_memory_report = False
        return render_index(entries)

    # ---- skills --------------------------------------------------------------------------
    def session_skills(self, log: SessionLog, cancel: CancelToken) -> list[Skill]:
        """The catalogue is scanned once per session and saved, so a resumed session sees the same one.

        Skills the person has not accepted in exactly this content (consent.py) are asked about
        first; a no, a cancel, or nobody to ask loads none for this session."""
        from . import skills

        if self._skills is not None:
            return self._skills
        record = log.session_skills()
        if record is not None:
            try:
                self._skills = skills.catalogue_from_record(record.get("skills", []), self.workdir)
                return self._skills
            except ValueError as exc:  # a damaged record: rescan rather than stop the chat
                self.ui.event(Notice(turnId=None, text=f"Skills record ignored: {exc}"))
        found, problems = skills.scan_skills(self.workdir)
        if problems:
            self.ui.event(Notice(turnId=None, text="\n".join(skills.format_problems(self.workdir, problems))))
        if found and not self._skills_accepted(log, found, cancel):
            if cancel.cancelled:  # no answer yet: the session's next turn asks again
                return []
            found = []
        log.append("session_skills", skills=skills.catalogue_to_record(found))
        self._skills = found
        return found

    def _skills_accepted(self, log: SessionLog, found: list[Skill], cancel: CancelToken) -> bool:
        from . import consent, skills

        home = self.config.home
        sha = skills.consent_digest(self.workdir, found)
        if consent.accepted(home, skills.CONSENT_KIND, sha):
            return True
        where = str(self.workdir / skills.SKILLS_DIR)
        message = skills_question(where, [(s.name, s.description, s.size) for s in found])
        try:
            yes = (
                self.ui.confirm(
                    Confirmation(kind=skills.CONSENT_KIND, session_id=log.id, message=message), cancel
                )
                and not cancel.cancelled
            )
        except Exception:  # a front end that fails to ask has not said yes
            yes = False
        if not yes:
            if not cancel.cancelled:
                self.ui.event(Notice(turnId=None, text=SKILLS_NOT_LOADED))
            return False
        try:
            consent.remember(home, skills.CONSENT_KIND, sha, where)
        except OSError as exc:
            self.ui.event(Notice(turnId=None, text=skills_consent_not_saved(exc.strerror or str(exc))))
        return True

    # ---- project instructions (AGENTS.md) and SOUL.md -------------------------------------
    def project_instructions(self, log: SessionLog, cancel: CancelToken) -> str | None:
        """The AGENTS.md part of the instructions, when the person accepted exactly this content
        (instructions.py). Read at every turn, so a changed file asks again; asked at most once per
        content and session; never asked when no person can answer (a notice says it was left out)."""
        from . import consent
        from . import instructions as ins
        from .contract import ConfirmFile
        from .words import (
            INSTRUCTIONS_NOT_SENT,
            instructions_consent_not_saved,
            instructions_left_out,
            instructions_question,
        )

        found = ins.find(self.workdir)
        if not found.files:
            return None
        home, sha = self.config.home, found.digest
        if consent.accepted(home, ins.CONSENT_KIND, sha):
            return ins.render(found)
        if self._instructions_declined == sha:
            return None
        if not self.asks_person:
            if self._instructions_left_out != sha:
                self._instructions_left_out = sha
                self.ui.event(Notice(turnId=None, text=instructions_left_out([f.path for f in found.files])))
            return None
        cut = next((f.path for f in found.files if f.cut), None)
        message = instructions_question(
            [(f.path, f.text) for f in found.files],
            found.lines,
            cut,
            list(found.left_out),
            ins.MAX_BYTES // 1024,
        )
        files = [ConfirmFile(path=f.path, text=f.text) for f in found.files]
        try:
            yes = (
                self.ui.confirm(
                    Confirmation(
                        kind=ins.CONSENT_KIND,
                        session_id=log.id,
                        message=message,
                        files=tuple(files),
                        asks_last=True,
                    ),
                    cancel,
                )
                and not cancel.cancelled
            )
        except Exception:  # a front end that fails to ask has not said yes
            yes = False
        if not yes:
            if not cancel.cancelled:  # no answer yet (a cancel): the next turn asks again
                self._instructions_declined = sha
                self.ui.event(Notice(turnId=None, text=INSTRUCTIONS_NOT_SENT))
            return None
        try:
            consent.remember(home, ins.CONSENT_KIND, sha, str(found.root / ins.FILE_NAME))
        except OSError as exc:
            self.ui.event(Notice(turnId=None, text=instructions_consent_not_saved(exc.strerror or str(exc))))
        return ins.render(found)

    def instructions_status(self) -> list[ProjectInstructions]:
        """State.instructions: the AGENTS.md files that apply here and whether they are accepted."""
        from . import consent
        from . import instructions as ins

        found = ins.find(self.workdir)
        if not found.files:
            return []
        yes = consent.accepted(self.config.home, ins.CONSENT_KIND, found.digest)
        return [ProjectInstructions(path=f.path, accepted=yes) for f in found.files]

    def instructions(self, skill_list: list[Skill], project: str | None = None) -> str:
        """SOUL.md, then the accepted project instructions (AGENTS.md), then the skills catalogue."""
        from .skills import render_catalogue

        parts = [self.config.soul.rstrip() if project or render_catalogue(skill_list) else self.config.soul]
        parts += [p for p in (project, render_catalogue(skill_list)) if p]
        return "\n\n".join(parts)
