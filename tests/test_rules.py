"""Remembered decisions through the real front ends: the terminal (pty), the editor server and ACP
(subprocesses), against the scripted model; and the rules files as a person edits them."""

from __future__ import annotations

import os
from pathlib import Path

import pexpect
from cli_driver import piped, spawn

from mino_server.core.rules import RuleStore, Subject, file_name, project_key
from mino_server.testing.scripted_model import ScriptedModel

PROMPT = "You> "


def bash_call(command: str) -> dict:
    return {"calls": [{"name": "bash", "arguments": {"command": command}}]}


def test_always_in_the_terminal_keeps_a_rule_that_runs_and_can_be_deleted(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    (workdir / "a.txt").write_text("x\n")
    model.add(
        bash_call("ls -la"),
        {"text": "Listed."},
        bash_call("ls a.txt | head -n 1"),
        {"text": "Again."},
        bash_call("ls"),
        {"text": "Third."},
    )
    project = os.path.realpath(workdir)
    child = spawn(mino_env, workdir, "--mode", "manual")
    child.expect_exact(PROMPT)
    child.sendline("list")
    child.expect_exact('Command: "ls -la"')
    child.expect_exact(f"a = always: bash ls in {project}")
    child.expect_exact("Approve this operation? [y/N/a] ")
    child.sendline("a")
    child.expect_exact(f"Rule kept: allow bash ls in {project}")
    child.expect_exact("[Tool result: completed]")
    child.expect_exact(PROMPT)
    # `ls … | head`: head is not covered, so it asks, offering both.
    child.sendline("again")
    child.expect_exact(f"a = always: bash ls, bash head in {project}")
    child.expect_exact("[y/N/a] ")
    child.sendline("a")
    child.expect_exact("[Tool result: completed]")
    child.expect_exact(PROMPT)
    child.sendline("/rules")
    child.expect_exact(f"1. allow bash ls in {project}")
    child.expect_exact(f"2. allow bash head in {project}")
    child.expect_exact(PROMPT)
    child.sendline("/rules delete 2")
    child.expect_exact(f"Deleted: 2. allow bash head in {project}")
    child.expect_exact(PROMPT)
    child.sendline("third")
    child.expect_exact('Command: "ls"')
    child.expect_exact('Rule: "bash ls"')
    child.expect_exact("[Tool result: completed]")
    child.expect_exact("Assistant> Third.")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    text = (mino_home / "rules" / file_name(project)).read_text()
    assert f"project: {project}" in text and "- bash ls" in text and "head" not in text


def test_enter_alone_is_no_and_keeps_nothing(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    model.add(bash_call("ls"), {"text": "OK."})
    child = spawn(mino_env, workdir, "--mode", "manual")
    child.expect_exact(PROMPT)
    child.sendline("list")
    child.expect_exact("[y/N/a] ")
    child.sendline("")
    child.expect_exact("[Tool result: denied]")
    child.expect_exact(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert not (mino_home / "rules").exists() or not list((mino_home / "rules").glob("*.yaml"))


def test_piped_input_denies_and_keeps_no_rule(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    model.add(bash_call("touch x"), {"text": "OK."})
    proc = piped(mino_env, workdir, "touch x\na\n", "--mode", "manual")
    assert "[y/N/a] no — input is piped, so nobody can approve; denied." in proc.stdout
    assert not (workdir / "x").exists()
    assert not list((mino_home / "rules").glob("*.yaml")) if (mino_home / "rules").exists() else True


def test_a_deny_rule_refuses_without_asking_and_says_which(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    RuleStore(mino_home).add(["bash touch"], "deny", workdir)
    model.add(bash_call("touch made.txt"), {"text": "Refused."})
    proc = piped(mino_env, workdir, "make it\n", "--mode", "accept-edits")
    assert 'Rule: "bash touch"' in proc.stdout
    assert "Approve this operation" not in proc.stdout
    assert "[Tool result: denied]" in proc.stdout
    assert 'Refused by the rule "bash touch"' in proc.stdout
    assert not (workdir / "made.txt").exists()


def test_a_file_that_does_not_parse_is_one_line_and_ignored(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    folder = mino_home / "rules"
    folder.mkdir(parents=True)
    (folder / "broken.yaml").write_text(f"project: {os.path.realpath(workdir)}\nallow: [bash ls\n")
    model.add(bash_call("ls"), {"text": "OK."})
    proc = piped(mino_env, workdir, "list\n/rules\n", "--mode", "manual")
    lines = [line for line in proc.stdout.splitlines() if "broken.yaml is ignored" in line]
    assert lines and all("not valid YAML" in line for line in lines), proc.stdout
    assert "nobody can approve" in proc.stdout  # ignored: the command asks
    assert "Traceback" not in proc.stdout + proc.stderr


def test_rules_never_reach_outside_the_sandbox_or_protected_folders(tmp_path: Path, workdir: Path) -> None:
    store = RuleStore(tmp_path / "h")
    store.add(["write **", "bash git"], "allow", workdir)
    # A protected path has no subject at all (core/tools/files.py); the glob never names one.
    verdict, _ = store.judge(Subject("write", "src/app.py"), workdir)
    assert verdict is not None and verdict.effect == "allow"
    import pytest

    with pytest.raises(ValueError):
        store.add(["write .git/**"], "allow", workdir)
    with pytest.raises(ValueError):
        store.add(["write ../x"], "allow", workdir)


# ---- the editor server: mino/approve's always, mino/rules, mino/rules/delete ---------------------
def write_call(path: str, content: str = "x = 1\n") -> dict:
    return {
        "calls": [{"name": "write_file", "arguments": {"path": path, "content": content, "mode": "create"}}]
    }


def test_editor_server_always_rules_list_and_delete(
    model: ScriptedModel, workdir: Path, tmp_path: Path
) -> None:
    from helpers import mino_env, quiet_home
    from server_client import Client, contract_problems

    home = quiet_home(tmp_path)
    answers = [{"approved": True, "always": True}, {"approved": False, "always": True}, {"approved": False}]
    client = Client(
        mino_env(home, model.base_url), workdir, handlers={"mino/approve": lambda p: answers.pop(0)}
    )
    project = os.path.realpath(workdir)
    try:
        model.add(write_call("src/a.py"), {"text": "1"}, write_call("src/b.py"), {"text": "2"})
        model.add(write_call("docs.md"), {"text": "3"}, write_call("docs.md"), {"text": "4"})
        model.add(write_call(".git/config"), {"text": "5"})
        client.initialize(workdir, mode="manual")
        assert client.request("mino/turn", {"text": "one"})["status"] == "completed"
        (first,) = [r["params"] for r in client.incoming_requests if r["method"] == "mino/approve"]
        assert first["always"] == {"rules": ["write src/**"], "project": project}
        assert client.request("mino/turn", {"text": "two"})["status"] == "completed"
        assert (workdir / "src" / "b.py").exists()
        second = client.events("tool_call")[-1]
        assert second["decision"] == "show"
        assert {"label": "Rule", "value": "write src/**"} in second["fields"]
        # "Never" (always with a no): a deny rule, and the next such write is refused unasked.
        assert client.request("mino/turn", {"text": "three"})["status"] == "completed"
        assert client.request("mino/turn", {"text": "four"})["status"] == "completed"
        fourth = client.events("tool_call")[-1]
        assert (
            fourth["decision"] == "refuse" and {"label": "Rule", "value": "write docs.md"} in fourth["fields"]
        )
        assert not (workdir / "docs.md").exists()
        # Hand-written `write **` never reaches .git: asked, and no always offered.
        RuleStore(home).add(["write **"], "allow", workdir)
        assert client.request("mino/turn", {"text": "five"})["status"] == "completed"
        asked = [r["params"] for r in client.incoming_requests if r["method"] == "mino/approve"]
        assert len(asked) == 3 and "always" not in asked[-1] and asked[-1]["tool"] == "write_file"
        listed = client.request("mino/rules", {})
        shown = [(r["effect"], r["kind"], r["pattern"], r["project"]) for r in listed["rules"]]
        assert shown == [
            ("allow", "write", "src/**", project),
            ("allow", "write", "**", project),
            ("deny", "write", "docs.md", project),
        ]
        gone = client.request("mino/rules/delete", {"id": listed["rules"][0]["id"]})
        assert gone["deleted"] is True and len(gone["rules"]) == 2
        again = client.request("mino/rules/delete", {"id": listed["rules"][0]["id"]})
        assert again["deleted"] is False
    finally:
        client.stop()
    assert contract_problems(client) == [], bytes(client.stderr).decode(errors="replace")
    assert b"Traceback" not in client.stderr


# ---- ACP: allow_always and reject_always -------------------------------------------------------
def test_acp_always_options_keep_rules(model: ScriptedModel, workdir: Path, tmp_path: Path) -> None:
    import sys

    from acp_client import AcpClient
    from helpers import mino_env, quiet_home

    home = quiet_home(tmp_path)
    chosen = ["allow_always", "reject_always"]
    asked: list[dict] = []

    def answer(params: dict) -> dict:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": chosen.pop(0)}}

    model.add(write_call("src/a.py"), {"text": "1"}, write_call("src/b.py"), {"text": "2"})
    model.add(write_call("notes.md"), {"text": "3"}, write_call("notes.md"), {"text": "4"})
    client = AcpClient(
        mino_env(home, model.base_url),
        workdir,
        argv=[sys.executable, "-m", "mino_server", "--acp"],
        handlers={"session/request_permission": answer},
    )
    try:
        client.initialize()
        sid = client.new_session(workdir)
        for text in ("one", "two", "three", "four"):
            assert client.prompt(sid, text) == {"stopReason": "end_turn"}
    finally:
        assert client.close() == 0
    assert client.violations == [] and b"Traceback" not in client.stderr
    assert len(asked) == 2  # the second and fourth calls were decided by the rules kept
    options = [(o["optionId"], o["kind"]) for o in asked[0]["options"]]
    assert ("allow_always", "allow_always") in options and ("reject_always", "reject_always") in options
    assert (workdir / "src" / "b.py").exists() and not (workdir / "notes.md").exists()
    rules, _ = RuleStore(home).load()
    assert [(r.effect, r.text) for r in rules] == [("allow", "write src/**"), ("deny", "write notes.md")]


def test_bypasses_ask_in_the_terminal_while_the_plain_command_runs(
    model: ScriptedModel, mino_env: dict[str, str], workdir: Path, mino_home: Path
) -> None:
    """A few of the corpus (tests/security/test_rules_bypass.py) end to end: under `bash ls` they
    ask (piped input: denied), and nothing they carry runs; the plain command runs by the rule."""
    RuleStore(mino_home).add(["bash ls"], "allow", workdir)
    bypasses = ["ls $(touch pwned1)", "ls; touch pwned2", "X=1 ls && touch pwned3", "ls > ../pwned4"]
    for command in bypasses:
        model.add(bash_call(command))
    model.add(bash_call("ls"), {"text": "Done."})
    proc = piped(mino_env, workdir, "go\n", "--mode", "manual")
    assert proc.stdout.count("nobody can approve; denied.") == len(bypasses), proc.stdout
    assert proc.stdout.count('Rule: "bash ls"') == 1
    assert proc.stdout.count("[Tool result: completed]") == 1
    assert not list(workdir.glob("pwned*")) and not list(workdir.parent.glob("pwned*"))


def test_write_globs() -> None:
    from mino_server.core.rules import glob_regex

    cases = {
        "src/**": (["src/a.py", "src/x/y/z.py"], ["src", "lib/src/a.py", "srcx/a.py"]),
        "**": (["a", "a/b/c"], []),
        "**/test_*.py": (["test_a.py", "t/test_b.py", "a/b/test_c.py"], ["a/test_c.txt", "a/xtest_c.py"]),
        "docs/*.md": (["docs/a.md"], ["docs/a/b.md", "docs/a.txt"]),
        "a/**/b.py": (["a/b.py", "a/x/y/b.py"], ["b.py", "a/x/c.py"]),
        "f?.py": (["f1.py"], ["f12.py", "f/.py"]),
    }
    for glob, (yes, no) in cases.items():
        pattern = glob_regex(glob)
        assert all(pattern.fullmatch(p) for p in yes), (glob, yes)
        assert not any(pattern.fullmatch(p) for p in no), (glob, no)


def test_mcp_rules_name_one_server_tool(tmp_path: Path, workdir: Path) -> None:
    from mino_server.core.rules import propose

    store = RuleStore(tmp_path / "h")
    assert propose(Subject("mcp", "fx/echo"), workdir) == ("mcp fx/echo",)
    store.add(["mcp fx/echo"], "allow", workdir)
    store.add(["mcp fx/drop"], "deny", workdir)
    allowed, _ = store.judge(Subject("mcp", "fx/echo"), workdir)
    denied, _ = store.judge(Subject("mcp", "fx/drop"), workdir)
    other, _ = store.judge(Subject("mcp", "fx-2/echo"), workdir)
    assert allowed is not None and allowed.effect == "allow"
    assert denied is not None and denied.effect == "deny"
    assert other is None
    # Another project's rules never count here.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert store.judge(Subject("mcp", "fx/echo"), elsewhere)[0] is None


def test_a_hand_edit_counts_at_the_next_check_and_an_always_never_overwrites_a_broken_file(
    tmp_path: Path, workdir: Path
) -> None:
    import pytest

    store = RuleStore(tmp_path / "h")
    store.add(["bash ls"], "allow", workdir)
    (path,) = store.files()
    path.write_text(path.read_text().replace("- bash ls", "- bash ls\n- bash cat"))
    verdict, _ = store.judge(Subject("bash", "cat a | ls"), workdir)
    assert verdict is not None and verdict.rules == ("bash cat", "bash ls")
    path.write_text(path.read_text() + "deny: [bash $(x)]\n")
    verdict, problems = store.judge(Subject("bash", "ls"), workdir)
    assert verdict is None and len(problems) == 1 and str(path) in problems[0]
    before = path.read_text()
    with pytest.raises(ValueError, match="does not parse"):
        store.add(["bash git status"], "allow", workdir)
    assert path.read_text() == before


def test_a_rules_file_swapped_for_a_link_is_replaced_not_written_through(
    mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """A rules file replaced atomically takes the place of a link at its name (as every atomic
    replace under MINO_HOME does), never writes through it (tests/security/test_home_links.py has
    the folder and the lock)."""
    store = RuleStore(mino_home)
    store.add(["bash git status"], "allow", workdir)
    path = mino_home / "rules" / file_name(project_key(workdir))
    outside = tmp_path / "outside.yaml"
    outside.write_bytes(path.read_bytes())
    before = outside.read_bytes()
    path.unlink()
    path.symlink_to(outside)
    store.add(["bash ls"], "allow", workdir)
    assert outside.read_bytes() == before and not path.is_symlink()
