"""A conversation: one session log, a working directory, a mode, a running turn, pending approvals.

A process holds one store (store.py: the home, shared) and any number of conversations: the CLI
one, the editor server one per connection, an ACP front end one per ACP session. A conversation
knows nothing about terminals, JSON-RPC or ACP: it talks to its front end through a `UI` (ui.py)
in the typed events and requests of contract.py, and returns data that front ends word
(words.py). The turn itself runs in turn.py.

Split by job, the rest lives beside it: opening.py chooses and opens the session a conversation
holds (new, resume, clear, list); briefing.py is what the model is told each turn (SOUL, AGENTS.md,
skills, the memory index, and their consent); attachments.py a turn's context items and images;
rewind.py /rewind.
"""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import attachments, opening, startup
from .briefing import Briefing
from .cancel import CancelToken
from .compaction import Compactor, TokenBudget
from .config import Config
from .contract import (
    MODE_AFTER_PLAN,
    MODES,
    Confirmation,
    ContextItem,
    ContextUsage,
    HistoryItem,
    MemoryProblem,
    MemoryStatus,
    Mode,
    ModeChanged,
    Notice,
    Startup,
    State,
    TurnResult,
)
from .errors import (
    CommandError,
)
from .history import history_page
from .sessions.log import SessionLog
from .sessions.store import SessionClaim
from .startup import workdir_warnings
from .store import Background, Store
from .tools.base import Tool, ToolContext
from .tools.project_files import DISK, ProjectFiles
from .ui import UI
from .vocab import EFFORTS, Effort
from .words import (
    CANNOT_RESTORE,
    NO_SESSION,
    TURN_RUNNING,
    sandbox_not_started,
    too_many_files,
)

if TYPE_CHECKING:
    from .checkpoints import CheckpointStore
    from .context import ContextRequest, ResolvedItem
    from .images import Image
    from .mcp import McpHub, ServerSpec
    from .model_client import ModelClient
    from .tools.sandbox import Sandbox


class Conversation:
    def __init__(
        self, store: Store, workdir: Path, ui: UI, mode: Mode | None = None, files: ProjectFiles | None = None
    ) -> None:
        self.store = store
        # The file tools' project files: the disk, unless the front end's client does it (project_files.py).
        self.files: ProjectFiles = files or DISK
        self.config: Config = store.config
        self.sessions = store.sessions
        self.workdir = workdir.resolve()
        self.ui = ui
        self.mode: Mode = mode or store.config.mode
        # The mode /mode plan left, which an approved plan goes back to; None: manual (vocab.MODE_AFTER_PLAN).
        self.before_plan: Mode | None = None
        self.model: str = store.config.model  # what this conversation's requests name (set_model)
        # what this conversation's requests ask of a reasoning model (set_reasoning_effort); None: nothing
        self.reasoning_effort: Effort | None = store.config.reasoning_effort
        self.log: SessionLog | None = None
        self.claim: SessionClaim | None = None  # this conversation has `log`'s session open
        self.restore_problem: str | None = None
        self.busy = False
        self._turn_cancel: CancelToken | None = None  # the running turn's
        self.stopped: str | None = None  # set when storage failed: the chat stops
        self._opened = False
        self._tools: dict[str, Tool] | None = None
        self._client: ModelClient | None = None  # made on first use
        self._sandbox: Sandbox | None = None  # the store's
        self.sandbox_line = ""
        self._sandbox_known = False  # the probe's verdict is in _sandbox and sandbox_line
        self.briefing = Briefing(self.config, self.workdir, ui)  # what the model is told each turn
        self.budget = TokenBudget(self.config.context_window)
        self.usage: ContextUsage | None = None  # the latest request that reported usage (State.usage)
        self._checkpoints: CheckpointStore | None = None  # the active session's, opened when first used
        # MCP servers (core/mcp.py): config.yaml's, plus those a client adds for this conversation
        # (ACP's mcpServers); started once, when the first session becomes active.
        self.client_servers: list[ServerSpec] = []
        self.mcp: McpHub | None = None
        self.on_mcp_change: typing.Callable[[], None] | None = (
            None  # a server got ready or failed (any thread)
        )

    # ---- lifecycle -----------------------------------------------------------------------
    @property
    def session_id(self) -> str | None:
        return self.log.id if self.log else None

    def open(
        self,
        select: bool = True,
        session_id: str | None = None,
        wait_s: float = 0.0,
        sandbox_later: bool = False,
        warm_up: bool = True,
    ) -> Startup:
        """Open the store and select a session by the start-up table (docs/BEHAVIOUR.md, "Start-up
        selection"). Raises StoreLocked (the store lock stayed taken), StorageError and
        RecoveryRefused (the CLI exits on it).

        `session_id` (the session an editor window showed before a reload) is restored instead when
        it exists and no other conversation has it open; `wait_s` is how long to wait for one that is
        still closing (the window's old server). A session the table picks that is open elsewhere
        gives a new session (`Startup.open_elsewhere` says which and where).

        `select=False` opens without choosing a session: the front end says which one next
        (new_session or resume), as an ACP client does with session/new and session/load.

        `sandbox_later=True` starts the sandbox probe (as always) but does not wait for it:
        `Startup.sandbox_line` is empty and `sandbox_verdict()` waits for it; a turn waits for it
        before its first tool call, so no command runs before the verdict is known. The CLI with
        piped input and `mino -p` use it: the first request does not wait for bwrap.

        `warm_up=False`: the first turn starts at once (its line is already there, or `mino -p`),
        so nothing is loaded for it in background threads. Those are for the time a person takes
        to type; with none, they only compete with the turn for the interpreter lock (with them,
        the first request came ~15 % later and took ~15 % more CPU)."""
        self.store.open()
        self._opened = True
        if warm_up:
            self._client_for_turn().warm_up()
            Background(self._warm_up_turn, "mino-warm-up")
        notices, elsewhere = opening.at_startup(self, session_id, wait_s) if select else ([], None)
        sandbox_line = self.sandbox_line if sandbox_later else self.sandbox_verdict()
        return Startup(
            session_id=self.session_id,
            restore_problem=self.restore_problem,
            mode=self.mode,
            sandbox_line=sandbox_line,
            notices=notices,
            warnings=workdir_warnings(self.workdir, self.config.home),
            open_elsewhere=elsewhere,
            setup=self.config.setup_problem(),
        )

    def sandbox_verdict(self) -> str:
        """The start-up line for the sandbox; waits for the store's probe the first time (any thread).
        A probe that could not load for want of file descriptors is "not started yet": probed again."""
        if not self._sandbox_known:
            try:
                self._learn_sandbox()
            except OSError as exc:
                if too_many_files(exc) is None:
                    raise
                return sandbox_not_started(exc.strerror or str(exc))
        return self.sandbox_line

    def _learn_sandbox(self) -> None:
        self._sandbox, self.sandbox_line = self.store.sandbox()
        # An unready sandbox (the probe lacked resources) is asked about again before each turn's
        # tools, until a probe passes.
        self._sandbox_known = self._sandbox is None or self._sandbox.unready is None

    def _tools_ready(self, ctx: ToolContext) -> None:
        """Before a turn's first tool call: the sandbox the tools run in (the probe's verdict; a probe
        that fails whole raises here: no tool runs without one)."""
        if not self._sandbox_known:
            self._learn_sandbox()
        ctx.sandbox = self._sandbox

    def _warm_up_turn(self) -> None:
        """Load what the first turn needs (the tools, memory, skills, compaction: ~5 ms) while a person
        types the first line; harmless if the turn gets there first. What bash loads on its first run
        (subprocess & co) the sandbox probe loads: it runs before any tool call."""
        from . import consent, display, instructions, memory, skills, turn  # noqa: F401
        from .tools.registry import default_tools
        from .values import write_waiting_inits

        default_tools()  # imports every tool module; the turn builds its own set (no shared state here)
        write_waiting_inits()  # the __init__ of the events, approvals and results a turn makes later

    @property
    def checkpoints(self) -> CheckpointStore | None:
        """The active session's checkpoint store (core/checkpoints.py); None without a session."""
        if self.log is None:
            return None
        if self._checkpoints is None:
            from .checkpoints import CheckpointStore

            self._checkpoints = CheckpointStore(self.config.home, self.log.id)
        return self._checkpoints

    def drop_checkpoints(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
            self._checkpoints = None

    def activate(self, log: SessionLog, claim: SessionClaim | None) -> None:
        self.drop_checkpoints()
        if self.log is not None and self.log is not log:
            self.log.close()
        if self.claim is not None and self.claim is not claim:
            self.store.release(self.claim)  # after its log is closed: nobody else may open it before
        self.claim = claim
        self.log = log
        self.restore_problem = None
        self.usage = startup.recorded_usage(
            log, self.budget.context_window
        )  # a session's own: what its last turn reported
        self.briefing.session_changed()
        self.start_mcp()

    def start_mcp(self) -> None:
        """Start the MCP servers once (in parallel, on threads of their own; nothing waits for them).
        Without a server nothing MCP is imported beyond core/mcp.py's shapes."""
        if self.mcp is not None or not (self.config.mcp_servers or self.client_servers):
            return
        from .mcp import McpHub, with_client_servers
        from .mcp_client import connect  # the SDK itself loads on the servers' threads

        specs = with_client_servers(self.config.mcp_servers, self.client_servers)
        self.mcp = McpHub(specs, self.workdir, self._hidden_env(), connect, on_change=self._mcp_changed)
        self.mcp.elicit = self._elicit
        self.mcp.start()

    def _elicit(self, server: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """A server's elicitation/create as a question for the person (front ends that cannot ask,
        piped input and `mino -p`, say no): the content to accept with, or None to decline."""
        from .mcp import ELICITATION_KIND, elicitation_question

        text, content = elicitation_question(server, message, schema)
        cancel = self._turn_cancel or CancelToken()
        question = Confirmation(
            kind=ELICITATION_KIND, session_id=self.session_id or "", message=text, asks_last=True
        )
        yes = self.ui.confirm(question, cancel) and not cancel.cancelled
        return content if yes else None

    def _mcp_changed(self) -> None:
        if self.on_mcp_change is not None:
            self.on_mcp_change()

    def _hidden_env(self) -> frozenset[str]:
        """Environment variables tools and MCP servers never see: the model's API key variables."""
        return frozenset({"MINO_API_KEY", "OPENAI_API_KEY", self.config.api_key_env})

    def turn_tools(self) -> dict[str, Tool]:
        """Mino's tools, then the tools of the MCP servers ready now."""
        if self.mcp is None:
            return self.tools
        return {**self.tools, **self.mcp.tools()}

    def mcp_lines(self) -> list[str]:
        """MCP servers' failure lines not shown yet (each shown once)."""
        return self.mcp.lines() if self.mcp is not None else []

    def close(self) -> None:
        if self.mcp is not None:  # their processes stop with the conversation
            self.mcp.close()
            self.mcp = None
        self.drop_checkpoints()
        if self.log is not None:
            self.log.close()
            self.log = None
        self.store.release(self.claim)  # other windows hear of it
        self.claim = None
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._opened:
            self._opened = False
            self.store.close()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise CommandError(f"Unknown permission mode {mode!r}. Modes: {', '.join(MODES)}.")
        if mode == "plan" and self.mode != "plan":
            self.before_plan = self.mode
        elif mode != "plan":
            self.before_plan = None  # the person left plan mode themselves
        self.mode = mode  # one of MODES: a Mode

    def _leave_plan(self, turn_id: str) -> Mode:
        """The person approved a plan (exit_plan_mode): back to the mode before plan mode. A mode the
        person chose while the question was open stands (never widened to the one before plan)."""
        if self.mode != "plan":
            return self.mode
        self.mode = self.before_plan or MODE_AFTER_PLAN
        self.before_plan = None
        self.ui.event(ModeChanged(turnId=turn_id, mode=self.mode))
        return self.mode

    def set_model(self, model: str) -> None:
        """The model this conversation's next requests name: one of `config.model_choices`."""
        if model not in self.config.model_choices:
            raise CommandError(f"Unknown model {model!r}. Models: {', '.join(self.config.model_choices)}.")
        self.model = model
        if self._client is not None:
            self._client.model = model

    def set_reasoning_effort(self, effort: str | None) -> None:
        """How hard the next requests ask the model to think: one of EFFORTS, or None (not sent)."""
        if effort is not None and effort not in EFFORTS:
            raise CommandError(f"Unknown reasoning effort {effort!r}. Choices: {', '.join(EFFORTS)}.")
        self.reasoning_effort = effort
        if self._client is not None:
            self._client.reasoning_effort = effort

    def check_idle(self) -> None:
        if self.busy:
            raise CommandError(TURN_RUNNING)

    # ---- tools and the model -------------------------------------------------------------
    @property
    def tools(self) -> dict[str, Tool]:
        if self._tools is None:
            from .tools.registry import default_tools

            self._tools = default_tools()
        return self._tools

    def _client_for_turn(self) -> ModelClient:
        if self._client is None:
            kind: type[ModelClient]
            if self.config.wire_api == "chat":
                from .chat_client import ChatClient as kind  # only sessions on that wire import it
            else:
                from .model_client import ModelClient as kind

            self._client = kind(
                self.config.base_url,
                self.config.api_key,
                self.model,
                timeout_s=self.config.request_timeout_s,
                origin=self.config.base_url_origin,
                reasoning_effort=self.reasoning_effort,
            )
        return self._client

    # ---- the turn ------------------------------------------------------------------------
    def run_turn(
        self,
        text: str,
        cancel: CancelToken,
        context: typing.Sequence[ContextItem | ContextRequest | ResolvedItem] = (),
        images: typing.Sequence[Image] = (),
    ) -> TurnResult:
        """One turn on `text`, with `context` and `images` attached after it (docs/BEHAVIOUR.md,
        "Editor context", "Images"); a context item that names an image file is an image.

        Raises ContextError, before anything is sent or logged, when an item cannot be attached."""
        if self.stopped:
            return TurnResult(turnId="", status="failed", text="", error=self.stopped)
        if self.log is None:
            return TurnResult(turnId="", status="failed", text="", error=NO_SESSION)
        if self.busy:
            return TurnResult(turnId="", status="failed", text="", error="A turn is already running.")
        setup = self.config.setup_problem()
        if setup is not None:  # no request would get an answer: nothing is sent or logged
            return TurnResult(turnId="", status="failed", text="", error=setup.message)
        self.busy = True
        self._turn_cancel = cancel  # a question an MCP server asks during the turn ends with it
        try:
            items, pictures = (
                attachments.attach(self.workdir, self.config.home, context, images)
                if context or images
                else ([], [])
            )
            # Undecodable bytes piped into the CLI arrive as lone surrogates (surrogateescape), and an
            # editor can send half an emoji: neither can be saved as UTF-8, so each becomes U+FFFD.
            return self._turn(self.log, _SURROGATE.sub("\ufffd", text), cancel, items, pictures)
        except OSError as exc:  # before the turn began (a module imported on its path): nothing was written
            out_of_files = too_many_files(exc)
            if out_of_files is None:
                raise
            return TurnResult(turnId="", status="failed", text="", error=out_of_files)
        finally:
            self._turn_cancel = None
            self.busy = False

    def _turn(
        self, log: SessionLog, text: str, cancel: CancelToken, items: list[ResolvedItem], images: list[Image]
    ) -> TurnResult:
        from .tools.registry import tool_schemas
        from .turn import Turn

        turn = Turn(
            turn_id=os.urandom(8).hex(),
            log=log,
            ui=self.ui,
            workdir=self.workdir,
            mode=lambda: self.mode,
            client=self._client_for_turn(),
            tools=self.tools,
            schemas=[],
            ctx=ToolContext(
                workdir=self.workdir,
                home=self.config.home,
                memory_dir=self.config.memory_dir,
                cancel=cancel,
                sandbox=self._sandbox,
                files=self.files,
                hidden_env=self._hidden_env(),
            ),
            compactor=Compactor(self._client_for_turn(), log, self.budget),
            index=None,
            instructions="",
            before_tools=None if self._sandbox_known else self._tools_ready,
            rules_of=lambda: self.store.rules,
        )
        turn.ctx.leave_plan = lambda: self._leave_plan(turn.turn_id)
        store = self.checkpoints
        if store is not None:  # every write of this turn keeps the file's previous state first
            from .checkpoints import CheckpointedFiles

            turn.ctx.files = CheckpointedFiles(self.files, store, turn.turn_id)
        try:
            skill_list = self.briefing.session_skills(log, cancel)
            project = self.briefing.project_instructions(log, cancel)
            history = log.replay_records()  # before this turn's first record
            context = attachments.records(items)  # kept so every replay sends the same parts
            kept = attachments.keep_images(
                self.config.home, log, images
            )  # the bytes, fsynced before the record names them
            extra: dict[str, typing.Any] = {"context": context} if context else {}
            if kept:
                extra["images"] = kept
            log.append("user_message", turn.turn_id, text=text, **extra)
        except OSError as exc:
            result = turn.storage_failed(exc)
        else:
            attachments.cut_notices(self.ui, turn.turn_id, items)

            def prepare() -> None:  # inside the turn: a failure here still ends it with turn_end
                turn.ctx.skills = {s.name: s.path for s in skill_list}
                turn.ctx.skill_digests = {s.name: s.sha256 for s in skill_list if s.sha256}
                turn.index = self.briefing.memory_index()
                turn.instructions = self.briefing.instructions(skill_list, project)
                for line in self.mcp_lines():
                    self.ui.event(Notice(turnId=turn.turn_id, text=line))
                turn.tools = self.turn_tools()  # MCP tools appear once their server is ready
                turn.schemas = tool_schemas(turn.tools)

            result = turn.run(text, history, prepare, context, kept)
        if turn.usage is not None:
            self.usage = ContextUsage(inputTokens=turn.usage[0], contextWindow=self.budget.context_window)
        if turn.stopped:
            self.stopped = turn.stopped
        return result

    # ---- compaction ----------------------------------------------------------------------
    def compact(self, cancel: CancelToken) -> tuple[bool, str]:
        self.check_idle()
        if self.stopped:
            raise CommandError(self.stopped)
        if self.log is None:
            raise CommandError(NO_SESSION)
        setup = self.config.setup_problem()
        if setup is not None:
            raise CommandError(setup.message)
        self.busy = True
        try:
            self.briefing.memory_index()  # rendered before /compact too (and never sent with the summary request)
            return Compactor(self._client_for_turn(), self.log, self.budget).compact_command(cancel)
        finally:
            self.busy = False

    # ---- views ---------------------------------------------------------------------------
    def history(self, before: int | None = None, limit: int | None = None) -> tuple[list[HistoryItem], bool]:
        """A page of what a chat panel shows for the active session (PROTOCOL mino/history)."""
        return history_page(self.log, before, limit)

    def state(self) -> State:
        self.sandbox_verdict()  # known already unless open() was told not to wait for it
        entries, problems = self.briefing.memory_snapshot()
        return State(
            sessionId=self.session_id,
            restoreProblem=(CANNOT_RESTORE + self.restore_problem) if self.restore_problem else None,
            mode=self.mode,
            workdir=str(self.workdir),
            model=self.model,
            reasoningEffort=self.reasoning_effort,
            busy=self.busy,
            sandbox=self._sandbox.name if self._sandbox is not None else None,
            usage=self.usage,
            setup=self.config.setup_problem(),
            checkpointBytes=self._checkpoint_bytes(),
            instructions=self.briefing.instructions_status(),
            mcp=self.mcp.status() if self.mcp is not None else [],
            memory=MemoryStatus(
                dir=str(self.config.memory_dir),
                count=len(entries),
                problems=[MemoryProblem(file=f, reason=r) for f, r in problems],
            ),
        )

    def _checkpoint_bytes(self) -> int:
        if self.log is None:
            return 0
        from .checkpoints import size_of

        return size_of(self.config.home, self.log.id)


_SURROGATE = re.compile("[\ud800-\udfff]")
