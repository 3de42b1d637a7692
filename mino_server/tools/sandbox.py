"""The bash sandbox (SPEC §5, chapter 12): bubblewrap on Linux, sandbox-exec on macOS.

Inside: the whole file system read-only except the working directory, a private /tmp, no network,
and nothing outlives Mino. detect() runs one probe so a machine where the sandbox cannot start
(no user namespaces in a container, say) says why at start-up instead of failing every command.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Sandbox:
    name: str  # "bwrap" | "sandbox-exec"

    def wrap(self, argv: list[str], workdir: Path) -> list[str]:
        """`argv` as run inside the sandbox, with `workdir` writable and current."""
        if self.name == "bwrap":
            return bwrap_argv(argv, workdir)
        if self.name == "sandbox-exec":
            return ["sandbox-exec", "-p", macos_profile(workdir), *argv]
        raise ValueError(f"unknown sandbox {self.name!r}")


def bwrap_argv(argv: list[str], workdir: Path) -> list[str]:
    wd = str(workdir)
    return [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", wd, wd,  # after the /tmp tmpfs, so a working directory under /tmp stays visible
        "--unshare-net",
        "--unshare-pid",  # when the shell ends, the namespace's init ends every process left in it
        "--die-with-parent",  # Mino (or our kill of bwrap) ending takes the sandbox with it
        "--new-session",  # no TIOCSTI into a terminal; the outer bwrap stays in our process group
        "--chdir", wd,
        "--",
        *argv,
    ]  # fmt: skip


def macos_profile(workdir: Path, temp_dirs: list[Path] | None = None) -> str:
    """A Seatbelt (SBPL) profile: everything allowed but network and writes outside the workdir and temp."""
    if temp_dirs is None:
        temp_dirs = [
            Path("/private/tmp"),
            Path("/private/var/folders"),
            Path(tempfile.gettempdir()).resolve(),
        ]
    writable = [workdir, *temp_dirs]
    subpaths = "\n".join(f"  (subpath {_sbpl_string(str(p))})" for p in dict.fromkeys(writable))
    return (
        "(version 1)\n"
        "(allow default)\n"
        "(deny network*)\n"
        "(deny file-write*)\n"
        "(allow file-write*\n"
        f"{subpaths}\n"
        '  (literal "/dev/null")\n'
        '  (literal "/dev/zero")\n'
        '  (literal "/dev/tty")\n'
        '  (regex #"^/dev/fd/[0-9]+$"))\n'
    )


def _sbpl_string(s: str) -> str:
    """A Scheme string literal for SBPL: quotes and backslashes escaped, so a path cannot end it."""
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def detect(setting: str = "auto") -> tuple[Sandbox | None, str]:
    """The sandbox to use and the start-up line that says so."""
    if setting == "off":
        return None, "Sandbox: unavailable (sandbox: off in config)"
    if setting != "auto":
        return None, f"Sandbox: unavailable (sandbox: {setting!r} in config is not auto or off)"
    if sys.platform.startswith("linux"):
        sandbox, tool = Sandbox("bwrap"), "bwrap"
        missing = "bwrap not found; install bubblewrap"
    elif sys.platform == "darwin":
        sandbox, tool = Sandbox("sandbox-exec"), "sandbox-exec"
        missing = "sandbox-exec not found"
    else:
        return None, f"Sandbox: unavailable (no sandbox on {sys.platform})"
    if shutil.which(tool) is None:
        return None, f"Sandbox: unavailable ({missing})"
    problem = _probe(sandbox)
    if problem:
        return None, f"Sandbox: unavailable ({problem})"
    return sandbox, f"Sandbox: {sandbox.name}"


def _probe(sandbox: Sandbox) -> str | None:
    """Run `true` in the sandbox once; the reason it failed, or None."""
    import subprocess  # only here: most start-ups (--version, --help) never need it

    argv = sandbox.wrap(["true"], Path(tempfile.gettempdir()).resolve())
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROBE_TIMEOUT_S,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return f"{sandbox.name} did not finish a test command within {PROBE_TIMEOUT_S:g} s"
    except OSError as e:
        return f"{sandbox.name} cannot be started: {e.strerror or e}"
    if done.returncode != 0:
        lines = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        detail = lines[-1].strip() if lines else f"exit code {done.returncode}"
        return f"{sandbox.name} cannot create a sandbox here: {detail}"
    return None
