"""Remembered decisions: rules (docs/BEHAVIOUR.md, "Rules"; docs/SECURITY.md, "Rules").

A rule is `bash WORDS`, `mcp SERVER/TOOL` or `write GLOB`, kept as `allow` or `deny` for one project
(its working directory's real path). Rules live in `MINO_HOME/rules/`, one YAML file per project,
which a person may read and edit; a file that does not parse, or holds a rule that is not one, is
reported in one line and ignored as a whole (asking more is the safe side). They are read again at
every check, so a hand edit or another window's `always` counts at once.

Which calls a rule may cover is decided by the tools (`Prepared.subject`): a sandboxed command (the
sandbox complete), a write inside the working directory outside its protected folders, an MCP
tool. Memory saves, consent, rewinds, commands outside the sandbox or without one never have a
subject, so no rule reaches them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .values import Frozen, frozen
from .vocab import EFFECTS, RULE_KINDS, Effect, RuleKind

MAX_RULE_FILE_BYTES = 256 * 1024
LOCK = "rules.lock"
HEADER = (
    '# Mino\'s remembered decisions for one project (docs/BEHAVIOUR.md, "Rules"). Edit freely:\n'
    "# each rule is `bash WORDS`, `mcp SERVER/TOOL` or `write GLOB`, listed under allow or deny.\n"
)
_MCP = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_GLOB = re.compile(r"[A-Za-z0-9_./*?@%+,=-]+")


@frozen
class Rule(Frozen):
    kind: RuleKind
    pattern: str
    effect: Effect
    project: str  # the project's real path

    @property
    def text(self) -> str:
        return f"{self.kind} {self.pattern}"

    @property
    def id(self) -> str:
        """Bound to what the rule is, so a delete never removes a rule that took another's place."""
        key = f"{self.project}\0{self.effect}\0{self.text}".encode()
        return hashlib.sha256(key).hexdigest()[:16]


@frozen
class Subject(Frozen):
    """What of one call a rule may cover: a command, a path in the project, an MCP tool."""

    kind: RuleKind
    value: str  # the command line; the path relative to the working directory, with `/`; SERVER/TOOL


@frozen
class Verdict(Frozen):
    effect: Effect
    rules: tuple[str, ...]  # the rules' texts that decided, as shown: `Rule: "bash git status"`


def parse_rule(text: str) -> tuple[RuleKind, str]:
    """`bash WORDS`, `mcp SERVER/TOOL` or `write GLOB`; ValueError naming what is wrong."""
    if not isinstance(text, str):
        raise ValueError("a rule must be text such as `bash git status`")
    kind, _, pattern = text.strip().partition(" ")
    pattern = " ".join(pattern.split())
    if kind not in RULE_KINDS or not pattern:
        raise ValueError(f"{text!r} is not `bash WORDS`, `mcp SERVER/TOOL` or `write GLOB`")
    if kind == "bash":
        from .shellwords import RULE_WORD, WRAPPERS

        words = pattern.split(" ")
        if not all(RULE_WORD.fullmatch(w) for w in words) or words[0].startswith("-"):
            raise ValueError(f"{text!r}: a bash rule's words are plain ASCII words")
        if words[0].rsplit("/", 1)[-1] in WRAPPERS:
            raise ValueError(f"{text!r}: {words[0]} runs other commands, so no rule can cover it")
    elif kind == "mcp" and not _MCP.fullmatch(pattern):
        raise ValueError(f"{text!r}: an mcp rule is SERVER/TOOL")
    elif kind == "write":
        parts = pattern.split("/")
        if (
            not _GLOB.fullmatch(pattern)
            or pattern.startswith("/")
            or any(p in ("", ".", "..") for p in parts)
            or any(p.casefold() in (".git", ".mino", ".vscode") for p in parts)
        ):
            raise ValueError(
                f"{text!r}: a write rule is a relative path or glob in the project, outside .git, .mino, .vscode"
            )
    return kind, pattern


def glob_regex(glob: str) -> re.Pattern[str]:
    """`*` and `?` within one path segment, `**` across any number of them (a last `**`: anything
    below; elsewhere: zero or more folders)."""
    parts = glob.split("/")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        piece = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(piece if last else piece + "/")
    return re.compile("".join(out), re.S)


def project_key(workdir: Path) -> str:
    return os.path.realpath(workdir)


def file_name(project: str) -> str:
    """`<last folder>-<digest>.yaml`: findable by eye, one per project."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(project) or "root")[:40]
    return f"{base}-{hashlib.sha256(project.encode()).hexdigest()[:12]}.yaml"


class RuleStore:
    """The rules under MINO_HOME/rules/, for every project (listing) and for one (checks)."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "rules"
        self._cache: dict[str, tuple[tuple[int, int], list[Rule] | str]] = {}

    # ---- reading ------------------------------------------------------------------------------
    def files(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.suffix in (".yaml", ".yml"))
        except OSError:
            return []

    def _read(self, path: Path) -> list[Rule] | str:
        """The rules of one file, or the one line saying why it is ignored."""
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self._cache.get(str(path))
            if cached and cached[0] == stamp:
                return cached[1]
            if st.st_size > MAX_RULE_FILE_BYTES:
                result: list[Rule] | str = f"over {MAX_RULE_FILE_BYTES // 1024} KiB"
            else:
                result = _parse_file(path.read_bytes())
        except OSError as exc:
            return f"cannot be read: {exc.strerror or exc}"
        self._cache[str(path)] = (stamp, result)
        return result

    def load(self, project: str | None = None) -> tuple[list[Rule], list[str]]:
        """Every rule (of `project` when given) and a line for each file ignored."""
        rules: list[Rule] = []
        problems: list[str] = []
        for path in self.files():
            got = self._read(path)
            if isinstance(got, str):
                problems.append(f"Rules file {path} is ignored: {got}.")
                continue
            rules.extend(r for r in got if project is None or r.project == project)
        return rules, problems

    def judge(self, subject: Subject, workdir: Path) -> tuple[Verdict | None, list[str]]:
        """The deny or allow rules of this project that decide `subject`, deny first; None: none do."""
        rules, problems = self.load(project_key(workdir))
        rules = [r for r in rules if r.kind == subject.kind]
        if not rules:
            return None, problems
        if subject.kind == "bash":
            return _judge_command(subject.value, workdir, rules), problems
        for effect in ("deny", "allow"):
            for rule in rules:
                if rule.effect == effect and _covers(rule, subject.value):
                    return Verdict(effect, (rule.text,)), problems
        return None, problems

    # ---- writing ------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[int]:
        """Hold the rules lock; yields the rules folder, opened from MINO_HOME without following a
        link, for the writes (a `rules` folder or file swapped for a link fails with one line)."""
        from .durable import open_file_at, open_private_dir

        folder = open_private_dir(self.folder.parent, (self.folder.name,))
        try:
            fd = open_file_at(folder, LOCK, os.O_RDWR | os.O_CREAT, self.folder / LOCK)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield folder
            finally:
                os.close(fd)
        finally:
            os.close(folder)

    def add(self, texts: list[str], effect: Effect, workdir: Path) -> list[Rule]:
        """Keep rules for the project; raises ValueError (the file does not parse: not overwritten,
        so nothing written by hand is lost) or OSError."""
        project = project_key(workdir)
        new = []
        for text in texts:
            kind, pattern = parse_rule(text)
            new.append(Rule(kind, pattern, effect, project))
        with self._locked() as folder:
            path = self._path_of(project)
            current: list[Rule] = []
            if path.exists():
                got = self._read(path)
                if isinstance(got, str):
                    raise ValueError(f"rules file {path} does not parse ({got}), so it was not changed")
                current = got
            ids = {r.id for r in current}
            # One decision per rule: an always answer replaces the opposite one.
            texts_new = {r.text for r in new}
            kept = [r for r in current if r.text not in texts_new or r.effect == effect]
            kept += [r for r in new if r.id not in ids]
            self._write(folder, path, project, kept)
        return new

    def delete(self, rule_id: str) -> Rule | None:
        with self._locked() as folder:
            for path in self.files():
                got = self._read(path)
                if isinstance(got, str):
                    continue
                for rule in got:
                    if rule.id == rule_id:
                        self._write(folder, path, rule.project, [r for r in got if r.id != rule_id])
                        return rule
        return None

    def _path_of(self, project: str) -> Path:
        """This project's file: the one that names it inside (it may have been renamed), else the usual name."""
        for path in self.files():
            got = self._read(path)
            if isinstance(got, list) and any(r.project == project for r in got):
                return path
        return self.folder / file_name(project)

    def _write(self, folder: int, path: Path, project: str, rules: list[Rule]) -> None:
        """Replace `path` (a file of the folder `folder`) atomically; the link a name may have
        become is replaced, never written through."""
        import yaml

        from .durable import atomic_write_at

        body: dict[str, Any] = {"project": project}
        for effect in EFFECTS:
            body[effect] = [r.text for r in rules if r.effect == effect]
        data = HEADER + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
        atomic_write_at(folder, path.name, data.encode("utf-8"))
        self._cache.pop(str(path), None)


def _parse_file(data: bytes) -> list[Rule] | str:
    import yaml

    try:
        body = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        return f"it is not valid YAML{line}"
    if not isinstance(body, dict) or not isinstance(body.get("project"), str):
        return "it needs `project: /real/path` and lists `allow:` and `deny:`"
    extra = sorted(set(body) - {"project", *EFFECTS})
    if extra:
        return f"unknown key {extra[0]!r}"
    project = body["project"]
    rules: list[Rule] = []
    for effect in EFFECTS:
        listed = body.get(effect) or []
        if not isinstance(listed, list):
            return f"`{effect}:` must be a list of rules"
        for text in listed:
            try:
                kind, pattern = parse_rule(text)
            except ValueError as exc:
                return str(exc)
            rules.append(Rule(kind, pattern, effect, project))
    return rules


def _covers(rule: Rule, value: str) -> bool:
    if rule.kind == "write":
        return glob_regex(rule.pattern).fullmatch(value) is not None
    return rule.pattern == value


def _judge_command(command: str, workdir: Path, rules: list[Rule]) -> Verdict | None:
    from .shellwords import analyse, covers

    found = analyse(command, workdir)
    if found.reason:
        return None  # only a command read whole is covered; denies ask too, which is the safe side
    words = {r.id: tuple(r.pattern.split(" ")) for r in rules}
    for simple in found.commands:  # any simple command a deny rule covers refuses the whole command
        for rule in rules:
            if rule.effect == "deny" and covers(words[rule.id], simple):
                return Verdict("deny", (rule.text,))
    used: list[str] = []
    for simple in found.commands:
        rule_for = next((r for r in rules if r.effect == "allow" and covers(words[r.id], simple)), None)
        if rule_for is None:
            return None
        if rule_for.text not in used:
            used.append(rule_for.text)
    return Verdict("allow", tuple(used))


def propose(subject: Subject, workdir: Path) -> tuple[str, ...] | None:
    """The rules an `always` answer would keep for this call; None when no rule may cover it."""
    if subject.kind == "mcp":
        return (f"mcp {subject.value}",) if _MCP.fullmatch(subject.value) else None
    if subject.kind == "write":
        parts = subject.value.split("/")
        glob = f"{parts[0]}/**" if len(parts) > 1 else parts[0]
        try:
            parse_rule(f"write {glob}")
        except ValueError:
            return None
        return (f"write {glob}",)
    from .shellwords import analyse, proposal

    found = analyse(subject.value, workdir)
    if found.reason:
        return None
    texts: list[str] = []
    for simple in found.commands:
        words = proposal(simple)
        if words is None:
            return None
        text = "bash " + " ".join(words)
        if text not in texts:
            texts.append(text)
    return tuple(texts) if len(texts) <= 4 else None
