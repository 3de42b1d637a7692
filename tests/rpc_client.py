"""What the JSON-RPC test clients share: Mino as a real subprocess over real pipes, a reader thread,
requests that wait for their answers, and the other side's requests answered from handlers.

Each client brings its framing and its strict checks: server_client.Client (`mino --stdio`, LSP
framing, protocol.py) and acp_client.AcpClient (`mino --acp`, one JSON per line, the ACP schema).
Whatever breaks the framing or the checks is recorded in `violations`.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar

HANG_S = 60.0  # a wait for an answer, an event or an exit that ends only on a hang (see TIMEOUT)
NO_ANSWER = object()  # a handler that returns this leaves the request unanswered (answer() it later)

Handler = Callable[[dict[str, Any]], Any]


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class Pending:
    """A request sent, waiting for its answer."""

    def __init__(self, msg_id: Any, method: str, timeout: float) -> None:
        self.id = msg_id
        self.method = method
        self.timeout = timeout  # the client's default wait
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

    def result(self, timeout: float | None = None) -> Any:
        timeout = self.timeout if timeout is None else timeout
        if not self._done.wait(timeout):
            raise TimeoutError(f"no answer to {self.method} (id {self.id}) in {timeout} s")
        assert self.message is not None
        if "error" in self.message:
            err = self.message["error"]
            raise RpcError(err["code"], err["message"], err.get("data"))
        return self.message["result"]

    def error(self, timeout: float | None = None) -> RpcError:
        try:
            result = self.result(timeout)
        except RpcError as exc:
            return exc
        raise AssertionError(f"expected an error from {self.method}, got the result {result!r}")


class RpcClient:
    """The shared part; a subclass says how messages are framed (`encode`, `read_messages`) and may
    check each message it receives (`check`)."""

    ARGV: ClassVar[list[str]]  # how Mino is started unless told
    # How long a request waits for its answer unless told: a hang guard, not a speed limit. 15 s was
    # missed by first answers on a loaded machine (two `make test-stress` runs beside other builds,
    # load average 16-19 on 2 cores), where a process gets a small slice of a core.
    TIMEOUT: ClassVar[float] = HANG_S

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        argv: list[str] | None = None,
        handlers: dict[str, Handler] | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv or self.ARGV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.violations: list[str] = []
        self.messages: list[dict[str, Any]] = []  # every message received, in order
        self.incoming_requests: list[dict[str, Any]] = []  # the requests Mino sent, in order
        self._pending: dict[Any, Pending] = {}
        self.sent_methods: dict[Any, str] = {}  # request id → method, to check results by type
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = iter(range(1, 1 << 30))
        self.stderr = bytearray()
        self.eof = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # ---- framing (the subclass's) --------------------------------------------------------------
    def encode(self, message: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def read_messages(self, out: IO[bytes]) -> Iterator[dict[str, Any]]:
        """Every JSON-RPC object on Mino's stdout; what breaks the framing goes to `violations`."""
        raise NotImplementedError

    def check(self, message: dict[str, Any]) -> None:
        """Look at each message as it arrives (before it is handled); problems go to `violations`."""

    # ---- wire ----------------------------------------------------------------------------------
    def write_raw(self, data: bytes) -> None:
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(self.encode(message))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for message in self.read_messages(self.proc.stdout):
                self.check(message)
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
            with self._cond:
                self.incoming_requests.append(message)
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
            self.answer(request, result)

    def answer(self, request: dict[str, Any], result: Any) -> None:
        """Answer one of Mino's requests by hand (for handlers that returned NO_ANSWER)."""
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr += chunk

    # ---- requests ------------------------------------------------------------------------------
    def start(self, method: str, params: Any = None) -> Pending:
        msg_id = next(self._ids)
        pending = self._pending[msg_id] = Pending(msg_id, method, self.TIMEOUT)
        self.sent_methods[msg_id] = method
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return pending

    def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        return self.start(method, params).result(timeout)

    def error(self, method: str, params: Any = None, timeout: float | None = None) -> RpcError:
        return self.start(method, params).error(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    # ---- what Mino sent ------------------------------------------------------------------------
    def wait_for(
        self, predicate: Callable[[], Any], timeout: float | None = None, what: str = "condition"
    ) -> Any:
        deadline = time.monotonic() + (self.TIMEOUT if timeout is None else timeout)
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._cond.wait(min(left, 0.02))  # also polls: `predicate` may look outside the client

    def wait_incoming_request(
        self, method: str, count: int = 1, timeout: float | None = None
    ) -> dict[str, Any]:
        """The `count`-th request named `method` that Mino sent, once it has arrived."""

        def found() -> dict[str, Any] | None:
            matching = [r for r in self.incoming_requests if r["method"] == method]
            return matching[count - 1] if len(matching) >= count else None

        return self.wait_for(found, timeout, f"{method} #{count}")  # type: ignore[no-any-return]

    # ---- lifecycle -----------------------------------------------------------------------------
    def wait_exit(self, timeout: float = HANG_S) -> int:
        """The exit code, once the process has ended and its stdout is read to the end."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self.eof.wait(HANG_S)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return code
