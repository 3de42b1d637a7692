"""The terminal front end: `mino`.

The turn runs in a worker thread; the main thread owns the terminal: it reads lines, answers
approval questions and turns Ctrl-C into a cancel. With piped stdin nobody can say yes, so
anything that needs a person's yes is refused with a line saying so.

Model text, tool output, file names and error messages come from outside: everything TerminalUI
writes as text passes display.terminal_text, so none of it can move the cursor, recolour or hide
what follows. Mino's own few control sequences go through TerminalUI._control only.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .core.cancel import CancelToken
from .core.contract import (
    APPROVAL_QUESTION,
    ApprovalRequest,
    ApprovalResolved,
    AssistantMessage,
    Event,
    MemoryProblem,
    Notice,
    TextDelta,
    ToolCall,
    ToolResultEvent,
    TurnEnd,
    TurnResult,
    Usage,
)
from .core.display import escape_value, terminal_text
from .core.values import Mutable
from .core.words import NO_SESSION, context_line

if TYPE_CHECKING:
    from .core.context import ResolvedItem
    from .core.conversation import Conversation

RESULT_PREVIEW_LINES = 20
WAITING = "\x1b[2m… waiting for the model\x1b[0m"
ERASE_LINE = "\r\x1b[K"
DIM = "\x1b[2m"
RESET = "\x1b[0m"  # default colours and attributes, before an approval block


@dataclass(eq=False, repr=False)
class _Question(Mutable):
    request: ApprovalRequest
    done: threading.Event = field(default_factory=threading.Event)
    answer: bool = False


class TerminalUI:
    def __init__(self, interactive: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.interactive = interactive
        self.out = out
        self.err = err
        self.questions: queue.Queue[_Question | None] = queue.Queue()  # None: a turn ended
        self._lock = threading.RLock()
        self._in_text = False
        self._header = False
        self._waiting = False
        self._fresh = True  # the last character written ended a line (or nothing was written yet)
        self._held_cr = False  # a text delta ended in CR: a CR LF split across deltas is a line end
        self._usage: tuple[int, int] | None = None  # this turn's latest (input tokens, context window)
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
            self._put(self.err if err else self.out, terminal_text(text))

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
                case ToolCall(tool=tool, fields=fields, warning=warning):
                    self._begin_block()
                    if not self._header:
                        self.line("Assistant>")
                        self._header = True
                    from .core.display import approval_lines

                    for text in approval_lines(tool, [(f.label, f.value) for f in fields], warning):
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
                case Usage(inputTokens=used, contextWindow=window):
                    self._usage = (used, window)
                case TurnEnd():
                    if self._in_text:
                        self.write("\n\n")
                        self._in_text = False
                    if self._waiting:
                        self.write("")
                    if self._usage is not None and self.interactive and self.out.isatty():
                        self._control(DIM)  # a quiet line on a terminal only: scripts see no change
                        self.line(context_line(*self._usage))
                        self._control(RESET)
                    self._usage = None
                case ApprovalResolved():
                    pass  # the terminal asked and got the answer itself

    # ---- questions -----------------------------------------------------------------------
    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        if not self.interactive:
            self.line(f"{APPROVAL_QUESTION} [y/N] no — input is piped, so nobody can approve; denied.")
            return False
        question = _Question(request)
        self.questions.put(question)
        while not question.done.wait(0.05):
            if cancel.cancelled:
                return False
        return question.answer

    def ask_yes_no(self, prompt: str) -> bool:
        """Main thread only."""
        try:
            answer = input(prompt)
        except EOFError:
            self.line()
            return False
        self.typed()
        return answer.strip().lower() in ("y", "yes")

    def confirm(self, kind: str, session_id: str, message: str) -> bool:
        self.line(message)
        if not self.interactive:
            self.line("[y/N] no — input is piped, so nobody can confirm.")
            return False
        return self.ask_yes_no("[y/N] ")

    def ask_text(self, prompt: str) -> str | None:
        if not self.interactive:
            self.line(prompt)
            return None
        try:
            typed = input(prompt)
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


def run_cli(model: str | None, base_url: str | None, mode: str | None) -> int:
    from .core.config import ConfigError, load_config
    from .core.conversation import Conversation, RecoveryRefused
    from .core.sessions.store import StorageError, StoreLocked
    from .core.store import Store
    from .core.words import startup_lines

    interactive = sys.stdin.isatty()
    ui = TerminalUI(interactive)
    try:
        config = load_config(model=model, base_url=base_url, mode=mode)
    except ConfigError as exc:
        ui.error_line(f"mino: {exc}")
        return 2
    agent = Conversation(Store(config), Path.cwd(), ui)
    try:
        try:
            # Piped input: the first line is read and its request sent without waiting for the sandbox
            # probe (started by open(): bwrap runs meanwhile); the sandbox's start-up line and the
            # lines after it are held, and written before anything else is (waiting for the verdict
            # then); a turn waits for the verdict before any tool call. At a terminal the verdict
            # comes before the prompt: the person reads the lines before typing.
            lines = startup_lines(replace(agent.open(sandbox_later=not interactive), sandbox_line=_PENDING))
            at = lines.index(_PENDING)
            for text in lines[:at]:
                ui.line(text)
            rest = lines[at + 1 :]
            ui.hold(lambda: [agent.sandbox_verdict(), *rest])
            if interactive:
                ui.flush_held()
        except StoreLocked as exc:
            ui.error_line(f"mino: {exc}")
            return 1
        except (RecoveryRefused, StorageError) as exc:
            ui.error_line(f"mino: {exc}")
            return 1
        try:
            return _loop(agent, ui)
        finally:
            ui.flush_held()  # when nothing was written after them (empty input), they come now
    finally:
        agent.close()


_PENDING = "\0sandbox line\0"  # where the sandbox's start-up line goes (no real line has a NUL)


def _loop(agent: Conversation, ui: TerminalUI) -> int:
    from .core.commands import is_command, run_command

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
            result = run_command(agent, text, ui.line, ui.ask_text)
            ui.line()
            if result.stop:
                return 1
            continue
        if agent.log is None and not agent.stopped:
            ui.line(NO_SESSION)
            ui.line()
            unanswered = True
            continue
        text = line.rstrip("\n")
        context: list[ResolvedItem] = []
        # `@path` and `@path:A-B` attach files, as in the editor's chat box; without an @ there is no
        # mention, and core/context.py (~1.5 ms to import) stays off the start path.
        if "@" in text:
            from .core.context import ContextError, find_mentions

            try:
                context = agent.resolve_context(find_mentions(text, agent.workdir, agent.config.home))
            except ContextError as exc:
                ui.error_line(f"Not sent: {exc}")
                ui.line()
                unanswered = True
                continue
        for item in context:  # behind the start-up lines if they are still held
            ui.hold(context_line_for(item))
        ui.hold("")
        outcome = _run_turn(agent, ui, text, context)
        unanswered = unanswered or outcome.status != "completed"
        if outcome.status == "interrupted":
            ui.line("Interrupted.")
            ui.line()
        elif outcome.status == "failed" and outcome.error:
            ui.error_line(f"Error: {outcome.error}")
            ui.line()
        if agent.stopped:
            return 1


def _read_line(ui: TerminalUI) -> str | None:
    if ui.interactive:
        try:
            line = input("You> ")
        except EOFError:
            return None
        ui.typed()
        return line
    raw = sys.stdin.readline()
    return raw if raw else None


def context_line_for(item: ResolvedItem) -> str:
    """One line per attached item, before the answer: `[Context: src/app.py (lines 10-20)]`; the
    path escaped as approval values are, so a name with a newline stays on its line."""
    from .core.context import item_label

    return f"[{item_label(replace(item, path=escape_value(item.path)))}]"


def _run_turn(agent: Conversation, ui: TerminalUI, text: str, context: list[ResolvedItem]) -> TurnResult:
    cancel = CancelToken()
    box: dict[str, TurnResult] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            box["outcome"] = agent.run_turn(text, cancel, context)
        finally:
            finished.set()
            ui.questions.put(None)  # wakes the main thread at once (no poll interval at the end of a turn)

    worker = threading.Thread(target=work, name="mino-turn", daemon=True)
    ui.begin_turn()
    worker.start()
    while not finished.is_set():
        try:
            try:
                question = ui.questions.get(timeout=0.05)
            except queue.Empty:
                continue
            if question is None:
                continue  # a turn ended (this one, or a late wake-up of an earlier one): the loop decides
            if cancel.cancelled:
                question.done.set()
                continue
            question.answer = ui.ask_yes_no(f"{APPROVAL_QUESTION} [y/N] ")
            question.done.set()
        except KeyboardInterrupt:
            ui.write("^C\n")
            cancel.cancel()
    worker.join()
    return box["outcome"]
