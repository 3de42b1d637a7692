"""What a bash command line is made of, for rules (docs/SECURITY.md, "Rules").

A command can be covered by `bash WORDS` rules only when a real shell parser reads all of it and
every part of it is one this module understands: simple commands joined by pipelines, `&&`, `||`,
`;` and newlines, whose words are plain or quoted text. Everything else — command or process
substitution, any `$` expansion, a variable assignment, subshells and compound commands, functions,
background jobs, re-parsing programs (`eval`, `sh -c`, `source`, …), wrappers that run another
program (`env`, `xargs`, `timeout`, `nohup`, `find -exec`, …), redirections outside the working
directory, unquoted non-ASCII and invisible characters, a parse error — makes `analyse` return a
reason instead, and the command asks.

The parser is tree-sitter with the tree-sitter-bash grammar (MIT): maintained, a full bash grammar
with a node for every construct, so what it does not know shows up as an error node, not as a
plain word. It is imported when a command is first judged, never at start-up.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from .values import Frozen, frozen

MAX_COMMAND_CHARS = 10_000

# Node types a covered command may contain; anything else (command_substitution,
# process_substitution, simple_expansion, expansion, arithmetic_expansion, variable_assignment,
# subshell, compound_statement, if/for/while/case, function_definition, test_command,
# negated_command, declaration_command, brace_expression, ansi_c_string, `&`, …) makes it ask.
_STRUCTURE = {"program", "list", "pipeline", "redirected_statement", "command", "command_name", "comment"}
_OPERATORS = {";", "&&", "||", "|", "|&", "\n"}
_WORDS = {"word", "string", "string_content", "raw_string", "concatenation", "number", '"'}
_REDIRECTS = {
    "file_redirect",
    "file_descriptor",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "herestring_redirect",
}
_REDIRECT_OPERATORS = {">", ">>", "<", ">&", "&>", "&>>", "<&", ">|", "<<", "<<-", "<<<", "<&-", ">&-"}
ALLOWED_NODES = _STRUCTURE | _OPERATORS | _WORDS | _REDIRECTS | _REDIRECT_OPERATORS

# Programs that run another program or parse text as a command: a rule never covers them, whatever
# its words, since what they run is not what the rule names. (find is one only with its run and
# write actions, below.)
WRAPPERS = frozenset(
    """
    . source eval exec command builtin enable alias trap coproc time times
    sh bash zsh dash ksh mksh fish csh tcsh ash busybox
    env xargs parallel timeout nohup nice ionice renice setsid stdbuf unbuffer taskset chrt prlimit
    sudo doas su runuser pkexec chroot unshare nsenter flock watch script strace ltrace fakeroot
    firejail bwrap systemd-run sg newgrp expect
    """.split()
)
FIND = frozenset({"find"})
FIND_ACTIONS = ("exec", "ok", "delete", "fprint", "fls")  # -exec, -execdir, -ok, -okdir, -delete, -fprint…

# A word that may be a rule's word: ASCII, nothing the shell would treat specially.
RULE_WORD = re.compile(r"[A-Za-z0-9_./:@%+,=-]+")
PROGRAM = re.compile(r"[A-Za-z0-9_./+-]+")
SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")
# Programs whose next word is a file, a pattern or a target, not a subcommand: their proposed rule
# is the program alone (`ls src` proposes `bash ls`).
NO_SUBCOMMAND = frozenset(
    """
    ls cat head tail less more grep egrep fgrep rg ag wc find fd pwd echo printf sed awk sort uniq cut
    tr diff cmp tree stat file du df which whereis type realpath basename dirname readlink mkdir touch
    cp mv rm ln chmod true false test [ pytest python python3 node ruby perl tsc ruff mypy black
    isort flake8 pylint eslint prettier jq yq date sleep nl tac rev column xxd od hexdump strings
    """.split()
)
PROTECTED = frozenset({".git", ".mino", ".vscode"})

_parser: Any = None


@frozen
class Simple(Frozen):
    """One simple command: its words as written in the command (raw source text, quotes included)."""

    words: tuple[str, ...]


@frozen
class Analysis(Frozen):
    """The simple commands of a command a rule may cover, or why none can (`reason`)."""

    commands: tuple[Simple, ...] = ()
    reason: str | None = None


def _parse(source: bytes) -> Any:
    global _parser
    if _parser is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        _parser = Parser(Language(tree_sitter_bash.language()))
    return _parser.parse(source)


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


def visible(ch: str) -> bool:
    """A character a person can see for what it is: no controls other than tab and newline, no
    invisible formatting (bidi overrides, zero-width), no space other than the ASCII one."""
    if ch in "\t\n":
        return True
    category = unicodedata.category(ch)
    return not (category[0] in "CZ" and ch != " ")


def analyse(command: str, workdir: Path) -> Analysis:
    """Every simple command of `command`, when a rule may cover it; else the reason it asks."""
    if len(command) > MAX_COMMAND_CHARS:
        return Analysis(reason="too long to judge")
    if not all(visible(ch) for ch in command):
        return Analysis(reason="it has control or invisible characters")
    if "\\\n" in command:
        # A line continuation joins the words around it in bash ("git\\<newline>status" is one
        # word) where the parser sees two: never covered.
        return Analysis(reason="it has a line continuation")
    tree = _parse(command.encode("utf-8", "surrogateescape"))
    root = tree.root_node
    if root.has_error:
        return Analysis(reason="the shell parser did not read all of it")
    found: list[Simple] = []
    reason = _walk(root, workdir, found, quoted=False)
    if reason:
        return Analysis(reason=reason)
    if not found:
        return Analysis(reason="it runs no command")
    return Analysis(commands=tuple(found))


def _walk(node: Any, workdir: Path, found: list[Simple], quoted: bool) -> str | None:
    kind = node.type
    if node.is_missing or kind not in ALLOWED_NODES:
        return f"it has a {kind.replace('_', ' ')}"
    if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
        why = _redirect(node, workdir)
        if why:
            return why
    if kind == "word" and not quoted and not _text(node).isascii():
        return "a word outside quotes has non-ASCII characters"
    if kind == "heredoc_redirect" and _expanding_heredoc(node):
        return "its here-document may expand"  # expansions the parser may not show as nodes
    if kind == "command":
        simple = _simple(node)
        if isinstance(simple, str):
            return simple
        found.append(simple)
    inner = quoted or kind in ("string", "raw_string", "heredoc_body")
    for child in node.children:
        why = _walk(child, workdir, found, inner)
        if why:
            return why
    return None


def _expanding_heredoc(node: Any) -> bool:
    """An unquoted here-document delimiter lets bash expand `$` and backquotes in the body."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    if start is not None and _text(start)[:1] in ("'", '"', "\\"):
        return False
    return any(any(ch in _text(c) for ch in "$`\\") for c in node.children if c.type == "heredoc_body")


def _simple(node: Any) -> Simple | str:
    words: list[str] = []
    for child in node.children:
        if child.type == "command_name":
            if words:
                return "its program is not its first word"
            words.append(_text(child))
        elif child.type in _WORDS:
            if not words:
                return "something comes before its program"
            words.append(_text(child))
        elif child.type not in _REDIRECTS:
            return f"it has a {child.type.replace('_', ' ')}"
    if not words:
        return "it runs no program"
    return Simple(tuple(words))


def _redirect(node: Any, workdir: Path) -> str | None:
    if node.type != "file_redirect":
        return None  # a here-document or here-string feeds text: its parts are checked as words
    ops = [c.type for c in node.children if not c.is_named]
    targets = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
    if len(targets) != 1:
        return "it has a redirection the rules do not read"
    target = targets[0]
    text = _text(target)
    if any(op in (">&", "<&") for op in ops) and (target.type == "number" or text == "-"):
        return None  # to or from another descriptor, or closing one
    if target.type not in ("word", "number") or not RULE_WORD.fullmatch(text):
        return "it redirects to a path that is not plain text"
    if inside(text, workdir):
        return None
    return "it redirects outside the working directory"


def inside(path: str, workdir: Path) -> bool:
    """A redirection's plain path stays in the working directory (symbolic links followed), and
    out of its protected folders; /dev/null is the one path outside it allowed."""
    if path == "/dev/null":
        return True
    if path.startswith("/") or any(part.casefold() in PROTECTED for part in path.split("/")):
        return False
    root = os.path.realpath(workdir)
    real = os.path.realpath(os.path.join(root, path))
    return real == root or real.startswith(root + os.sep)


def wrapper(words: tuple[str, ...]) -> bool:
    """A program that runs another one or reads text as commands: never covered by a rule."""
    program = words[0].rsplit("/", 1)[-1]
    if program in WRAPPERS:
        return True
    if program in FIND:  # its actions, however quoted or escaped
        plain = [w.replace("\\", "").replace("'", "").replace('"', "") for w in words[1:]]
        return any(action in word for word in plain for action in FIND_ACTIONS)
    return False


def covers(rule: tuple[str, ...], simple: Simple) -> bool:
    """A simple command starts with the rule's words, each written plainly (no quotes, escapes or
    expansion: the raw text of the word is compared), and is not a wrapper."""
    words = simple.words
    return len(words) >= len(rule) and words[: len(rule)] == rule and not wrapper(words)


def proposal(simple: Simple) -> tuple[str, ...] | None:
    """The rule an `always` answer would keep for one simple command: its program and, when the
    next word is a plain subcommand, that word; None when no rule may cover it."""
    words = simple.words
    if wrapper(words) or not PROGRAM.fullmatch(words[0]) or words[0].startswith("-"):
        return None
    if len(words) > 1 and SUBCOMMAND.fullmatch(words[1]) and words[0] not in NO_SUBCOMMAND:
        return words[:2]
    return words[:1]
