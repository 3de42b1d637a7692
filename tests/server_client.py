"""A small JSON-RPC client for `mino --stdio` over real pipes, with strict framing checks.

The server runs as a real subprocess. A reader thread parses every byte of its stdout: each message
must be exactly `Content-Length: N\\r\\n\\r\\n` + N bytes of a JSON-RPC object; anything else is
recorded in `violations` (the "no stdout pollution" check every test gets for free).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVER_ARGV = [sys.executable, "-m", "mino_server", "--stdio"]
HEADER = re.compile(rb"^Content-Length: (\d+)\r\n$")


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class Pending:
    def __init__(self, msg_id: Any) -> None:
        self.id = msg_id
        self._done = threading.Event()
        self.message: dict[str, Any] | None = None

    def set(self, message: dict[str, Any]) -> None:
        self.message = message
        self._done.set()

    def result(self, timeout: float = 15.0) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"no answer to request {self.id} in {timeout} s")
        assert self.message is not None
        if "error" in self.message:
            err = self.message["error"]
            raise RpcError(err["code"], err["message"], err.get("data"))
        return self.message["result"]

    def error(self, timeout: float = 15.0) -> RpcError:
        try:
            result = self.result(timeout)
        except RpcError as exc:
            return exc
        raise AssertionError(f"expected an error, got the result {result!r}")


Handler = Callable[[dict[str, Any]], Any]


class Client:
    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        argv: list[str] | None = None,
        handlers: dict[str, Handler] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            argv or SERVER_ARGV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.violations: list[str] = []
        self.messages: list[dict[str, Any]] = []  # every message received, in order
        self.server_requests: list[dict[str, Any]] = []
        self._pending: dict[Any, Pending] = {}
        self.sent_methods: dict[Any, str] = {}  # request id → method, to check results by type
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
        body = json.dumps(message).encode()
        self.write_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                header = out.readline()
                if not header:
                    return
                m = HEADER.match(header)
                blank = out.readline() if m else b""
                if not m or blank != b"\r\n":
                    self.violations.append(f"bad frame header {header[:200]!r} {blank[:50]!r}")
                    return
                body = out.read(int(m.group(1)))
                try:
                    message = json.loads(body)
                except ValueError:
                    self.violations.append(f"body is not JSON: {body[:200]!r}")
                    return
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    self.violations.append(f"not a JSON-RPC 2.0 object: {body[:200]!r}")
                    return
                self._received(message)
        finally:
            self.eof.set()
            with self._cond:
                self._cond.notify_all()

    def _received(self, message: dict[str, Any]) -> None:
        with self._cond:
            self.messages.append(message)
            self._cond.notify_all()
        if "method" in message and "id" in message:
            self.server_requests.append(message)
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
        try:
            result = handler(request["params"])
        except RpcError as exc:
            self.send(
                {"jsonrpc": "2.0", "id": request["id"], "error": {"code": exc.code, "message": exc.message}}
            )
            return
        if result is not NO_ANSWER:
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr += chunk

    # ---- requests --------------------------------------------------------------------------
    def start(self, method: str, params: Any = None) -> Pending:
        msg_id = next(self._ids)
        pending = self._pending[msg_id] = Pending(msg_id)
        self.sent_methods[msg_id] = method
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return pending

    def request(self, method: str, params: Any = None, timeout: float = 15.0) -> Any:
        return self.start(method, params).result(timeout)

    def error(self, method: str, params: Any = None, timeout: float = 15.0) -> RpcError:
        return self.start(method, params).error(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def cancel(self, pending: Pending) -> None:
        self.notify("$/cancelRequest", {"id": pending.id})

    # ---- what the server sent --------------------------------------------------------------
    def notifications(self, method: str) -> list[Any]:
        with self._cond:
            return [m.get("params") for m in self.messages if m.get("method") == method and "id" not in m]

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.notifications("mino/event") if type_ is None or e["type"] == type_]

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._cond.wait(left)

    def wait_server_request(self, method: str, timeout: float = 15.0) -> dict[str, Any]:
        return self.wait_for(  # type: ignore[no-any-return]
            lambda: next((r for r in self.server_requests if r["method"] == method), None), timeout, method
        )

    # ---- lifecycle -------------------------------------------------------------------------
    def initialize(self, workdir: Path | None, mode: str | None = None, initialized: bool = True) -> Any:
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": {}, "rootUri": None}
        if workdir is not None:
            params["workspaceFolders"] = [{"uri": workdir.resolve().as_uri(), "name": workdir.name}]
        if mode is not None:
            params["initializationOptions"] = {"mode": mode}
        result = self.request("initialize", params)
        if initialized:
            self.notify("initialized", {})
        return result

    def stop(self, timeout: float = 10.0) -> int:
        """shutdown + exit (if the server is still there); the exit code."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", timeout=timeout)
                self.notify("exit")
            except (OSError, TimeoutError, RpcError):
                pass
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = 10.0) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.eof.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return code

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()


NO_ANSWER = object()  # a handler that returns this leaves the server's request unanswered


def contract_problems(client: Client) -> list[str]:
    """What the server sent that does not match protocol.py exactly (strict: no unknown fields)."""
    from mino_server.server import protocol as P

    problems = list(client.violations)
    for message in list(client.messages):
        try:
            if "method" in message:
                spec = P.BY_NAME.get(message["method"])
                if spec is None:
                    problems.append(f"undocumented method from the server: {message['method']}")
                elif spec.params is not None:
                    P.parse(spec.params, message.get("params"), message["method"], strict=True)
            elif "error" in message:
                error = message["error"]
                text = error.get("message", "")
                if not isinstance(error.get("code"), int) or "\n" in text or "Traceback" in json.dumps(error):
                    problems.append(f"error is not one line without a traceback: {error}")
            else:
                spec = P.BY_NAME.get(client.sent_methods.get(message.get("id"), ""))
                if spec is not None and spec.result not in (None, P.NOTIFICATION):
                    P.parse(spec.result, message["result"], f"{spec.name} result", strict=True)
        except P.ValidationError as exc:
            problems.append(str(exc))
    return problems
