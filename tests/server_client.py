"""A small JSON-RPC client for `mino --stdio` over real pipes, with strict framing checks.

The server runs as a real subprocess. A reader thread parses every byte of its stdout: each message
must be exactly `Content-Length: N\\r\\n\\r\\n` + N bytes of a JSON-RPC object; anything else is
recorded in `violations` (the "no stdout pollution" check every test gets for free).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar

from helpers import mino_env
from rpc_client import HANG_S, NO_ANSWER, Pending, RpcClient, RpcError

__all__ = ["NO_ANSWER", "Client", "Pending", "RpcError", "Spawn", "contract_problems", "servers"]

HEADER = re.compile(rb"^Content-Length: (\d+)\r\n$")


class Client(RpcClient):
    ARGV: ClassVar[list[str]] = [sys.executable, "-m", "mino_server", "--stdio"]

    # ---- wire: `Content-Length: N\r\n\r\n` + N bytes of JSON, nothing else -----------------------
    def encode(self, message: dict[str, Any]) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    def read_messages(self, out: IO[bytes]) -> Iterator[dict[str, Any]]:
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
            yield message

    # ---- requests --------------------------------------------------------------------------
    def cancel(self, pending: Pending) -> None:
        self.notify("$/cancelRequest", {"id": pending.id})

    # ---- what the server sent --------------------------------------------------------------
    def notifications(self, method: str) -> list[Any]:
        with self._cond:
            return [m.get("params") for m in self.messages if m.get("method") == method and "id" not in m]

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.notifications("mino/event") if type_ is None or e["type"] == type_]

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

    def stop(self, timeout: float = HANG_S) -> int:
        """shutdown + exit (if the server is still there); the exit code."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", timeout=timeout)
                self.notify("exit")
            except (OSError, TimeoutError, RpcError):
                pass
        return self.wait_exit(timeout)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()


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


Spawn = Callable[..., Client]


@contextlib.contextmanager
def servers(home: Path, base_url: str, ws: Path) -> Iterator[Spawn]:
    """Start `mino --stdio` servers on `home` in `ws`, talking to the model at `base_url` (initialized
    unless told otherwise). When the block ends each is shut down, and all it sent must match
    protocol.py exactly with no traceback on stderr."""
    clients: list[Client] = []

    def make(
        handlers: dict[str, Any] | None = None,
        mode: str | None = None,
        init: bool = True,
        initialized: bool = True,
    ) -> Client:
        client = Client(mino_env(home, base_url), ws, handlers=handlers)
        clients.append(client)
        if init:
            client.initialize(ws, mode=mode, initialized=initialized)
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.stop()
    for client in clients:
        assert contract_problems(client) == [], bytes(client.stderr).decode(errors="replace")
        assert b"Traceback" not in client.stderr, bytes(client.stderr).decode(errors="replace")
