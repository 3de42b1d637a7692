"""The bash tool (docs/BEHAVIOUR.md, "Tools"): one command, its own process group, a bounded output, nothing left behind.

The command runs as `bash -c COMMAND` (inside the sandbox when there is one) in a new session, so
the timeout, a cancel, and the end of the command can signal its whole process group: SIGTERM,
a short grace, then SIGKILL. Background processes do not outlive the call: in the sandbox its pid
namespace ends them; without one, orphans.py ends those that left the group.

`outside_sandbox: true` (with a `reason`) runs one command without the sandbox — for what the
sandbox forbids on purpose, such as `git commit` writing .git/ — and is "bash without sandbox" in
the decision table: the person is asked in every mode except bypass, and sees the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..cancel import Cancelled, CancelToken
from ..contract import NO_SANDBOX_QUESTION, OUTSIDE_SANDBOX_QUESTION, Kind, ToolCategory
from ..values import Frozen, frozen
from ..words import protected_folders_changed, protected_walk_incomplete
from . import protected
from .base import (
    COMPLETED,
    FAILED,
    INTERRUPTED,
    ArgumentError,
    Prepared,
    ToolContext,
    ToolFailure,
    ToolOf,
    ToolResult,
    reject_unknown,
    require_str,
    schema,
)

if TYPE_CHECKING:
    from subprocess import Popen

    from .network import Listener
    from .sandbox import Sandbox

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
OUTPUT_CAP = 64 * 1024  # half for the start of the output, half for the end
KILL_GRACE_S = 0.5  # between SIGTERM and SIGKILL
KILL_WAIT_S = 5.0  # for the shell to be reaped after SIGKILL
DRAIN_S = 0.2  # for the pipe to close once the group is gone (a daemon that left the group may hold it)


@frozen
class BashArgs(Frozen):
    command: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    outside_sandbox: bool = False
    reason: str | None = None  # why outside_sandbox; shown in the approval


class BashTool(ToolOf[BashArgs, protected.Found]):
    name: ClassVar[str] = "bash"
    category: ClassVar[ToolCategory] = "execute"
    description: ClassVar[str] = (
        "Run a shell command with `bash -c` in the working directory and return its output "
        "(stdout and stderr together) followed by a line `[exit code: N]`. stdin is empty, so "
        "interactive programs will not work; pass flags such as --yes or pipe input in the command. "
        f"Output over {OUTPUT_CAP // 1024} KiB is cut in the middle (the start and the end are kept). "
        f"timeout_s defaults to {DEFAULT_TIMEOUT_S:g} seconds (at most {MAX_TIMEOUT_S:g}); on timeout "
        "the command and everything it started are killed. Background processes (even ones started "
        "with setsid or nohup) are stopped when the command ends, so do not start servers that must "
        "keep running. When a sandbox is active: files outside the working directory are read-only; "
        "inside it, the .git, .mino and .vscode folders are read-only too, at any depth (so git commit, git add and "
        "git checkout fail there); the Mino home folder cannot be written; /tmp is private and empty; "
        "there is no network; and unix sockets cannot be opened unless the user's configuration "
        "allows them. "
        "Only when a command must do what the sandbox forbids (such as git commit), set "
        "outside_sandbox to true and give a short reason: the command then runs without the sandbox "
        "and the user is asked to approve it, seeing the reason. Without a sandbox, that changes "
        "nothing. The user may be asked to approve any command."
    )
    parameters: ClassVar[dict[str, Any]] = schema(
        {
            "command": {"type": "string", "description": "The bash command line to run."},
            "timeout_s": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT_S,
                "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT_S:g}).",
            },
            "outside_sandbox": {
                "type": "boolean",
                "description": "true: run without the sandbox (the user is asked); requires reason.",
            },
            "reason": {
                "type": "string",
                "minLength": 1,
                "description": "Only with outside_sandbox: why the command cannot run in the sandbox.",
            },
        },
        ["command"],
    )

    def kind(self, ctx: ToolContext) -> Kind:
        return "sandboxed" if ctx.sandbox is not None else "other"

    def validate(self, args: dict[str, Any]) -> BashArgs:
        reject_unknown(args, {"command", "timeout_s", "outside_sandbox", "reason"})
        command = require_str(args, "command") or ""
        if "\0" in command:
            raise ArgumentError("argument 'command' must not contain a NUL byte")
        timeout = args.get("timeout_s")
        if timeout is None:
            timeout = DEFAULT_TIMEOUT_S
        elif isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ArgumentError("argument 'timeout_s' must be a number of seconds")
        elif not 0 < timeout <= MAX_TIMEOUT_S:
            raise ArgumentError(f"argument 'timeout_s' must be more than 0 and at most {MAX_TIMEOUT_S:g}")
        outside = args.get("outside_sandbox")
        if outside is not None and not isinstance(outside, bool):
            raise ArgumentError("argument 'outside_sandbox' must be true or false")
        reason = require_str(args, "reason", optional=True)
        if outside and reason is None:
            raise ArgumentError("argument 'reason' is required with outside_sandbox: true")
        if reason is not None and not outside:
            raise ArgumentError("argument 'reason' goes only with outside_sandbox: true")
        return BashArgs(command, float(timeout), bool(outside), reason)

    def prepare(self, args: BashArgs, ctx: ToolContext) -> Prepared[protected.Found]:
        fields = [("Command", args.command), ("Directory", str(ctx.workdir))]
        # The protected folders now: mounted read-only, and compared after the command (every
        # command, sandboxed or not: an approved one can make them too, and the person is told).
        found = protected.find(ctx.workdir, _home_inside(ctx))
        if args.outside_sandbox:
            # "bash without sandbox" in the decision table, whether or not there is a sandbox.
            return Prepared(
                [*fields, ("Sandbox", "none (requested)"), ("Reason", args.reason or "")],
                state=found,
                kind="other",
                question=OUTSIDE_SANDBOX_QUESTION,
            )
        if ctx.sandbox is None:
            return Prepared([*fields, ("Sandbox", "none")], state=found, question=NO_SANDBOX_QUESTION)
        if ctx.sandbox.unready:
            # Never a reason to run unsandboxed: the sandbox exists, the machine lacked resources.
            raise ToolFailure(
                f"The sandbox could not start ({ctx.sandbox.unready}); nothing was run. "
                "The next turn tries to start it again."
            )
        if ctx.plan:  # the whole file system read-only: the protected folders need no walk to stay so
            return Prepared([*fields, ("Sandbox", f"{ctx.sandbox.name}, read-only (plan mode)")], state=found)
        fields.append(("Sandbox", ctx.sandbox.name))
        if ctx.sandbox.network:
            from .network import shown_list

            fields.append(("Network", shown_list(ctx.sandbox.network)))
        if not found.complete:
            # Folders the walk missed cannot be kept read-only: not a sandbox to trust, so it asks.
            return Prepared(fields, protected_walk_incomplete(found.entries), state=found, kind="other")
        from ..rules import Subject

        return Prepared(fields, state=found, subject=Subject("bash", args.command))

    def run(self, args: BashArgs, ctx: ToolContext, prepared: Prepared[protected.Found]) -> ToolResult:
        ctx.cancel.check()
        sandbox = None if args.outside_sandbox else ctx.sandbox
        argv = ["bash", "-c", args.command]
        fds: list[int] = []
        listener = None
        if sandbox is not None:
            try:
                # The proxy (started with the first such command) and its socket; plan mode has no network.
                if sandbox.network and not ctx.plan:
                    from .network import proxy_for

                    listener = proxy_for(sandbox.network).listen()
                argv, fds = sandbox.wrap(
                    argv,
                    ctx.workdir,
                    ctx.home,
                    protected.mount_sources(ctx.workdir, prepared.state),
                    read_only=ctx.plan,
                    network=listener.folder if listener is not None else None,
                )
            except OSError as e:
                if listener is not None:
                    listener.close()
                raise ToolFailure(
                    f"Cannot prepare the sandbox in {ctx.workdir}: {e.strerror or e}."
                ) from None
        try:
            return self._run(args, ctx, prepared, sandbox, argv, fds, listener)
        finally:
            if listener is not None:
                listener.close()

    def _run(
        self,
        args: BashArgs,
        ctx: ToolContext,
        prepared: Prepared[protected.Found],
        sandbox: Sandbox | None,
        argv: list[str],
        fds: list[int],
        listener: Listener | None,
    ) -> ToolResult:
        import subprocess  # here, not at import: the tool set is loaded on start-up paths that run nothing

        from . import orphans  # with ctypes, ~2-4 ms: loaded by the sandbox probe before any command

        marker = orphans.new_marker()
        env = {k: v for k, v in os.environ.items() if k not in ctx.hidden_env}
        env[orphans.MARKER] = marker  # how a leftover that left the session is traced to this command
        try:
            proc, run = orphans.start(
                lambda: subprocess.Popen(
                    argv,
                    cwd=ctx.workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, away from the terminal's Ctrl-C
                    pass_fds=fds,
                ),
                marker,
                bare=sandbox is None,
            )
        except OSError as e:
            raise ToolFailure(f"Cannot start {argv[0]} in {ctx.workdir}: {e.strerror or e}.") from None
        finally:
            for fd in fds:
                os.close(fd)
        outcome, output = _supervise(proc, ctx.cancel, args.timeout_s, lambda: orphans.end(run))
        changed = protected.changes(prepared.state, protected.find(ctx.workdir, prepared.state.skip))
        # One line per refused destination, then the protected folders' notice: both the person sees.
        lines = listener.close() if listener is not None else []
        if changed:
            lines.append(protected_folders_changed(changed))
        notice = "\n".join(lines) or None
        told = f"\n{notice}" if notice else ""
        if outcome == "cancelled":
            if notice:  # what it made before the interrupt is told all the same
                return ToolResult(FAILED, f"{INTERRUPTED}{told}", notice)
            raise Cancelled()
        if output and not output.endswith("\n"):
            output += "\n"
        if outcome == "timeout":
            return ToolResult(
                FAILED, f"{output}[timed out after {args.timeout_s:g} s; process group killed]{told}", notice
            )
        return ToolResult(COMPLETED, output + _exit_line(proc.returncode) + told, notice)


def _home_inside(ctx: ToolContext) -> str | None:
    """MINO_HOME when it is inside the working directory (the sandbox hides it; not walked)."""
    home = os.path.realpath(ctx.home)
    return home if home.startswith(str(ctx.workdir) + os.sep) else None


def _exit_line(code: int) -> str:
    if code >= 0:
        return f"[exit code: {code}]"
    import signal

    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"[killed by {name}]"


class _Capture:
    """The first and last `cap // 2` bytes of a stream, and how long it was."""

    def __init__(self, cap: int) -> None:
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.half:  # trim now and then, not on every chunk
                del self.tail[: -self.half]

    def text(self) -> str:
        tail = self.tail[-self.half :]
        cut = self.total - len(self.head) - len(tail)
        if cut == 0:
            return (self.head + tail).decode("utf-8", "replace")
        return (
            self.head.decode("utf-8", "replace")
            + f"\n[... {cut} bytes of output cut; {self.total} bytes in all ...]\n"
            + tail.decode("utf-8", "replace")
        )


def _supervise(
    proc: Popen[bytes], cancel: CancelToken, timeout: float, end_leftovers: Callable[[], None] | None = None
) -> tuple[str, str]:
    """Wait for the command, collecting output; ("exited" | "timeout" | "cancelled", output).

    `end_leftovers()` runs once the shell is reaped and its group is gone, for what left the group."""
    import selectors
    import signal
    import threading
    import time

    assert proc.stdout is not None  # started with stdout=PIPE
    out = proc.stdout.fileno()
    capture = _Capture(OUTPUT_CAP)
    exited = threading.Event()
    eof = False
    # One selector wakes for output, for the shell's exit (a waiter thread) and for a cancel, so
    # nothing polls on a timer.
    wake_r, wake_w = os.pipe()
    wake_lock = threading.Lock()
    selector = selectors.DefaultSelector()
    selector.register(out, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)

    def wake() -> None:
        with wake_lock:  # a late cancel must not write to a closed (or reused) descriptor
            if wake_w >= 0:
                os.write(wake_w, b"\0")

    def wait_for_exit() -> None:
        proc.wait()
        exited.set()
        wake()

    def pump(seconds: float, done: Callable[[], bool]) -> None:
        nonlocal eof
        deadline = time.monotonic() + seconds
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for key, _ in selector.select(remaining):
                if key.fd == wake_r:
                    os.read(wake_r, 512)
                    continue
                data = os.read(out, 65536)
                if data:
                    capture.add(data)
                else:
                    selector.unregister(out)
                    eof = True

    def signal_group(sig: int) -> bool:
        try:
            os.killpg(proc.pid, sig)  # pgid == pid: start_new_session made the shell the leader
            return True
        except (ProcessLookupError, PermissionError):  # group gone (macOS: only zombies left)
            return False

    threading.Thread(target=wait_for_exit, name=f"bash-wait-{proc.pid}", daemon=True).start()
    unregister = cancel.on_cancel(wake)
    try:
        pump(timeout, lambda: exited.is_set() or cancel.cancelled)
        if exited.is_set():
            outcome = "exited"
        else:
            outcome = "cancelled" if cancel.cancelled else "timeout"
        # On timeout or cancel this stops the command; after a normal exit, whatever it left running.
        if signal_group(signal.SIGTERM):
            # Wait until the shell is gone and nothing holds our pipe any more. Group members that
            # closed the pipe cannot be watched without polling (and, in containers whose init
            # never reaps, their zombies would look alive), so the SIGKILL may follow them quickly.
            pump(KILL_GRACE_S, lambda: exited.is_set() and eof)
            signal_group(signal.SIGKILL)
            pump(KILL_WAIT_S, exited.is_set)
        if end_leftovers is not None:
            end_leftovers()  # before the drain: a leftover may be what holds the pipe open
        pump(DRAIN_S, lambda: eof)
    except BaseException:  # KeyboardInterrupt or a bug here: never leave the command running
        signal_group(signal.SIGKILL)
        if end_leftovers is not None:
            try:
                end_leftovers()
            except Exception:  # the first error is the one to report
                pass
        raise
    finally:
        unregister()
        with wake_lock:
            os.close(wake_w)
            wake_w = -1
        os.close(wake_r)
        selector.close()
        proc.stdout.close()
    return outcome, capture.text()
