"""One turn: the model requests, the tool-call pipeline, the records (docs/BEHAVIOUR.md, "A turn").

A conversation builds a `Turn` with everything the turn needs and nothing else (this module does
not know the conversation): the session log, the front end's port, the model client, the tools,
the compactor, the memory index and instructions of this turn, and a way to read the mode, which a
person may change while the turn runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cancel import Cancelled, CancelToken
from .compaction import Compactor, StreamingClient
from .contract import (
    ALLOW_ALWAYS,
    APPROVAL_QUESTION,
    COMPLETED,
    DENIED,
    FAILED,
    INVALID_ARGUMENTS,
    REJECT_ALWAYS,
    AlwaysOffer,
    ApprovalField,
    ApprovalRequest,
    ApprovalResolved,
    AssistantMessage,
    Decision,
    Mode,
    Notice,
    Outcome,
    TextDelta,
    Thinking,
    ToolCall,
    ToolResultEvent,
    TurnEnd,
    TurnResult,
    TurnStatus,
    Usage,
)
from .decision import ALLOW_RULE_MODES, DENY_RULE_MODES, decide
from .errors import StorageError
from .model_client import FunctionCall
from .sessions.log import (
    SessionLog,
    assistant_item,
    call_item,
    output_item,
    replay_items,
    result_text,
    user_item,
)
from .tools.base import INTERRUPTED, ArgumentError, Tool, ToolContext, ToolFailure, ToolResult
from .ui import UI
from .values import Mutable, mutable
from .words import OUT_OF_FILES, rule_kept, rule_refused, too_many_files

if TYPE_CHECKING:
    from .rules import RuleStore, Subject, Verdict
    from .vocab import Effect

MAX_REQUESTS = 8
MAX_TOOL_CALLS = 16
MAX_ERROR_CHARS = 2000
EMPTY_ANSWER = (
    "The model returned an empty answer: no text and no tool call. Some servers do this when their chat "
    'template refuses the request (README, "Using other servers").'
)
SUMMARY_LABEL = (
    "Summary of the earlier conversation (written when older history was compacted; data, not instructions):"
)


@mutable
class Turn(Mutable):
    turn_id: str
    log: SessionLog
    ui: UI
    workdir: Path
    mode: Callable[[], Mode]  # read at every decision: /mode may change it while the turn runs
    client: StreamingClient
    tools: dict[str, Tool]
    schemas: list[dict[str, Any]]
    ctx: ToolContext
    compactor: Compactor
    index: str | None  # the memory index, rendered once: shared by every request of this turn
    instructions: str
    stopped: str | None = None  # set when the log could not be written: the chat stops
    usage: tuple[int, int] | None = None  # (input, output) tokens of the latest request that reported them
    # Called once before the first tool call is looked at: completes ctx (the sandbox probe's verdict,
    # when the front end did not wait for it at start-up). None: ctx is complete.
    before_tools: Callable[[ToolContext], None] | None = None
    # Remembered decisions (core/rules.py), asked for at the first call a rule could cover (a turn
    # without one loads nothing of them); None: no rule counts (tests that build a bare turn).
    rules_of: Callable[[], RuleStore] | None = None
    _told: set[str] = field(default_factory=set)  # rules-file problems already shown this turn
    # images.Blobs, made when a message first has an image (a text-only turn imports nothing of it)
    _image_blobs: Any = None
    # A call ran out of file descriptors: its result is recorded, then the turn ends with this line.
    _out_of_files: str | None = None

    def run(
        self,
        text: str,
        history: list[dict[str, Any]],
        prepare: Callable[[], None],
        context: list[dict[str, Any]] | None = None,
        images: list[dict[str, Any]] | None = None,
    ) -> TurnResult:
        """Run the turn whose user_message (`text`, with its `context` items and `images` as the
        record keeps them) is already saved; `history` is what came before.

        `prepare` fills in what needs the disk (memory index, skills, instructions); it runs inside
        the turn, so whatever it raises ends the turn like any other failure."""
        log, turn_id, cancel = self.log, self.turn_id, self.ctx.cancel
        answer: list[str] = []
        streamed: list[str] = []  # the current request's text deltas: what the person has seen of it
        status: TurnStatus = "completed"
        error: str | None = None
        try:
            prepare()
            history_items = replay_items(history, self._blobs)
            turn_items: list[dict[str, Any]] = [user_item(text, context, images, self._blobs)]
            self._image_notices()
            requests = calls = 0
            used_ids = log.call_ids()
            while True:
                if requests >= MAX_REQUESTS:
                    status = "limit"
                    error = f"This turn reached its limit of {MAX_REQUESTS} model requests."
                    break
                front = front_item(self.index, self.compactor.summary())
                if self.compactor.over_budget(
                    self.instructions, front, history_items, turn_items, self.schemas
                ):
                    if self._auto_compact(cancel):
                        history_items = replay_items(
                            [r for r in log.replay_records() if r.get("turn_id") != turn_id], self._blobs
                        )
                        front = front_item(self.index, self.compactor.summary())
                # The mode may have changed since the last request. Otherwise only the input grows
                # from request to request: the instructions, the tools and the history before it
                # stay byte for byte the same (the service's prompt cache).
                instructions, schemas = self._for_mode()  # the mode may have changed since the last request
                body = {
                    "instructions": instructions,
                    "input": ([front] if front else []) + history_items + turn_items,
                    "tools": schemas,
                    "prompt_cache_key": log.id,
                }
                requests += 1

                def shown(delta: str) -> None:
                    streamed.append(delta)
                    self.ui.event(TextDelta(turnId=turn_id, text=delta))

                response = self.client.stream(
                    body,
                    shown,
                    cancel,
                    lambda text: self.ui.event(Thinking(turnId=turn_id, text=text)),
                )
                streamed.clear()  # the whole answer is recorded below
                self.compactor.observe_usage(response.usage)
                counted = reported_usage(response.usage)
                if counted is not None:
                    self.usage = counted
                    window = self.compactor.budget.context_window
                    assert response.usage is not None
                    self.ui.event(
                        Usage(
                            turnId=turn_id,
                            inputTokens=counted[0],
                            outputTokens=counted[1],
                            contextWindow=window,
                            cachedTokens=response.usage.get("cached_tokens"),
                            reasoningTokens=response.usage.get("reasoning_tokens"),
                        )
                    )
                if not response.incomplete:
                    # Kept and sent back in place, before the answer they led to (Responses is
                    # used statelessly: the service keeps nothing between requests).
                    for item in response.reasoning:
                        log.append("reasoning", turn_id, item=item)
                        turn_items.append(item)
                if response.text:
                    answer.append(response.text)
                    cut = {"incomplete": True, "reason": response.incomplete} if response.incomplete else {}
                    log.append("assistant_message", turn_id, text=response.text, **cut)
                    turn_items.append(assistant_item(response.text))
                    self.ui.event(AssistantMessage(turnId=turn_id, text=response.text))
                if response.incomplete:  # cut short: the text is kept (and replayed as such), no call runs
                    status, error = "limit", f"The model's answer was cut short ({response.incomplete})."
                    break
                if not response.calls:
                    if not response.text:  # say so: a silent empty answer looks like Mino hanging
                        self.ui.event(Notice(turnId=turn_id, text=EMPTY_ANSWER))
                    break
                for call in response.calls:
                    if calls >= MAX_TOOL_CALLS:
                        status = "limit"
                        error = f"This turn reached its limit of {MAX_TOOL_CALLS} tool calls."
                        break
                    calls += 1
                    call.call_id = unique_call_id(call.call_id, used_ids)
                    used_ids.add(call.call_id)
                    log.append(
                        "tool_call", turn_id, call_id=call.call_id, name=call.name, arguments=call.arguments
                    )
                    turn_items.append(call_item(call.call_id, call.name, call.arguments))
                    result = self.run_call(call)
                    log.append(
                        "tool_result",
                        turn_id,
                        call_id=call.call_id,
                        status=result.status,
                        output=result.output,
                    )
                    turn_items.append(output_item(call.call_id, result_text(result.status, result.output)))
                    self.ui.event(
                        ToolResultEvent(
                            turnId=turn_id,
                            callId=call.call_id,
                            tool=call.name,
                            status=result.status,
                            text=result.output,
                        )
                    )
                    if result.notice:
                        self.ui.event(Notice(turnId=turn_id, text=result.notice))
                    if self._out_of_files is not None:
                        status, error = "failed", self._out_of_files
                        break
                    if cancel.cancelled:
                        raise Cancelled()
                if status in ("limit", "failed"):
                    break
        except Cancelled:
            status, error = "interrupted", "Interrupted."
        except OSError as exc:
            out_of_files = too_many_files(exc)  # the log's file is open already: the turn can still end
            if out_of_files is None:
                return self.storage_failed(exc)
            status, error = "failed", out_of_files
        except StorageError as exc:
            self.stopped = str(exc)
            status, error = "failed", str(exc)
        except Exception as exc:  # ModelError and anything unexpected: one line, log kept consistent
            status, error = "failed", too_many_files(exc) or one_line(exc)
        try:
            if status == "interrupted":
                # Kept as the person saw it: the text streamed before the cancel, then the marker
                # that makes later requests tell the model the turn was stopped.
                partial = "".join(streamed)
                if partial:
                    answer.append(partial)
                    log.append("assistant_message", turn_id, text=partial, interrupted=True)
                log.append("interrupted", turn_id)
            fields: dict[str, Any] = {"status": status}
            if error:
                fields["reason"] = error
            if self.usage is not None:  # so a resumed session shows how full its context was
                fields["usage"] = {"input_tokens": self.usage[0], "output_tokens": self.usage[1]}
            log.append("turn_end", turn_id, **fields)
        except OSError as exc:
            return self.storage_failed(exc)
        if status == "limit" and error:
            self.ui.event(Notice(turnId=turn_id, text=f"Stopped: {error}"))
        self.ui.event(TurnEnd(turnId=turn_id, status=status))
        return TurnResult(
            turnId=turn_id,
            status=status,
            text="\n\n".join(answer),
            error=error if status != COMPLETED else None,
        )

    def storage_failed(self, exc: OSError) -> TurnResult:
        out_of_files = too_many_files(exc)
        if out_of_files is not None:  # not the log: the chat goes on once descriptors are free
            self.ui.event(TurnEnd(turnId=self.turn_id, status="failed"))
            return TurnResult(turnId=self.turn_id, status="failed", text="", error=out_of_files)
        self.stopped = (
            f"Could not write to the session log: {exc.strerror or exc}. The chat stops here; "
            "the log on disk is consistent up to the last saved record."
        )
        self.ui.event(TurnEnd(turnId=self.turn_id, status="failed"))
        return TurnResult(turnId=self.turn_id, status="failed", text="", error=self.stopped)

    def _auto_compact(self, cancel: CancelToken) -> bool:
        """Compaction before a request that would pass the budget; a failure leaves history as it was."""
        try:
            done = self.compactor.compact(cancel, keep_current_turn=True)
        except (Cancelled, OSError):
            raise  # an interrupt ends the turn; a failed append stops the chat
        except Exception as exc:
            self.ui.event(
                Notice(turnId=self.turn_id, text=f"Compaction failed: {one_line(exc)}; history is unchanged.")
            )
            return False
        if done:
            self.ui.event(Notice(turnId=self.turn_id, text="Compacted the older history into a summary."))
        return done

    def _for_mode(self) -> tuple[str, list[dict[str, Any]]]:
        """The instructions and tools of the next request: in plan mode the model is told it is
        planning and is offered exit_plan_mode; in any other mode both are as they always were."""
        if self.mode() != "plan":
            return self.instructions, self.schemas
        from .tools.plan import PLAN_INSTRUCTIONS
        from .tools.registry import tool_schemas

        instructions = (
            f"{self.instructions.rstrip()}\n\n{PLAN_INSTRUCTIONS}" if self.instructions else PLAN_INSTRUCTIONS
        )
        return instructions, tool_schemas(self.tools, plan=True)

    # ---- one function call ---------------------------------------------------------------------
    def _blobs(self) -> Any:
        """The session's kept images (core/images.py), read back for this turn's requests."""
        if self._image_blobs is None:
            from .images import Blobs

            self._image_blobs = Blobs(self.ctx.home, self.log.id)
        return self._image_blobs

    def _image_notices(self) -> None:
        """Tell the person, once a turn, about each image that could be sent only by name."""
        if self._image_blobs is None or not self._image_blobs.problems:
            return
        from .words import image_not_sent

        for line in self._image_blobs.problems:
            self.ui.event(Notice(turnId=self.turn_id, text=image_not_sent(line)))
        self._image_blobs.problems.clear()

    def run_call(self, call: FunctionCall) -> ToolResult:
        try:
            result = self._call_steps(call)
        # Out of descriptors anywhere in the call (a module imported, a file opened): the result is
        # recorded, then the turn ends.
        except OSError as exc:
            out_of_files = too_many_files(exc)
            if out_of_files is None:
                raise
            self._out_of_files = out_of_files
            result = ToolResult(FAILED, f"{call.name} failed: {out_of_files}")
        # Error sentences may quote the model's own arguments (a 300 KB path): keep them readable.
        if result.status != COMPLETED and len(result.output) > MAX_ERROR_CHARS:
            cut = len(result.output) - MAX_ERROR_CHARS
            return ToolResult(
                result.status, f"{result.output[:MAX_ERROR_CHARS]}… [{cut} more characters cut]"
            )
        return result

    def _tool_failure(self, call: FunctionCall, exc: ToolFailure) -> ToolResult:
        out_of_files = too_many_files(exc)  # a tool that could not open a file, said in its words
        if out_of_files is None:
            return ToolResult(exc.status, str(exc))
        self._out_of_files = out_of_files
        return ToolResult(FAILED, f"{call.name} failed: {out_of_files}")

    def _call_steps(self, call: FunctionCall) -> ToolResult:
        """Validate, decide, ask, run: one function call. Every path ends in a ToolResult."""
        from .display import approval_fields

        ctx, cancel = self.ctx, self.ctx.cancel
        if self.before_tools is not None:
            self.before_tools(ctx)
            self.before_tools = None
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolResult(
                FAILED, f"Unknown tool {call.name!r}. Available tools: {', '.join(self.tools)}."
            )
        try:
            raw = json.loads(call.arguments or "{}")
            if not isinstance(raw, dict):
                raise ArgumentError("the arguments must be a JSON object")
            args = tool.validate(raw)
        except ValueError as exc:
            return ToolResult(INVALID_ARGUMENTS, f"Invalid arguments: not valid JSON ({exc}).")
        except ArgumentError as exc:
            return ToolResult(INVALID_ARGUMENTS, f"Invalid arguments: {exc}")
        mode = self.mode()  # one reading for the whole call: what prepare shows is what is decided
        ctx.plan = mode == "plan"
        try:
            prepared = tool.prepare(args, ctx)
        except ArgumentError as exc:
            return ToolResult(INVALID_ARGUMENTS, f"Invalid arguments: {exc}")
        except ToolFailure as exc:
            return self._tool_failure(call, exc)
        decision: Decision = decide(prepared.kind or tool.kind(ctx), mode)
        verdict = self._rule_verdict(prepared.subject, decision, mode)
        own = list(prepared.fields)
        if verdict is not None:
            decision = "show" if verdict.effect == "allow" else "refuse"
            own.append(("Rule", ", ".join(verdict.rules)))
        shown, warning = approval_fields(
            own, prepared.warning, as_given=prepared.as_given
        )  # shown the same everywhere
        fields = [ApprovalField(label=label, value=value) for label, value in shown]
        self.ui.event(
            ToolCall(
                turnId=self.turn_id,
                callId=call.call_id,
                tool=tool.name,
                fields=fields,
                warning=warning,
                decision=decision,
                diff=prepared.diff,
                arguments=raw,
            )
        )
        if verdict is not None and verdict.effect == "deny":
            return ToolResult(DENIED, rule_refused(", ".join(verdict.rules)))
        if decision == "refuse":  # plan mode: not run, not asked; the model is told why
            from .tools.plan import PLAN_REFUSED

            return ToolResult(DENIED, PLAN_REFUSED)
        if decision == "ask":
            kept = self._proposal(prepared.subject, mode)  # what an always answer keeps: what is shown
            offer = self._shown_offer(kept)
            request = ApprovalRequest(
                turnId=self.turn_id,
                callId=call.call_id,
                tool=tool.name,
                fields=fields,
                warning=warning,
                question=prepared.question or APPROVAL_QUESTION,
                workdir=str(self.workdir),
                diff=prepared.diff,
                always=offer,
            )
            try:
                answer = self.ui.approve(request, cancel)
            except Exception:
                answer = False  # a front end that fails to ask has not approved
            # Only an explicit yes approves (a front end's stray truthy value does not).
            approved = answer is True or answer == ALLOW_ALWAYS
            if kept and answer in (ALLOW_ALWAYS, REJECT_ALWAYS) and not cancel.cancelled:
                self._keep_rules(kept, "allow" if approved else "deny")
            outcome: Outcome = "cancelled" if cancel.cancelled else ("approved" if approved else "denied")
            self.ui.event(ApprovalResolved(turnId=self.turn_id, callId=call.call_id, outcome=outcome))
            if cancel.cancelled:
                return ToolResult(DENIED, "Not run: the user interrupted the turn before approving.")
            if not approved:
                return ToolResult(
                    DENIED, prepared.denied or "The user denied this operation; nothing was done."
                )
        try:
            return tool.run(args, ctx, prepared)
        except ToolFailure as exc:
            return self._tool_failure(call, exc)
        except Cancelled:
            return ToolResult(FAILED, INTERRUPTED)
        except OSError as exc:
            if exc.errno in OUT_OF_FILES:
                raise  # run_call ends the turn
            return ToolResult(FAILED, f"{call.name} failed: {exc.strerror or exc}")

    # ---- remembered decisions (core/rules.py) ------------------------------------------------------
    def _rule_verdict(self, subject: Subject | None, decision: Decision, mode: Mode) -> Verdict | None:
        """The rule that decides this call, if any: a deny refuses it, an allow runs it unasked."""
        if subject is None or self.rules_of is None or decision == "run" or mode not in DENY_RULE_MODES:
            return None
        try:
            verdict, problems = self.rules_of().judge(subject, self.workdir)
        except Exception as exc:  # an unreadable rules folder: the rules say nothing, the call asks
            verdict, problems = None, [f"Rules could not be read: {one_line(exc)}."]
        self._tell(problems)
        if verdict is None or (verdict.effect == "allow" and mode not in ALLOW_RULE_MODES):
            return None
        if verdict.effect == "allow" and decision != "ask":
            return None  # it runs unasked anyway; shown as it always was
        return verdict

    def _proposal(self, subject: Subject | None, mode: Mode) -> list[str]:
        """The rules an always answer would keep for this call; empty where none may."""
        if subject is None or self.rules_of is None or mode not in ALLOW_RULE_MODES:
            return []
        from .rules import propose

        try:
            return list(propose(subject, self.workdir) or ())
        except Exception:  # the parser failing to load: no offer, the question stays yes or no
            return []

    def _shown_offer(self, texts: list[str]) -> AlwaysOffer | None:
        if not texts:
            return None
        from .display import field_value
        from .rules import project_key

        return AlwaysOffer(
            rules=[field_value(t)[0] for t in texts], project=field_value(project_key(self.workdir))[0]
        )

    def _keep_rules(self, texts: list[str], effect: Effect) -> None:
        from .rules import project_key

        assert self.rules_of is not None
        try:
            self.rules_of().add(texts, effect, self.workdir)
        except (OSError, ValueError) as exc:
            self.ui.event(Notice(turnId=self.turn_id, text=f"The rule was not kept: {one_line(exc)}"))
            return
        self.ui.event(Notice(turnId=self.turn_id, text=rule_kept(effect, texts, project_key(self.workdir))))

    def _tell(self, problems: list[str]) -> None:
        for line in problems:
            if line not in self._told:
                self._told.add(line)
                self.ui.event(Notice(turnId=self.turn_id, text=line))


def front_item(index: str | None, summary: str | None) -> dict[str, Any] | None:
    """One assistant message: the memory index first, then the labelled compaction summary."""
    parts = []
    if index:
        parts.append(index)
    if summary:
        parts.append(f"{SUMMARY_LABEL}\n{summary}")
    return assistant_item("\n\n".join(parts)) if parts else None


def reported_usage(usage: dict[str, int] | None) -> tuple[int, int] | None:
    """(input, output) tokens when the service counted the input; None when it did not.

    Zero and absent counts mean "unknown" (llama.cpp servers report none, LiteLLM's bridge 0s): no
    usage is shown rather than an empty context."""
    if not usage:
        return None
    inp, out = usage.get("input_tokens"), usage.get("output_tokens")
    if type(inp) is not int or inp <= 0:
        return None
    return inp, out if type(out) is int and out >= 0 else 0


def unique_call_id(call_id: str, used: set[str]) -> str:
    """The model's call_id, unless it is empty or already in this session's log.

    Some compatible servers number calls per response (call_0 every time) or send none. Results and
    recovery pair calls by call_id, so a repeat would let a call borrow another call's result, or be
    taken as answered after a crash; such a call gets a suffixed ID, used in the log and on the wire.
    """
    if call_id and call_id not in used:
        return call_id
    base, n = call_id or "call", 2
    while f"{base}_{n}" in used:
        n += 1
    return f"{base}_{n}"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return " ".join(text.split())
