"""`mino eval DIR [--live] [-k NAME] [--json]`: run replay cases through the real turn loop.

Each case gets a fresh temporary MINO_HOME and workspace, a scripted model on 127.0.0.1 (or, with
--live, the configured real model), and the same core Conversation and slash commands as the CLI; only the UI
is the runner's own, answering approvals from the case. Output: `PASS name` / `FAIL name: why` per
case, then `N passed, M failed`; exit 1 if any failed, 2 for usage errors.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..core.cancel import CancelToken
from ..core.contract import (
    ALLOW_ALWAYS,
    Always,
    ApprovalRequest,
    Confirmation,
    Event,
    MemoryProblem,
    Notice,
    ToolResultEvent,
)
from ..core.display import terminal_text
from .checks import Run, Turn, describe_request, grade
from .schema import PLACEHOLDER_RE, Case, CaseError, load_case

if TYPE_CHECKING:
    from ..core.config import Config
    from ..testing.scripted_model import ScriptedModel

USAGE = "usage: mino eval DIR [--live] [-k NAME] [--json]"
SCRIPTED_MODEL = "mino-eval-scripted"
SCRIPTED_KEY = "mino-eval-scripted-key"  # the scripted model ignores it; the client wants one
SCRIPTED_TIMEOUT_S = 30.0  # so a broken case fails instead of hanging the suite
MAX_REASONS = 4  # on the PASS/FAIL line; --json has them all


class UsageError(Exception):
    def __init__(self, message: str, show_usage: bool = True) -> None:
        super().__init__(message)
        self.show_usage = show_usage


@dataclass
class Options:
    directory: Path
    live: bool = False
    name_filter: str | None = None
    json: bool = False


@dataclass
class LiveModel:
    model: str
    base_url: str
    api_key: str
    request_timeout_s: float


@dataclass
class CaseResult:
    name: str
    file: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0
    requests: int = 0
    transcript: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        if self.passed:
            return f"PASS {self.name}"
        shown = self.reasons[:MAX_REASONS]
        more = len(self.reasons) - len(shown)
        why = "; ".join(shown) + (f"; (+{more} more; --json lists them all)" if more else "")
        return f"FAIL {self.name}: {why}"


class EvalUI:
    """The runner's front end: approvals and confirmations answered from the case; everything recorded."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.results: list[ToolResultEvent] = []
        self.asked: list[str] = []
        self.output: list[str] = []
        # Set by the runner: the conversation's current session.
        self.session_id: Callable[[], str | None] = lambda: None

    def event(self, event: Event) -> None:
        match event:
            case ToolResultEvent():
                self.results.append(event)
            case Notice(text=text):
                self.output.append(text)

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool | Always:
        self.asked.append(request.tool)
        approve = self.case.approve
        if approve == "always":  # a person who answers `a` wherever it is offered, else yes
            return ALLOW_ALWAYS if request.always is not None else True
        return approve == "all" or (isinstance(approve, tuple) and request.tool in approve)

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        self.output.append(question.message)
        if question.kind in ("skills", "instructions"):
            return True  # the case wrote its skills and AGENTS.md itself (write_setup), as their author would
        return self.case.confirm_recovery if question.kind == "recovery" else False

    def ask_text(self, prompt: str) -> str | None:
        # /clear asks for the session ID; an empty answer is a refusal, as at a terminal.
        self.output.append(prompt)
        return (self.session_id() or "") if self.case.confirm_clear else ""

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        from ..core.memory import format_problems

        self.output.extend(format_problems(directory, [(p.file, p.reason) for p in problems]))


# ---- placeholders --------------------------------------------------------------------------------


class Placeholders:
    def __init__(
        self, values: dict[str, str], sessions: list[str], current: Callable[[], str | None]
    ) -> None:
        self.values = values
        self.sessions = sessions
        self.current = current

    def __call__(self, text: str) -> str:
        def replace(m: re.Match[str]) -> str:
            key, number = m.group(1), m.group(2)
            if key == "session":
                return self.current() or m.group(0)
            if number is not None:
                n = int(number)
                if n > len(self.sessions):
                    raise CaseError(
                        m.group(0), f"only {len(self.sessions)} session(s) had been selected at that point"
                    )
                return self.sessions[n - 1]
            return self.values.get(key, m.group(0))

        return PLACEHOLDER_RE.sub(replace, text)

    def replies(self, script: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The script's replies (JSON) with the placeholders in every string replaced."""
        return [{key: self.deep(value) for key, value in reply.items()} for reply in script]

    def deep(self, obj: object) -> object:
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, list):
            return [self.deep(v) for v in obj]
        if isinstance(obj, dict):
            return {k: self.deep(v) for k, v in obj.items()}
        return obj


# ---- one case ------------------------------------------------------------------------------------


def _seed(case: Case, home: Path, workspace: Path) -> None:
    """Write the case's memories, SOUL, config, workspace files and skills, as earlier sessions would have."""
    import yaml

    from ..core.durable import FILE_MODE, atomic_write, ensure_private_dir
    from ..core.frontmatter import render
    from ..core.memory import memory_path, render_memory
    from ..core.skills import SKILL_FILE, SKILLS_DIR

    ensure_private_dir(home)
    if case.memory:
        ensure_private_dir(home / "memory")
        for m in case.memory:
            data = render_memory(m.name, m.type, m.summary, m.details).encode("utf-8")
            atomic_write(memory_path(home / "memory", m.name), data, FILE_MODE)
    if case.soul is not None:
        atomic_write(home / "SOUL.md", case.soul.encode("utf-8"), FILE_MODE)
    if case.config:
        atomic_write(home / "config.yaml", yaml.safe_dump(case.config).encode("utf-8"), FILE_MODE)
    for rel, content in case.files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
    for name, (description, body) in case.skills.items():
        folder = workspace / SKILLS_DIR / name
        folder.mkdir(parents=True, exist_ok=True)
        text = render([("name", name), ("description", description)], body)
        (folder / SKILL_FILE).write_bytes(text.encode("utf-8"))


def _config(case: Case, home: Path, base_url: str, live: LiveModel | None) -> Config:
    from ..core.config import load_config
    from ..core.errors import ConfigError

    env = {
        "MINO_HOME": str(home),
        "MINO_BASE_URL": live.base_url if live else base_url,
        "MINO_MODEL": live.model if live else SCRIPTED_MODEL,
        "MINO_API_KEY": live.api_key if live else SCRIPTED_KEY,
    }
    try:
        config = load_config(env=env, mode=case.mode)
    except ConfigError as exc:
        message = str(exc).removeprefix(f"{home / 'config.yaml'}: ")
        raise CaseError("config", message) from None
    if "request_timeout_s" not in case.config:
        config.request_timeout_s = live.request_timeout_s if live else SCRIPTED_TIMEOUT_S
    return config


def run_case(case: Case, live: LiveModel | None = None) -> CaseResult:
    """Run one case in its own temporary MINO_HOME and workspace, and grade it."""
    started = time.monotonic()
    result = CaseResult(case.name, case.file, passed=False)
    with tempfile.TemporaryDirectory(prefix="mino-eval-") as tmp:
        root = Path(tmp).resolve()  # the conversation resolves its workdir; placeholders must match it
        home, workspace = root / "home", root / "workspace"
        workspace.mkdir()
        try:
            result.reasons = _run(case, live, home, workspace, result)
        except CaseError as exc:
            result.reasons = [str(exc)]
        except Exception as exc:  # a bug in the core or the runner: one line, where it happened
            frames = traceback.extract_tb(exc.__traceback__)
            ours = [f for f in frames if "mino_server" in Path(f.filename).parts] or frames
            where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"  # the innermost frame of Mino's code
            text = " ".join(str(exc).split()) or type(exc).__name__
            result.reasons = [f"internal error: {type(exc).__name__}: {text} (at {where})"]
    result.passed = not result.reasons
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _run(case: Case, live: LiveModel | None, home: Path, workspace: Path, result: CaseResult) -> list[str]:
    from ..core.commands import is_command, run_command
    from ..core.conversation import Conversation
    from ..core.store import Store
    from ..core.words import startup_lines
    from ..testing.scripted_model import ScriptedModel

    _seed(case, home, workspace)
    model = None if live else ScriptedModel().start()
    try:
        base_url = model.base_url if model else ""
        config = _config(case, home, base_url, live)
        ui = EvalUI(case)
        conversation = Conversation(Store(config), workspace, ui)

        def current() -> str | None:
            return conversation.session_id

        ui.session_id = current
        sessions: list[str] = []
        values = {"workspace": str(workspace), "home": str(home), "python": sys.executable}
        if model is not None:
            values["port"] = base_url.rsplit(":", 1)[1].split("/", 1)[0]
        sub = Placeholders(values, sessions, current)
        if model is not None:
            model.add(*sub.replies(case.script))
        run = Run(home=home, workspace=workspace, substitute=sub)
        failures: list[str] = []
        try:
            ui.output.extend(startup_lines(conversation.open()))
            if started := current():
                sessions.append(started)
            if "sandbox" in case.requires and conversation.state().sandbox is None:
                line = conversation.sandbox_line
                reason = line.removeprefix("Sandbox: unavailable (").removesuffix(")")
                return [f"sandbox unavailable: {reason}"]
            for number, raw in enumerate(case.turns, 1):
                try:
                    text = sub(raw)
                except CaseError as exc:
                    raise CaseError(f"turns[{number}]", f"{exc.field}: {exc.problem}") from None
                if is_command(text):
                    start = len(ui.output)
                    outcome = run_command(conversation, text, ui.output.append, ui.ask_text)
                    status = "stopped" if outcome.stop else "completed"
                    run.turns.append(Turn(number, text, True, status, "\n".join(ui.output[start:])))
                    if (selected := current()) and selected not in sessions:
                        sessions.append(selected)
                    if outcome.stop:
                        break
                    continue
                turn = conversation.run_turn(text, CancelToken())
                run.turns.append(Turn(number, text, False, turn.status, turn.text, turn.error))
            run.final_session = current()
        finally:
            conversation.close()
        run.results, run.asked, run.output = ui.results, ui.asked, ui.output
        if model is not None:
            model.stop()
            run.requests = list(model.requests)
            failures += _script_failures(case, model)
        result.requests = len(run.requests)
        try:
            failures += grade(case, run, live is not None)
        except CaseError as exc:
            failures.append(f"expect: {exc.field}: {exc.problem}")
        result.transcript = _transcript(run)
        return failures
    finally:
        if model is not None:
            model.stop()


def _script_failures(case: Case, model: ScriptedModel) -> list[str]:
    """Script violations first: they explain most of what fails after them."""
    failures = []
    for error in model.errors:
        m = re.match(r"(unexpected )?request #(\d+)", error)
        if m and int(m.group(2)) <= len(model.requests):
            body = model.requests[int(m.group(2)) - 1]
            sent = describe_request(body) if isinstance(body, dict) else "?"
            if m.group(1):
                error = f"unexpected request #{m.group(2)} (the script has {len(case.script)} replies)"
            failures.append(f"model: {error}; it was sent {sent}")
        else:
            failures.append(f"model: {error}")
    if model.remaining:
        used = len(case.script) - model.remaining
        failures.append(
            f"script: {model.remaining} of {len(case.script)} replies were never requested "
            f"(the model was asked {len(model.requests)} times; reply {used + 1} was next)"
        )
    return failures


def _transcript(run: Run) -> dict[str, Any]:
    return {
        "turns": [
            {"turn": t.number, "text": t.text, "status": t.status, "answer": t.answer, "error": t.error}
            for t in run.turns
        ],
        "tool_results": [{"tool": r.tool, "status": r.status} for r in run.results],
        "asked": run.asked,
        "requests": len(run.requests),
        "output": run.output,
    }


# ---- the command ---------------------------------------------------------------------------------


def _parse(argv: list[str]) -> Options:
    directory: str | None = None
    opts = Options(directory=Path("."))
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--live":
            opts.live = True
        elif arg == "--json":
            opts.json = True
        elif arg.startswith("-k"):
            value = arg[2:]
            if not value:
                i += 1
                if i >= len(argv):
                    raise UsageError("-k needs a NAME")
                value = argv[i]
            opts.name_filter = value
        elif arg in ("-h", "--help"):
            raise UsageError("")
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option: {arg}")
        elif directory is None:
            directory = arg
        else:
            raise UsageError(f"only one DIR, got {directory!r} and {arg!r}")
        i += 1
    if directory is None:
        raise UsageError("DIR is required")
    opts.directory = Path(directory)
    return opts


def live_model() -> LiveModel:
    """The configured real model (the user's MINO_HOME and environment). Raises UsageError."""
    from ..core.config import load_config
    from ..core.errors import ConfigError

    try:
        config = load_config()
    except ConfigError as exc:
        raise UsageError(f"--live: {exc}", show_usage=False) from None
    if not config.api_key:
        raise UsageError(
            f"--live needs an API key for {config.base_url}: set MINO_API_KEY or {config.api_key_env}",
            show_usage=False,
        )
    return LiveModel(config.model, config.base_url, config.api_key, config.request_timeout_s)


def eval_main(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        opts = _parse(argv)
        if not opts.directory.is_dir():
            raise UsageError(f"{opts.directory} is not a directory")
        files = sorted(p for p in opts.directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        if not files:
            raise UsageError(f"no *.yaml case files in {opts.directory}")
        live = live_model() if opts.live else None
    except UsageError as exc:
        message = f"mino eval: {terminal_text(str(exc))}\n" if str(exc) else ""
        err.write(message + (f"{USAGE}\n" if exc.show_usage else ""))
        return 2
    try:
        return _run_all(opts, files, live, out, err)
    except KeyboardInterrupt:
        err.write("mino eval: interrupted\n")
        return 130


def _run_all(opts: Options, files: list[Path], live: LiveModel | None, out: TextIO, err: TextIO) -> int:
    results: list[CaseResult] = []
    for path in files:
        try:
            case = load_case(path)
        except CaseError as exc:
            if opts.name_filter and opts.name_filter not in path.name:
                continue
            result = CaseResult(path.name, path.name, passed=False, reasons=[str(exc)])
        else:
            if opts.name_filter and opts.name_filter not in case.name:
                continue
            if live is not None and not case.live:
                continue
            result = run_case(case, live)
        results.append(result)
        if not opts.json:
            out.write(terminal_text(" ".join(result.line().split("\n"))) + "\n")
            out.flush()
    if not results:
        what = "live: true cases" if opts.live else "cases"
        which = f" matching -k {opts.name_filter!r}" if opts.name_filter else ""
        err.write(terminal_text(f"mino eval: no {what}{which} in {opts.directory}") + "\n")
        return 2
    passed = sum(r.passed for r in results)
    failed = len(results) - passed
    if opts.json:
        report = {
            "live": opts.live,
            "passed": passed,
            "failed": failed,
            "cases": [
                {
                    "name": r.name,
                    "file": r.file,
                    "passed": r.passed,
                    "reasons": r.reasons,
                    "seconds": r.seconds,
                    "requests": r.requests,
                    "transcript": r.transcript,
                }
                for r in results
            ],
        }
        out.write(_json_for_terminal(report) + "\n")
    else:
        out.write(f"{passed} passed, {failed} failed\n")
    out.flush()
    return 1 if failed else 0


def _json_for_terminal(report: dict[str, Any]) -> str:
    """The report as JSON that is also safe on a terminal: json.dumps escapes the C0 controls; DEL
    becomes a JSON escape here, and terminal_text writes the rest it catches (C1, bidi controls,
    lone surrogates) as `\\uhhhh`, which JSON reads back as the same characters."""
    text = json.dumps(report, ensure_ascii=False, indent=2).replace("\x7f", "\\u007f")
    return terminal_text(text)


__all__ = ["eval_main", "run_case"]
