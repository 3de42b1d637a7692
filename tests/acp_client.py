"""A plain newline-delimited JSON-RPC client for `mino --acp` over real pipes, with strict checks.

The agent runs as a real subprocess. A reader thread parses every line of its stdout: each must be
one JSON-RPC 2.0 object, and each message must match the official ACP schema (the Python SDK's
generated pydantic models, `acp.schema`) exactly: validating it and dumping it back must give the
same JSON, so a misspelt or unknown field fails as surely as a missing one. Anything else is
recorded in `violations` (the "nothing but ACP on stdout" check every test gets for free).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar

from acp import schema  # here, not in the reader thread: see schema_problem
from rpc_client import HANG_S, NO_ANSWER, RpcClient

__all__ = ["NO_ANSWER", "AcpClient", "schema_problem"]

# ---- the schema oracle ----------------------------------------------------------------------------

_RESULTS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
}
_AGENT_REQUESTS = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}
_AGENT_NOTIFICATIONS = {"session/update": "SessionNotification"}


def schema_problem(kind: str, method: str, value: Any) -> str | None:
    """Why `value` (a result, or the params of an agent request/notification) is not what the ACP
    schema says for `method`; None when it is exactly that.

    `acp.schema` is imported with this module, on the main thread, because its first import parses
    source with `ast` (pydantic reads field docstrings) and CPython 3.11's AST builder keeps its
    recursion count per interpreter, not per thread: imported lazily in a client's reader thread, its
    parsing raced the main thread's (pytest formatting a failure) and both raised "SystemError: AST
    constructor recursion depth mismatch"; pytest's INTERNALERROR ended the whole run (seen with the
    suite in reverse order, where an ACP client's first use is in test_instructions.py)."""
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


class AcpClient(RpcClient):
    ARGV: ClassVar[list[str]] = [sys.executable, "-m", "mino_server", "--acp"]

    # ---- wire: one JSON-RPC object per line, each as the ACP schema says ----------------------
    def encode(self, message: dict[str, Any]) -> bytes:
        return json.dumps(message).encode() + b"\n"

    def read_messages(self, out: IO[bytes]) -> Iterator[dict[str, Any]]:
        for line in out:
            try:
                message = json.loads(line)
            except ValueError:
                self.violations.append(f"a stdout line is not JSON: {line[:200]!r}")
                continue
            if not line.endswith(b"\n") or not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.violations.append(f"not one JSON-RPC 2.0 object per line: {line[:200]!r}")
                continue
            yield message

    def check(self, message: dict[str, Any]) -> None:
        problem = None
        if "method" in message:
            kind = "request" if "id" in message else "notification"
            problem = schema_problem(kind, message["method"], message.get("params"))
        elif "result" in message:
            method = self.sent_methods.get(message.get("id"))
            if method is not None and method in _RESULTS:
                problem = schema_problem("result", method, message["result"])
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

    # ---- ACP shortcuts -------------------------------------------------------------------------
    def initialize(self) -> Any:
        return self.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
        )

    def new_session(self, cwd: Path, mcp_servers: list[Any] | None = None) -> str:
        result = self.request("session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []})
        return str(result["sessionId"])

    def prompt(self, session_id: str, *blocks: Any, timeout: float | None = None) -> Any:
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

    # ---- lifecycle -----------------------------------------------------------------------------
    def close(self, timeout: float = HANG_S) -> int:
        """EOF on the agent's stdin (how an editor ends it); the exit code."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        return self.wait_exit(timeout)


def the_one_permission(env: dict[str, str], workdir: Path, option_id: str) -> dict[str, Any]:
    """Start `mino --acp` in `workdir`, send one prompt in a new session, answer every permission
    with `option_id`, and return the toolCall of the one permission asked. The turn must end, the
    process exit cleanly without a traceback and every message pass the SDK's schema."""
    answer = {"outcome": {"outcome": "selected", "optionId": option_id}}
    client = AcpClient(
        env,
        workdir,
        argv=[sys.executable, "-m", "mino_server", "--acp"],
        handlers={"session/request_permission": lambda p: answer},
    )
    try:
        client.initialize()
        sid = client.new_session(workdir)
        assert client.prompt(sid, "hello") == {"stopReason": "end_turn"}
        (asked,) = [r for r in client.incoming_requests if r["method"] == "session/request_permission"]
    finally:
        assert client.close() == 0
    assert client.violations == [] and b"Traceback" not in client.stderr
    call: dict[str, Any] = asked["params"]["toolCall"]
    return call
