"""The sentences a person sees about sessions, modes and start-up, defined once for every front end.

The core returns data (contract.py); front ends word it with these, so the
terminal, the editor and ACP clients say the same thing. Exact strings: docs/BEHAVIOUR.md."""

from __future__ import annotations

import errno
import os

from .contract import Mode, OpenElsewhere, Startup

CANNOT_RESTORE = "Cannot restore the active session: "
RESTORE_HINT = (
    "Use /sessions to list the sessions, then /resume <id> to choose one, or /new to start a new one."
)
NO_SESSION = "No session is selected. Use /sessions, then /resume <id>, or /new."
TURN_RUNNING = "A turn is running; wait for it to end or interrupt it first."
# After an answer kept in history that the person interrupted (ACP replay, the terminal's /resume).
INTERRUPTED_MARK = "[interrupted]"
# What a request is told while an operation that must run alone runs (commands.COMMANDS, the server's routes).
COMPACT_RUNNING = "A compaction is running; wait for it to end or cancel it first."
SESSION_CHANGING = "A session change is in progress; wait for it to finish."
REWIND_RUNNING = "A rewind is running; wait for it to finish."


def mode_line(mode: Mode) -> str:
    return f"Permission mode: {mode}. Use /mode to change it."


def oneshot_mode_line(mode: Mode) -> str:
    """`mino -p`'s start-up line for the mode (nobody can answer a question there)."""
    return (
        f"Permission mode: {mode}. Calls that would ask are denied (mino -p cannot ask); --mode changes it."
    )


def session_line(session_id: str) -> str:
    return f"Session: {session_id}"


def context_line(input_tokens: int, context_window: int) -> str:
    """How full the context was at the latest request, e.g. "Context: 41% full (52,480 of 128,000 tokens)"."""
    percent = round(100 * input_tokens / context_window) if context_window > 0 else 0
    return f"Context: {percent}% full ({input_tokens:,} of {context_window:,} tokens)"


def usage_detail(cached: int | None, reasoning: int | None) -> str:
    """What follows the context line when the service reported it, e.g. "; 40,960 cached, 512 reasoning"."""
    parts = [f"{cached:,} cached"] if cached else []
    parts += [f"{reasoning:,} reasoning"] if reasoning else []
    return f"; {', '.join(parts)}" if parts else ""


def restore_problem_line(problem: str) -> str:
    return CANNOT_RESTORE + problem


def _where(other: OpenElsewhere) -> str:
    from .display import field_value

    pid = other.pid if other.pid is not None else "unknown"
    # The folder comes from a lock file's note, which anyone who can write MINO_HOME can forge (and a
    # folder's name may hold a newline): escaped like an approval value, so it stays one plain line.
    where = field_value(other.workdir)[0] if other.workdir else "an unknown folder"
    return f"pid {pid}, in {where}"


def session_in_use(other: OpenElsewhere) -> str:
    """/resume or /clear of a session another conversation has open: refused, nothing changed."""
    return (
        f"Session {other.session_id} is open in another Mino ({_where(other)}); a session can be open in "
        "one place at a time. Nothing was changed."
    )


def started_new_session(other: OpenElsewhere) -> str:
    """Start-up picked a session another conversation has open, so this one started a new session."""
    return (
        f"Session {other.session_id} is open in another Mino ({_where(other)}), so a new session was started."
    )


def open_elsewhere_mark(other: OpenElsewhere) -> str:
    """What /sessions adds to the line of a session open elsewhere."""
    return f"  (open elsewhere: {_where(other)})"


def startup_lines(startup: Startup) -> list[str]:
    """What the terminal prints at start-up, in order (the editor logs the same lines)."""
    lines = [started_new_session(startup.open_elsewhere)] if startup.open_elsewhere else []
    lines += startup.notices
    if startup.session_id is not None:
        lines += [session_line(startup.session_id), mode_line(startup.mode)]
    else:
        lines += [restore_problem_line(startup.restore_problem or ""), RESTORE_HINT, mode_line(startup.mode)]
    lines.append(startup.sandbox_line)
    lines.extend(startup.warnings)
    if startup.setup is not None:
        lines.append(startup.setup.message)
    return lines


# ---- protected folders and project skills (docs/BEHAVIOUR.md, "Sandbox" and "Skills") ----------
def protected_folders_changed(changed: list[tuple[str, str]]) -> str:
    """After a command that made protected folders (protected.changes): one line, for the model's
    tool result and the person's notice. Paths come from the project: escaped and quoted."""
    from .display import escape_value

    listed = ", ".join(f'"{escape_value(path)}" ({how})' for path, how in changed)
    return (
        f"Warning: this command created or replaced protected folders: {listed}. What they hold can "
        "run or instruct later, outside the sandbox (git hooks and settings, Mino skills, editor "
        "tasks): check them before you trust them."
    )


def protected_walk_incomplete(entries: int) -> str:
    """The approval warning of a sandboxed command in a tree too large to walk in full."""
    return (
        f"The project has more than {entries:,} files and folders, so Mino could not find every "
        ".git, .mino and .vscode folder in it; the sandbox cannot keep the ones it missed read-only."
    )


def skills_question(skills_dir: str, catalogue: list[tuple[str, str, int]]) -> str:
    """The question before project skills the person has not accepted are loaded (kind "skills"):
    each skill's name and description, and how much of its SKILL.md (what a yes lets the model
    read and follow) is not shown."""
    from .display import escape_value

    lines = [
        f'Project skills in "{escape_value(skills_dir)}" that you have not accepted before (new, or changed since):'
    ]
    for name, description, size in catalogue:
        lines.append(f'  {name}: "{escape_value(description)}"')
        lines.append(f"    … [+{size} characters of instructions in {name}/SKILL.md not shown]")
    lines += [
        "Skills are instructions the model follows. They come from the project: a command or another "
        "person may have written them.",
        "Load them for this session?",
    ]
    return "\n".join(lines)


SKILLS_NOT_LOADED = "Project skills were not loaded for this session (not accepted); /new asks again."


def skills_consent_not_saved(reason: str) -> str:
    return f"Could not remember that you accepted these skills ({reason}); Mino will ask again next session."


# ---- /rewind (docs/BEHAVIOUR.md, "Rewind") -------------------------------------------------------
NOTHING_TO_REWIND = "Nothing to rewind."
BASH_NOT_UNDONE = "(bash commands are not undone)"
CHANGED_SINCE_MINO = "changed since Mino wrote it"
# A rewind writes only the path it recorded: a folder on it (or the file) that is now a link, or a
# file that is now a folder (or a device, …), is never written through.
PATH_CHANGED = (
    "its path changed since the checkpoint (a link or another kind of file is there now); not written through"
)
NOT_REWOUND = "Nothing was rewound."


def rewind_turn_line(n: int, at: str, files: int, text: str, bash: bool) -> str:
    """One line of /rewind's list: `N. <time> <K> file(s): <first line of the request>`."""
    when = at[:16].replace("T", " ") + " UTC" if len(at) >= 16 else at
    return f"{n}. {when} {files} file(s): {text}" + (f" {BASH_NOT_UNDONE}" if bash else "")


def rewind_file_line(action: str, path: str, reason: str | None, protected: str | None = None) -> str:
    """`restore PATH`, `delete PATH`, `keep PATH: why`; a file in a protected folder (.git, .mino,
    .vscode) says so, as a write there asks in every mode."""
    line = f"{action} {path}" + (f": {reason}" if action == "keep" and reason else "")
    if protected and action != "keep":
        line += f" (in {protected}: files here can run commands or instruct Mino later)"
    return line


def rewind_question(files: int, n: int) -> str:
    return f"Rewind {files} file(s) to before turn {n}?"


def rewound_line(files: int, n: int) -> str:
    return f"Rewound {files} file(s); the conversation continues from before turn {n}."


def checkpoint_size_line(size: int, where: str) -> str:
    """How much the session's checkpoint store keeps, and where (/rewind lists it)."""
    amount = (
        f"{size} bytes"
        if size < 1024
        else f"{size / 1024:.1f} KiB"
        if size < 1 << 20
        else f"{size / (1 << 20):.1f} MiB"
    )
    return f"Checkpoints of this session: {amount} in {where} (/clear deletes them)."


# ---- project instructions (docs/BEHAVIOUR.md, "Project instructions: AGENTS.md") ----------------
INSTRUCTIONS_PREVIEW_LINES = 5
INSTRUCTIONS_PREVIEW_CHARS = 200  # of each line shown; a longer one says how much more there is
INSTRUCTIONS_NOT_ALL_SHOWN = (
    "Not all of it is shown here; a yes sends all of it: read the files before you answer."
)


def preview_line(line: str, limit: int) -> str:
    """One line of outside text in a question, escaped: at most `limit` of its characters, and when
    it is longer a mark saying how many more there are, so a preview never hides that it hides
    something (what follows the cut is sent too)."""
    from .display import escape_value

    if len(line) <= limit:
        return escape_value(line)
    return f"{escape_value(line[:limit])} … [+{len(line) - limit} characters not shown]"


INSTRUCTIONS_NOT_SENT = (
    "Project instructions (AGENTS.md) were not sent (not accepted); the next session asks again."
)


def instructions_question_line(lines: int) -> str:
    """The question itself, the last line of the message (the terminal adds " [y/N] ")."""
    # Word for word as the protocol gives it, "(N lines)" even for one line.
    return f"This project gives the model instructions in AGENTS.md ({lines} lines). Send them?"


def instructions_question(
    files: list[tuple[str, str]], lines: int, cut: str | None, left_out: list[str], limit_kib: int
) -> str:
    """The message before AGENTS.md content the person has not accepted is sent (kind "instructions"):
    each path and its first lines, escaped (they come from the project), then the question."""
    from .display import escape_value

    out = [
        "Instructions for the model from this project (a command or another person may have written them):"
    ]
    hidden = False
    for path, text in files:
        body = text.splitlines()
        out.append(f'  "{escape_value(path)}" ({len(body)} line{"" if len(body) == 1 else "s"}):')
        shown = body[:INSTRUCTIONS_PREVIEW_LINES]
        out += [f"    | {preview_line(line, INSTRUCTIONS_PREVIEW_CHARS)}" for line in shown]
        if len(body) > INSTRUCTIONS_PREVIEW_LINES:
            out.append(f"    … ({len(body) - INSTRUCTIONS_PREVIEW_LINES} more lines)")
        if len(body) > INSTRUCTIONS_PREVIEW_LINES or any(len(x) > INSTRUCTIONS_PREVIEW_CHARS for x in shown):
            hidden = True
    if hidden:
        out.append(INSTRUCTIONS_NOT_ALL_SHOWN)
    if cut is not None or left_out:
        out.append(instructions_limit_line(cut, left_out, limit_kib))
    out.append(instructions_question_line(lines))
    return "\n".join(out)


def instructions_limit_line(cut: str | None, left_out: list[str], limit_kib: int) -> str:
    from .display import escape_value

    parts = [f'"{escape_value(cut)}" is cut there'] if cut is not None else []
    if left_out:
        parts.append("not sent: " + ", ".join(f'"{escape_value(p)}"' for p in left_out))
    return f"AGENTS.md files are limited to {limit_kib} KiB together: " + "; ".join(parts) + "."


def instructions_left_out(paths: list[str]) -> str:
    """A piped or `-p` run (nobody to ask) with AGENTS.md content not accepted before."""
    from .display import escape_value

    listed = ", ".join(f'"{escape_value(p)}"' for p in paths)
    return (
        f"Project instructions in {listed} were not sent: they were not accepted before, and nobody "
        "can answer here. Run `mino` in this folder once and answer yes to send them."
    )


def instructions_consent_not_saved(reason: str) -> str:
    return f"Your yes to the project instructions could not be saved ({reason}); the next session asks again."


def context_cut(path: str, kept: int, size: int) -> str:
    """A context item over 64 KiB: sent cut, not refused (core/context.py, cut_item)."""
    return (
        f"Context item {path} is {size:,} bytes: the model gets the first {kept:,} and a note that it "
        "can read the rest with read_file."
    )


def image_not_sent(placeholder: str) -> str:
    """An earlier message's image whose kept bytes are gone or changed (core/images.py)."""
    return f"An image of this session could not be sent again, only its name: {placeholder}"


# A request to the editor that was not answered in time (config.yaml client_timeout_s).
WROTE_WITHOUT_ANSWER = "the editor wrote it without answering"


def client_no_answer(method: str, seconds: float, rel: str, outcome: str) -> str:
    return f"The editor did not answer {method} for {rel} within {seconds:g} s; {outcome}."


# ---- remembered decisions (core/rules.py) ---------------------------------------------------------
def always_line(rules: list[str], project: str) -> str:
    """Above a question a rule can cover (the values arrive escaped)."""
    return f"a = always: {', '.join(rules)} in {project}"


def rule_refused(rules: str) -> str:
    return f'Refused by the rule "{rules}" (deny); nothing was done. /rules lists the rules.'


def rule_kept(effect: str, rules: list[str], project: str) -> str:
    from .display import field_value

    shown = ", ".join(field_value(r)[0] for r in rules)
    return f"Rule kept: {effect} {shown} in {field_value(project)[0]} (/rules lists and deletes rules)."


def rule_line(n: int, effect: str, text: str, project: str) -> str:
    from .display import field_value

    return f"{n}. {effect} {field_value(text)[0]} in {field_value(project)[0]}"


NO_RULES = "No rules. Answer `a` (always) to a question to keep one for this project."


def sandbox_not_started(why: str, name: str | None = None) -> str:
    """The start-up line for a sandbox probe that could not run for want of resources (`name`:
    the sandbox it would have started, when known): commands wait for a probe that passes."""
    return f"Sandbox: {name + ', ' if name else ''}not started yet ({why}); commands wait for it"


# Out of file descriptors: the same errors the sandbox's probe takes for "not now" (tools/sandbox.py).
OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})


def too_many_files(exc: BaseException) -> str | None:
    """The line for a turn that ran out of file descriptors (EMFILE, ENFILE: a module imported on
    the turn's path, a file a tool opens, a connection), found in `exc`, its causes or its group,
    or None. Needs no file itself: no import, the limit from sysconf."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 64:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in OUT_OF_FILES:
            said = e.strerror or os.strerror(e.errno)
            if e.errno == errno.ENFILE:
                return f"{said} (the system's limit): close other programs, then try again; nothing was lost."
            try:
                limit = f", ulimit -n, is {os.sysconf('SC_OPEN_MAX')}"
            except (OSError, ValueError):
                limit = ", ulimit -n"
            return (
                f"{said} (this process's limit{limit}): close other programs or raise the limit, "
                "then try again; nothing was lost."
            )
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend(c for c in (e.__cause__, e.__context__) if c is not None)
    return None
