"""MCP servers as tools (docs/BEHAVIOUR.md, "MCP servers"): what a server is, how its tools are
named, offered, asked about and called.

This module imports nothing of the MCP SDK: a conversation with no server configured never loads
it. The SDK lives behind the `Connector` port (the conversation passes `core/mcp_client.py`'s, on the
official Python SDK); a server, its descriptions, schemas and results are outside text, like a file's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, cast

from .cancel import CancelToken
from .contract import COMPLETED, FAILED, McpServerStatus, McpState, ToolCategory
from .tools.base import ArgumentError, Prepared, Tool, ToolContext, ToolResult
from .values import Frozen, Mutable, frozen, mutable

Origin = Literal["config", "client"]

START_TIMEOUT_S = 10.0  # each server's start and tool listing, unless its `start_timeout_s` says otherwise
MAX_TOOL_NAME = 64  # what the Responses API takes as a function name
MAX_DESCRIPTION_CHARS = 2048  # a server's description of one tool, as the model gets it
MAX_SCHEMA_BYTES = 32 * 1024  # one tool's input schema, as JSON; larger ones are offered as "any object"
MAX_TOOLS_PER_SERVER = 128
MAX_RESULT_CHARS = 256 * 1024  # a result's text, as the model gets it (read_file's bound)
MAX_ARGUMENT_BYTES = 256 * 1024  # the model's arguments for one call, as JSON
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@frozen
class ServerSpec(Frozen):
    """One MCP server as config.yaml or an ACP client names it: stdio (`command`) or HTTP (`url`)."""

    name: str
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    allow: frozenset[str] = frozenset()
    origin: Origin = "config"
    start_timeout_s: float = START_TIMEOUT_S

    @property
    def where(self) -> str:
        """What the approval's `Server` field names besides the name: the URL or the command."""
        return self.url if self.url is not None else shlex.join(self.command)


def server_env(
    spec: ServerSpec, hidden: frozenset[str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Mino's own environment minus the model's API key variables, unless `env` names them; `env` on top."""
    own = dict(os.environ if base is None else base)
    named = dict(spec.env)
    for key in hidden:
        if key not in named:
            own.pop(key, None)
    own.update(named)
    return own


# ---- reading the configuration ----------------------------------------------------------------


def parse_servers(raw: object, where: str, origin: Origin = "config") -> tuple[ServerSpec, ...]:
    """config.yaml's `mcp_servers` mapping, checked: ConfigError-worthy problems raise ValueError
    with a sentence naming the server and the key (`where` is how the caller names the setting)."""
    if not isinstance(raw, dict):
        raise ValueError(f"'{where}' must be a mapping of server names to settings, got {raw!r}")
    specs = []
    for name, entry in raw.items():
        if not isinstance(name, str) or not _good_name(name):
            raise ValueError(
                f"'{where}': a server name must be 1 to 64 printable characters, got {name!r:.80}"
            )
        specs.append(parse_server(name, entry, f"{where}.{name}", origin))
    return tuple(specs)


def parse_server(name: str, entry: object, where: str, origin: Origin = "config") -> ServerSpec:
    if not _good_name(name):
        raise ValueError(f"'{where}': a server name must be 1 to 64 printable characters, got {name!r:.80}")
    if not isinstance(entry, dict):
        raise ValueError(f"'{where}' must be a mapping with 'command' or 'url', got {entry!r}")
    known = {"command", "env", "cwd", "url", "headers", "allow", "start_timeout_s"}
    extra = sorted(str(k) for k in entry if k not in known)
    if extra:
        raise ValueError(f"'{where}': unknown key '{extra[0]}' (known keys: {', '.join(sorted(known))})")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise ValueError(
            f"'{where}' needs exactly one of 'command' (a list: the program and its arguments) or 'url'"
        )
    allow = entry.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(t, str) and t for t in allow):
        raise ValueError(f"'{where}.allow' must be a list of tool names, got {allow!r}")
    timeout = entry.get("start_timeout_s", START_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise ValueError(
            f"'{where}.start_timeout_s' must be a number of seconds (more than 0, at most 600), got {timeout!r}"
        )
    timeout = float(timeout)
    if has_url:
        for key in ("env", "cwd"):
            if key in entry:
                raise ValueError(
                    f"'{where}.{key}' is for a server started as a command; this one has a 'url'"
                )
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"'{where}.url' must start with http:// or https://, got {url!r}")
        headers = _string_map(entry.get("headers", {}), f"{where}.headers")
        return ServerSpec(
            name=name,
            url=url,
            headers=headers,
            allow=frozenset(allow),
            origin=origin,
            start_timeout_s=timeout,
        )
    if "headers" in entry:
        raise ValueError(f"'{where}.headers' is for a server reached by 'url'; this one has a 'command'")
    command = entry["command"]
    if isinstance(command, str):
        raise ValueError(
            f"'{where}.command' must be a list (the program, then each argument), got the string {command!r}; "
            f"write it as {json.dumps(command.split())}"
        )
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise ValueError(f"'{where}.command' must be a non-empty list of strings, got {command!r}")
    if not command[0] or any("\0" in a for a in command):
        raise ValueError(f"'{where}.command' has an empty program name or a NUL character")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise ValueError(f"'{where}.cwd' must be a folder path, got {cwd!r}")
    env = _string_map(entry.get("env", {}), f"{where}.env")
    return ServerSpec(
        name=name,
        command=tuple(command),
        env=env,
        cwd=cwd,
        allow=frozenset(allow),
        origin=origin,
        start_timeout_s=timeout,
    )


def _good_name(name: str) -> bool:
    """A name is shown in lines and questions: printable, one line, bounded."""
    return bool(name.strip()) and name.isprintable() and len(name) <= 64


def _string_map(raw: object, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and "\0" not in k + v for k, v in raw.items()
    ):
        raise ValueError(f"'{where}' must be a mapping of names to string values, got {raw!r}")
    return tuple(raw.items())


def with_client_servers(
    configured: tuple[ServerSpec, ...], client: list[ServerSpec]
) -> tuple[ServerSpec, ...]:
    """A client's servers added after the configured ones, never replacing one: a clashing name is
    suffixed (`git` → `git-2`)."""
    taken = {s.name for s in configured}
    out = list(configured)
    for spec in client:
        name, n = spec.name, 2
        while name in taken:
            name, n = f"{spec.name}-{n}", n + 1
        taken.add(name)
        out.append(dataclasses.replace(spec, name=name))
    return tuple(out)


# ---- names and outside text ---------------------------------------------------------------------


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp__SERVER__TOOL`, characters outside [A-Za-z0-9_-] as `_`, at most 64, unique in `taken`."""
    base = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"[:MAX_TOOL_NAME]
    name, n = base, 2
    while name in taken:
        suffix = f"_{n}"
        name, n = base[: MAX_TOOL_NAME - len(suffix)] + suffix, n + 1
    taken.add(name)
    return name


def outside_text(text: str, limit: int) -> str:
    """A server's text for the model: control characters (escape sequences' ESC included) dropped,
    bounded with a line saying so. Front ends escape it again wherever they show it."""
    text = _CONTROL.sub("", text)
    if len(text) > limit:
        text = f"{text[:limit]}\n[cut: {len(text) - limit} more characters]"
    return text


def input_schema(schema: object) -> dict[str, Any]:
    """The tool's input schema as the model gets it: an object schema of bounded size, else "any object"."""
    if isinstance(schema, dict) and schema.get("type") == "object":
        try:
            if len(json.dumps(schema)) <= MAX_SCHEMA_BYTES:
                return cast(dict[str, Any], schema)
        except (TypeError, ValueError):
            pass
    return {"type": "object"}


ARGUMENT_LABEL = "argument "


def argument_label(name: str) -> str:
    """An argument's name as a field label. A server names it, so it must never pass for one of
    Mino's own fields (`Directory`, `Sandbox`, `Server`, …): always `argument NAME`, with only safe
    characters in NAME (no space, so no label of Mino's can be formed), and Mino's deciding fields
    are shown after it (display.DECIDING)."""
    return ARGUMENT_LABEL + (_UNSAFE.sub("_", name)[:64] or "_")


# ---- the port to an MCP client library ----------------------------------------------------------


@frozen
class ToolInfo(Frozen):
    name: str  # the server's own name for it
    description: str
    schema: dict[str, Any]


@frozen
class CallOutcome(Frozen):
    text: str
    is_error: bool


class ServerGone(Exception):
    """The server stopped (exited, closed its stream, failed its HTTP session): the call failed."""


class Connection(Protocol):
    tools: list[ToolInfo]

    def call(self, tool: str, arguments: dict[str, Any], cancel: CancelToken) -> CallOutcome:
        """Raises Cancelled (after telling the server), ServerGone, or ToolFailure."""
        ...

    def close(self) -> None: ...


# connect(spec, env, cwd, timeout_s, on_exit) -> Connection; raises anything with a one-line message.
# `on_exit(why)` is called (any thread) when a ready server stops.
Connector = Callable[[ServerSpec, dict[str, str], str, float, Callable[[str], None]], Connection]


# ---- the servers of one conversation ------------------------------------------------------------


@mutable
class Server(Mutable):
    spec: ServerSpec
    state: McpState = "starting"
    error: str | None = None
    connection: Connection | None = None
    tools: dict[str, McpTool] = field(default_factory=dict)


class McpHub:
    """A conversation's MCP servers: started once, in parallel, on threads of their own; a turn
    offers the tools of the servers ready by then and never waits for one that is not.

    A failed start or a server that stops is one line (`MCP server NAME: ...`), queued for the
    conversation to show on its own thread (`lines()`), and the server's tools are gone."""

    def __init__(
        self,
        specs: tuple[ServerSpec, ...],
        workdir: Path,
        hidden_env: frozenset[str],
        connector: Connector,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.servers = [Server(spec) for spec in specs]
        self._hidden = hidden_env
        self._workdir = workdir
        self._connector = connector
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.on_change = on_change

    def start(self) -> None:
        if not self.servers:
            return
        connector = self._connector
        for server in self.servers:
            t = threading.Thread(
                target=self._start, args=(server, connector), name=f"mino-mcp-{server.spec.name}", daemon=True
            )
            self._threads.append(t)
            t.start()

    def _start(self, server: Server, connector: Connector) -> None:
        spec = server.spec
        try:
            env = server_env(spec, self._hidden) if spec.url is None else {}
            cwd = resolve_cwd(spec, self._workdir)
            connection = connector(
                spec, env, cwd, spec.start_timeout_s, lambda why: self._failed(server, why)
            )
        except Exception as exc:
            self._failed(server, _one_line(exc))
            return
        with self._lock:
            if self._closed or server.state == "failed":
                closing: Connection | None = connection
            else:
                closing = None
                server.connection = connection
                taken = {t for s in self.servers for t in s.tools}
                for info in connection.tools[:MAX_TOOLS_PER_SERVER]:
                    name = tool_name(spec.name, info.name, taken)
                    server.tools[name] = McpTool(name, info, server, self)
                server.state = "ready"
        if closing is not None:
            closing.close()
        self._changed()

    def _failed(self, server: Server, why: str) -> None:
        with self._lock:
            if self._closed or server.state == "failed":
                return
            server.state, server.error, server.tools = "failed", why, {}
            self._lines.append(f"MCP server {server.spec.name}: {why}")
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                pass

    def lines(self) -> list[str]:
        """The failure lines not shown yet (each once)."""
        with self._lock:
            lines, self._lines = self._lines, []
        return lines

    def tools(self) -> dict[str, Tool]:
        with self._lock:
            return {
                name: cast(Tool, tool)
                for s in self.servers
                if s.state == "ready"
                for name, tool in s.tools.items()
            }

    def status(self) -> list[McpServerStatus]:
        with self._lock:
            return [
                McpServerStatus(name=s.spec.name, state=s.state, tools=len(s.tools), error=s.error)
                for s in self.servers
            ]

    def wait_started(self, timeout: float) -> None:
        """Wait until every start has succeeded or failed (`mino -p`, which has one turn; tests)."""
        for t in self._threads:
            t.join(timeout)

    def close(self) -> None:
        """Stops every server this hub started (their processes exit; no orphans)."""
        with self._lock:
            self._closed = True
            connections = [s.connection for s in self.servers if s.connection is not None]
            for s in self.servers:
                s.connection = None
        # In parallel: each may wait for its server's shutdown steps (seconds for one that ignores
        # EOF), and the process is exiting or the session closing meanwhile.
        threads = [threading.Thread(target=_close_quietly, args=(c,), daemon=True) for c in connections]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def _close_quietly(connection: Connection) -> None:
    try:
        connection.close()
    except Exception:
        pass


# ---- one server tool as a Mino tool -------------------------------------------------------------


class McpTool:
    """A server's tool through Mino's four steps: every call decided by the table (`other`, or
    `allowed` when the configuration's `allow` names it), shown with its server and arguments."""

    category: ClassVar[ToolCategory] = "other"

    def __init__(self, name: str, info: ToolInfo, server: Server, hub: McpHub) -> None:
        self.name = name
        self.info = info
        self.server = server
        self.hub = hub
        self.description = outside_text(
            f"(MCP server {server.spec.name}, tool {info.name}) {info.description}", MAX_DESCRIPTION_CHARS
        )
        self.parameters = input_schema(info.schema)

    def kind(self, ctx: ToolContext) -> Literal["other", "allowed"]:
        return "allowed" if self.info.name in self.server.spec.allow else "other"

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(args)) > MAX_ARGUMENT_BYTES:
            raise ArgumentError(f"the arguments are over {MAX_ARGUMENT_BYTES // 1024} KiB as JSON")
        return args

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared[None]:
        spec = self.server.spec
        fields = [("Server", f"{spec.name} ({spec.where})")]
        for key, value in args.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            fields.append((argument_label(key), shown))
        # Bound to what was shown: the turn hands run() the very arguments these fields show.
        from .rules import Subject

        return Prepared(fields=fields, subject=Subject("mcp", f"{spec.name}/{self.info.name}"))

    def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared[None]) -> ToolResult:
        server = self.server
        connection = server.connection
        if connection is None or server.state != "ready":
            why = server.error or "it is not running"
            return ToolResult(
                FAILED, f"MCP server {server.spec.name} is not available ({why}); nothing was sent."
            )
        try:
            outcome = connection.call(self.info.name, args, ctx.cancel)
        except ServerGone as exc:
            self.hub._failed(server, f"stopped during a call ({_one_line(exc)})")
            return ToolResult(
                FAILED, f"MCP server {server.spec.name} stopped during the call: {_one_line(exc)}"
            )
        text = outside_text(outcome.text, MAX_RESULT_CHARS)
        return ToolResult(FAILED if outcome.is_error else COMPLETED, text)


def content_text(blocks: list[tuple[str, str | None]]) -> str:
    """A result's content blocks, (type, text): text is the result, other kinds are named, not shown."""
    parts = [
        text if kind == "text" and text is not None else f"[{kind} content not shown]"
        for kind, text in blocks
    ]
    return "\n".join(parts)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return outside_text(" ".join(text.split()), 500)


def status_lines(hub: McpHub | None) -> list[str]:
    """`/mcp`: each server with its state and its tools."""
    if hub is None or not hub.servers:
        return ['No MCP servers. Add them to config.yaml under mcp_servers (README, "MCP servers").']
    lines = []
    for s in hub.servers:
        spec = s.spec
        origin = " (from the editor)" if spec.origin == "client" else ""
        head = f"{spec.name}{origin}: {s.state}"
        if s.state == "failed" and s.error:
            head += f" ({s.error})"
        lines.append(f"{head} — {spec.where}")
        for name, tool in sorted(s.tools.items()):
            allowed = " (allowed without asking in accept-edits)" if tool.info.name in spec.allow else ""
            lines.append(f"  {name}{allowed}")
    return lines


def resolve_cwd(spec: ServerSpec, workdir: Path) -> str:
    """A relative `cwd` is taken from the working directory; none means the working directory."""
    if spec.cwd is None:
        return str(workdir)
    return str((workdir / spec.cwd).resolve())
