"""Finding 3, eval runner part: `mino eval` prints model errors in its FAIL lines and --json report.

A failing case quotes the model's error message; that text must reach the terminal neutralised (as
in the CLI), and the --json report must stay valid JSON that reads back to the same text.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from mino_server.evals.runner import eval_main

HOSTILE = "bad key\x1b[8m\x9b2J\u202egnp.exe\x7f hidden"
CASE = f"""\
name: hostile-error
description: The model answers with an error whose message tries to drive the terminal.
turns:
  - hello
script:
  - status: 401
    error: {json.dumps(HOSTILE)}
expect:
  request_count: 1
"""
DRIVES_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(cases: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = eval_main([str(cases), *args], out, err)
    return code, out.getvalue(), err.getvalue()


def test_fail_lines_and_the_json_report_are_sanitised(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "hostile.yaml").write_text(CASE)
    code, out, err = run(cases)
    assert code == 1 and out.startswith("FAIL hostile-error: ")
    assert DRIVES_TERMINAL.findall(out + err) == []
    assert "bad key\\x1b[8m\\u009b2J\\u202egnp.exe\\x7f hidden" in out
    code, out, err = run(cases, "--json")
    assert code == 1 and DRIVES_TERMINAL.findall(out + err) == []
    (case,) = json.loads(out)["cases"]  # still JSON, and it reads back to the same text
    assert any(HOSTILE in reason for reason in case["reasons"])


def test_usage_errors_quote_the_argument_sanitised(tmp_path: Path) -> None:
    code, out, err = run(tmp_path / "no\x1b[8mwhere")
    assert code == 2 and "no\\x1b[8mwhere is not a directory" in err and "\x1b" not in err
