"""A plain newline-delimited JSON-RPC client for `mino --acp` over real pipes, with strict checks.

The agent runs as a real subprocess. A reader thread parses every line of its stdout: each must be
one JSON-RPC 2.0 object, and each message must match the official ACP schema (the Python SDK's
generated pydantic models, `acp.schema`) exactly: validating it and dumping it back must give the
same JSON, so a misspelt or unknown field fails as surely as a missing one. Anything else is
recorded in `violations` (the "nothing but ACP on stdout" check every test gets for free).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

AGENT_ARGV = [sys.executable, "-m", "mino_server", "--acp"]
NO_ANSWER = object()  # a handler that returns this leaves the agent's request unanswered


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class Pending:
    def __init__(self, msg_id: Any, method: str) -> None:
        self.id = msg_id
        self.method = method
        self._done = threading.Event()
        self.message: dict[str, Any] | None = None
        self.at: float | None = None  # when the answer arrived (time.monotonic)

    def set(self, message: dict[str, Any]) -> None:
        self.message = message
        self.at = time.monotonic()
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float = 20.0) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"no answer to {self.method} (id {self.id}) in {timeout} s")
        assert self.message is not None
        if "error" in self.message:
            err = self.message["error"]
            raise RpcError(err["code"], err["message"], err.get("data"))
        return self.message["result"]

    def error(self, timeout: float = 20.0) -> RpcError:
        try:
            result = self.result(timeout)
        except RpcError as exc:
            return exc
        raise AssertionError(f"expected an error from {self.method}, got the result {result!r}")


Handler = Callable[[dict[str, Any]], Any]

# ---- the schema oracle ----------------------------------------------------------------------------

_RESULTS = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
}
_AGENT_REQUESTS = {"session/request_permission": "RequestPermissionRequest"}
_AGENT_NOTIFICATIONS = {"session/update": "SessionNotification"}


def schema_problem(kind: str, method: str, value: Any) -> str | None:
    """Why `value` (a result, or the params of an agent request/notification) is not what the ACP
    schema says for `method`; None when it is exactly that."""
    from acp import schema

    table = {"result": _RESULTS, "request": _AGENT_REQUESTS, "notification": _AGENT_NOTIFICATIONS}[kind]
    name = table.get(method)
    if name is None:
        return f"{kind} {method} is not one an ACP agent sends"
    model = getattr(schema, name)
    try:
        parsed = model.model_validate(value)
    except Exception as exc:
        return f"{kind} {method} does not match {name}: {exc}"
    again = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if again != value:
        return f"{kind} {method} has fields {name} does not know or drops: sent {value!r}, schema keeps {again!r}"
    return None


class AcpClient:
    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        argv: list[str] | None = None,
        handlers: dict[str, Handler] | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv or AGENT_ARGV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.violations: list[str] = []
        self.messages: list[dict[str, Any]] = []  # every message received, in order
        self.agent_requests: list[dict[str, Any]] = []
        self._pending: dict[Any, Pending] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = iter(range(1, 1 << 30))
        self.stderr = bytearray()
        self.eof = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # ---- wire ----------------------------------------------------------------------------------
    def write_raw(self, data: bytes) -> None:
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(json.dumps(message).encode() + b"\n")

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            for line in out:
                try:
                    message = json.loads(line)
                except ValueError:
                    self.violations.append(f"a stdout line is not JSON: {line[:200]!r}")
                    continue
                if (
                    not line.endswith(b"\n")
                    or not isinstance(message, dict)
                    or message.get("jsonrpc") != "2.0"
                ):
                    self.violations.append(f"not one JSON-RPC 2.0 object per line: {line[:200]!r}")
                    continue
                self._check_schema(message)
                self._received(message)
        finally:
            self.eof.set()
            with self._cond:
                self._cond.notify_all()

    def _check_schema(self, message: dict[str, Any]) -> None:
        problem = None
        if "method" in message:
            kind = "request" if "id" in message else "notification"
            problem = schema_problem(kind, message["method"], message.get("params"))
        elif "result" in message:
            pending = self._pending.get(message.get("id"))
            if pending is not None and pending.method in _RESULTS:
                problem = schema_problem("result", pending.method, message["result"])
        elif "error" in message:
            err = message["error"]
            if not (
                isinstance(err, dict)
                and isinstance(err.get("code"), int)
                and isinstance(err.get("message"), str)
            ):
                problem = f"malformed error object {err!r}"
            elif "\n" in err["message"] or "Traceback" in err["message"]:
                problem = f"an error message is not one line: {err['message'][:300]!r}"
        if problem is not None:
            self.violations.append(problem)

    def _received(self, message: dict[str, Any]) -> None:
        with self._cond:
            self.messages.append(message)
            self._cond.notify_all()
        if "method" in message and "id" in message:
            with self._cond:
                self.agent_requests.append(message)
            threading.Thread(target=self._answer, args=(message,), daemon=True).start()
        elif "method" not in message:
            pending = self._pending.get(message.get("id"))
            if pending is not None:
                pending.set(message)

    def _answer(self, request: dict[str, Any]) -> None:
        handler = self.handlers.get(request["method"])
        if handler is None:
            error = {"code": -32601, "message": f"Unhandled method {request['method']}"}
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
            return
        result = handler(request["params"])
        if result is not NO_ANSWER:
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def answer(self, request: dict[str, Any], result: Any) -> None:
        """Answer an agent request by hand (for handlers that returned NO_ANSWER)."""
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr += chunk

    # ---- requests ------------------------------------------------------------------------------
    def start(self, method: str, params: Any = None) -> Pending:
        msg_id = next(self._ids)
        pending = self._pending[msg_id] = Pending(msg_id, method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return pending

    def request(self, method: str, params: Any = None, timeout: float = 20.0) -> Any:
        return self.start(method, params).result(timeout)

    def error(self, method: str, params: Any = None, timeout: float = 20.0) -> RpcError:
        return self.start(method, params).error(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ---- ACP shortcuts -------------------------------------------------------------------------
    def initialize(self) -> Any:
        return self.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
        )

    def new_session(self, cwd: Path, mcp_servers: list[Any] | None = None) -> str:
        result = self.request("session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []})
        return str(result["sessionId"])

    def prompt(self, session_id: str, *blocks: Any, timeout: float = 20.0) -> Any:
        return self.request("session/prompt", self.prompt_params(session_id, *blocks), timeout)

    @staticmethod
    def prompt_params(session_id: str, *blocks: Any) -> dict[str, Any]:
        prompt = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        return {"sessionId": session_id, "prompt": prompt}

    # ---- what the agent sent -------------------------------------------------------------------
    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        with self._cond:
            found = [
                m["params"]["update"]
                for m in self.messages
                if m.get("method") == "session/update"
                and (session_id is None or m["params"]["sessionId"] == session_id)
            ]
        return [u for u in found if kind is None or u["sessionUpdate"] == kind]

    def agent_text(self, session_id: str) -> str:
        return "".join(u["content"]["text"] for u in self.updates(session_id, "agent_message_chunk"))

    def index_of(self, predicate: Callable[[dict[str, Any]], bool]) -> int:
        with self._cond:
            return next(i for i, m in enumerate(self.messages) if predicate(m))

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._cond.wait(min(left, 0.02))  # also polls: `predicate` may look outside the client

    def wait_agent_request(self, method: str, count: int = 1, timeout: float = 20.0) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            matching = [r for r in self.agent_requests if r["method"] == method]
            return matching[count - 1] if len(matching) >= count else None

        return self.wait_for(found, timeout, f"{method} #{count}")  # type: ignore[no-any-return]

    # ---- lifecycle -----------------------------------------------------------------------------
    def close(self, timeout: float = 10.0) -> int:
        """EOF on the agent's stdin (how an editor ends it); the exit code."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.eof.wait(5)
        return code
