"""`mino --acp`: the Agent Client Protocol front end (docs/ACP.md).

One process serves many ACP sessions. Each is one core Conversation (its own session log, working
directory from session/new or session/load, mode and running turn) on one shared Store; the ACP
session ID is the Mino session ID, so session/list and session/load work on Mino's sessions.

Threads:
- main: reads one JSON-RPC message per line from stdin and dispatches it in arrival order.
  initialize, authenticate, session/list, session/set_mode, session/set_config_option and
  session/cancel are answered right there;
- one worker per session/new, session/load, session/resume, session/close and session/prompt: the
  core is synchronous and blocking (a turn streams, asks and runs tools; a close waits for the
  cancelled turn to end), so it runs where it may block. Its updates are
  written by that same worker before its answer, so a client sees every session/update of a turn
  before the turn's result;
- approvals and client files: a worker sends session/request_permission (or fs/read_text_file,
  fs/write_text_file) and waits for the answer (read by the main thread), for session/cancel, or
  for the process to stop, whichever comes first.

Why not the official Python SDK (PyPI `agent-client-protocol`) for the connection: it is asyncio
end to end, and the core blocks. Every text delta, tool call and approval of a turn would cross from
a worker thread into the event loop and back (run_coroutine_threadsafe), and the order of a turn's
updates against its result would depend on the loop's scheduling rather than on one thread writing
them in order. Its import (pydantic and a 5,800-line generated schema) also costs 0.5-0.65 s on
the CI machine before the first byte could be answered, where this front end answers initialize
in the time Python takes to start. ACP's framing is one JSON object per line, so the transport here
is 80 lines of the standard library. The SDK's generated schema is the oracle instead: the tests
check every message this front end sends against it (and the official TypeScript SDK's client
drives a real `mino --acp` in editor/acp-client-test/).

stdout carries only ACP messages: fd 1 is pointed at stderr for everything else in the process,
child processes included, and fd 0 at /dev/null so nothing else can read the client's messages.
No traceback reaches the client: an unexpected failure is one line with -32603, the traceback goes
to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..jsonrpc import (
    BUSY,
    UNAVAILABLE,
    RpcError,
)
from ..stdio import Terminated, claim_stdio, configure_logging, end_what_mino_started, raise_on_sigterm
from . import mapping as M
from . import prompting
from .peer import AcpPeer, Handlers, Reply
from .session import AcpSession, ClientFiles, SessionUI
from .transport import Writer

if TYPE_CHECKING:
    from ..core.config import Config
    from ..core.conversation import Conversation
    from ..core.store import Store

log = logging.getLogger("mino.acp")

# The JSON-RPC layer's codes (mino_server/jsonrpc.py) keep the meaning they have in docs/PROTOCOL.md;
# -32002 is ACP's own.
NOT_FOUND = M.NOT_FOUND
AUTH_REQUIRED = M.AUTH_REQUIRED

STOP_WAIT_S = 5.0  # how long an exit waits for interrupted turns to write their end
SESSION_CHANGING = "This session is being loaded; wait for session/load to answer."


class AcpAgent(AcpPeer):
    """The session verbs (docs/ACP.md): initialize, authenticate, session/new, load, resume, list,
    close, set_mode, set_config_option and prompt, on the peer (peer.py) that reads and writes."""

    def __init__(
        self,
        writer: Writer,
        mode: str | None,
        model: str | None = None,
        base_url: str | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        super().__init__(writer)
        self.mode = mode
        self.reasoning_effort = reasoning_effort
        self.model = model
        self.base_url = base_url
        self.client_reads = False  # clientCapabilities.fs: the client reads and writes files for Mino
        self.client_writes = False
        self.sessions: dict[str, AcpSession] = {}
        self._changing: set[str] = set()  # session IDs being created or loaded
        self._initialized_with: dict[str, Any] | None = None  # the answer to initialize, for a second one
        self._store: Store | None = None
        self._config: Config | None = None
        self._store_lock = threading.RLock()  # store() loads the config under it

    # ---- the methods ------------------------------------------------------------------------------
    def methods(self) -> tuple[Handlers, Handlers]:
        """(answered on the read loop, answered on a worker of their own): see the module's Threads."""
        inline: Handlers = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/list": self.list_sessions,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
        }
        threaded: Handlers = {
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/close": self.close_session,
            "session/prompt": lambda params: prompting.prompt(self, params),
        }
        return inline, threaded

    # ---- the store -------------------------------------------------------------------------------
    def store(self) -> Any:
        """The process's Store (config loaded once); -32003 when the configuration is unusable."""
        from ..core.store import Store

        with self._store_lock:
            if self._store is None:
                self._store = Store(self.config())
            return self._store

    def config(self) -> Config:
        """The process's Config, loaded once (initialize needs it for authMethods, before the rest
        of the core loads); -32003 when it is unusable."""
        from ..core.config import load_config
        from ..core.errors import ConfigError

        with self._store_lock:
            if self._config is None:
                try:
                    self._config = load_config(
                        model=self.model,
                        base_url=self.base_url,
                        mode=self.mode,
                        reasoning_effort=self.reasoning_effort,
                    )
                except ConfigError as exc:
                    raise RpcError(UNAVAILABLE, f"Mino cannot start: {exc}", {"kind": "config"}) from None
            return self._config

    def warm_up(self) -> None:
        """Load the core and the configuration while the client reads the initialize answer."""
        try:
            from ..core import commands, context, conversation  # noqa: F401

            self.store()
        except Exception:  # reported when a request needs it
            pass

    def _conversation(
        self, workdir: Path, mcp_servers: list[Any] | None = None
    ) -> tuple[Any, SessionUI, list[str]]:
        """A conversation opened on the store without a session (the request picks one), with the
        client's MCP servers (`client_mcp_servers`) added to the configured ones once it has one."""
        from ..core.conversation import Conversation
        from ..core.errors import StorageError, StoreLocked

        ui = SessionUI(self, workdir)
        files = None
        if self.client_reads or self.client_writes:  # the editor's buffers: read and written through it
            timeout = self.store().config.client_timeout_s
            files = ClientFiles(self, ui, self.client_reads, self.client_writes, timeout)
        conversation = Conversation(self.store(), workdir, ui, files=files)
        conversation.client_servers = list(mcp_servers or [])
        try:
            startup = conversation.open(select=False)
        except StoreLocked as exc:
            conversation.close()
            data = {"kind": "storeLocked", **({"pid": exc.pid} if exc.pid is not None else {})}
            raise RpcError(UNAVAILABLE, str(exc), data) from None
        except StorageError as exc:
            conversation.close()
            raise RpcError(UNAVAILABLE, str(exc), {"kind": "storage"}) from None
        except BaseException:
            conversation.close()
            raise
        setup = [startup.setup.message] if startup.setup is not None else []  # shown in the new thread
        return conversation, ui, list(startup.warnings) + setup

    def remember(
        self, session_id: str, workdir: Path, title: str | None = None, model: str | None = None
    ) -> None:
        """Where the session was used (and its title and picked model, when given; else as known)."""
        from ..core.sessions import places

        directory = self.store().config.sessions_dir
        known = places.recall(directory, session_id)
        if title is None:
            title = known.title if known is not None else None
        if model is None:
            model = known.model if known is not None else None
        try:
            places.remember(directory, session_id, places.Place(str(workdir), title, model))
        except OSError as exc:  # only session/list's cwd is lost; the session itself is saved
            log.warning("could not save where session %s was used: %s", session_id, exc)

    # ---- requests --------------------------------------------------------------------------------
    def initialize(self, params: dict[str, Any]) -> Reply:
        if self._initialized_with is not None:
            # A second initialize (acplint sends one) gets the first answer again; the capabilities
            # the client offered the first time stay the ones the sessions use.
            return Reply(self._initialized_with)
        M.protocol_version(params.get("protocolVersion"))  # Mino answers with the one it speaks
        capabilities = params.get("clientCapabilities")
        fs = capabilities.get("fs") if isinstance(capabilities, dict) else None
        if isinstance(fs, dict):  # only a literal true offers it
            self.client_reads = fs.get("readTextFile") is True
            self.client_writes = fs.get("writeTextFile") is True
        self.initialized = True
        result = {
            "protocolVersion": M.PROTOCOL_VERSION,  # the one Mino speaks; a client on another one disconnects
            "agentInfo": {"name": "mino", "title": "Mino", "version": __version__},
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
                "mcpCapabilities": {"http": True},
            },
            "authMethods": self._auth_methods(),
        }
        self._initialized_with = result
        # After the answer is out: the import would compete with writing it.
        return Reply(
            result,
            lambda: threading.Thread(target=self.warm_up, name="mino-acp-warm-up", daemon=True).start(),
        )

    def _setup_problem(self) -> Any:
        """What fails every turn before a request (no key for OpenAI's endpoint), or None; None too
        when the configuration is unusable (session/new says that)."""
        try:
            return self.config().setup_problem()
        except RpcError:
            return None

    def _auth_methods(self) -> list[dict[str, Any]]:
        """One agent method when a key is missing, naming the variable to set (the client starts
        Mino again with it set); none otherwise (a local server, or a key already set)."""
        problem = self._setup_problem()
        return [] if problem is None else [M.agent_auth_method(problem)]

    def authenticate(self, params: dict[str, Any]) -> dict[str, Any]:
        """The auth method's variable is read when the process starts: it succeeds when the key
        is there, and says what to set when not (the client starts Mino again with it)."""
        method = params.get("methodId")
        if not isinstance(method, str):
            raise M.ParamsError("Invalid params: methodId must be a string.")
        problem = self._setup_problem()
        if problem is None:
            return {}
        if method != M.AUTH_METHOD_ID:
            raise M.ParamsError(f"Invalid params: unknown methodId; Mino offers {M.AUTH_METHOD_ID!r}.")
        raise RpcError(AUTH_REQUIRED, problem.message, {"kind": "setup", "problem": problem.problem})

    def client_mcp_servers(self, params: dict[str, Any]) -> list[Any]:
        """session/new, load and resume: the client's `mcpServers` (stdio and http) as Mino's server
        specs, for that session only; a name that clashes with a configured server is suffixed when
        the conversation adds them (core/mcp.py). A malformed entry is -32602 naming it."""
        return M.mcp_servers(params.get("mcpServers"))

    def new_session(self, params: dict[str, Any]) -> Reply:
        workdir = M.absolute_dir(params.get("cwd"), "cwd")
        servers = self.client_mcp_servers(params)
        conversation, ui, warnings = self._conversation(workdir, servers)
        from ..core import opening

        try:
            sid = opening.new_session(conversation)
        except BaseException:
            conversation.close()
            raise
        ui.session_id = sid
        session = AcpSession(self, conversation, ui)
        with self._lock:
            self.sessions[sid] = session
        self.remember(sid, workdir)
        return Reply(
            {
                "sessionId": sid,
                "modes": M.modes_state(conversation.mode),
                "configOptions": session.config_options(),
            },
            lambda: self._introduce(session, warnings),
        )

    def _introduce(self, session: AcpSession, warnings: list[str], title: str | None = None) -> None:
        session.ui.update(M.available_commands_update())
        if title:
            session.ui.update(M.session_info_update(title, M.utc(time.time())))
        if warnings:
            session.ui.update(M.text_chunk("\n".join(warnings) + "\n\n"))

    def load_session(self, params: dict[str, Any]) -> Reply:
        return self._open_existing(params, replay=True)

    def resume_session(self, params: dict[str, Any]) -> Reply:
        """session/load without the replay: the client shows the thread it already has."""
        return self._open_existing(params, replay=False)

    def _open_existing(self, params: dict[str, Any], replay: bool) -> Reply:
        from ..core.sessions import places
        from ..core.sessions.store import ID_RE

        sid = params.get("sessionId")
        if not isinstance(sid, str) or not ID_RE.fullmatch(sid):
            raise RpcError(
                NOT_FOUND,
                f"Not a complete session ID: {M.short(sid)!r}. Session IDs are 32 lowercase hexadecimal "
                "characters; session/list lists them.",
            )
        workdir = M.absolute_dir(params.get("cwd"), "cwd")
        servers = self.client_mcp_servers(params)
        if not self.store().sessions.exists(sid):
            raise RpcError(NOT_FOUND, f"No session with ID {sid}. session/list lists the sessions.")
        with self._lock:
            if sid in self._changing:
                raise RpcError(BUSY, "busy", {"detail": SESSION_CHANGING, "running": "session/load"})
            old = self.sessions.get(sid)
            if old is not None and old.busy:
                raise RpcError(
                    BUSY,
                    "busy",
                    {
                        "detail": "A turn is running in this session; cancel it first.",
                        "running": "session/prompt",
                    },
                )
            self._changing.add(sid)
            if old is not None:  # loaded again in this process (an editor reopening its thread)
                del self.sessions[sid]
        try:
            if old is not None:
                old.close()
            conversation, ui, warnings = self._conversation(workdir, servers)
            from ..core import opening

            try:
                opening.resume(conversation, sid)  # may ask the recovery question (request_permission)
                ui.session_id = sid
                if replay:
                    self._replay(conversation, ui)
            except BaseException:
                conversation.close()
                raise
            # Before the session can be found: a prompt that comes at once uses the model picked
            # in this session before.
            known = places.recall(self.store().config.sessions_dir, sid)
            if known is not None and known.model in conversation.config.model_choices:
                conversation.set_model(known.model)
            session = AcpSession(self, conversation, ui)
            with self._lock:
                self.sessions[sid] = session
        finally:
            with self._lock:
                self._changing.discard(sid)
        self.remember(sid, workdir)
        title = known.title if known is not None else None
        result = {"modes": M.modes_state(conversation.mode), "configOptions": session.config_options()}
        return Reply(result, lambda: self._introduce(session, warnings, title))

    def _replay(self, conversation: Conversation, ui: SessionUI) -> None:
        """The session's history as session/update, oldest first (the latest page when it is long)."""
        page = conversation.history()  # (items, more): the latest page; a plain list before pages existed
        items, more = page if isinstance(page, tuple) else (page, False)
        if more:
            ui.update(M.text_chunk("(Earlier messages of this session are not shown here.)\n\n"))
        for item in items:
            ui.update(M.replay_update(item))

    def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        from ..core.sessions import places

        cwd = params.get("cwd")
        wanted = M.absolute_dir(cwd, "cwd") if cwd is not None else None
        if params.get("cursor") is not None:
            raise M.ParamsError(
                "Invalid params: cursor is not one Mino gave; session/list answers in one page."
            )
        store = self.store()
        directory = store.config.sessions_dir
        fallback = str(Path.cwd())
        out = []
        for info in store.sessions.list():
            place = places.recall(directory, info.id)
            if wanted is not None and (place is None or Path(place.cwd) != wanted):
                continue
            item: dict[str, Any] = {
                "sessionId": info.id,
                "cwd": place.cwd if place is not None else fallback,
                "updatedAt": M.utc(info.mtime),
            }
            if place is not None and place.title:
                item["title"] = place.title
            if place is None:  # used only outside an editor's ACP client so far: its folder is not known
                item["_meta"] = {"mino": {"cwdKnown": False}}
            out.append(item)
        return {"sessions": out}

    def session_for(self, params: dict[str, Any]) -> AcpSession:
        sid = params.get("sessionId")
        session = self.sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            raise RpcError(
                NOT_FOUND,
                f"Unknown session ID {M.short(sid)!r} in this connection; send session/new or session/load first.",
            )
        return session

    def set_mode(self, params: dict[str, Any]) -> Reply:
        session = self.session_for(params)
        mode = params.get("modeId")
        if mode not in M.MODES:
            raise M.ParamsError(
                f"Invalid params: modeId must be one of {', '.join(M.MODES)}; got {M.short(mode)!r}."
            )
        session.conversation.set_mode(mode)
        return Reply({}, lambda: self.mode_changed(session))

    def mode_changed(self, session: AcpSession) -> None:
        """A mode set other than by session/set_config_option: both views of it follow."""
        session.ui.update(M.current_mode_update(session.conversation.mode))
        session.ui.update(M.config_option_update(session.config_options()))

    def set_config_option(self, params: dict[str, Any]) -> Reply:
        """The mode or the model of a session; the answer carries every option as it is now."""
        session = self.session_for(params)
        config_id, value = params.get("configId"), params.get("value")
        conversation = session.conversation
        if config_id == M.MODE_CONFIG_ID:
            if value not in M.MODES:
                raise M.ParamsError(
                    f"Invalid params: the mode must be one of {', '.join(M.MODES)}; got {M.short(value)!r}."
                )
            changed = value != conversation.mode
            conversation.set_mode(value)
            after = (lambda: session.ui.update(M.current_mode_update(conversation.mode))) if changed else None
            return Reply({"configOptions": session.config_options()}, after)
        if config_id == M.MODEL_CONFIG_ID:
            choices = conversation.config.model_choices
            if not isinstance(value, str) or value not in choices:
                raise M.ParamsError(
                    f"Invalid params: the model must be one of {', '.join(choices)} (config.yaml's model "
                    f"and models); got {M.short(value)!r}."
                )
            conversation.set_model(value)
            self.remember(session.id, conversation.workdir, model=value)  # picked again on resume
            return Reply({"configOptions": session.config_options()})
        if config_id == M.THOUGHT_CONFIG_ID:
            if value not in M.THOUGHT_LEVELS:
                raise M.ParamsError(
                    f"Invalid params: the thought level must be one of {', '.join(M.THOUGHT_LEVELS)}; "
                    f"got {M.short(value)!r}."
                )
            conversation.set_reasoning_effort(None if value == M.THOUGHT_DEFAULT else value)
            return Reply({"configOptions": session.config_options()})
        raise M.ParamsError(
            f"Invalid params: unknown configId {M.short(config_id)!r}; Mino has "
            f"{M.MODE_CONFIG_ID!r}, {M.MODEL_CONFIG_ID!r} and {M.THOUGHT_CONFIG_ID!r}."
        )

    def close_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel the session's turn, if one runs, and close it here: its claim is released, so
        another window or process may open it at once."""
        session = self.session_for(params)
        sid = session.id
        with self._lock:
            if sid in self._changing:
                raise RpcError(BUSY, "busy", {"detail": SESSION_CHANGING, "running": "session/load"})
            self._changing.add(sid)
        try:
            self.cancels.cancel(sid)  # pending permissions and client requests are given up now
            if not session.close_when_idle(STOP_WAIT_S):
                raise RpcError(
                    BUSY,
                    "busy",
                    {
                        "detail": "The session's turn did not stop in time; try again.",
                        "running": "session/prompt",
                    },
                )
            with self._lock:
                if self.sessions.get(sid) is session:
                    del self.sessions[sid]
        finally:
            with self._lock:
                self._changing.discard(sid)
        return {}

    # ---- leaving ---------------------------------------------------------------------------------
    def stop(self, timeout: float = STOP_WAIT_S) -> None:
        """Interrupt every turn, wait for them (bounded) and close the sessions that ended."""
        if self._store is not None:  # another process reopening a session waits for this one
            self._store.mark_exiting()
        self.stopping.cancel()
        self.cancels.cancel_all()
        self.join_workers(timeout)
        for session in list(self.sessions.values()):
            if session.busy:
                log.warning(
                    "session %s did not end in %.0f s; leaving without closing it", session.id, timeout
                )
                continue
            session.close()


def serve(
    mode: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    reasoning_effort: str | None = None,
) -> int:
    """Serve ACP on stdin/stdout until EOF or SIGTERM. Ends the process (see the end)."""
    configure_logging("mino --acp")
    stdin, stdout = claim_stdio()
    agent = AcpAgent(Writer(stdout), mode, model, base_url, reasoning_effort)
    raise_on_sigterm()
    try:
        agent.run(stdin)
    except Terminated:
        log.warning("terminated by a signal")
    except KeyboardInterrupt:
        pass
    agent.stop()
    sys.stderr.flush()
    # A tool stuck past the stop wait must not keep the process alive; everything that matters
    # (session logs, the store lock) is fsynced or released with the process. What Mino started
    # (an MCP server still starting, what it left) goes with it.
    end_what_mino_started()
    os._exit(0)
