"""The terminal front end: `mino`.

The turn runs in a worker thread; the main thread owns the terminal: it reads lines, answers
approval questions and turns Ctrl-C into a cancel. With piped stdin nobody can say yes, so
anything that needs a person's yes is refused with a line saying so.

Model text, tool output, file names and error messages come from outside: everything TerminalUI
writes as text passes display.terminal_text, so none of it can move the cursor, recolour or hide
what follows. Mino's own few control sequences go through TerminalUI._control only.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from .core.cancel import CancelToken
from .core.contract import (
    ALLOW_ALWAYS,
    Always,
    ApprovalRequest,
    ApprovalResolved,
    AssistantMessage,
    Confirmation,
    Event,
    MemoryProblem,
    ModeChanged,
    Notice,
    TextDelta,
    Thinking,
    ToolCall,
    ToolResultEvent,
    TurnEnd,
    TurnResult,
    Usage,
)
from .core.display import approval_lines, escape_value, fit_approval, terminal_text
from .core.values import Mutable, mutable
from .core.words import NO_SESSION, always_line, context_line, mode_line, startup_lines, usage_detail

if TYPE_CHECKING:
    from .core.context import ResolvedItem
    from .core.conversation import Conversation
    from .core.images import Image

RESULT_PREVIEW_LINES = 20
WAITING = "\x1b[2m… waiting for the model\x1b[0m"
ERASE_LINE = "\r\x1b[K"
DIM = "\x1b[2m"
RESET = "\x1b[0m"  # default colours and attributes, before an approval block


class Interrupts:
    """Ctrl-C (SIGINT) as the terminal front end takes it.

    The lost Ctrl-C of issue 23 came from the process's inheritance: a program started as a
    background job of a non-interactive shell (`make test &`, a CI or agent runner, nohup) gets
    SIGINT set to "ignore", children inherit it through exec, and Python installs its
    KeyboardInterrupt handler only when SIGINT is at its default: the terminal echoed ^C and nothing
    happened. An inherited blocked mask loses it the same way. So a terminal session installs its
    own handler and unblocks SIGINT whatever it inherited (with stdin a terminal, a person is there
    to press it); piped runs keep an inherited "ignore", the shell's way to shield background jobs.

    The handler counts every press. It raises KeyboardInterrupt only where that is wanted: during
    start-up (the program ends with 130) and inside `read` (to end input()); anywhere else a press is
    only counted, and the code running a turn or a command turns it into a cancel at its next poll,
    so a press can never land outside a `try` and end the program or vanish."""

    def __init__(self) -> None:
        self.count = 0
        self.raising = False
        self.reads = 0  # read() calls so far: a re-delivery belongs to the read it was meant for

    def install(self, interactive: bool) -> None:
        if not interactive and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
            return
        self.raising = True  # start-up: a press ends the program (exit status 130)
        signal.signal(signal.SIGINT, self._on_sigint)
        if interactive:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            read_end, write_end = os.pipe()
            os.set_blocking(write_end, False)  # the C-level handler must never block
            signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
            main = threading.main_thread().ident
            threading.Thread(target=self._redeliver, args=(read_end, main), daemon=True).start()

    def _redeliver(self, fd: int, main: int | None) -> None:
        """CPython's readline loop runs signal handlers only when its select() fails with EINTR: a
        press delivered after the prompt is drawn but before select() blocks would wait for the next
        key. The C-level handler writes each delivery to the wakeup fd; if 0.1 s later the main
        thread is in the same read() and the handler has not run, the press is delivered to it
        again (its byte comes back, so this repeats until the handler runs). At worst, when this
        thread is late, a press shows one `^C` too many at the prompt."""
        while main is not None:
            os.read(fd, 64)
            seen, reads = self.count, self.reads
            time.sleep(0.1)
            if self.count == seen and self.raising and self.reads == reads:
                signal.pthread_kill(main, signal.SIGINT)

    def _on_sigint(self, signum: int, frame: object) -> None:
        self.count += 1
        if self.raising:
            self.raising = False
            raise KeyboardInterrupt

    def read(self, read: Callable[[], str]) -> str:
        """`read()` (input(), a readline) that a press ends with KeyboardInterrupt."""
        before = self.raising
        self.reads += 1
        try:
            self.raising = True
            return read()
        finally:
            self.raising = before


@mutable
class _Question(Mutable):
    """A yes/no the turn's thread needs; the main thread, which owns the terminal, asks it."""

    prompt: str
    done: threading.Event = field(default_factory=threading.Event)
    answer: bool | Always = False
    always: bool = False  # `a` answers too: keep the rule the line above the question offered


class TerminalUI:
    def __init__(self, interactive: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.interactive = interactive
        self.out = out
        self.err = err
        self.questions: queue.Queue[_Question | None] = queue.Queue()  # None: a turn ended
        self.interrupts = Interrupts()
        self._lock = threading.RLock()
        self._in_text = False
        self._header = False
        self._waiting = False
        self._fresh = True  # the last character written ended a line (or nothing was written yet)
        self._held_cr = False  # a text delta ended in CR: a CR LF split across deltas is a line end
        self._before = ""  # the end of the previous text delta, for terminal_text
        # this turn's latest (input tokens, context window, cached tokens, reasoning tokens)
        self._usage: tuple[int, int, int | None, int | None] | None = None
        # Lines that come before anything else is written, not printed yet: a callable gives its lines
        # when they are due (the sandbox's start-up line waits for the probe's verdict).
        self._held: list[str | Callable[[], list[str]]] = []

    # ---- output --------------------------------------------------------------------------
    def hold(self, item: str | Callable[[], list[str]]) -> None:
        """A line (or a callable giving lines) written before anything else, in order; `flush_held`
        or the next write writes it. Without held lines, a line is written at once."""
        with self._lock:
            self._held.append(item)
            if len(self._held) == 1 and isinstance(item, str):
                self.flush_held()

    def flush_held(self) -> None:
        """Write the held lines (a callable among them may wait, e.g. for the sandbox probe)."""
        with self._lock:
            while self._held:
                item = self._held.pop(0)
                for text in [item] if isinstance(item, str) else item():
                    self._put(self.out, terminal_text(text + "\n"))

    def write(self, text: str, *, err: bool = False, delta: bool = False) -> None:
        """Text, sanitised (terminal_text) on its way out: the only way text reaches the terminal."""
        with self._lock:
            self.flush_held()
            self._erase_waiting()
            if self._held_cr and text:
                self._held_cr = False
                if not text.startswith("\n"):
                    self._put(self.out, terminal_text("\r"))  # a lone CR: shown, never obeyed
            if delta and text.endswith("\r"):
                text, self._held_cr = text[:-1], True
            before = self._before if delta else ""
            self._before = (before + text)[-8:] if delta else ""  # a mark run split across deltas
            self._put(self.err if err else self.out, terminal_text(text, before))

    def line(self, text: str = "") -> None:
        self.write(text + "\n")

    def error_line(self, text: str) -> None:
        self.write(text + "\n", err=True)

    def _put(self, stream: TextIO, shown: str) -> None:
        if shown:
            stream.write(shown)
            self._fresh = shown.endswith("\n")
        stream.flush()

    def _control(self, sequence: str) -> None:
        """Mino's own terminal control (never text from outside); only when output is a terminal."""
        if self.out.isatty():
            self.out.write(sequence)
            self.out.flush()

    def _erase_waiting(self) -> None:
        if self._waiting:
            self._control(ERASE_LINE)  # the indicator sat on a fresh line: it is fresh again
            self._waiting = False

    def _begin_block(self) -> None:
        """An approval block starts on a fresh line, in default colours, whatever came before."""
        with self._lock:
            self._erase_waiting()
            self._control(RESET)
            if not self._fresh:
                self.write("\n")
            self._in_text = False

    def typed(self) -> None:
        """A person pressed Enter at a prompt: the terminal is at the start of a line."""
        self._fresh = True

    def show_waiting(self) -> None:
        # A quiet indicator on a terminal only, on a fresh line; erased by the next thing printed.
        if self.interactive and self.out.isatty():
            with self._lock:
                if not self._fresh:
                    return
                self._control(WAITING)
                self._waiting = True

    def begin_turn(self) -> None:
        self._in_text = False
        self._header = False
        self.show_waiting()

    def event(self, event: Event) -> None:
        with self._lock:
            match event:
                case TextDelta(text=text):
                    if not self._in_text:
                        self.write("Assistant> ")
                        self._in_text = self._header = True
                    self.write(text, delta=True)
                case AssistantMessage():
                    if self._in_text:
                        self.write("\n\n")
                    self._in_text = False
                case ToolCall(tool=tool, fields=fields, warning=warning, decision=decision):
                    self._begin_block()
                    if not self._header:
                        self.line("Assistant>")
                        self._header = True
                    for text in self._block(tool, [(f.label, f.value) for f in fields], warning, decision):
                        self.line(text)
                case ToolResultEvent(status=status, text=output):
                    self.line()
                    self.line(f"[Tool result: {status}]")
                    for text in _preview(output):  # sanitised by write(), line by line
                        self.line(text)
                    self.line()
                    self._header = False
                    if self.interactive and self.out.isatty():
                        self.show_waiting()
                case Notice(text=text):
                    if self._in_text:
                        self.write("\n")
                        self._in_text = False
                    self.line(text)
                case Thinking(text=text):
                    if self._in_text:
                        self.write("\n")
                        self._in_text = False
                    self._erase_waiting()
                    self._control(DIM)  # quiet, and apart from the answer; each line sanitised by write()
                    for part in text.splitlines() or [""]:
                        self.line(f"Thinking: {part}")
                    self._control(RESET)
                case Usage(inputTokens=used, contextWindow=window):
                    self._usage = (used, window, event.cachedTokens, event.reasoningTokens)
                case TurnEnd():
                    if self._in_text:
                        self.write("\n\n")
                        self._in_text = False
                    if self._waiting:
                        self.write("")
                    if self._usage is not None and self.interactive and self.out.isatty():
                        self._control(DIM)  # a quiet line on a terminal only: scripts see no change
                        used, window, cached, reasoning = self._usage
                        self.line(context_line(used, window) + usage_detail(cached, reasoning))
                        self._control(RESET)
                    self._usage = None
                case ApprovalResolved():
                    pass  # the terminal asked and got the answer itself
                case ModeChanged(mode=mode):  # an approved plan ended plan mode
                    self.line(mode_line(mode))

    def _block(
        self, tool: str, fields: list[tuple[str, str]], warning: str | None, decision: str
    ) -> list[str]:
        """The approval block; before a question at a terminal, cut to fit its height with the
        question below it, so what decides is on screen when the person answers."""
        size = self._size() if decision == "ask" and self.interactive else None
        if size is None:
            return approval_lines(tool, fields, warning)
        columns, lines = size
        # The question's line, and the `a = always` line a rule offer puts above it.
        return fit_approval(tool, fields, warning, lines - 2, columns)

    def _size(self) -> tuple[int, int] | None:
        try:
            if not self.out.isatty():
                return None
            size = os.get_terminal_size(self.out.fileno())
        except (OSError, ValueError, AttributeError):
            return None
        return (size.columns, size.lines) if size.columns > 0 and size.lines > 1 else None

    # ---- questions -----------------------------------------------------------------------
    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool | Always:
        offer = request.always
        choices = "[y/N/a]" if offer else "[y/N]"
        if offer:  # the rule and project arrive escaped by the core
            self.line(always_line(offer.rules, offer.project))
        if not self.interactive:
            self.line(f"{request.question} {choices} no — input is piped, so nobody can approve; denied.")
            return False
        return self._ask_main(
            terminal_text(f"{request.question} {choices} "), cancel, always=offer is not None
        )

    def _ask_main(self, prompt: str, cancel: CancelToken, always: bool = False) -> bool | Always:
        """From the turn's thread: the main thread asks (_run_turn), a Ctrl-C there cancels."""
        question = _Question(prompt, always=always)
        self.questions.put(question)
        while not question.done.wait(0.05):
            if cancel.cancelled:
                return False
        return question.answer

    def ask_yes_no(self, prompt: str) -> bool:
        """Main thread only."""
        return self.ask_answer(prompt, always=False) is True

    def ask_answer(self, prompt: str, always: bool) -> bool | Always:
        """Main thread only: y or yes approves, a or always (when offered) approves and keeps the
        rule, anything else (Enter alone too) is no."""
        try:
            answer = self.input(prompt)
        except EOFError:
            self.line()
            return False
        self.typed()
        typed = answer.strip().lower()
        if always and typed in ("a", "always"):
            return ALLOW_ALWAYS
        return typed in ("y", "yes")

    def input(self, prompt: str) -> str:
        """input() on the main thread; Ctrl-C ends it with KeyboardInterrupt (Interrupts.read)."""
        return self.interrupts.read(lambda: input(prompt))

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        self._begin_block()  # like an approval: from a fresh line and reset attributes
        # A message that ends with its question is asked on that line ("... [y/N] ").
        message = question.message
        body, _, last = message.rpartition("\n") if question.asks_last else (message, "", "")
        if body:
            self.line(body)  # its project text is escaped by the core and sanitised by write()
        prompt = terminal_text(f"{last} [y/N] " if last else "[y/N] ")
        if not self.interactive:
            self.line(f"{prompt}no — input is piped, so nobody can confirm.")
            return False
        if threading.current_thread() is not threading.main_thread():
            return self._ask_main(prompt, cancel or CancelToken()) is True  # asked during a turn (skills)
        return self.ask_yes_no(prompt)

    def ask_text(self, prompt: str) -> str | None:
        if not self.interactive:
            self.line(prompt)
            return None
        try:
            typed = self.input(prompt)
        except EOFError:
            self.line()
            return ""
        self.typed()
        return typed

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        from .core.memory import format_problems

        with self._lock:
            waiting = self._waiting
            for text in format_problems(directory, [(p.file, p.reason) for p in problems]):
                self.error_line(text)  # file names and reasons come from the memory folder
            if waiting:
                self.show_waiting()


def _preview(text: str) -> list[str]:
    lines = text.splitlines() or [""]
    if len(lines) <= RESULT_PREVIEW_LINES:
        return lines
    return lines[:RESULT_PREVIEW_LINES] + [f"… ({len(lines) - RESULT_PREVIEW_LINES} more lines)"]


def _input_waiting() -> bool:
    """Whether piped input already holds something to read (a line, or its end)."""
    import select

    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):  # not a descriptor select can watch (a closed or odd stdin)
        return True


def run_cli(
    model: str | None, base_url: str | None, mode: str | None, reasoning_effort: str | None = None
) -> int:
    from .core.config import load_config
    from .core.conversation import Conversation
    from .core.errors import ConfigError, RecoveryRefused, StorageError, StoreLocked
    from .core.store import Store

    interactive = sys.stdin.isatty()
    ui = TerminalUI(interactive)
    ui.interrupts.install(interactive)
    try:
        config = load_config(model=model, base_url=base_url, mode=mode, reasoning_effort=reasoning_effort)
    except ConfigError as exc:
        ui.error_line(f"mino: {exc}")
        return 2
    conversation = Conversation(Store(config), Path.cwd(), ui)
    conversation.briefing.asks_person = interactive  # piped: AGENTS.md is sent only when accepted before
    try:
        try:
            # Piped input: the first line is read and its request sent without waiting for the sandbox
            # probe (started by open(): bwrap runs meanwhile); the sandbox's start-up line and the
            # lines after it are held, and written before anything else is (waiting for the verdict
            # then); a turn waits for the verdict before any tool call. At a terminal the verdict
            # comes before the prompt: the person reads the lines before typing.
            # A first line already waiting starts the turn at once: nothing to warm up meanwhile.
            warm_up = interactive or not _input_waiting()
            opened = conversation.open(sandbox_later=not interactive, warm_up=warm_up)
            lines = startup_lines(replace(opened, sandbox_line=_PENDING))
            at = lines.index(_PENDING)
            for text in lines[:at]:
                ui.line(text)
            rest = lines[at + 1 :]
            ui.hold(lambda: [conversation.sandbox_verdict(), *rest])
            if interactive:
                ui.flush_held()
        except StoreLocked as exc:
            ui.error_line(f"mino: {exc}")
            return 1
        except (RecoveryRefused, StorageError) as exc:
            ui.error_line(f"mino: {exc}")
            return 1
        ui.interrupts.raising = False  # from here a press is a turn's or a prompt's (or is ignored)
        try:
            return _loop(conversation, ui)
        finally:
            ui.flush_held()  # when nothing was written after them (empty input), they come now
    finally:
        ui.interrupts.raising = False  # a press while closing cannot cut the close short
        conversation.close()


_PENDING = "\0sandbox line\0"  # where the sandbox's start-up line goes (no real line has a NUL)


def _loop(conversation: Conversation, ui: TerminalUI) -> int:
    from .core.commands import COMMANDS, command_name, is_command, run_command

    if ui.interactive:
        try:
            import readline  # noqa: F401  (line editing and history at the prompt)
        except ImportError:
            pass
    # Piped runs end non-zero when a line went unanswered in full, so scripts can rely on the status.
    unanswered = False
    while True:
        try:
            line = _read_line(ui)
        except KeyboardInterrupt:
            ui.line("^C")
            continue
        if line is None:
            if ui.interactive:
                ui.line()
            return 1 if unanswered and not ui.interactive else 0
        text = line.strip()
        if not text:
            continue
        if is_command(text):
            row = COMMANDS.get(command_name(text))
            if row is not None and row.waits_on_model:  # like a turn: on a worker, so Ctrl-C cancels it
                result = _in_worker(ui, partial(run_command, conversation, text, ui.line, ui.ask_text))
            else:
                result = run_command(conversation, text, ui.line, ui.ask_text)
            ui.line()
            if result.stop:
                return 1
            continue
        if conversation.log is None and not conversation.stopped:
            ui.line(NO_SESSION)
            ui.line()
            unanswered = True
            continue
        text = line.rstrip("\n")
        context: list[ResolvedItem] = []
        images: list[Image] = []
        # `@path` and `@path:A-B` attach files (`@shot.png`, a file whose bytes are an image, as an
        # image), as in the editor's chat box; without an @ there is no mention, and core/context.py
        # (~1.5 ms to import) stays off the start path.
        if "@" in text:
            from .core.attachments import attach
            from .core.context import find_mentions
            from .core.errors import ContextError

            try:
                workdir, home = conversation.workdir, conversation.config.home
                context, images = attach(workdir, home, find_mentions(text, workdir, home))
            except ContextError as exc:
                ui.error_line(f"Not sent: {exc}")
                ui.line()
                unanswered = True
                continue
        for item in context:  # behind the start-up lines if they are still held
            ui.hold(context_line_for(item))
        for image in images:
            ui.hold(image_line_for(image))
        ui.hold("")
        outcome = _run_turn(conversation, ui, text, context, images)
        unanswered = unanswered or outcome.status != "completed"
        if outcome.status == "interrupted":
            ui.line("Interrupted.")
            ui.line()
        elif outcome.status == "failed" and outcome.error:
            ui.error_line(f"Error: {outcome.error}")
            ui.line()
        if conversation.stopped:
            return 1


def _read_line(ui: TerminalUI) -> str | None:
    if ui.interactive:
        try:
            line = ui.input("You> ")
        except EOFError:
            return None
        ui.typed()
        return line
    raw = ui.interrupts.read(sys.stdin.readline)
    return raw if raw else None


def context_line_for(item: ResolvedItem) -> str:
    """One line per attached item, before the answer: `[Context: src/app.py (lines 10-20)]`; the
    path escaped as approval values are, so a name with a newline stays on its line."""
    from .core.context import item_label

    return f"[{item_label(replace(item, path=escape_value(item.path)))}]"


def image_line_for(image: Image) -> str:
    """One line per attached image: `[image: shot.png, PNG 640×480, 12 KB]`, the name escaped."""
    from .core.images import placeholder

    return placeholder({**image.record(), "name": escape_value(image.name)})


def _run_turn(
    conversation: Conversation,
    ui: TerminalUI,
    text: str,
    context: list[ResolvedItem],
    images: list[Image] | None = None,
) -> TurnResult:
    return _in_worker(ui, lambda cancel: conversation.run_turn(text, cancel, context, images or ()))


R = TypeVar("R")


def _in_worker(ui: TerminalUI, job: Callable[[CancelToken], R]) -> R:
    """Run `job` on a worker thread while the main thread answers its approval questions and turns
    every Ctrl-C into a cancel: a press between polls is counted by Interrupts, never lost."""
    cancel = CancelToken()
    box: dict[str, R] = {}
    finished = threading.Event()
    interrupts = ui.interrupts
    seen = interrupts.count

    def work() -> None:
        try:
            box["outcome"] = job(cancel)
        finally:
            finished.set()
            ui.questions.put(None)  # wakes the main thread at once (no poll interval at the end of a turn)

    def interrupted() -> None:
        ui.write("^C\n")
        cancel.cancel()

    worker = threading.Thread(target=work, name="mino-turn", daemon=True)
    ui.begin_turn()
    worker.start()
    while not finished.is_set():
        if interrupts.count != seen:
            seen = interrupts.count
            interrupted()
        try:
            question = ui.questions.get(timeout=0.05)
        except queue.Empty:
            continue
        if question is None:
            continue  # a turn ended (this one, or a late wake-up of an earlier one): the loop decides
        if cancel.cancelled:
            question.done.set()
            continue
        try:
            question.answer = ui.ask_answer(question.prompt, question.always)
        except KeyboardInterrupt:
            seen = interrupts.count
            interrupted()
        question.done.set()
    worker.join()
    return box["outcome"]


# ---- mino doctor ---------------------------------------------------------------------------------
DOCTOR_LABELS = {
    "config": "Config file",
    "key": "API key",
    "endpoint": "Model endpoint",
    "wire": "Model API",
    "sandbox": "Sandbox",
    "network": "Sandbox network",
    "home": "Mino home",
    "vscode": "VS Code extension",
    "mcp": "MCP servers",
}
DOCTOR_USAGE = "usage: mino doctor [--json] [--model MODEL] [--base-url URL]\n"


def doctor_main(argv: list[str]) -> int:
    """`mino doctor`: one line per check (✓ / ✗ / – for nothing to check) with its fix; exit 0 only
    when everything a turn needs is there (docs/BEHAVIOUR.md, "mino doctor")."""
    import json

    from . import PROTOCOL_VERSION
    from .core.doctor import run_doctor

    as_json = False
    flags: dict[str, str] = {}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if arg in ("-h", "--help"):
            sys.stdout.write(DOCTOR_USAGE)
            return 0
        if arg == "--json":
            as_json = True
        elif name in ("--model", "--base-url") and (eq or args):
            flags[name] = value if eq else args.pop(0)
        else:
            sys.stderr.write(f"mino doctor: {terminal_text(f'unknown argument: {arg}')}\n{DOCTOR_USAGE}")
            return 2
    report = run_doctor(PROTOCOL_VERSION, model=flags.get("--model"), base_url=flags.get("--base-url"))
    if as_json:
        checks = [
            {"name": c.name, "ok": c.ok, "needed": c.needed, "found": c.found, "fix": c.fix}
            for c in report.checks
        ]
        sys.stdout.write(json.dumps({"ready": report.ready, "checks": checks}, indent=2) + "\n")
    else:
        for check in report.checks:
            mark = "–" if check.ok is None else "✓" if check.ok else "✗"
            text = f"{mark} {DOCTOR_LABELS[check.name]}: {check.found}"
            if check.ok is False:
                text += f" — fix: {check.fix}" if check.fix else ""
                text += "" if check.needed else " (a turn runs without it)"
            sys.stdout.write(terminal_text(text) + "\n")  # paths, server messages: outside text
        sys.stdout.write(
            "Ready: a turn can run.\n" if report.ready else "Not ready: fix the ✗ lines above.\n"
        )
    sys.stdout.flush()
    return 0 if report.ready else 1
