"""A machine short of resources never turns the sandbox off: when the start-up probe cannot run
(too many open files, processes, no memory, no answer in time), the sandbox is "not started yet",
no command runs until a later probe passes, and nothing runs unsandboxed, bypass mode included
(docs/SECURITY.md, "Resource exhaustion")."""

from __future__ import annotations

import errno
import resource
import subprocess
from pathlib import Path

import pytest
from cli_driver import MINO
from helpers import mino_env

from mino_server.core.tools import sandbox
from mino_server.testing.scripted_model import ScriptedModel

pytestmark = pytest.mark.skipif(sandbox.detect()[0] is None, reason="needs a working sandbox")


def _limited(n: int):  # noqa: ANN202 - a preexec_fn
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def test_too_few_file_descriptors_never_run_a_command_unsandboxed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()  # the sandbox on (auto), as a person has it
    work = tmp_path / "work"
    work.mkdir()
    unready = refused = 0
    for limit in range(9, 21):
        model = ScriptedModel().start()  # one per run: a run that failed early leaves no replies behind
        env = mino_env(home, model.base_url)
        # Outside the working directory: the sandbox cannot create it on the host (its /tmp is its
        # own), so the file exists only if the command ran unsandboxed.
        marker = tmp_path / f"ran-unsandboxed-{limit}"
        model.add(
            {"calls": [{"name": "bash", "arguments": {"command": f"touch {marker}"}}]},
            {"text": "done"},
        )
        done = subprocess.run(
            [*MINO, "-p", "go", "--mode", "bypass"],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited(limit),
        )
        model.stop()
        assert not marker.exists(), (
            f"with {limit} file descriptors the command ran unsandboxed:\n{done.stderr}"
        )
        if "not started yet" in done.stderr:
            unready += 1
            assert (
                "Sandbox: bwrap, not started yet (bwrap cannot be started: Too many open files)"
                in done.stderr
            )
            # The command is refused with its reason, or the turn fails first (an import finding no
            # descriptor): either way a clear line, and nothing ran.
            told = done.stdout + done.stderr + "".join(str(r) for r in model.requests)
            assert "The sandbox could not start" in told or "Error:" in done.stderr, done.stderr
            refused += "The sandbox could not start" in told
    assert unready and refused, "no limit in the range made the probe fail: the test did not test anything"


def test_a_probe_short_of_resources_is_not_now_and_a_later_probe_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = subprocess.Popen
    failures = [OSError(errno.EMFILE, "Too many open files")]

    def popen(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    box, line = sandbox.detect()
    assert box is not None and box.unready and "Too many open files" in line
    box, line = sandbox.detect()
    assert box is not None and box.unready is None and line == "Sandbox: bwrap"
    failures.append(OSError(errno.ENOENT, "No such file or directory"))  # not a shortage: no sandbox
    box, line = sandbox.detect()
    assert box is None and "cannot be started" in line
