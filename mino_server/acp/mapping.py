"""Mino's contract in the Agent Client Protocol's words: pure functions, no I/O.

Prompt blocks become the typed text and context requests; core events, approvals and history items
become `session/update` payloads and `session/request_permission` tool calls. What a person sees of
a tool call (its content) is exactly the escaped fields and warning every front end shows, inside a
Markdown fence so an editor that renders Markdown shows it literally; `rawInput` carries the call's
arguments as the model sent them (data for the client, never shown as the call's title or content).
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ..core.contract import ALLOW_ALWAYS, APPROVAL_QUESTION, REJECT_ALWAYS

if TYPE_CHECKING:
    from ..core.context import ContextRequest
    from ..core.contract import (
        Always,
        AlwaysOffer,
        ApprovalField,
        Confirmation,
        FileDiff,
        HistoryItem,
        SetupProblem,
    )
    from ..core.images import Image

from ..core.vocab import MODE_HELP, MODE_NAMES, MODES  # noqa: F401  (vocab: no core import)

# The rest of the core is imported where it is used: `initialize` is answered before any of it has
# loaded (the editor waits for that answer at every start).
PROTOCOL_VERSION = 1
NOT_FOUND = -32002  # ACP's "resource not found": an unknown or malformed session ID
AUTH_REQUIRED = -32000  # ACP's "authentication required": the client offers the authMethods
AUTH_METHOD_ID = "api-key"


def agent_auth_method(problem: SetupProblem) -> dict[str, Any]:
    """ACP's agent auth method (the schema's default kind: no `type`; stable ACP has no `env_var`
    kind) for a missing key. Its description is the no-key line, which names the variable to set:
    the person sets it and the client starts Mino again (the process reads its environment once)."""
    return {"id": AUTH_METHOD_ID, "name": "API key", "description": problem.message}


MODE_DESCRIPTIONS = {m: text[0].upper() + text[1:] for m, text in MODE_HELP.items()}

# The option IDs are the kinds' own names: clients that match a clicked ID against the kinds
# (avante.nvim) take any other ID for a denial.
APPROVE_OPTION = "allow_once"
PERMISSION_OPTIONS = [
    {"optionId": APPROVE_OPTION, "name": "Approve", "kind": "allow_once"},
    {"optionId": "reject_once", "name": "Deny", "kind": "reject_once"},
]

# Where a rule can cover the call (core/rules.py): an always answer keeps it for the project.
ALWAYS_OPTIONS = [
    {"optionId": "allow_always", "name": "Always in this project", "kind": "allow_always"},
    {"optionId": "reject_always", "name": "Never in this project", "kind": "reject_always"},
]

TITLE_MAX = 120
_LINES = re.compile(r"^L(\d+)(?:[-:]L?(\d+))?$")


class ParamsError(ValueError):
    """Invalid params (-32602); the message names the field and says what is wrong."""


# ---- session set-up ------------------------------------------------------------------------------


def mcp_servers(raw: Any) -> list[Any]:
    """ACP's `mcpServers`: stdio `{name, command, args, env: [{name, value}]}` and http
    `{type: "http", name, url, headers: [{name, value}]}`, as core/mcp.py's ServerSpec (origin "client")."""
    from ..core.mcp import parse_server

    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ParamsError("Invalid params: mcpServers must be a list.")
    specs = []
    for i, entry in enumerate(raw):
        where = f"mcpServers[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise ParamsError(f"Invalid params: {where} must be an object with a non-empty name.")
        kind = entry.get("type", "stdio")
        try:
            if kind == "http":
                config = {
                    "url": entry.get("url"),
                    "headers": _pairs(entry.get("headers", []), f"{where}.headers"),
                }
            elif kind == "stdio" and "command" in entry:
                args = entry.get("args", [])
                if not isinstance(args, list):
                    raise ValueError(f"'{where}.args' must be a list of strings")
                config = {
                    "command": [entry.get("command"), *args],
                    "env": _pairs(entry.get("env", []), f"{where}.env"),
                }
            else:
                raise ValueError(f"'{where}': Mino takes stdio (command) and http servers, not {kind!r}")
            specs.append(parse_server(entry["name"], config, where, origin="client"))
        except ValueError as exc:
            raise ParamsError(f"Invalid params: {exc}") from None
    return specs


def _pairs(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("value"), str)
        for p in raw
    ):
        raise ValueError(f"'{where}' must be a list of {{name, value}} strings")
    return {p["name"]: p["value"] for p in raw}


def modes_state(current: str) -> dict[str, Any]:
    return {
        "currentModeId": current,
        "availableModes": [
            {"id": m, "name": MODE_NAMES[m], "description": MODE_DESCRIPTIONS[m]} for m in MODES
        ],
    }


MODE_CONFIG_ID = "mode"
MODEL_CONFIG_ID = "model"


THOUGHT_CONFIG_ID = "thought_level"
# The reasoning effort a session asks of the model; "default" sends no reasoning settings at all.
THOUGHT_DEFAULT = "default"
THOUGHT_LEVELS = (THOUGHT_DEFAULT, "minimal", "low", "medium", "high")
THOUGHT_NAMES = {
    THOUGHT_DEFAULT: "Model default",
    "minimal": "Minimal",
    "low": "Low",
    "medium": "Medium",
    "high": "High",
}


def config_options(
    mode: str, model: str, models: list[str], effort: str | None = None
) -> list[dict[str, Any]]:
    """The session's choices as ACP config options: the mode (category "mode"), the model
    (category "model": the one a client offers as its model picker) and the reasoning effort
    (category "thought_level")."""
    return [
        {
            "id": MODE_CONFIG_ID,
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": mode,
            "options": [
                {"value": m, "name": MODE_NAMES[m], "description": MODE_DESCRIPTIONS[m]} for m in MODES
            ],
        },
        {
            "id": MODEL_CONFIG_ID,
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": model,
            "options": [{"value": m, "name": m} for m in models],
        },
        {
            "id": THOUGHT_CONFIG_ID,
            "name": "Thinking",
            "category": "thought_level",
            "type": "select",
            "currentValue": effort or THOUGHT_DEFAULT,
            "options": [{"value": v, "name": THOUGHT_NAMES[v]} for v in THOUGHT_LEVELS],
        },
    ]


def config_option_update(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sessionUpdate": "config_option_update", "configOptions": options}


def usage_update(used: int, size: int) -> dict[str, Any]:
    """How full the context is: the input tokens of the latest request, of the context window."""
    return {"sessionUpdate": "usage_update", "used": used, "size": size}


def session_info_update(title: str, updated_at: str) -> dict[str, Any]:
    return {"sessionUpdate": "session_info_update", "title": title, "updatedAt": updated_at}


def protocol_version(value: Any) -> int:
    """initialize's protocolVersion: a non-negative integer, or one written as a numeric string
    ("1", as some clients send it); anything else is invalid params."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ParamsError("Invalid params: protocolVersion must be a non-negative integer.")
    return value


def available_commands_update() -> dict[str, Any]:
    """The slash-command table's rows an ACP client offers (names without the leading /)."""
    from ..core.commands import THREAD_COMMANDS

    commands = []
    for row in THREAD_COMMANDS:
        if row.threads is None:
            continue
        command: dict[str, Any] = {"name": row.name.lstrip("/"), "description": row.threads.description}
        if row.threads.hint is not None:
            command["input"] = {"hint": row.threads.hint}
        commands.append(command)
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


def current_mode_update(mode: str) -> dict[str, Any]:
    return {"sessionUpdate": "current_mode_update", "currentModeId": mode}


def text_chunk(text: str, role: str = "agent") -> dict[str, Any]:
    kind = "agent_message_chunk" if role == "agent" else "user_message_chunk"
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def thought_chunk(text: str) -> dict[str, Any]:
    """What the model was thinking (a reasoning summary), apart from its answer."""
    return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text + "\n"}}


def absolute_dir(value: Any, field: str) -> Path:
    """A `cwd` param: an absolute path of an existing folder."""
    if not isinstance(value, str) or not value:
        raise ParamsError(f"Invalid params: {field} must be an absolute path (a string).")
    if not os.path.isabs(value):
        raise ParamsError(f"Invalid params: {field} must be an absolute path; got {value!r}.")
    path = Path(value)
    if not path.is_dir():
        raise ParamsError(f"Invalid params: {field} {value!r} does not exist or is not a folder.")
    return path.resolve()


# ---- prompts -------------------------------------------------------------------------------------


def parse_prompt(blocks: Any) -> tuple[str, list[ContextRequest], list[Image]]:
    """(typed text, context requests, checked images) of a session/prompt's `prompt` (docs/ACP.md)."""
    from ..core.context import ContextRequest

    if not isinstance(blocks, list) or not blocks:
        raise ParamsError("Invalid params: prompt must be a non-empty list of content blocks.")
    texts: list[str] = []
    context: list[ContextRequest] = []
    images: list[Image] = []
    shown = [i for i, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "image"]
    if shown:
        from ..core import images as checks

        if len(shown) > checks.MAX_IMAGES:  # refused before any is decoded
            raise ParamsError(
                f"Invalid params: prompt[{shown[checks.MAX_IMAGES]}] is image {checks.MAX_IMAGES + 1}; "
                f"a prompt may carry at most {checks.MAX_IMAGES} images."
            )
    for i, block in enumerate(blocks):
        where = f"prompt[{i}]"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise ParamsError(f"Invalid params: {where} must be a content block with a type.")
        kind = block["type"]
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise ParamsError(f"Invalid params: {where}.text must be a string.")
            texts.append(block["text"])
        elif kind == "resource_link":
            uri = block.get("uri")
            path, start, end = file_uri(uri, f"{where}.uri")
            context.append(ContextRequest(path, start, end, None, f"{where} ({short(uri)})"))
        elif kind == "resource":
            resource = block.get("resource")
            if not isinstance(resource, dict):
                raise ParamsError(f"Invalid params: {where}.resource must be an object with uri and text.")
            uri = resource.get("uri")
            if "text" not in resource:
                raise ParamsError(
                    f"Invalid params: {where} is a blob resource; Mino takes text resources and file links only."
                )
            if not isinstance(resource["text"], str):
                raise ParamsError(f"Invalid params: {where}.resource.text must be a string.")
            path, start, end = file_uri(uri, f"{where}.resource.uri")
            context.append(ContextRequest(path, start, end, resource["text"], f"{where} ({short(uri)})"))
        elif kind == "image":
            images.append(_image(block, where, len(images) + 1))
        elif kind == "audio":
            raise ParamsError(
                f"Invalid params: {where} is an audio block; Mino takes text, image, resource and "
                "resource_link blocks only."
            )
        else:
            raise ParamsError(f"Invalid params: {where} has an unknown type {kind!r}.")
    return "\n\n".join(texts), context, images


def _image(block: dict[str, Any], where: str, n: int) -> Image:
    """An image block `{mimeType, data, uri?}`, checked (core/images.py); named by its URI's last
    part when it has one."""
    from ..core import images
    from ..core.errors import ContextError

    uri = block.get("uri")
    name = f"image {n}"
    if isinstance(uri, str) and uri:
        name = unquote(urlsplit(uri).path).rstrip("/").rsplit("/", 1)[-1] or name
    try:
        return images.from_base64(block.get("data"), block.get("mimeType"), name, where)
    except ContextError as exc:
        raise ParamsError(f"Invalid params: {exc}") from None


def file_uri(uri: Any, field: str) -> tuple[str, int | None, int | None]:
    """(absolute path, first line, last line) of a file:// URI; `#L10-20`, `#L10:20` or `#L10` give lines."""
    if not isinstance(uri, str) or not uri:
        raise ParamsError(f"Invalid params: {field} must be a file:// URI.")
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path:
        raise ParamsError(
            f"Invalid params: {field} must be a file:// URI of a local file; got {short(uri)!r}."
        )
    start = end = None
    if parts.fragment:
        m = _LINES.fullmatch(parts.fragment)
        if m is None:
            raise ParamsError(
                f"Invalid params: {field} has the fragment #{short(parts.fragment)}; "
                "Mino understands #L10, #L10-20 and #L10:20."
            )
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else start
    return unquote(parts.path), start, end


def short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


# ---- tool calls ----------------------------------------------------------------------------------


def tool_kind(tool: str) -> str:
    """ACP's tool kind is the tool's category (core/tools/registry.py); "other" for an unknown name."""
    from ..core.tools.registry import tool_categories

    return tool_categories().get(tool, "other")


# The field a title names: what the call acts on (fields arrive in display order, deciding ones last).
TITLE_FIELDS = ("Path", "Command", "Memory", "Skill")


def tool_title(tool: str, fields: list[ApprovalField], question: str | None = None) -> str:
    """`tool: what it acts on`, e.g. `bash: ls -la` (escaped values: one line, nothing invisible);
    a question that names a risk comes first, so a client's permission prompt leads with it."""
    named = next(
        (f for name in TITLE_FIELDS for f in fields if f.label == name), fields[0] if fields else None
    )
    title = tool if named is None else f"{tool}: {named.value}"
    if question and question != APPROVAL_QUESTION:
        title = f"{question} {title}"
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1] + "…"


def tool_locations(fields: list[ApprovalField], workdir: str) -> list[dict[str, Any]]:
    """The file a file tool works on, when its shown path is the real one (escaping changed nothing)."""
    values = {f.label: f.value for f in fields}
    path = values.get("Target") or values.get("Path")
    if path is None or "\\" in path or not path:
        return []
    location: dict[str, Any] = {"path": os.path.normpath(os.path.join(workdir, path))}
    lines = values.get("Lines", "")
    first = lines.split("-", 1)[0]
    if first.isascii() and first.isdigit():  # str.isdigit() takes '²', which int() refuses
        location["line"] = int(first)
    return [location]


def call_locations(fields: list[ApprovalField], workdir: str, diff: FileDiff | None) -> list[dict[str, Any]]:
    """`locations` of a tool call: the absolute path of the file a file tool works on (and its first
    line when the call names lines); clients open it or title their diff with it."""
    if diff is not None:
        return [{"path": os.path.normpath(os.path.join(workdir, diff.path))}]
    return tool_locations(fields, workdir)


def fields_content(
    tool: str,
    fields: list[ApprovalField],
    warning: str | None,
    diff: FileDiff | None = None,
    question: str | None = None,
) -> list[dict[str, Any]]:
    """The tool call as every front end shows it (`[Tool: NAME]`, `Label: "value"` lines in the
    core's order, the warning, and for a permission a question naming a risk last), then for a file change the
    whole file before and after as ACP's diff content, first (clients that show one item of a tool
    call, CodeCompanion.nvim, show the first)."""
    from ..core.display import approval_lines

    lines = approval_lines(tool, [(f.label, f.value) for f in fields], warning)
    if question and question != APPROVAL_QUESTION:  # the client's own prompt asks the plain question
        lines.append(question)
    content = [text_content(fence("\n".join(lines)))]
    if diff is not None:
        content.insert(0, diff_content(diff))
    return content


def diff_content(diff: FileDiff) -> dict[str, Any]:
    return {"type": "diff", "path": diff.path, "oldText": diff.before, "newText": diff.after}


def fence(text: str) -> str:
    from ..core.context import fence as core_fence

    return core_fence(text)


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def tool_call_start(
    call_id: str,
    tool: str,
    fields: list[ApprovalField],
    warning: str | None,
    workdir: str,
    diff: FileDiff | None = None,
    arguments: dict[str, Any] | None = None,
) -> dict[str, Any]:
    locations = call_locations(fields, workdir, diff)
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_title(tool, fields),
        "kind": tool_kind(tool),
        "status": "pending",
        "rawInput": arguments if arguments is not None else {},
        "locations": locations,
        "content": fields_content(tool, fields, warning, diff),
    }


def permission_tool_call(
    call_id: str,
    tool: str,
    fields: list[ApprovalField],
    warning: str | None,
    workdir: str,
    diff: FileDiff | None = None,
    question: str = APPROVAL_QUESTION,
    always: AlwaysOffer | None = None,
) -> dict[str, Any]:
    content = fields_content(tool, fields, warning, diff, question)
    if always is not None:  # what the always options keep, as the terminal says it (escaped by the core)
        from ..core.words import always_line

        content.append(text_content(always_line(always.rules, always.project)))
    return {
        "toolCallId": call_id,
        "title": tool_title(tool, fields, question),
        "kind": tool_kind(tool),
        "status": "pending",
        "locations": call_locations(fields, workdir, diff),
        "content": content,
    }


def granted(result: Any) -> bool:
    """A session/request_permission answer: only the allow_once option selected is a yes."""
    if not isinstance(result, dict):
        return False
    outcome = result.get("outcome")
    return (
        isinstance(outcome, dict)
        and outcome.get("outcome") == "selected"
        and outcome.get("optionId") == APPROVE_OPTION
    )


def answer(result: Any, always: bool) -> bool | Always:
    """A session/request_permission answer to an approval: allow_once is a yes; with `always`
    offered, allow_always and reject_always are a yes or a no that keep the rule; else no."""
    if always and isinstance(result, dict):
        outcome = result.get("outcome")
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
            chosen = outcome.get("optionId")
            if chosen == ALLOW_ALWAYS or chosen == REJECT_ALWAYS:
                return ALLOW_ALWAYS if chosen == ALLOW_ALWAYS else REJECT_ALWAYS
    return granted(result)


def result_status(status: str) -> str:
    return "completed" if status == "completed" else "failed"


def result_content(status: str, output: str) -> list[dict[str, Any]]:
    """What the model receives, shown literally: the output, or for a failure the status and why."""
    from ..core.sessions.log import result_text

    text = output if status == "completed" else result_text(status, output)
    return [text_content(fence(text))] if text else []


def tool_call_result(call_id: str, tool: str, status: str, output: str, announced: bool) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update" if announced else "tool_call",
        "toolCallId": call_id,
        "status": result_status(status),
        "content": result_content(status, output),
    }
    if not announced:  # refused before it was shown (unknown tool, invalid arguments)
        update["title"] = tool
        update["kind"] = tool_kind(tool)
    return update


def in_progress(call_id: str) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}


_ELICITATIONS = itertools.count(1)  # each question its own tool call ID


def confirm_tool_call(question: Confirmation) -> dict[str, Any]:
    """A mino confirmation (core/ui.py confirm) as the tool call of a session/request_permission."""
    kind, session_id, message, diffs = question.kind, question.session_id, question.message, question.diffs
    if kind == "rewind":  # the files' diffs first (as for an edit), then the list and the question
        return {
            "toolCallId": f"rewind-{session_id}",
            "title": message.rsplit("\n", 1)[-1],
            "kind": "edit",
            "status": "pending",
            "content": [*(diff_content(d) for d in diffs or ()), text_content(fence(message))],
        }
    if kind == "instructions":
        return {
            "toolCallId": f"instructions-{session_id}",
            "title": "Project instructions",
            "kind": "read",
            "status": "pending",
            "content": [text_content(fence(message))],
        }
    if kind == "elicitation":  # an MCP server's question (core/mcp.py, elicitation_question)
        return {
            "toolCallId": f"elicitation-{session_id}-{next(_ELICITATIONS)}",
            "title": "MCP server question",
            "kind": "other",
            "status": "pending",
            "content": [text_content(fence(message))],
        }
    if kind == "skills":
        return {
            "toolCallId": f"skills-{session_id}",
            "title": "Load this project's skills?",
            "kind": "read",
            "status": "pending",
            "content": [text_content(fence(message))],
        }
    return recovery_tool_call(session_id, message)


def recovery_tool_call(session_id: str, message: str) -> dict[str, Any]:
    return {
        "toolCallId": f"recover-{session_id}",
        "title": f"Recover session {session_id}",
        "kind": "other",
        "status": "pending",
        "content": [text_content(fence(message))],
    }


# ---- replay --------------------------------------------------------------------------------------


def replay_update(item: HistoryItem | dict[str, Any]) -> dict[str, Any]:
    """One history item (contract.HistoryItem, or its dict form) as the update that showed it."""

    def get(name: str) -> Any:
        return item.get(name) if isinstance(item, dict) else getattr(item, name, None)

    role, text = get("role"), get("text") or ""
    if role == "user":
        return text_chunk(text, "user")
    if role == "assistant":
        if get("interrupted"):
            from ..core.words import INTERRUPTED_MARK

            text = f"{text}\n\n{INTERRUPTED_MARK}" if text else INTERRUPTED_MARK
        return text_chunk(text)
    tool, status = get("tool") or "?", get("status") or "unknown"
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": f"history-{get('seq') or id(item)}",
        "title": tool,
        "kind": tool_kind(tool),
        "status": result_status(status),
        "content": result_content(status, text),
    }


def utc(seconds: float) -> str:
    """A time as ACP's timestamps write it (session/list's updatedAt, session_info_update)."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
