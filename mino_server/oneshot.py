"""The one-shot front end: `mino -p PROMPT`, one turn for scripts, CI and hooks, then exit.

stdout carries only the result (the answer's text, one JSON object, or JSON lines); start-up lines,
notices, tool lines and errors go to stderr, sanitised like the terminal's. Nobody can answer a
question here: approvals are denied unless the mode allows the call, a recovery is not confirmed,
and AGENTS.md is sent only when accepted before. The session is new (or `--resume ID`) and the
selection, `active-session.json`, is never changed, so a script never moves a person's terminal to
another session.

Output is written with blocking writes on fd 1 (waiting when a parent left the pipe non-blocking),
so everything is written before the process exits however slowly it is read; a reader that goes
away (EPIPE) interrupts the turn and ends the run with status 1 and one line on stderr.

Exit status: 0 completed; 1 failed, cut short, limit or interrupted (and a run that could not
start); 2 bad usage (main.py, and an empty prompt or a malformed session ID here).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.cancel import CancelToken
from .core.contract import (
    ApprovalRequest,
    Confirmation,
    Event,
    MemoryProblem,
    Notice,
    ToolCall,
    ToolResultEvent,
    Usage,
)
from .core.display import terminal_text

if TYPE_CHECKING:
    from .core.contract import TurnResult

EMPTY_PROMPT = (
    'the prompt is empty (only white space); give the text to send, e.g. mino -p "Explain this error"'
)
CANCEL_GRACE_S = 10.0
TURN_DID_NOT_END = (
    f"the turn did not end within {CANCEL_GRACE_S:.0f} s of the interrupt; Mino stopped waiting"
)
STDOUT_CLOSED = "mino: stdout was closed before the result was written; the turn was interrupted."


class Output:
    """fd 1, written in full with blocking writes; `broken` once the reader has gone (EPIPE)."""

    def __init__(self, fd: int = 1) -> None:
        self.fd = fd
        self.broken = False
        self.on_broken: list[CancelToken] = []

    def write(self, data: bytes) -> None:
        import select

        view = memoryview(data)
        while view and not self.broken:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:  # a parent made the pipe non-blocking: wait until it drains
                select.select([], [self.fd], [])
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.EINVAL, errno.EBADF):
                    raise
                self.broken = True
                for token in self.on_broken:
                    token.cancel()  # nobody reads the result: stop spending tokens and tools on it

    def text(self, text: str) -> None:
        # A lone surrogate (a model's "\\ud800") cannot be UTF-8: it becomes "?" rather than an error.
        self.write(text.encode("utf-8", "replace"))

    def isatty(self) -> bool:
        try:
            return os.isatty(self.fd)
        except OSError:
            return False


def err(text: str) -> None:
    """A line on stderr, sanitised (model text, file names and errors come from outside)."""
    try:
        sys.stderr.write(terminal_text(text) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr gone too: the status still says how it ended


class PrintUI:
    """core/ui.py's UI for one unattended turn."""

    def __init__(self, output_format: str, out: Output) -> None:
        self.format = output_format
        self.out = out
        self.tool_calls: list[dict[str, str]] = []
        self.usage: dict[str, int] | None = None
        self._lock = threading.Lock()

    def emit(self, payload: dict[str, Any]) -> None:
        """One JSON line on stdout (stream-json), as the editor server's mino/event payloads."""
        line = json.dumps(payload, ensure_ascii=False) + "\n"
        with self._lock:
            self.out.text(line)

    def event(self, event: Event) -> None:
        match event:
            case ToolCall(tool=tool):
                err(f"[Tool: {tool}]")
            case ToolResultEvent(tool=tool, status=status):
                self.tool_calls.append({"tool": tool, "status": status})
                err(f"[Tool result: {status}]")
            case Notice(text=text):
                err(text)
            case Usage():
                self.usage = {
                    "inputTokens": event.inputTokens,
                    "outputTokens": event.outputTokens,
                    "contextWindow": event.contextWindow,
                }
                if event.cachedTokens is not None:
                    self.usage["cachedTokens"] = event.cachedTokens
                if event.reasoningTokens is not None:
                    self.usage["reasoningTokens"] = event.reasoningTokens
        if self.format == "stream-json":
            from .core.contract import dump  # as the editor server writes them: the same payloads

            self.emit(dump(event))

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        err(f"{request.question} [y/N] no — `mino -p` cannot ask; denied (--mode decides what runs unasked).")
        return False

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        err(question.message)
        err("[y/N] no — `mino -p` cannot ask.")
        return False

    def ask_text(self, prompt: str) -> str | None:
        return None

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        from .core.memory import format_problems

        for text in format_problems(directory, [(p.file, p.reason) for p in problems]):
            err(text)


def read_prompt(arg: str) -> str | None:
    """The prompt (from stdin for "-"), or None when it is only white space."""
    if arg == "-":
        data = sys.stdin.buffer.read()
        arg = data.decode("utf-8", "surrogateescape")  # the core turns what is not UTF-8 into U+FFFD
    return arg if arg.strip() else None


def run_print(
    prompt_arg: str,
    *,
    resume: str | None,
    output_format: str,
    model: str | None,
    base_url: str | None,
    mode: str | None,
    reasoning_effort: str | None = None,
) -> int:
    from .core.config import load_config
    from .core.errors import ConfigError

    try:
        prompt = read_prompt(prompt_arg)
    except OSError as exc:
        err(f"mino: cannot read the prompt from stdin: {exc.strerror or exc}")
        return 2
    if prompt is None:
        err(f"mino: {EMPTY_PROMPT}")
        return 2
    if resume is not None:
        from .core.sessions.store import ID_RE

        if not ID_RE.fullmatch(resume):
            err(
                f"mino: not a complete session ID: {resume!r}. Session IDs are 32 lowercase hexadecimal "
                "characters (the sessionId of an earlier run's json output)."
            )
            return 2
    try:
        config = load_config(model=model, base_url=base_url, mode=mode, reasoning_effort=reasoning_effort)
    except ConfigError as exc:
        err(f"mino: {exc}")
        return 2
    out = Output()
    ui = PrintUI(output_format, out)
    return _run(config, ui, out, prompt, resume)


def _run(config: Any, ui: PrintUI, out: Output, prompt: str, resume: str | None) -> int:
    from .core import opening
    from .core.conversation import Conversation
    from .core.errors import CommandError, StorageError, StoreLocked
    from .core.store import Store
    from .core.words import oneshot_mode_line, session_line

    conversation = Conversation(Store(config), Path.cwd(), ui)
    conversation.briefing.asks_person = False  # AGENTS.md: only what was accepted before, with a notice
    try:
        try:
            # As the piped CLI: the request does not wait for the sandbox probe (a tool call does).
            startup = conversation.open(select=False, sandbox_later=True, warm_up=False)
            if resume is not None:
                if (
                    not conversation.sessions.exists(resume)
                    and opening.open_elsewhere(conversation, resume) is None
                ):
                    err(f"mino: no session with ID {resume}.")
                    return 2
                notices = opening.resume(conversation, resume, select=False)
            else:
                opening.new_session(conversation, select=False)
                notices = []
        except (StoreLocked, StorageError, CommandError) as exc:
            return _not_started(ui, out, str(exc))
        for text in [
            *notices,
            session_line(conversation.session_id or ""),
            oneshot_mode_line(conversation.mode),
        ]:
            err(text)
        later = [*startup.warnings, *([startup.setup.message] if startup.setup is not None else [])]
        if conversation.mcp is not None:  # one turn, no later one: it waits for the servers' start
            longest = max(s.spec.start_timeout_s for s in conversation.mcp.servers)
            conversation.mcp.wait_started(longest + 10)
        result = _turn(conversation, ui, out, prompt, later)
        return _finish(ui, out, conversation.session_id, result)
    finally:
        conversation.close()


def _turn(conversation: Any, ui: PrintUI, out: Output, prompt: str, later: list[str]) -> TurnResult:
    """The turn in a worker thread; Ctrl-C, SIGTERM and a closed stdout cancel it, and the turn
    still ends with its records written (status interrupted). Meanwhile the main thread waits for
    the sandbox's verdict and writes its start-up line and `later` to stderr."""
    cancel = CancelToken()
    out.on_broken.append(cancel)
    box: dict[str, TurnResult] = {}
    done = threading.Event()  # set by the turn's thread when it has returned: its records are written

    def work() -> None:
        try:
            box["result"] = conversation.run_turn(prompt, cancel)
        except Exception as exc:  # a defect: said in one line and in the status, never a traceback
            from .core.contract import TurnResult
            from .core.words import too_many_files

            error = too_many_files(exc) or f"internal error ({type(exc).__name__}: {exc})"
            box["result"] = TurnResult(turnId="", status="failed", text="", error=error)
        finally:
            done.set()

    # The handlers only raise a flag the wait below reads: no lock is taken inside a handler (a
    # second signal landing while the first held the token's lock would deadlock), and no
    # KeyboardInterrupt lands inside Thread.join, which on CPython can leave the thread marked
    # finished while it still runs, so the process would leave before the turn is recorded.
    signalled: list[bool] = []

    def on_signal(*_: object) -> None:
        signalled.append(True)

    previous = signal.signal(signal.SIGTERM, on_signal)
    worker = threading.Thread(target=work, name="mino-turn", daemon=True)
    worker.start()
    deadline: float | None = None
    previous_int: Any = None
    try:
        try:
            for text in [conversation.sandbox_verdict(), *later]:
                if text:
                    err(text)
        except KeyboardInterrupt:
            cancel.cancel()
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when SIGINT is ignored
            previous_int = signal.signal(signal.SIGINT, on_signal)
        while True:
            try:
                if done.wait(0.1):
                    break
            except KeyboardInterrupt:  # only before the handler above was installed
                signalled.append(True)
            if signalled and not cancel.cancelled:
                cancel.cancel()
            if cancel.cancelled and deadline is None:
                deadline = time.monotonic() + CANCEL_GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                break  # a turn that does not end: the status still says so, the log's recovery copes
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
    if "result" not in box:
        from .core.contract import TurnResult

        return TurnResult(turnId="", status="interrupted", text="", error=TURN_DID_NOT_END)
    return box["result"]


def _result(session_id: str | None, status: str, text: str, ui: PrintUI, error: str | None) -> dict[str, Any]:
    return {
        "sessionId": session_id,
        "status": status,
        "text": text,
        "usage": ui.usage,
        "toolCalls": ui.tool_calls,
        "error": error,
    }


def _finish(ui: PrintUI, out: Output, session_id: str | None, result: TurnResult) -> int:
    if result.error:
        err(f"Error: {result.error}")
    elif result.status == "interrupted":
        err("Interrupted.")
    fields = _result(session_id, result.status, result.text, ui, result.error)
    if ui.format == "json":
        out.text(json.dumps(fields, ensure_ascii=False) + "\n")
    elif ui.format == "stream-json":
        ui.emit({"type": "result", **fields})
    elif result.text:
        text = result.text if result.text.endswith("\n") else result.text + "\n"
        # A pipe gets the answer exactly; a terminal gets it sanitised, as every terminal does.
        out.text(terminal_text(text) if out.isatty() else text)
    if out.broken:
        err(STDOUT_CLOSED)
        return 1
    return 0 if result.status == "completed" else 1


def _not_started(ui: PrintUI, out: Output, error: str) -> int:
    """The run could not start (store locked, session open elsewhere, storage): status 1, the reason
    on stderr, and for json formats the result object a script parses anyway."""
    err(f"mino: {error}")
    fields = _result(None, "failed", "", ui, error)
    if ui.format == "json":
        out.text(json.dumps(fields, ensure_ascii=False) + "\n")
    elif ui.format == "stream-json":
        ui.emit({"type": "result", **fields})
    return 1
