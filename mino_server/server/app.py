"""`mino --stdio`: the editor server (docs/PROTOCOL.md), on pygls, around one core Conversation.

Threads:
- main: reads frames from stdin (transport.py) and hands them to pygls's JsonRPCProtocol (rpc.py),
  which validates and busy-checks each request in arrival order, then runs it on pygls's pool;
- mino-load: imports pygls (~200 ms, nearly all lsprotocol.types) once start-up is done (or sooner
  when something needs it). The main thread answers `initialize` itself, so the editor gets its
  answer in about the time Python takes to start, and starts the store on `initialized`;
  `mino/state` and `mino/history` arriving before pygls are answered by a mino-early thread once
  start-up is done: the editor is ready when Mino is;
- mino-startup: builds the Conversation, opens the store and restores the session (it may have to ask
  `mino/confirm`, whose answer the main thread must be free to read);
- pool workers: turns, commands and the other requests. A turn streams `mino/event` from its worker;
- mino-sessions-watch: looks for other processes' session changes (core/store.py's Watcher) and sends
  `mino/sessionsChanged`.

stdout belongs to the protocol: fd 1 is pointed at stderr for everything else in the process,
child processes included, and fd 0 at /dev/null so nothing can read the client's messages.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote, urlsplit

from .. import __version__
from ..core.cancel import CancelToken
from ..jsonrpc import Cancels, Outgoing, core_error, error_message, valid_id
from ..stdio import Terminated, claim_stdio, configure_logging, end_what_mino_started, raise_on_sigterm
from . import protocol as P
from .handlers import EARLY, ROUTES
from .opening import open_conversation
from .state import StateReporter
from .transport import FrameError, FrameWriter, decode, read_frames
from .ui import ServerUI

if TYPE_CHECKING:
    from ..core.conversation import Conversation
    from ..core.store import Watcher
    from ..core.workspace_files import WorkspaceFiles
    from .rpc import MinoProtocol

log = logging.getLogger("mino.server")

SHUTDOWN_WAIT_S = 5.0  # how long shutdown/exit wait for an interrupted turn to write its end
ERROR, WARNING, INFO, LOG = P.MESSAGE_ERROR, P.MESSAGE_WARNING, P.MESSAGE_INFO, P.MESSAGE_LOG


@dataclass
class _Operation:
    method: str
    detail: str
    shows_busy: bool


def uri_to_path(uri: str, where: str) -> Path:
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise P.ProtocolError(
            P.INVALID_PARAMS, f"{where} must be a file:// URI of a local folder; got {uri!r}"
        )
    return Path(unquote(parts.path))


class MinoServer:
    def __init__(self, mode: str | None, writer: FrameWriter) -> None:
        self.mode: str | None = mode
        self.writer = writer
        self.workdir = Path.cwd()
        self.phase = "new"  # new → running (after initialize) → shutdown
        self.exit_requested = False
        self.rpc: MinoProtocol | None = None  # once pygls is imported
        self._loaded = threading.Event()
        self._load_now = threading.Event()  # set when start-up is done or something needs pygls
        self._load_error: BaseException | None = None
        self._conversation: Conversation | None = None  # made by the start-up thread (see conversation)
        self.session_hint: str | None = None  # initializationOptions.sessionId
        self._watcher: Watcher | None = None  # once the store is open
        self.unavailable: P.ProtocolError | None = None
        self.started = threading.Event()
        self._startup_lock = threading.Lock()
        self._startup_thread: threading.Thread | None = None
        self._op: _Operation | None = None
        self._op_cond = threading.Condition()
        self.cancels = Cancels()  # the running cancellable requests, by id
        self.outgoing = Outgoing()  # mino/approve and mino/confirm waiting for the client
        self.stopping = CancelToken()
        self._states = StateReporter()
        self._close_lock = threading.Lock()
        self._closed = False
        self.files: WorkspaceFiles | None = None  # once the conversation is open
        self.ui = ServerUI(self)

    @property
    def conversation(self) -> Conversation:
        """The conversation; requests other than initialize are answered after start-up made it."""
        if self._conversation is None:
            raise RuntimeError("the conversation is not open")
        return self._conversation

    # ---- loading pygls -----------------------------------------------------------------------
    def start_loading(self) -> None:
        threading.Thread(target=self._load, name="mino-load", daemon=True).start()

    def _load(self) -> None:
        # Start-up goes first: it is what the editor waits for (mino/state), and both are Python on
        # one GIL, so importing pygls beside it would only make it later.
        self._load_now.wait()
        try:
            from . import rpc

            self.rpc = rpc.build(self)
        except BaseException as exc:  # reported by the main thread, which needs pygls next
            self._load_error = exc
        finally:
            self._loaded.set()
        try:  # warm what `initialized` needs while the client is still reading the answer
            from ..core import conversation  # noqa: F401
        except Exception:
            pass

    def _wait_loaded(self) -> MinoProtocol:
        self._load_now.set()
        self._loaded.wait()
        if self._load_error is not None or self.rpc is None:
            raise SystemExit(f"mino --stdio: cannot load pygls: {self._load_error!r}")
        return self.rpc

    # ---- the read loop -----------------------------------------------------------------------
    def run(self, stream: BinaryIO) -> int:
        try:
            for item in read_frames(stream):
                message = item if isinstance(item, FrameError) else decode(item)
                if isinstance(message, FrameError):
                    self.send_error(None, message.code, message.message)
                else:
                    self.dispatch(message)
                if self.exit_requested:
                    break
        except Terminated:  # leave like on exit: interrupt the turn, release the session
            log.warning("terminated by a signal")
        return self.finish()

    def dispatch(self, message: dict[str, Any]) -> None:
        problem = _shape_problem(message)
        if problem is not None:
            msg_id = message.get("id")
            self.send_error(msg_id if valid_id(msg_id) else None, P.INVALID_REQUEST, problem)
            return
        if not self._loaded.is_set() and message.get("method") == "initialize" and "id" in message:
            # The fast path: answer before pygls has finished importing (same handler as below).
            try:
                call = self.prepare_request(message["id"], "initialize", message.get("params"))
                assert call is not None
                self.writer.send({"jsonrpc": "2.0", "id": message["id"], "result": call()})
            except P.ProtocolError as exc:
                self.send_error(message["id"], exc.code, exc.message, exc.data)
            except Exception as exc:
                log.exception("initialize failed")
                self.send_error(message["id"], P.INTERNAL_ERROR, P.internal_error_message(exc))
            return
        if not self._loaded.is_set() and message.get("method") == "initialized" and "id" not in message:
            # The store and the session open now, while pygls is still loading (not after it).
            self.on_notification("initialized", message.get("params"))
            return
        if not self._loaded.is_set() and message.get("method") in EARLY and "id" in message:
            self._answer_early(message)
            return
        self._wait_loaded().handle_message(message)

    def _answer_early(self, message: dict[str, Any]) -> None:
        """mino/state or mino/history before pygls has loaded: answered on a thread of its own as
        soon as start-up is done, so the editor is ready when Mino is, not when pygls is."""
        msg_id, method = message["id"], message["method"]
        try:
            self._check_phase()
            route = ROUTES[method]
            params = self._parse(route.params, message.get("params"))
            self.ensure_startup()
        except P.ProtocolError as exc:
            self.send_error(msg_id, exc.code, exc.message, exc.data)
            return
        handler = route.handler

        def answer() -> None:
            self.started.wait()
            try:
                if self.unavailable is not None:
                    raise self.unavailable
                result = self._guard(lambda: handler(self, params, None))
                self.writer.send({"jsonrpc": "2.0", "id": msg_id, "result": P.dump(result)})
            except P.ProtocolError as exc:
                self.send_error(msg_id, exc.code, exc.message, exc.data)
            except Exception as exc:
                log.exception("%s failed", method)
                self.send_error(msg_id, P.INTERNAL_ERROR, P.internal_error_message(exc))

        threading.Thread(target=answer, name="mino-early", daemon=True).start()

    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        self.writer.send(error_message(msg_id, code, message, data))

    # ---- requests (called by rpc.MinoProtocol on the main thread, in arrival order) ----------
    def prepare_request(self, msg_id: Any, method: str, raw: Any) -> Callable[[], Any] | None:
        """Check a request now; return the function that answers it (None: unknown method)."""
        if method == "initialize":
            if self.phase != "new":
                raise P.ProtocolError(P.INVALID_REQUEST, "initialize was already received; send it once.")
            params = self._parse(P.InitializeParams, raw)
            return lambda: self.initialize(params)
        if method == "shutdown":
            self._check_phase()
            self.phase = "shutdown"  # from now on, requests are refused in order
            return self._thread(self.do_shutdown)
        route = ROUTES.get(method)
        if route is None:
            return None
        self._check_phase()
        params = self._parse(route.params, raw)
        if route.check is not None:
            route.check(params)
        self.ensure_startup()
        op = None
        detail = route.exclusive(params)
        if detail is not None:
            op = _Operation(method, detail, route.shows_busy(params))
            self._reserve(op)
        token = self.cancels.start(msg_id) if route.cancellable else None
        handler = route.handler

        def answer() -> Any:
            try:
                self.started.wait()
                if self.unavailable is not None:
                    raise self.unavailable
                if self.conversation.stopped and not route.read_only:
                    # A storage failure stopped the chat (the CLI exits there): say so to everything.
                    raise P.ProtocolError(P.STORAGE_FAILED, self.conversation.stopped)
                if op is not None and op.shows_busy:
                    self.state_changed()  # busy, before the work starts
                return self._guard(lambda: handler(self, params, token))
            finally:
                if token is not None:
                    self.cancels.end(msg_id, token)
                if op is not None:
                    self._release(op)  # before the answer goes out: the next turn must not see busy

        return self._thread(answer)

    def _thread(self, func: Callable[[], Any]) -> Callable[[], Any]:
        from .rpc import mark_thread

        return mark_thread(func)

    def _check_phase(self) -> None:
        if self.phase == "new":
            raise P.ProtocolError(P.NOT_INITIALIZED, "The server is not initialized: send initialize first.")
        if self.phase == "shutdown":
            raise P.ProtocolError(
                P.INVALID_REQUEST, "The server is shutting down: no more requests after shutdown."
            )

    @staticmethod
    def _parse(cls: Any, raw: Any) -> Any:
        try:
            return P.parse(cls, {} if raw is None else raw)
        except P.ValidationError as exc:
            raise P.ProtocolError(P.INVALID_PARAMS, f"Invalid params: {exc}") from None

    def _reserve(self, op: _Operation) -> None:
        with self._op_cond:
            if self._op is not None:
                running = self._op
                raise P.ProtocolError(P.BUSY, "busy", {"detail": running.detail, "running": running.method})
            self._op = op

    def _release(self, op: _Operation) -> None:
        with self._op_cond:
            if self._op is op:
                self._op = None
            self._op_cond.notify_all()
        self.state_changed()

    def _guard(self, work: Callable[[], Any]) -> Any:
        from ..core.errors import StorageError

        try:
            return work()
        except Exception as exc:
            answer = core_error(exc)
            if answer is None:
                raise
            if isinstance(exc, StorageError):
                if self._conversation is not None:
                    self._conversation.stopped = str(exc)
                self.show_message(ERROR, str(exc))
            raise answer from None

    # ---- notifications -----------------------------------------------------------------------
    def on_notification(self, method: str, params: Any) -> None:
        if method == "initialized":
            if self.phase == "running":
                self.ensure_startup()
        elif method == "exit":
            self.exit_requested = True
        elif method == "$/cancelRequest":
            msg_id = params.get("id") if isinstance(params, dict) else None
            self.cancels.cancel(msg_id)  # an id that is no request's (an object, an array) does nothing
        else:
            log.debug("ignored notification %s", method)

    # ---- lifecycle ---------------------------------------------------------------------------
    def initialize(self, params: P.InitializeParams) -> dict[str, Any]:
        if params.workspaceFolders:
            workdir = uri_to_path(params.workspaceFolders[0].uri, "params.workspaceFolders[0].uri")
        elif params.rootUri:
            workdir = uri_to_path(params.rootUri, "params.rootUri")
        else:
            workdir = Path.cwd()
        if not workdir.is_dir():
            raise P.ProtocolError(
                P.INVALID_PARAMS, f"The workspace folder {workdir} does not exist or is not a folder."
            )
        options = params.initializationOptions
        if options is not None and options.mode is not None:
            self.mode = options.mode
        if options is not None:
            self.session_hint = options.sessionId
        self.workdir = workdir
        self.phase = "running"
        result = P.InitializeResult(
            serverInfo=P.ServerInfo(name="mino", version=__version__),
            capabilities=P.ServerCapabilities(
                experimental=P.ExperimentalCapabilities(
                    mino=P.MinoCapabilities(
                        protocolVersion=P.PROTOCOL_VERSION, maxMessageBytes=P.MAX_MESSAGE_BYTES
                    )
                )
            ),
        )
        return P.dump(result)

    def ensure_startup(self) -> None:
        with self._startup_lock:
            if self._startup_thread is None:
                self._startup_thread = threading.Thread(
                    target=self._startup, name="mino-startup", daemon=True
                )
                self._startup_thread.start()

    def _startup(self) -> None:
        try:
            self._open_conversation()
            self.state_changed()  # before any waiting request is answered
            if self._conversation is not None:  # list the files for `@` completion while the person reads
                self.workspace_files().warm()
        except Exception as exc:
            log.exception("start-up failed")
            self._set_unavailable("startup", f"Mino could not start: {P.one_line(exc)}")
        finally:
            self.started.set()
            self._load_now.set()

    def _open_conversation(self) -> None:
        opened = open_conversation(self.mode, self.workdir, self.ui, self.session_hint)
        if opened.conversation is None:
            why, line, data = opened.unavailable or ("startup", "Mino could not start.", {})
            self._set_unavailable(why, line, **data)
            return
        self._conversation = opened.conversation
        # An MCP server that gets ready or fails changes State.mcp (from its own thread).
        opened.conversation.on_mcp_change = self.state_changed
        if not self.stopping.cancelled:
            self._watcher = opened.conversation.store.watch(self._sessions_changed)
        for kind, text, shown in opened.messages:
            if shown:
                self.show_message(kind, text)
            else:
                self.log_message(text, kind)

    def _sessions_changed(self) -> None:
        if not self.stopping.cancelled:
            self.notify("mino/sessionsChanged", {})

    def _set_unavailable(self, kind: str, message: str, **data: Any) -> None:
        self.unavailable = P.ProtocolError(P.UNAVAILABLE, message, {"kind": kind, **data})
        self.show_message(ERROR, message)

    def do_shutdown(self) -> None:
        self._stop_work(SHUTDOWN_WAIT_S)

    def _stop_work(self, timeout: float) -> None:
        """Interrupt what runs, wait for it (bounded), close the conversation: its session is released."""
        self.stopping.cancel()  # wakes every wait for a client answer
        self.cancels.cancel_all()
        deadline = time.monotonic() + timeout
        with self._op_cond:
            while self._op is not None and (left := deadline - time.monotonic()) > 0:
                self._op_cond.wait(left)
            running = self._op
        if self._startup_thread is not None:
            self._startup_thread.join(max(0.0, deadline - time.monotonic()))
        if self._watcher is not None:  # started by the start-up thread, which is done (or stuck) now
            self._watcher.stop()
        with self._close_lock:
            if self._closed or self._conversation is None:
                return
            if running is not None or (self._startup_thread is not None and self._startup_thread.is_alive()):
                log.warning("%s did not end in %.0f s; leaving without closing the log", running, timeout)
                return
            self._closed = True
            try:
                self.conversation.close()
            except Exception:
                log.exception("closing the conversation failed")

    def finish(self) -> int:
        self._stop_work(SHUTDOWN_WAIT_S)
        return 0 if self.phase == "shutdown" else 1

    # ---- client requests -----------------------------------------------------------------------
    def state(self) -> P.State:
        with self._op_cond:
            op_busy = self._op is not None and self._op.shows_busy
        return self._states.state(self.conversation, op_busy)

    def state_changed(self, force: bool = False) -> None:
        """`mino/stateChanged` when session, restore problem, mode or busy differ from the last one sent."""
        if self._conversation is None or self.stopping.cancelled:
            return  # after shutdown the conversation is being closed; nobody needs the state any more
        self._states.changed(self.state, self.notify, force)

    def workspace_files(self) -> WorkspaceFiles:
        if self.files is None:
            from ..core.workspace_files import WorkspaceFiles

            self.files = WorkspaceFiles(self.conversation.workdir, self.conversation.config.home)
        return self.files

    # ---- talking to the client ---------------------------------------------------------------
    def notify(self, method: str, params: Any) -> None:
        rpc = self.rpc
        if rpc is not None:
            rpc.notify(method, params)
        elif not self._loaded.is_set():  # start-up runs while pygls loads; a notification needs no pygls
            self.writer.send({"jsonrpc": "2.0", "method": method, "params": P.dump(params)})

    def show_message(self, kind: int, text: str) -> None:
        sys.stderr.write(f"mino --stdio: {text}\n")
        self.notify("window/showMessage", {"type": kind, "message": text})

    def log_message(self, text: str, kind: int = LOG) -> None:
        sys.stderr.write(f"mino --stdio: {text}\n")
        self.notify("window/logMessage", {"type": kind, "message": text})

    def ask(self, method: str, params: dict[str, Any], cancel: CancelToken | None) -> Any:
        """Send a request to the client and wait for its result; None on error, cancel or exit."""
        if self.rpc is None and not self.stopping.cancelled:
            self._load_now.set()
            self._loaded.wait()  # start-up's recovery question can come before pygls is there
        if self.rpc is None or self.stopping.cancelled:
            return None
        msg_id = self.outgoing.new_id()
        future = self.rpc.send_request(method, params, msg_id=msg_id)
        if not self.outgoing.wait(msg_id, future, self.stopping, cancel):
            # Nobody needs the answer any more (forgotten: a late one is ignored); let the client
            # dismiss the question.
            self.notify("$/cancelRequest", {"id": msg_id})
            return None
        try:
            return future.result()
        except Exception as exc:
            log.info("%s answered with an error (treated as no): %s", method, P.one_line(exc))
            return None


def _shape_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'Invalid request: "jsonrpc" must be "2.0".'
    if "method" in message:
        if not isinstance(message["method"], str):
            return 'Invalid request: "method" must be a string.'
        if "id" in message and not valid_id(message["id"]):
            return 'Invalid request: "id" must be a number or a string.'
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return 'Invalid request: "params" must be an object or an array.'
        return None
    if "id" in message and ("result" in message or "error" in message):
        error = message.get("error")
        if "error" in message and not (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            return 'Invalid response: "error" must be an object with a numeric "code" and a string "message".'
        return None
    return 'Invalid request: a message needs a "method", or an "id" with a "result" or an "error".'


def serve(mode: str | None = None) -> int:
    """Run the server on stdin/stdout until exit or EOF. Ends the process (see the end)."""
    configure_logging("mino --stdio")
    stdin, stdout = claim_stdio()
    server = MinoServer(mode, FrameWriter(stdout))
    server.start_loading()
    raise_on_sigterm()
    code = server.run(stdin)
    sys.stderr.flush()
    # A tool stuck past the shutdown wait must not keep the process alive (pool threads are joined
    # at interpreter exit); everything that matters (log, lock) is closed or fsynced by now. What
    # Mino started (an MCP server still starting, what it left) goes with it.
    end_what_mino_started()
    os._exit(code)
