"""Write the replay eval cases (evals/replay-*.yaml): realistic work replayed once per way of
answering, so `mino eval evals -k replay` counts the approval questions each asks.

Each scenario is one scripted session; it is written as four cases: manual mode answered yes every
time (`-manual`), manual mode answered `a` wherever a rule is offered (`-always`), accept-edits and
bypass. `expect.questions` pins each count (evals/README.md reports them). Run from the repository
root: `python scripts/replay_evals.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PY = "{python}"


def bash(command: str, outside: bool = False) -> dict[str, Any]:
    args: dict[str, Any] = {"command": command}
    if outside:
        args.update(outside_sandbox=True, reason="git commit writes .git, which the sandbox keeps read-only")
    return {"name": "bash", "arguments": args}


def read(path: str) -> dict[str, Any]:
    return {"name": "read_file", "arguments": {"path": path}}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content, "mode": "create"}}


CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n"
)
UNITTEST = f"{PY} -m unittest -q"

SCENARIOS: dict[str, dict[str, Any]] = {
    "fix-failing-test": {
        "description": "explore a small project, run its failing suite, fix the bug, run the suite again, commit",
        "files": {
            "README.md": "# calc\n\nRun the tests with python -m unittest.\n",
            "calc.py": CALC,
            "test_calc.py": TESTS,
        },
        "turns": [
            (
                "Look around this project.",
                [
                    bash("ls -la"),
                    bash("cat README.md"),
                    bash("find . -name '*.py'"),
                    read("calc.py"),
                    bash("grep -rn 'def ' ."),
                    bash("cat test_calc.py"),
                    bash("wc -l calc.py test_calc.py"),
                ],
            ),
            (
                "Run the tests.",
                [
                    bash(UNITTEST),
                    bash(f"{UNITTEST} test_calc.CalcTest.test_add 2>&1 | tail -n 5"),
                    bash("grep -n 'return' calc.py"),
                    bash("cat calc.py"),
                ],
            ),
            (
                "Fix the failing test.",
                [
                    read("calc.py"),
                    edit("calc.py", "return a - b", "return a + b"),
                    bash(UNITTEST),
                    bash("cat calc.py"),
                    bash("grep -rn 'a + b' ."),
                ],
            ),
            (
                "Add a test for zero and run the suite.",
                [
                    edit(
                        "test_calc.py",
                        "        self.assertEqual(add(2, 3), 5)\n",
                        "        self.assertEqual(add(2, 3), 5)\n        self.assertEqual(add(0, 0), 0)\n",
                    ),
                    bash(UNITTEST),
                    bash(f"{UNITTEST} 2>&1 | tail -n 3"),
                    bash("ls -la"),
                    bash("cat test_calc.py"),
                ],
            ),
            (
                "mul should reject strings; add that with a test and keep the suite green.",
                [
                    read("calc.py"),
                    bash("grep -rn mul ."),
                    edit(
                        "calc.py",
                        "def mul(a, b):\n",
                        "def mul(a, b):\n    if isinstance(a, str) or isinstance(b, str):\n"
                        "        raise TypeError('numbers only')\n",
                    ),
                    bash(UNITTEST),
                    bash("cat calc.py"),
                    edit(
                        "test_calc.py",
                        "        self.assertEqual(mul(2, 3), 6)\n",
                        "        self.assertEqual(mul(2, 3), 6)\n        with self.assertRaises(TypeError):\n"
                        "            mul('a', 2)\n",
                    ),
                    bash(UNITTEST),
                    bash(f"{UNITTEST} 2>&1 | tail -n 3"),
                    bash("grep -n TypeError calc.py test_calc.py"),
                    bash("cat test_calc.py"),
                    bash("wc -l calc.py test_calc.py"),
                    bash("ls -la"),
                ],
            ),
            (
                "Run everything once more and look over the code.",
                [
                    bash(UNITTEST),
                    bash("cat calc.py"),
                    bash("cat test_calc.py"),
                    bash("grep -rn 'def ' ."),
                    bash("find . -name '*.py'"),
                    bash("wc -l calc.py"),
                    bash(f"{UNITTEST} 2>&1 | tail -n 3"),
                ],
            ),
            (
                "Commit it.",
                [
                    bash(
                        "git init -q && git add -A && git -c user.name=Mino -c user.email=mino@example.invalid "
                        "commit -qm 'Fix add'",
                        outside=True,
                    ),
                    bash("git status --short"),
                    bash("git log --oneline"),
                    bash("git status"),
                    bash("git log --stat -n 1"),
                    bash("git diff HEAD"),
                ],
            ),
        ],
    },
    "explore-and-document": {
        "description": "explore a project's layout and code, then write notes about it and check them",
        "files": {
            "README.md": "# shop\n",
            "shop/__init__.py": "",
            "shop/cart.py": "class Cart:\n    pass\n",
            "shop/pay.py": "def pay(cart):\n    return 0\n",
            "tests/test_cart.py": "def test_cart():\n    pass\n",
        },
        "turns": [
            (
                "Explain how this project is organised.",
                [
                    bash("ls -la"),
                    bash("ls -R shop tests"),
                    bash("find . -name '*.py' | sort"),
                    bash("cat README.md"),
                    bash("head -n 20 shop/cart.py"),
                    bash("head -n 20 shop/pay.py"),
                    bash("grep -rn 'class ' shop"),
                    bash("grep -rn 'def ' shop tests"),
                    bash("wc -l shop/*.py"),
                ],
            ),
            (
                "Where is payment handled, and is it tested?",
                [
                    bash("grep -rn pay ."),
                    bash("cat shop/pay.py"),
                    bash("grep -rn 'pay' tests"),
                    bash("ls tests"),
                    bash("cat tests/test_cart.py"),
                    bash("find tests -name 'test_*.py'"),
                ],
            ),
            (
                "Write that down in docs/overview.md and check it.",
                [
                    write(
                        "docs/overview.md", "# Overview\n\nshop/cart.py holds the cart; shop/pay.py pays.\n"
                    ),
                    bash("cat docs/overview.md"),
                    bash("wc -l docs/overview.md"),
                    bash("ls -la docs"),
                    write("docs/testing.md", "# Testing\n\nOnly the cart has a test.\n"),
                    bash("cat docs/testing.md"),
                    bash("grep -rn cart docs"),
                    bash("ls docs"),
                ],
            ),
        ],
    },
}

WAYS = {
    "manual": {"mode": "manual", "approve": "all"},
    "always": {"mode": "manual", "approve": "always"},
    "accept-edits": {"mode": "accept-edits", "approve": "all"},
    "bypass": {"mode": "bypass", "approve": "all"},
}


def case(name: str, scenario: dict[str, Any], way: str, questions: int | None) -> dict[str, Any]:
    script: list[dict[str, Any]] = []
    for n, (_, calls) in enumerate(scenario["turns"], 1):
        # Up to three calls in one reply, as models do: a turn has at most 8 requests.
        script.extend({"calls": calls[i : i + 3]} for i in range(0, len(calls), 3))
        script.append({"text": f"Done with step {n}."})
    body: dict[str, Any] = {
        "name": f"replay-{name}-{way}",
        "description": f"{scenario['description']} ({way}; scripts/replay_evals.py writes this file)",
        **WAYS[way],
        "requires": "sandbox",
        "files": scenario["files"],
        "turns": [t for t, _ in scenario["turns"]],
        "script": script,
        "expect": {"turn_status": "completed"},
    }
    if questions is not None:
        body["expect"]["questions"] = questions
    return body


def main() -> None:
    import json
    import subprocess
    import sys

    out = Path("evals")
    for name, scenario in SCENARIOS.items():
        for way in WAYS:
            path = out / f"replay-{name}-{way}.yaml"
            path.write_text(yaml.safe_dump(case(name, scenario, way, None), sort_keys=False, width=100))
            # Run it once to learn its question count, then pin it.
            report = subprocess.run(
                [sys.executable, "-m", "mino_server", "eval", str(out), "-k", path.stem, "--json"],
                capture_output=True,
                text=True,
            )
            (result,) = json.loads(report.stdout)["cases"]
            assert result["passed"], result["reasons"]
            asked = len(result["transcript"]["asked"])
            path.write_text(yaml.safe_dump(case(name, scenario, way, asked), sort_keys=False, width=100))
            print(f"{path.stem}: {asked} questions")


if __name__ == "__main__":
    main()
