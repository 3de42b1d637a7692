"""In-process helpers: a recording UI and a core conversation wired to the scripted model; the home
and environment of a Mino started as a subprocess; a model service that always answers the same."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rpc_client import HANG_S

from mino_server.core.cancel import CancelToken
from mino_server.core.commands import CommandResult, run_command
from mino_server.core.config import Config, load_config
from mino_server.core.contract import ApprovalRequest, Confirmation, Event, MemoryProblem
from mino_server.core.conversation import Conversation
from mino_server.core.sessions.store import SessionStore
from mino_server.core.store import Store
from mino_server.server.protocol import dump


def conversation_on(config: Config, workdir: Path, ui: Any) -> Conversation:
    """One conversation on its own store, as the CLI and the editor server make it."""
    return Conversation(Store(config), workdir, ui)


@dataclass(frozen=True)
class Asked:
    """An approval request as the tests read it: fields as (label, value) pairs."""

    turn_id: str
    call_id: str
    tool: str
    fields: list[tuple[str, str]]
    warning: str | None
    workdir: str

    @staticmethod
    def of(request: ApprovalRequest) -> Asked:
        fields = [(f.label, f.value) for f in request.fields]
        return Asked(request.turnId, request.callId, request.tool, fields, request.warning, request.workdir)


@dataclass
class RecordingUI:
    """Answers approvals and confirmations from lists; records everything it was shown."""

    approvals: list[bool] = field(default_factory=list)
    confirms: list[bool] = field(default_factory=list)
    typed: list[str | None] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    asked: list[Asked] = field(default_factory=list)
    confirm_messages: list[str] = field(default_factory=list)
    problems: list[list[tuple[str, str]]] = field(default_factory=list)

    def event(self, event: Event) -> None:
        self.events.append(dump(event))  # as the editor receives it

    def approve(self, request: ApprovalRequest, cancel: CancelToken) -> bool:
        self.asked.append(Asked.of(request))
        return self.approvals.pop(0) if self.approvals else False

    def confirm(self, question: Confirmation, cancel: CancelToken | None = None) -> bool:
        self.confirm_messages.append(question.message)
        return self.confirms.pop(0) if self.confirms else False

    def ask_text(self, prompt: str) -> str | None:
        return self.typed.pop(0) if self.typed else None

    def memory_problems(self, directory: str, problems: list[MemoryProblem]) -> None:
        self.problems.append([(p.file, p.reason) for p in problems])

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def quiet_home(tmp_path: Path) -> Path:
    """A MINO_HOME (tmp_path/home) with the sandbox off: no bwrap probe, so a faster start, and the
    same decisions on every machine."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text('sandbox: "off"\n')
    return home


def mino_env(home: Path, base_url: str) -> dict[str, str]:
    """The environment of a `mino` subprocess on `home`, talking to the model service at `base_url`."""
    env = dict(os.environ, MINO_HOME=str(home), MINO_BASE_URL=base_url, MINO_API_KEY="test")
    env.pop("MINO_MODEL", None)
    return env


def session_records(home: Path, session_id: str) -> list[dict[str, Any]]:
    """A session's records, loaded as Mino loads them (raises when the log cannot be loaded)."""
    log = SessionStore(home / "sessions").open_log(session_id)
    try:
        return list(log.read_records())
    finally:
        log.close()


def wait_until(check: Callable[[], object], what: str, timeout: float = HANG_S) -> None:
    """Poll `check` until it holds; `timeout` is a hang guard (the wait ends as soon as it holds)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.02)


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def running(pid: int) -> bool:
    """The process exists and is not a zombie (its state read from /proc)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object a line; none when the file does not exist (yet)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def assert_damaged_user_message(base_url: str, workdir: Path, field: dict[str, Any], match: str) -> None:
    """A session log whose first user_message carries `field` (a bad value of an optional part) does
    not load: LogError naming line 1 and matching `match`; the same record with the part empty is fine."""
    import pytest

    from mino_server.core.sessions.log import LogError

    conversation = make_conversation(base_url, workdir)
    conversation.open()
    assert conversation.log is not None
    path = conversation.log.path
    conversation.close()
    bad = {"seq": 1, "type": "user_message", "turn_id": "t", "at": "x", "text": "hi", **field}
    empty = {key: [] for key in field}
    path.write_text(json.dumps(bad) + "\n" + json.dumps({**bad, "seq": 2, **empty}) + "\n")
    with pytest.raises(LogError, match=f"line 1: {match}"):
        SessionStore(path.parent).open_log(path.name.removesuffix(".jsonl"))


def make_conversation(
    base_url: str, workdir: Path, ui: RecordingUI | None = None, mode: str | None = None
) -> Conversation:
    env = dict(os.environ)
    env["MINO_BASE_URL"] = base_url
    env["MINO_API_KEY"] = "test-key"
    config = load_config(env=env, mode=mode)
    return Conversation(Store(config), workdir, ui or RecordingUI())


# A hang guard for configured MCP servers' start: Python and an SDK, or npx, can take over 10 s
# on a loaded machine (the tests give the fixture a 120 s start timeout).
MCP_START_S = 150


def conversation_with_servers(
    base_url: str, workdir: Path, ui: RecordingUI, mode: str | None = None, wait_s: float = MCP_START_S
) -> Conversation:
    """A conversation opened, once every MCP server it configures is ready or has failed."""
    conversation = make_conversation(base_url, workdir, ui, mode=mode)
    conversation.open()
    try:
        assert conversation.mcp is not None
        conversation.mcp.wait_started(wait_s)
    except BaseException:
        conversation.close()
        raise
    return conversation


def command_result(conversation: Conversation, line: str) -> tuple[CommandResult, list[str]]:
    """A slash command as the CLI runs it: its result (stop or not) and the lines it showed."""
    out: list[str] = []
    return run_command(conversation, line, out.append, conversation.ui.ask_text), out  # type: ignore[attr-defined]


def command(conversation: Conversation, line: str) -> list[str]:
    return command_result(conversation, line)[1]


def turn(conversation: Conversation, text: str) -> Any:
    return conversation.run_turn(text, CancelToken())


def texts(request: dict[str, Any]) -> list[str]:
    """Every text of the input items of a request, in order."""
    out = []
    for item in request["input"]:
        if item.get("type") == "message":
            content = item["content"]  # a string (what Mino sends) or a list of parts
            out.extend([content] if isinstance(content, str) else (part["text"] for part in content))
        elif item.get("type") == "function_call":
            out.append(item["arguments"])
        elif item.get("type") == "function_call_output":
            out.append(item["output"])
    return out


class FixedAnswerServer(http.server.ThreadingHTTPServer):
    """A model service on 127.0.0.1 that answers every POST with one fixed status, content type and
    body (what some proxies send, or what the scripted model cannot), serving until close()."""

    def __init__(self, body: bytes, content_type: str = "text/event-stream", status: int = 200) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
