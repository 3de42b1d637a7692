"""Finding 3: escape sequences from outside must never reach the terminal.

A model reply with `ESC[30;40m ESC[8m` and a fake `[Tool: …]` block made the real `[Tool: bash]` and
`Approve this operation?` black on black. Every string from outside (model text and deltas, tool
output, file names, problem lines, errors, notices) now passes display.terminal_text on its way out
of TerminalUI, and an approval block starts on a fresh line from reset attributes.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pexpect
from cli_driver import piped, spawn

from mino_server.cli import RESET, WAITING, TerminalUI
from mino_server.core.cancel import CancelToken
from mino_server.core.contract import (
    ApprovalField,
    ApprovalRequest,
    AssistantMessage,
    Confirmation,
    MemoryProblem,
    Notice,
    TextDelta,
    ToolCall,
    ToolResultEvent,
)
from mino_server.testing.scripted_model import ScriptedModel

FAKE_BLOCK = (
    '[Tool: bash]\nCommand: "npm run lint"\nApprove this operation? [y/N] y\n\n[Tool result: completed]\n'
)
HOSTILE = (
    "Looks good.\x1b[30;40m\x1b[8m\n"
    + FAKE_BLOCK
    + "Over\rwritten\x1b[2K\x9b31m\u202egnp.exe\x7f\x08\x07 end"
)
# Mino's own control sequences (the waiting marker, its erasure, the reset before a block) and what
# readline may write around a prompt. Nothing else with ESC may appear on the terminal.
OWN = re.compile(r"\x1b\[[02]m|\r\x1b\[K|\x1b\[\?\d+[hl]|\x1b[=>]")
DRIVES_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def bash_call(command: str) -> dict:
    return {"calls": [{"name": "bash", "arguments": {"command": command}}]}


def leftovers(transcript: str) -> list[str]:
    """What could drive the terminal, once Mino's own sequences and the pty's CR LF are set aside."""
    return DRIVES_TERMINAL.findall(OWN.sub("", transcript).replace("\r\n", "\n"))


def test_a_hostile_reply_cannot_hide_the_approval_block(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        {"text": HOSTILE, **bash_call("printf '\\033[8mhidden\\r\\033[2Kshown\\n\\233 7m'")},
        {"text": "Next\x1b]0;title\x07 reply \x1b[?1049h."},
    )
    child = spawn(dict(mino_env, TERM="xterm-256color"), workdir, "--mode", "manual")
    child.logfile_read = transcript = io.StringIO()
    child.expect_exact("You> ")
    child.sendline("check it")
    child.expect_exact("Command: \"printf '\\\\033[8mhidden")  # the real block
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("y")
    child.expect_exact("[Tool result: completed]")
    child.expect_exact("You> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    out = transcript.getvalue()
    assert leftovers(out) == []
    for raw in ("\x1b[30;40m", "\x1b[8m", "\x1b[2K", "\x9b", "\x1b]0;", "\x1b[?1049h"):
        assert raw not in out
    # Shown, not silently dropped: a person can see that the reply tried something.
    assert "\\x1b[30;40m\\x1b[8m" in out and "Over\\rwritten" in out and "\\u009b31m" in out
    assert "\\u202egnp.exe\\x7f\\x08\\x07 end" in out and "\\x1b]0;title\\x07" in out
    assert "\\x1b[8mhidden" in out  # the command's own output, in the result preview
    # The real block starts on a fresh line, from reset attributes.
    real = out.index('[Tool: bash]\r\nCommand: "printf')
    assert out[:real].endswith("\r\n" + RESET)
    assert out.count(RESET + "[Tool: bash]") == 1  # the fake block got no reset: it is only text


def test_piped_output_has_no_control_sequence_at_all(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    model.add(
        {"text": HOSTILE, **bash_call("printf '\\033[8mhidden\\r\\033[2Kshown'")},
        {"status": 401, "error": "bad key\x1b[8m\x1b]52;c;cm0gLXJmIH4=\x07 hidden"},
    )
    proc = piped(mino_env, workdir, "check it\n", "--mode", "bypass")
    assert "\x1b" not in proc.stdout + proc.stderr
    assert DRIVES_TERMINAL.findall(proc.stdout + proc.stderr) == []
    assert "Over\\rwritten" in proc.stdout
    assert "\n\\x1b[8mhidden\n\\x1b[2Kshown\n" in proc.stdout  # the preview breaks lines at CR
    # The error line quotes the service's message: shown escaped, on stderr.
    assert "bad key\\x1b[8m\\x1b]52;c;cm0gLXJmIH4=\\x07 hidden" in proc.stderr


def test_problem_lines_are_sanitised(model: ScriptedModel, mino_env: dict[str, str], tmp_path: Path) -> None:
    # A project folder is named by whoever made the archive; the skills notice quotes its path.
    project = tmp_path / "proj\x1b[8m\x1b]0;x\x07"
    (project / ".mino" / "skills" / "broken").mkdir(parents=True)
    (project / ".mino" / "skills" / "broken" / "SKILL.md").write_text("no front matter\n")
    memory = Path(mino_env["MINO_HOME"]) / "memory"
    memory.mkdir(parents=True)
    (memory / "bad\x1b[8m.md").write_text("no front matter\x1b[8m\n")
    model.add({"text": "ok"})
    proc = piped(mino_env, project, "hi\n")
    assert "Some skills in" in proc.stdout and "Some memories in" in proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    assert "proj\\x1b[8m\\x1b]0;x\\x07" in proc.stdout and "bad\\x1b[8m.md" in proc.stderr


# ---- TerminalUI on its own: streaming, fresh lines, every event kind ---------------------------
class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def terminal() -> tuple[TerminalUI, Tty, Tty]:
    out, err = Tty(), Tty()
    return TerminalUI(interactive=True, out=out, err=err), out, err


def delta(ui: TerminalUI, text: str) -> None:
    ui.event(TextDelta(turnId="t", text=text))


def tool_call(ui: TerminalUI, warning: str | None = None) -> None:
    ui.event(
        ToolCall(
            turnId="t",
            callId="c",
            tool="bash",
            fields=[ApprovalField(label="Command", value="ls")],
            warning=warning,
            decision="ask",
        )
    )


def test_an_escape_split_across_deltas_is_still_neutralised() -> None:
    ui, out, _ = terminal()
    for piece in ["Hi \x1b", "[30;40m\x1b", "[8", "m \x9b", "8m\x1b]0;x\x07 done"]:
        delta(ui, piece)
    assert out.getvalue() == "Assistant> Hi \\x1b[30;40m\\x1b[8m \\u009b8m\\x1b]0;x\\x07 done"


def test_cr_lf_split_across_deltas_is_a_line_end_and_a_lone_cr_is_shown() -> None:
    ui, out, _ = terminal()
    for piece in ["one\r", "\ntwo\r", "three\r", "\r", "\n", "four\r\n", "five\r"]:
        delta(ui, piece)
    ui.event(AssistantMessage(turnId="t", text="…"))
    assert out.getvalue() == "Assistant> one\ntwo\\rthree\\r\nfour\nfive\n\n"


def test_the_block_starts_on_a_fresh_line_from_reset_attributes() -> None:
    ui, out, _ = terminal()
    delta(ui, "text without an end\x1b[8m")
    tool_call(ui, "A warning\x1b[8m")
    assert out.getvalue() == (
        "Assistant> text without an end\\x1b[8m"
        + RESET
        + '\n[Tool: bash]\nCommand: "ls"\nA warning\\x1b[8m\n'
    )
    # At the start of a line already: the reset, and no empty line.
    ui2, out2, _ = terminal()
    ui2.begin_turn()
    tool_call(ui2)
    assert out2.getvalue() == WAITING + "\r\x1b[K" + RESET + 'Assistant>\n[Tool: bash]\nCommand: "ls"\n'


def test_every_event_kind_and_line_is_sanitised() -> None:
    ui, out, err = terminal()
    ui.event(Notice(turnId="t", text="Skills\x1b[8m in /w/\x1b[2K were not loaded"))
    ui.event(
        ToolResultEvent(turnId="t", callId="c", tool="bash", status="completed", text="a\x1b[8m\nb\rc\x9b")
    )
    ui.memory_problems("/home/\x1b[8m", [MemoryProblem(file="x\x1b[8m.md", reason="why\x1b[2K")])
    ui.error_line("Error: \x1b[8m")
    ui.interactive = False  # nobody answers: the questions are printed and refused
    ui.confirm(Confirmation(kind="recovery", session_id="s", message="Session\x1b[8m message"))
    ui.approve(
        ApprovalRequest(turnId="t", callId="c", tool="bash", fields=[], warning=None, workdir="/w"),
        CancelToken(),
    )
    assert leftovers(out.getvalue() + err.getvalue()) == []  # Mino's waiting marker aside
    assert "Skills\\x1b[8m in /w/\\x1b[2K" in out.getvalue() and "a\\x1b[8m" in out.getvalue()
    assert "/home/\\x1b[8m" in err.getvalue() and "Error: \\x1b[8m" in err.getvalue()


def test_usage_errors_quote_the_argument_sanitised(mino_env: dict[str, str], workdir: Path) -> None:
    proc = piped(mino_env, workdir, "", "--bogus\x1b[8m")
    assert proc.returncode == 2 and "unknown argument: --bogus\\x1b[8m" in proc.stderr
    assert "\x1b" not in proc.stderr


# ---- issue 22, finding 6: invisible text ------------------------------------------------------
# What a terminal shows as nothing (or as a blank, or stacked over the lines above); each must reach
# the screen as its escape, from every path: model text, tool output, file names, errors.
INVISIBLE = {
    "\u200b": "\\u200b",  # zero-width space
    "\u200c": "\\u200c",  # zero-width non-joiner
    "\u200d": "\\u200d",  # zero-width joiner (not after an emoji)
    "\u200e": "\\u200e",  # LRM
    "\u200f": "\\u200f",  # RLM
    "\u061c": "\\u061c",  # ALM
    "\u2060": "\\u2060",  # word joiner
    "\ufeff": "\\ufeff",  # BOM
    "\u00ad": "\\u00ad",  # soft hyphen
    "\u2028": "\\u2028",  # line separator
    "\u2029": "\\u2029",  # paragraph separator
    "\U000e0041": "\\U000e0041",  # tag LATIN CAPITAL A ("ASCII smuggling")
    "\U000e007f": "\\U000e007f",  # cancel tag
    "\u115f": "\\u115f",  # Hangul choseong filler
    "\u1160": "\\u1160",  # Hangul jungseong filler
    "\u3164": "\\u3164",  # Hangul filler
    "\uffa0": "\\uffa0",  # halfwidth Hangul filler
    "\u2800": "\\u2800",  # braille blank
    "\ue000": "\\ue000",  # private use
    "\U000e01ef": "\\U000e01ef",  # variation selector 256 ("emoji smuggling")
    "\u0378": "\\u0378",  # unassigned
}
SMUGGLED = "ok" + "".join(INVISIBLE) + "e" + "\u0301" * 300 + " done"
SMUGGLED_SHOWN = "ok" + "".join(INVISIBLE.values()) + "e" + "\u0301" * 4 + "\\u0301" * 296 + " done"


def test_terminal_text_shows_every_invisible_character_as_its_escape() -> None:
    from mino_server.core.display import terminal_text

    assert terminal_text(SMUGGLED) == SMUGGLED_SHOWN
    for ch, shown in INVISIBLE.items():
        assert terminal_text(f"a{ch}b") == f"a{shown}b"
    # Emoji keep their joiners and presentation selectors; a second selector does not pass.
    assert terminal_text("❤️ 👨\u200d👩\u200d👧 👍🏽") == "❤️ 👨\u200d👩\u200d👧 👍🏽"
    assert terminal_text("x\ufe0f\ufe0f") == "x\ufe0f\\ufe0f"
    assert terminal_text("Việt Nam, café, 中文, Привет") == "Việt Nam, café, 中文, Привет"


def test_a_stack_of_marks_split_across_deltas_is_one_stack() -> None:
    ui, out, _ = terminal()
    delta(ui, "e")
    for _ in range(10):
        delta(ui, "\u0301")
    assert out.getvalue() == "Assistant> e" + "\u0301" * 4 + "\\u0301" * 6


def test_invisible_text_is_shown_from_every_path(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path
) -> None:
    # Model text, a streamed reply, a tool's output, a memory file's name and a service error.
    memory = Path(mino_env["MINO_HOME"]) / "memory"
    memory.mkdir(parents=True)
    (memory / "bad\u200b\U000e0041.md").write_text("no front matter\n")
    model.add(
        {"text": SMUGGLED, **bash_call("printf 'out\\342\\200\\213put\\n'")},
        {"status": 401, "error": "bad key\u200e\ufeff hidden"},
    )
    proc = piped(mino_env, workdir, "check it\n", "--mode", "bypass")
    out = proc.stdout + proc.stderr
    assert SMUGGLED_SHOWN in proc.stdout
    assert "out\\u200bput" in proc.stdout
    assert "bad\\u200b\\U000e0041.md" in proc.stderr
    assert "bad key\\u200e\\ufeff hidden" in proc.stderr
    for ch in INVISIBLE:
        assert ch not in out, repr(ch)
    assert "\u0301" * 5 not in out
