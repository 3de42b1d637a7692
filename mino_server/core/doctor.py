"""`mino doctor`: what a turn needs, checked one by one (docs/BEHAVIOUR.md, "mino doctor").

The checks return data (Check); the CLI words and prints them (cli.doctor_main). Text in a Check
may come from outside (a server's error message, a file name, a lock note): front ends escape it.
Nothing here writes, except that load_config creates MINO_HOME (0700) as every start does.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .config import FIRST_RUN, Config, home_dir, load_config
from .errors import ConfigError, StorageError, StoreLocked
from .values import Frozen, frozen

if TYPE_CHECKING:
    from .sessions.store import Holder, SessionStore

CheckName = Literal["config", "key", "endpoint", "wire", "sandbox", "network", "home", "vscode", "mcp"]
ENDPOINT_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 64 * 1024  # of an answer read by a check (a hostile server could send without end)
# Where VS Code, its remote server, code-server and VSCodium install extensions, under the home folder.
EXTENSION_DIRS = (
    ".vscode/extensions",
    ".vscode-insiders/extensions",
    ".vscode-server/extensions",
    ".vscode-oss/extensions",
    ".local/share/code-server/extensions",
)
EXTENSION_NAME = "mino-vscode"  # editor/vscode/package.json "name"


@frozen
class Check(Frozen):
    name: CheckName
    ok: bool | None  # None: nothing to check here (e.g. no VS Code extension installed)
    needed: bool  # a turn cannot run while this check fails (for `home`: while what it found fails)
    found: str  # what was found, one line
    fix: str | None = None  # what to do, when not ok


@frozen
class Report(Frozen):
    checks: list[Check]

    @property
    def ready(self) -> bool:
        """Everything a turn needs is there (the exit status: 0)."""
        return all(c.ok is not False for c in self.checks if c.needed)


def run_doctor(
    protocol_version: int,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Every check; `protocol_version` is the editor protocol this mino's `--stdio` speaks."""
    env = dict(os.environ) if env is None else env
    checks: list[Check] = []
    try:
        config = load_config(model=model, base_url=base_url, env=env)
    except ConfigError as exc:
        checks.append(Check("config", False, True, str(exc), "correct it; the keys: README.md, config.yaml"))
        home = home_dir(env)
        checks.append(check_home(Config(home=home)))
        checks.append(check_sandbox(Config(home=home)))
        checks.append(check_vscode(env, protocol_version))
        return Report(checks)
    path = config.home / "config.yaml"
    checks.append(Check("config", True, True, f"{path}" if path.exists() else f"{path}: none (defaults)"))
    checks.append(check_key(config))
    if config.setup_problem() is None:
        checks.append(check_endpoint(config))
        if checks[-1].ok:
            checks.append(check_wire(config))
    else:  # OpenAI's endpoint answers 401 to every request without a key: nothing more to learn
        checks.append(Check("endpoint", None, True, f"{config.base_url}: not asked until a key is set"))
    checks.append(check_sandbox(config))
    if config.sandbox_network:
        checks.append(check_network(config))
    checks.append(check_home(config))
    checks.append(check_vscode(env, protocol_version))
    if config.mcp_servers:
        checks.append(check_mcp(config, env))
    return Report(checks)


def check_mcp(config: Config, env: Mapping[str, str]) -> Check:
    """config.yaml's MCP servers, cheaply: each stdio server's program is found (on PATH, or the
    path given); HTTP servers are named, not contacted. Nothing is started."""
    import shutil

    parts, missing = [], []
    for spec in config.mcp_servers:
        if spec.url is not None:
            parts.append(f"{spec.name}: {spec.url} (not contacted)")
            continue
        program = spec.command[0]
        found = shutil.which(program, path=dict(spec.env).get("PATH", env.get("PATH")))
        if found is None:
            missing.append(spec.name)
            parts.append(f"{spec.name}: {program} not found")
        else:
            parts.append(f"{spec.name}: {found}")
    fix = None
    if missing:
        names = ", ".join(f"mcp_servers.{n}.command" for n in missing)
        fix = f"install the program or correct {names} in {config.home / 'config.yaml'}"
    return Check("mcp", not missing, False, "; ".join(parts), fix)


def check_key(config: Config) -> Check:
    names = ", ".join(config.key_variables)
    if config.api_key_source is not None:
        return Check("key", True, True, f"from {config.api_key_source} (the value is not shown)")
    if config.setup_problem() is not None:
        return Check(
            "key",
            False,
            True,
            f"none set ({names}) for {config.base_url}",
            f"set {config.api_key_env}, or MINO_BASE_URL for a local server ({FIRST_RUN})",
        )
    return Check("key", True, True, f"none set ({names}); none is sent to {config.base_url}")


def check_endpoint(config: Config) -> Check:
    """`GET {base_url}/models`: reachable, and the key accepted (no model runs, nothing is billed)."""
    from .http1 import Client, HTTPFailure, HTTPTimeout
    from .model_client import is_loopback, service_message

    url = f"{config.base_url}/models"
    where = f"{config.base_url}, {config.base_url_origin}"
    loopback = is_loopback(config.base_url)
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        with Client(ENDPOINT_TIMEOUT_S, trust_env=not loopback) as client:
            response = client.get(url, headers=headers)
            body = response.read(MAX_ANSWER_BYTES)  # only its message is shown
    except HTTPTimeout:
        return Check(
            "endpoint",
            False,
            True,
            f"GET {url}: no answer within {ENDPOINT_TIMEOUT_S:g} s ({where})",
            "start the server, or correct the base URL",
        )
    except HTTPFailure as exc:
        reason = str(exc)  # http1 words it: "connection refused", "cannot resolve the host name", ...
        return Check(
            "endpoint",
            False,
            True,
            f"GET {url}: {' '.join(reason.split())} ({where})",
            "start the server, or correct the base URL (MINO_BASE_URL, --base-url or config.yaml base_url)",
        )
    status = response.status_code
    if status == 200:
        return Check("endpoint", True, True, f"GET {url}: HTTP 200 ({config.base_url_origin})")
    said = " ".join(service_message(response, body).split())[:200]
    found = f"GET {url}: HTTP {status}: {said} ({where})"
    if status in (401, 403):
        fix = "set a valid key in " + " or ".join(config.key_variables)
    elif status in (404, 405):
        fix = "correct the base URL: the server's OpenAI-compatible root" + (
            "" if config.base_url.endswith("/v1") else ", which usually ends in /v1"
        )
    else:
        fix = "see the server's log; Mino retries 429 and 5xx answers in a turn"
    return Check("endpoint", False, True, found, fix)


WIRE_PATHS = {"responses": "responses", "chat": "chat/completions"}


def check_wire(config: Config) -> Check:
    """Which API the server answers: `POST {base_url}/responses` and `/chat/completions` with an
    empty body. A server with the endpoint refuses the body (400, 422); one without answers 404 or
    405. No model runs, nothing is billed."""
    from .http1 import Client, HTTPFailure
    from .model_client import is_loopback

    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    answers: dict[str, bool | None] = {}
    headers["Content-Type"] = "application/json"
    with Client(ENDPOINT_TIMEOUT_S, trust_env=not is_loopback(config.base_url)) as client:
        for wire, path in WIRE_PATHS.items():
            try:
                response = client.post(f"{config.base_url}/{path}", b"{}", headers)
                status = response.status_code
                response.read(MAX_ANSWER_BYTES)  # read out: the connection serves the next path
            except HTTPFailure:
                answers[wire] = None  # unknown: the endpoint check already said whether it is reachable
                continue
            answers[wire] = status not in (404, 405)
    said = "; ".join(
        f"/{WIRE_PATHS[w]} {'answers' if a else 'not found' if a is False else 'no answer'}"
        for w, a in answers.items()
    )
    found = f"{said} (wire_api: {config.wire_api})"
    if answers[config.wire_api] is not False:
        return Check("wire", True, True, found)
    other = next((w for w, a in answers.items() if a and w != config.wire_api), None)
    fix = (
        f"set wire_api: {other} in config.yaml"
        if other
        else "correct the base URL: the server answers neither API"
    )
    return Check("wire", False, True, found, fix)


def check_sandbox(config: Config) -> Check:
    """The start-up probe's verdict and its reason (tools/sandbox.py detect)."""
    from .tools import sandbox

    box, line = sandbox.detect(config.sandbox, config.sandbox_unix_sockets, config.sandbox_network)
    found = line.removeprefix("Sandbox: ")
    if box is not None and box.unready:
        fix = "free resources (open files, processes, memory) and run mino doctor again"
        return Check("sandbox", False, False, found, fix)
    if box is not None:
        return Check("sandbox", True, False, f"{found}: the probe ran a test command in it and trusts it")
    if config.sandbox == "off":
        fix = "set sandbox: auto in config.yaml to sandbox commands"
    elif "bwrap not found" in line:
        fix = "install bubblewrap (apt-get install bubblewrap)"
    elif "seccomp" in line.lower():
        fix = "install libseccomp (apt-get install libseccomp2), or see docs/SECURITY.md"
    else:
        fix = "see docs/SECURITY.md; until then every command asks before it runs unsandboxed"
    return Check("sandbox", False, False, found, fix)


# Run in the sandbox (python -I -S): CONNECT through the proxy to a listed and an unlisted target,
# then a direct connection and a DNS lookup; one word each.
NETWORK_PROBE = r"""
import os, socket, sys
host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
def through(target):
    try:
        s = socket.create_connection((host, int(port)), timeout=20)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        head = s.recv(300).decode("latin-1")
        s.close()
        return head.split(" ", 2)[1] if head.startswith("HTTP/") else "none"
    except OSError:
        return "none"
def refused(f):
    try:
        f()
    except OSError:
        return "refused"
    return "reached"
print("listed", through(sys.argv[1]))
print("unlisted", through(sys.argv[2]))
print("direct", refused(lambda: socket.create_connection(("1.1.1.1", 443), timeout=5)))
print("dns", refused(lambda: socket.getaddrinfo("example.com", 443)))
"""
NETWORK_PROBE_UNLISTED = "mino-doctor.invalid:443"
NETWORK_PROBE_TIMEOUT_S = 60.0


def check_network(config: Config) -> Check:
    """config.yaml's sandbox_network: a sandboxed command reaches the first listed name (not a
    wildcard) through the proxy, and not an unlisted one, nor anything directly, nor DNS."""
    import subprocess
    import tempfile

    from .tools import sandbox
    from .tools.network import parse_entry, proxy_for, show

    box, line = sandbox.detect(config.sandbox, config.sandbox_unix_sockets, config.sandbox_network)
    if box is None or not box.network:
        return Check(
            "network",
            False,
            False,
            f"sandbox_network is set, but {line.removeprefix('Sandbox: ')}: sandboxed commands have no network",
            "see the sandbox check above",
        )
    entries = [parse_entry(e) for e in box.network]
    named = next((e for e in entries if not e.wildcard), None)
    listed = show(named.host, named.port or 443) if named is not None else None
    listener = proxy_for(box.network).listen()
    workdir = Path(tempfile.mkdtemp(prefix="mino-doctor-"))
    try:
        from .tools.sandbox import base_python

        command = [base_python(), "-I", "-S", "-c", NETWORK_PROBE, listed or NETWORK_PROBE_UNLISTED]
        argv, fds = box.wrap(
            [*command, NETWORK_PROBE_UNLISTED], workdir, config.home, network=listener.folder
        )
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, pass_fds=fds, timeout=NETWORK_PROBE_TIMEOUT_S
            )
        finally:
            for fd in fds:
                os.close(fd)
        seen = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        if not seen:  # the probe never ran: that says nothing of what the sandbox lets through
            why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            return Check(
                "network", False, False, f"the test command did not run: {why}", "see docs/SECURITY.md"
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("network", False, False, f"the test command did not run: {exc}", "see docs/SECURITY.md")
    finally:
        listener.close()
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    leaks = [
        what
        for what, bad in (
            ("an unlisted name", seen.get("unlisted") != "403"),
            ("a direct connection", seen.get("direct") != "refused"),
            ("DNS", seen.get("dns") != "refused"),
        )
        if bad
    ]
    if leaks:
        return Check(
            "network",
            False,
            False,
            f"a sandboxed command reached more than sandbox_network: {', '.join(leaks)}",
            "do not rely on sandbox_network here; see docs/SECURITY.md",
        )
    rest = "an unlisted name, a direct connection and DNS refused"
    if listed is None:
        return Check("network", True, False, f"only wildcards listed, none tried; {rest}")
    if seen.get("listed") != "200":
        answer = seen.get("listed", "none")
        return Check(
            "network",
            False,
            False,
            f"a sandboxed command could not reach {listed} through Mino's proxy "
            f"(answer: {answer if answer != 'none' else 'no answer'}); {rest}",
            f"check {listed} in sandbox_network and that this machine reaches it",
        )
    return Check("network", True, False, f"a sandboxed command reaches {listed} through Mino's proxy; {rest}")


def check_home(config: Config) -> Check:
    home = config.home
    try:
        st = home.stat()
    except OSError as exc:
        return Check("home", False, True, f"{home}: {exc.strerror}", "set MINO_HOME to a folder you own")
    problems: list[str] = []
    fixes: list[str] = []
    if st.st_uid != os.geteuid():
        problems.append(f"owned by uid {st.st_uid}, not {os.geteuid()}")
        fixes.append("chown it to yourself or set MINO_HOME")
    if stat.S_IMODE(st.st_mode) & 0o077:
        problems.append(f"mode {stat.S_IMODE(st.st_mode):o}: others can read it")
        fixes.append(f"chmod 700 {home}")
    if not os.access(home, os.W_OK | os.X_OK):
        problems.append("not writable")
        fixes.append("make it writable, or set MINO_HOME")
    sessions = _count(config.sessions_dir, ".jsonl")
    unreadable = _unreadable(home)
    from .memory import load_memories
    from .sessions.store import SessionStore

    entries, memory_problems = load_memories(config.memory_dir)
    holders, store_lock = (
        _holders(SessionStore(config.sessions_dir)) if config.sessions_dir.is_dir() else ({}, None)
    )
    held = ", ".join(
        f"{sid[:8]} by pid {h.pid} in {h.workdir or 'an unknown folder'}" for sid, h in holders.items()
    )
    parts = [f"{home} (0{stat.S_IMODE(st.st_mode):o})", f"sessions: {sessions}", f"memories: {len(entries)}"]
    parts.append(f"open: {held}" if held else "no session open")
    if store_lock:
        problems.append(store_lock)
        fixes.append("end the Mino that holds sessions.lock (its pid: `fuser` on the file)")
    if memory_problems:
        problems.append(
            f"{len(memory_problems)} memory file(s) not loaded: "
            + "; ".join(f"{f}: {r}" for f, r in memory_problems[:3])
        )
        fixes.append(f"fix or delete them in {config.memory_dir}")
    if unreadable:
        problems.append(f"unreadable: {', '.join(unreadable[:3])}" + (" …" if len(unreadable) > 3 else ""))
        fixes.append("make them readable (chmod u+r) or remove them")
    found = ", ".join(parts) + ("; " + "; ".join(problems) if problems else "")
    # Memory problems, unreadable files and a loose mode do not stop a turn; an unusable home does.
    blocking = st.st_uid != os.geteuid() or not os.access(home, os.W_OK | os.X_OK)
    return Check("home", not problems, blocking or not problems, found, "; ".join(fixes) or None)


def _holders(sessions: SessionStore) -> tuple[dict[str, Holder], str | None]:
    """Who has which session open, asked as Minos ask it (under the short store lock, so no claim
    races the probe); when that lock stays taken, the lock notes and why."""
    try:
        with sessions.exclusive():
            return sessions.holders(), None
    except (StoreLocked, StorageError) as exc:
        return sessions.notes(), str(exc)


def _count(directory: Path, suffix: str) -> int:
    try:
        return sum(1 for e in os.scandir(directory) if e.name.endswith(suffix))
    except OSError:
        return 0


def _unreadable(home: Path, limit: int = 2000) -> list[str]:
    """Files under MINO_HOME that cannot be opened for reading (relative paths; at most `limit` looked at)."""
    out: list[str] = []
    seen = 0
    for root, _dirs, files in os.walk(home):
        for name in files:
            seen += 1
            if seen > limit:
                return out
            path = Path(root) / name
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != 40:  # ELOOP: a symbolic link, which Mino never follows there anyway
                    out.append(str(path.relative_to(home)))
                continue
            os.close(fd)
    return out


def check_vscode(env: Mapping[str, str], protocol_version: int) -> Check:
    """The installed Mino extension's protocol version (package.json "mino.protocolVersion") against
    this server's: the extension starts `mino --stdio` and speaks that version to it."""
    user_home = Path(env.get("HOME") or Path.home())
    found: list[tuple[Path, object]] = []
    for sub in EXTENSION_DIRS:
        try:
            entries = list(os.scandir(user_home / sub))
        except OSError:
            continue
        for entry in entries:
            manifest = Path(entry.path) / "package.json"
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name") == EXTENSION_NAME:
                mino = data.get("mino")
                found.append(
                    (Path(entry.path), mino.get("protocolVersion") if isinstance(mino, dict) else None)
                )
    if not found:
        return Check("vscode", None, False, "no Mino extension installed (needed in VS Code only)")
    wrong = [(p, v) for p, v in found if v != protocol_version]
    if not wrong:
        return Check("vscode", True, False, f"{found[0][0]}: protocol {protocol_version}, as this mino")
    path, version = wrong[0]
    said = (
        "no protocol version in its package.json (an older build)"
        if version is None
        else f"protocol {version}"
    )
    return Check(
        "vscode",
        False,
        False,
        f"{path}: {said}; this mino speaks protocol {protocol_version}",
        "build and install the extension from this checkout (editor/vscode/README.md)",
    )
