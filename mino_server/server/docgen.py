"""Writes the protocol's document, its JSON Schema and the extension's TypeScript from one source.

    python -m mino_server.server.docgen --write   # or --check (exit 1 when out of date)

The source is the method table of protocol.py (`ALL_METHODS`) and the classes it reaches, wherever
they are defined. The outputs:
- docs/PROTOCOL.md: the prose lives here; every table, type and code in it comes from the classes;
- docs/protocol.schema.json: the same types as JSON Schema;
- editor/vscode/src/protocol.generated.ts: the same types as TypeScript, for the VS Code extension.
So none of them can drift from what the server validates and sends.

A vocabulary (`Mode = Literal[...]`) or a union of classes (`Event = Union[...]`) is named by the
module-level name it is bound to in protocol.py or in a module that defines one of the classes; a
vocabulary's run-time list in TypeScript takes the name of the Python tuple that holds the same values
(`MODES`), or else the vocabulary's name in capitals, plural. Standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import tempfile
import textwrap
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from . import protocol as P

ROOT = Path(__file__).resolve().parents[2]
DOC_PATH = ROOT / "docs" / "PROTOCOL.md"
SCHEMA_PATH = ROOT / "docs" / "protocol.schema.json"
TS_PATH = ROOT / "editor" / "vscode" / "src" / "protocol.generated.ts"
REGENERATE = "python -m mino_server.server.docgen --write"


class GenerationError(Exception):
    """The classes use something the outputs cannot express (a type, a clashing name); says which."""


# ---- what the method table reaches --------------------------------------------------------------
def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _walk(tp: Any, visit: Callable[[Any], bool]) -> None:
    """Calls `visit` on `tp` and, depth first in field order, on every type inside it (union members,
    list items, class fields) while `visit` returns True."""
    if tp is None or isinstance(tp, str) or not visit(tp):
        return  # None: no params or a null result; a string: P.NOTIFICATION
    args = P.union_args(tp)
    if args is not None:
        for a in args:
            _walk(a, visit)
    elif typing.get_origin(tp) is list:
        _walk(typing.get_args(tp)[0], visit)
    elif _is_class(tp):
        for f in dataclasses.fields(tp):
            _walk(P.hints(tp)[f.name], visit)


def _walk_methods(visit: Callable[[Any], bool]) -> None:
    for m in P.ALL_METHODS:
        _walk(m.params, visit)
        _walk(m.result, visit)


def _classes() -> list[type]:
    found: list[type] = []

    def visit(tp: Any) -> bool:
        if not _is_class(tp):
            return True
        if tp in found:
            return False
        found.append(tp)
        return True

    _walk_methods(visit)
    return found


def _constant_case(name: str) -> str:
    """`MemoryType` -> `MEMORY_TYPE`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _plural(word: str) -> str:
    if word.endswith(("S", "X", "CH", "SH")):
        return word + "ES"
    if word.endswith("Y") and word[-2:-1] not in ("A", "E", "I", "O", "U"):
        return word[:-1] + "IES"
    return word + "S"


@dataclasses.dataclass(frozen=True)
class Names:
    """The Python names of the vocabularies and class unions the method table reaches."""

    literals: dict[tuple[Any, ...], str]  # Literal values -> the vocabulary's name (`Mode`)
    lists: dict[tuple[Any, ...], str]  # Literal values -> its run-time list's name (`MODES`)
    unions: dict[tuple[Any, ...], str]  # the classes of a union -> its name (`Event`)

    @classmethod
    def find(cls) -> Names:
        modules: list[types.ModuleType] = [P]
        for c in _classes():
            module = sys.modules.get(c.__module__)
            if module is not None and module not in modules:
                modules.append(module)
        literals: dict[tuple[Any, ...], str] = {}
        unions: dict[tuple[Any, ...], str] = {}
        tuples: dict[tuple[Any, ...], str] = {}
        for module in modules:  # the first name wins, so an alias under a second name changes nothing
            for name, value in vars(module).items():
                if name.startswith("_"):
                    continue
                args = P.union_args(value)
                if typing.get_origin(value) is Literal:
                    literals.setdefault(typing.get_args(value), name)
                elif args is not None and all(_is_class(a) for a in args):
                    unions.setdefault(args, name)
                elif isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
                    tuples.setdefault(value, name)
        lists = {
            values: tuples.get(values) or _plural(_constant_case(name)) for values, name in literals.items()
        }
        return cls(literals, lists, unions)

    def literal(self, tp: Any) -> str | None:
        return self.literals.get(typing.get_args(tp)) if typing.get_origin(tp) is Literal else None

    def union(self, tp: Any) -> str | None:
        args = P.union_args(tp)
        return self.unions.get(args) if args is not None else None


def _name(tp: Any, names: Names) -> str:
    """A class's or a named union's name."""
    return names.union(tp) or tp.__name__


def all_types(names: Names) -> list[Any]:
    """Every class the methods use and every named union of classes (the events), in first-use order."""
    found: list[Any] = []

    def visit(tp: Any) -> bool:
        if not (_is_class(tp) or names.union(tp)):
            return True
        if any(tp is t or (not _is_class(tp) and tp == t) for t in found):
            return False
        found.append(tp)
        return True

    _walk_methods(visit)
    return found


def _discriminants(union: Any) -> dict[str, type] | None:
    """A union of classes told apart by their `type` literal (as protocol.py parses it): value -> class."""
    out: dict[str, type] = {}
    for c in typing.get_args(union):
        tp = P.hints(c).get("type")
        values = typing.get_args(tp) if typing.get_origin(tp) is Literal else ()
        if len(values) != 1 or not isinstance(values[0], str) or values[0] in out:
            return None
        out[values[0]] = c
    return out


def _users(tp: Any) -> list[str]:
    """The methods whose params are `tp`."""
    return [m.name for m in P.ALL_METHODS if m.params is tp or (P.union_args(tp) and m.params == tp)]


def _class_doc(cls: Any) -> str:
    """The class's docstring as one line ("" when it has none: dataclass invents `Name(field, ...)`)."""
    text = cls.__doc__ or ""
    return "" if text.startswith(cls.__name__ + "(") else " ".join(text.split())


def _union_doc(union: Any) -> str:
    users = _users(union)
    text = "One of these objects, told apart by their `type`." if _discriminants(union) else "One of these."
    return f"The params of {', '.join(users)}. {text}" if users else text


def _pattern(meta: Any) -> str | None:
    """The regular expression a string field is checked against, if any."""
    if meta.get("nonblank"):
        return "\\S"
    return meta.get("pattern") or None


# ---- types as TypeScript ------------------------------------------------------------------------
_PRIMITIVES: dict[Any, str] = {str: "string", bool: "boolean", int: "number", float: "number"}


def _ts_string(text: str) -> str:
    """A single-quoted TypeScript string literal."""
    body = json.dumps(text, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
    return f"'{body}'"


def _ts_value(value: Any, module: bool) -> str:
    return _ts_string(value) if module and isinstance(value, str) else json.dumps(value)


def ts(tp: Any, names: Names, *, module: bool = False) -> str:
    """`tp` as a TypeScript type. The document spells vocabularies out (`"manual" | "bypass"`); the
    generated module (`module=True`) uses their names (`Mode`) and single quotes."""
    if tp is Any:
        return "unknown"
    if tp is type(None):
        return "null"
    args = P.union_args(tp)
    if args is not None:
        if names.union(tp):
            return _name(tp, names)
        if Any in args:
            return "unknown"
        return " | ".join(ts(a, names, module=module) for a in args)
    origin = typing.get_origin(tp)
    if origin is Literal:
        named = names.literal(tp) if module else None
        return named or " | ".join(_ts_value(a, module) for a in typing.get_args(tp))
    if origin is list:
        (item,) = typing.get_args(tp)
        inner = ts(item, names, module=module)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if _is_class(tp):
        return tp.__name__
    if tp in _PRIMITIVES:
        return _PRIMITIVES[tp]
    raise GenerationError(
        f"docgen cannot write {tp!r} in the protocol: use str, int, float, bool, Any, None, a Literal, "
        "a list, a dataclass, or a union of these"
    )


def _without_null(tp: Any) -> Any:
    args = P.union_args(tp)
    if args is None:
        return tp
    rest = tuple(a for a in args if a is not type(None))
    return rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007


def _field_type(cls: Any, f: dataclasses.Field[Any]) -> tuple[Any, bool]:
    """A field's type as sent, and whether it may be absent (then it is never null)."""
    tp = P.hints(cls)[f.name]
    optional = bool(f.metadata.get("optional"))
    return (_without_null(tp) if optional else tp), optional


def interface(tp: Any, names: Names) -> str:
    """A class or a named union as it appears under Types in the document."""
    if names.union(tp):
        return (
            f"type {_name(tp, names)} =\n" + "\n".join(f"  | {a.__name__}" for a in typing.get_args(tp)) + ";"
        )
    lines = []
    if _class_doc(tp):
        lines.append(f"/** {_class_doc(tp)} */")
    lines.append(f"interface {tp.__name__} {{")
    for f in dataclasses.fields(tp):
        ftp, opt = _field_type(tp, f)
        text = f"  {f.name}{'?' if opt else ''}: {ts(ftp, names)};"
        note = f.metadata.get("doc")
        if note:
            text += f"  // {note}"
        lines.append(text)
    lines.append("}")
    return "\n".join(lines)


def _type_link(tp: Any, names: Names) -> str:
    if tp is None:
        return "—"
    if tp is P.Empty:
        return "`{}`"
    return f"`{ts(tp, names)}`"


def _result_cell(m: P.Method, names: Names) -> str:
    if m.result is P.NOTIFICATION:
        return "notification"
    if m.result is None:
        return "`null`"
    return _type_link(m.result, names)


def method_table(methods: list[P.Method], names: Names) -> str:
    rows = ["| method | params | result | notes |", "|---|---|---|---|"]
    for m in methods:
        rows.append(
            f"| `{m.name}` | {_type_link(m.params, names)} | {_result_cell(m, names)} | {m.summary} |"
        )
    return "\n".join(rows)


def error_table() -> str:
    rows = ["| code | name | when |", "|---|---|---|"]
    for code, name, when in P.ERROR_CODES:
        rows.append(f"| {code} | {name} | {when} |")
    return "\n".join(rows)


def all_interfaces(names: Names) -> str:
    return "\n\n".join(interface(t, names) for t in all_types(names))


# ---- the document -------------------------------------------------------------------------------
DOC = """\
<!-- Generated by `python -m mino_server.server.docgen --write` from mino_server/server/protocol.py.
     Edit the classes (or the prose in mino_server/server/docgen.py), not this file. -->
# The Mino editor protocol (version {version})

`mino --stdio` speaks JSON-RPC 2.0 with the Language Server base protocol framing
(`Content-Length` headers) on stdin/stdout, built on pygls, so that any LSP client library
(vscode-languageclient, pygls's own client, Neovim's, Emacs') can drive it. Logs go to stderr and
`window/logMessage`, never to stdout: every byte on stdout is a framed JSON-RPC message. This page is
the contract between the server, the VS Code extension and the tests; extend it (new optional fields,
new methods) but do not break it. It is generated from the typed classes the server validates every
request against; `docs/protocol.schema.json` holds the same types as JSON Schema, and
`editor/vscode/src/protocol.generated.ts` as TypeScript for the VS Code extension.

## Framing and limits
- Each message is `Content-Length: N\\r\\n` (other headers such as `Content-Type` are ignored), an
  empty line, then N bytes of UTF-8 JSON. The server writes ASCII-only JSON.
- A body larger than **{max_bytes} bytes (16 MiB)** is skipped unread and answered with
  error {invalid_request} (`id: null`, because the id was never read); a header line over {max_header}
  bytes, a missing or bad `Content-Length`, or a body that is not JSON is answered with
  error {parse_error} (`id: null`). The server stays up in every case.
- Batches (JSON arrays) are not supported ({invalid_request}). Unknown notifications are ignored;
  unknown requests get {method_not_found}.
- Receivers ignore fields they do not know. Fields marked `?` below may be absent; every other
  field is always present, `null` included.

## Lifecycle
- `initialize`: the working directory is the first workspace folder (else `rootUri`, else the server's
  cwd); it must be a `file://` URI of an existing folder ({invalid_params} otherwise).
  `initializationOptions` may carry `{{"mode": "manual" | "accept-edits" | "bypass" | "plan"}}`, which
  overrides `config.yaml` and `mino --stdio --mode`, and `{{"sessionId": ID}}`, the session the window
  showed before a reload ([Many windows on one home](#many-windows-on-one-home)). Result: `serverInfo {{name: "mino", version}}`,
  `capabilities.experimental.mino = {{protocolVersion: {version}, maxMessageBytes: {max_bytes}}}`.
  A second `initialize` gets {invalid_request}; any other request before it gets {not_initialized}.
- `initialized`: the server opens the session store and restores a session: the window's own
  `sessionId` when it has one that exists and is not open elsewhere, else the one the start-up table
  picks (docs/BEHAVIOUR.md, "Start-up selection"; when that one is open elsewhere, a new session);
  problems show in `State.restoreProblem`, not as a crash. It may send `mino/confirm` first (a session with a call
  whose result was never recorded); a no leaves the command-only state with the reason in
  `restoreProblem`. When done it sends the start-up lines as `window/logMessage` and the first
  `mino/stateChanged`. Requests that arrive earlier wait for it.
- If `config.yaml` is bad, the store cannot be opened (a full or read-only disk), or its short lock
  stays taken for 10 s (a Mino older than protocol version 2 holds it for its whole run), the server
  stays up but is **unavailable**: it says so once with `window/showMessage` (error), and every
  request answers error {unavailable} with that line and `data {{kind, pid?}}`.
- `shutdown` / `exit` as in LSP; the session is closed (other connections hear of it through
  `mino/sessionsChanged`); a turn in flight is interrupted and its log
  left consistent (`shutdown` answers once the interrupted turn has written its end, or after 5 s; the
  turn's own result says `"interrupted"`). EOF on stdin is an
  exit. Exit code 0 after `shutdown`, else 1.

{lifecycle_table}

## State
`{{sessionId: string|null, restoreProblem: string|null, mode, workdir, model, busy: bool,
  sandbox: string|null, memory: {{dir, count, problems: [{{file, reason}}]}}}}` — see `State` under Types.
`busy` is true while a turn or a compaction runs. `mino/stateChanged` carries the whole State after
every change of session (new, resume, clear included), mode or busy, and once after start-up.

## Many windows on one home
Any number of connections — one `mino --stdio` per editor window, terminal `mino` processes, and
later `mino --acp` sessions — use one `MINO_HOME` at once, each with its own session, working
directory, mode and turn; turns of different connections run at the same time (docs/BEHAVIOUR.md,
"The store lock").
- A session is open in at most one connection. `mino/sessions/resume` or `mino/sessions/clear` of a
  session open elsewhere is error {session_in_use}, checked before any other refusal, with a message
  naming that connection's working directory and pid and `data {{sessionId, pid, workdir}}`; nothing
  changes. `/resume` through `mino/command` answers the same line as its output, like every other
  command refusal. `mino/sessions/list` marks such sessions with `openElsewhere: true`.
- At `initialized`, `initializationOptions.sessionId` (the session this window showed before a
  reload) is restored when it exists and is not open elsewhere; it counts as a resume (recovery
  first, then it becomes the selection). A reloaded window's new server may start before the old one
  has let go, so a `sessionId` open elsewhere is waited for up to one second. Otherwise the start-up
  table decides; when the session it picks is open elsewhere, the window starts a new session and
  says so in one `window/showMessage` (Info) naming the other connection's pid and directory.
- `sessions/active-session.json` names the session most recently created, resumed or cleared by any
  connection (a later terminal start restores it); it is replaced atomically under a short store
  lock, so creating, switching and clearing never race.
- Memory saves from two windows are serialised, and an approval stays bound to the file's state: a
  save approved in one window after another changed that memory writes nothing.
- `mino/sessionsChanged {{}}` goes to every other connection on the home when one creates, clears,
  opens or closes a session (a window that exits or is killed closes its own), within about a
  second: refresh session lists and pickers.

## Client → server requests
{client_table}

`$/cancelRequest` on a `mino/turn` interrupts that turn: a pending `mino/approve` is answered as
denied (the event `approval_resolved` says `"cancelled"`, and the server sends `$/cancelRequest` for
its own `mino/approve` request), and the turn's result is `status: "interrupted"` (not an error).
`$/cancelRequest` on `mino/compact` stops the summary request ("Compaction interrupted; history is
unchanged."). Other requests are quick and ignore it.

One turn at a time: a second `mino/turn`, or a session switch, clear or compaction during a turn
(also through `mino/command`: `/new`, `/resume`, `/clear`, `/compact`), gets error {busy} with message
`"busy"` and `data: {{detail, running}}`. Requests are ordered as received, so a `mino/turn` sent
right after another one's result never sees busy. `mino/mode`, `mino/state`, `mino/history`,
`mino/sessions/list`, `mino/memory/list` and the other commands work during a turn.

Bad params: {invalid_params} with a message a person can act on, naming the field (e.g.
`params.id must be a complete session ID: 32 lowercase hexadecimal characters (mino/sessions/list
gives them); got the string 'abc'`). `mino/turn` refuses text that starts with `/` (send it to
`mino/command`), and `mino/command` refuses a line that does not. No Python traceback ever reaches the
client as a message: an unexpected failure is one line with {internal_error}, the traceback goes to
the server's stderr.

## Editor context in a turn
`mino/turn {{text, context?: [{{path, startLine?, endLine?, text?}}]}}` attaches files, or lines of
them, to what the person typed (docs/BEHAVIOUR.md, "Editor context"):
- `path` is absolute or relative to the working directory and must resolve, symbolic links included,
  inside it (never into `MINO_HOME`). With `text`, the item is what the editor shows (a selection,
  possibly unsaved; the file need not exist on disk); a text over 64 KiB is not refused: the model
  gets its first 64 KiB (cut on a character boundary) and a line saying it was cut at N of M bytes
  and can be read with read_file, and a `notice` event tells the person. Without `text`, the server reads
  the file, or lines `startLine`..`endLine` (1-based, inclusive; either may be left out), with
  read_file's checks and limits (UTF-8 text, cut at 2000 lines or 256 KiB with a note). All items
  together are at most 256 KiB, in UTF-8 bytes, and at most 100.
- `@path` and `@path:A-B` (or `@path:A`) in `text`, at its start or after white space, attach that
  file or those lines too, after the `context` items; the text is sent as typed. An `@word` that
  names no regular file inside the working directory (an email address, a decorator, a folder, a
  file elsewhere) stays plain text. The terminal reads `@` the same way (one parser in the core).
- Every item is checked before anything is sent or logged: an item that cannot be attached is error
  {invalid_params} naming it (`params.context[1]: …`, or `@src/app.py:40-50: …`), and nothing happens.
- The model receives the typed text, then one `input_text` part per item: `Context: <path relative
  to the working directory>[ (lines A-B)]`, a newline, and the text in a Markdown fence longer than
  any backtick run inside it. The `user_message` record keeps the items (path, lines, text as sent),
  so a later request, a resume and a restart send exactly the same, whatever the files hold by then.
  A turn without items sends its text as one string, as in version 1.
- `images: [{{mimeType, data, name?}}]` attaches images (pasted or chosen in the chat panel;
  docs/BEHAVIOUR.md, "Images"): PNG, JPEG, GIF or WebP by their bytes (the declared `mimeType` must
  agree), at most 5 MiB decoded each and 8 a turn, checked before anything is sent or logged
  ({invalid_params} naming `params.images[i]`). The model gets each as an `input_image` part after
  the text and the context items. A `context` item without `text` or lines, or an `@path`, whose file
  is such an image is attached as an image too. The log keeps each image's name, type, size and
  sha256; the bytes are kept under `MINO_HOME/images/<session>/`, so a later request, a resume and a
  restart send the same image; `mino/history` shows it as `[image: NAME, PNG 640×480, 12 KB]` after
  the text. The whole message stays under the size limit above (16 MiB: about 11 MiB of images).
- `mino/files {{prefix}}` → `{{paths}}` completes the `@` word being typed: up to 50 files relative
  to the working directory whose path (then whose name) starts with `prefix`, ignoring case, shallow
  ones first. Git-ignored and hidden files (any part of the path starting with `.`) are left out:
  in a git work tree the list comes from `git ls-files --cached --others --exclude-standard` (run
  with its file-system monitor off, so a project's `.git/config` cannot make it run a command),
  elsewhere from a walk that skips dot folders and links to folders. The list is made when the
  server starts, kept, and made again in the background when it is more than 2 s old, so an answer
  takes a few milliseconds even for 20,000 files; it is bounded (200,000 files, 5 s).

## Server → client
- request `mino/approve` `{{turnId, callId, tool, fields: [{{label, value}}], warning: string|null,
  question: "Approve this operation?", workdir}}` → `{{approved: bool}}`. Values are already escaped
  for display (docs/BEHAVIOUR.md, "Approval display"). A client that answers with an error, or does
  not implement the method, has denied; so has a result that is not exactly `{{approved: true}}`.
  For `write_file` and `edit_file` it also carries `diff` ([Native diff](#native-diff-for-file-changes)).
- request `mino/confirm` `{{kind: "recovery" | "skills", sessionId, message}}` → `{{confirmed: bool}}`.
  `recovery` comes before a session with an unrecorded result becomes active; `skills` at a
  session's first turn, when the project's `.mino/skills` are new or changed since the person last
  accepted them (a no, an error or an interrupt loads none for the session). Show `message` as it is.
- notification `mino/event` `{{turnId, type, ...}}` with `type` one of `text_delta {{text}}`,
  `assistant_message {{text}}`, `tool_call {{callId, tool, fields, warning, decision: "run" | "ask" |
  "show" | "refuse"}}` (`refuse`, from version 4: plan mode or a deny rule refused the call without
  asking; its `denied` `tool_result` follows), `tool_result {{callId, tool, status, text}}`, `approval_resolved {{callId, outcome:
  "approved" | "denied" | "cancelled"}}` (sent whenever a pending approval ends, by answer, cancel or
  turn end, so every surface still showing it can dismiss it), `notice {{text}}`, `turn_end {{status}}`,
  `usage {{inputTokens, outputTokens, contextWindow}}` (after every model response that reported
  usage; `State.usage` keeps the latest, restored on resume), `mode_changed {{mode}}` (the person
  approved a plan: `exit_plan_mode`'s `mino/approve`, question "Carry out this plan?", one field
  `Plan`; plan mode ends and the mode is the one before it; `mino/stateChanged` follows at once).
  Events of a turn arrive in order and before the turn's result.
  A `tool_call` of `write_file` or `edit_file` carries `diff` too, also when nobody is asked.
- notification `mino/stateChanged` State — after every change of session, mode or busy.
- `window/showMessage` / `window/logMessage` for warnings such as memory files that were not loaded.

{server_table}

## Native diff for file changes
`mino/approve` params and the `tool_call` event of `write_file` and `edit_file` carry
`diff?: {{path, before: string | null, after: string}}`: the whole file before and after the call
(`before` null for a new file), so an editor can show its own diff view. `path` is the absolute path
the write lands on (symbolic links resolved). The texts are raw, as the file holds them (not escaped
like `fields`): show them in an editor, not in a terminal. The field is present when both are UTF-8
text without NUL bytes of at most 1 MiB (in UTF-8 bytes); otherwise it is absent and the fields
alone describe the call. It is taken in the tool's prepare step from the same bytes the approval is
bound to, and the file on disk is untouched until approved: if the file changes before the answer,
nothing is written ("File changed after approval; nothing was written.").

## Remembered decisions (rules, version 4)
Where a rule can cover the call (docs/BEHAVIOUR.md, "Rules"), `mino/approve` params carry
`always: {{rules, project}}`: the rules an always answer keeps and the project they hold in, both
escaped like `fields`. Show them with an **Always in this project** action beside Approve and Deny;
answer it `{{approved: true, always: true}}` (`{{approved: false, always: true}}` keeps deny rules).
`always` in an answer to a request that offered none is ignored. A call a rule decides is not
asked: its `tool_call` event has `decision: "show"` (allowed) or `"refuse"` (denied, a `denied`
result follows) and the field `Rule` naming the rule. `mino/rules` lists every rule (numbered as
`/rules` numbers them), `mino/rules/delete {{id}}` removes one; both work during a turn.

## Errors
{error_table}

## Extensions to the shared contract (all additive)
- `capabilities.experimental.mino.maxMessageBytes`.
- `tool_call` events carry `warning` (the same warning the approval shows).
- The server sends `$/cancelRequest` for a `mino/approve` it no longer needs.
- Error codes -32002 … -32005 and the `data` of busy and unavailable errors.
- `TurnResult.turnId` is `""` when no turn was started (no session selected, or the chat stopped
  after a storage failure; `error` says which).
- `mino/sessions/clear` clears the active session only: another `id` is error {refused}.

## Types
```ts
{interfaces}
```

## The VS Code extension (editor/vscode)
Starts the server with vscode-languageclient (`mino.command`, default `mino`, args `--stdio`), and
gives: a chat panel (webview view) that streams answers, renders Markdown, shows tool calls and
results, and has an input box where lines starting with `/` go to `mino/command`; approval as an
editor notification (Approve / Deny / Show details) together with a card in the panel that shows
every field, either answering the request; palette commands New Session, Resume Session (QuickPick
of sessions with times), Clear Session (an input box that requires the complete ID), Set Permission
Mode, Compact, Show Memories (open a memory file), Open Memory Folder; a status bar item with mode and
short session ID; the restore problem shown with the actions that fix it. A `/clear` typed in the chat
box is best routed to Clear Session, since `mino/command` cannot ask for the ID.
"""


def render_doc(names: Names | None = None) -> str:
    names = names or Names.find()
    codes = {
        "parse_error": P.PARSE_ERROR,
        "invalid_request": P.INVALID_REQUEST,
        "method_not_found": P.METHOD_NOT_FOUND,
        "invalid_params": P.INVALID_PARAMS,
        "internal_error": P.INTERNAL_ERROR,
        "busy": P.BUSY,
        "not_initialized": P.NOT_INITIALIZED,
        "unavailable": P.UNAVAILABLE,
        "refused": P.REFUSED,
        "session_in_use": P.SESSION_IN_USE,
    }
    return DOC.format(
        version=P.PROTOCOL_VERSION,
        max_bytes=P.MAX_MESSAGE_BYTES,
        max_header=P.MAX_HEADER_LINE_BYTES,
        lifecycle_table=method_table(P.LIFECYCLE, names),
        client_table=method_table(P.CLIENT_REQUESTS, names),
        server_table=method_table(P.SERVER_MESSAGES, names),
        error_table=error_table(),
        interfaces=all_interfaces(names),
        **{k: f"`{v}`" for k, v in codes.items()},
    )


# ---- JSON Schema --------------------------------------------------------------------------------
def _ref(name: str) -> dict[str, str]:
    """A JSON pointer to `$defs/name` (method names contain "/", escaped as "~1")."""
    return {"$ref": "#/$defs/" + name.replace("~", "~0").replace("/", "~1")}


def _schema(tp: Any, names: Names, meta: Any = None) -> dict[str, Any]:
    meta = meta or {}
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    args = P.union_args(tp)
    if args is not None:
        if names.union(tp):
            return _ref(_name(tp, names))
        simple = [_schema(a, names, meta) for a in args]
        if all(set(s) == {"type"} and isinstance(s["type"], str) for s in simple):
            return {"type": [s["type"] for s in simple]}
        return {"anyOf": simple}
    origin = typing.get_origin(tp)
    if origin is Literal:
        values = list(typing.get_args(tp))
        return {"const": values[0]} if len(values) == 1 else {"enum": values}
    if origin is list:
        return {"type": "array", "items": _schema(typing.get_args(tp)[0], names)}
    if _is_class(tp):
        return _ref(tp.__name__)
    if tp not in _PRIMITIVES:
        ts(tp, names)  # raises the error that names the types the protocol can use
    out: dict[str, Any] = {"type": {str: "string", bool: "boolean", int: "integer", float: "number"}[tp]}
    if _pattern(meta):
        out["pattern"] = _pattern(meta)
    return out


def _class_schema(tp: Any, names: Names) -> dict[str, Any]:
    if names.union(tp):
        return {
            "description": _union_doc(tp),
            "oneOf": [_ref(a.__name__) for a in typing.get_args(tp)],
        }
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(tp):
        ftp, opt = _field_type(tp, f)
        prop = _schema(ftp, names, f.metadata)
        if f.metadata.get("doc"):
            prop = {"description": f.metadata["doc"], **prop}
        props[f.name] = prop
        if not opt:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object"}
    if _class_doc(tp):
        out["description"] = _class_doc(tp)
    out["properties"] = props
    if required:
        out["required"] = required
    return out


def render_schema(names: Names | None = None) -> str:
    names = names or Names.find()
    defs: dict[str, Any] = {}
    methods: dict[str, Any] = {}
    for m in P.ALL_METHODS:
        entry: dict[str, Any] = {
            "sender": m.sender,
            "kind": "notification" if m.result is P.NOTIFICATION else "request",
            "description": m.summary,
        }
        if m.params is not None:
            defs[f"{m.name}.params"] = _schema(m.params, names)
            entry["params"] = _ref(f"{m.name}.params")
        if m.result is not P.NOTIFICATION:
            defs[f"{m.name}.result"] = _schema(m.result, names) if m.result is not None else {"type": "null"}
            entry["result"] = _ref(f"{m.name}.result")
        methods[m.name] = entry
    for tp in all_types(names):
        defs[_name(tp, names)] = _class_schema(tp, names)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Mino editor protocol, version {P.PROTOCOL_VERSION}",
        "description": (
            "Generated from mino_server/server/protocol.py. `$defs` holds one definition per "
            "method's params and result (`<method>.params`, `<method>.result`) and one per type; "
            "`x-methods` says who sends each method and whether it is a request or a notification."
        ),
        "x-protocolVersion": P.PROTOCOL_VERSION,
        "x-maxMessageBytes": P.MAX_MESSAGE_BYTES,
        "x-errorCodes": {str(code): name for code, name, _ in P.ERROR_CODES},
        "x-methods": methods,
        "$defs": defs,
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


# ---- the extension's TypeScript -----------------------------------------------------------------
TS_HEADER = f"""\
/**
 * The Mino editor protocol, version {{version}}, as TypeScript. GENERATED: do not edit this file.
 *
 * `{REGENERATE}` writes it (mino_server/server/docgen.py), with
 * docs/PROTOCOL.md and docs/protocol.schema.json, from the classes in the method table of
 * mino_server/server/protocol.py. To change the protocol, change those classes and run that
 * command; `--check`, and tests/test_server.py, fail while this file is out of date. Type names are
 * the Python classes' names, field names the wire names.
 *
 * No imports: the extension host, the webview bundle and the tests all load this module. Hand-written
 * helpers live in protocol.ts, which re-exports this file.
 */
"""
_WIDTH = 110  # wrap doc comments and long unions here
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _jsdoc(text: str, indent: str = "") -> list[str]:
    text = " ".join(text.split()).replace("*/", "*\\/")
    if not text:
        return []
    one = f"{indent}/** {text} */"
    if len(one) <= _WIDTH:
        return [one]
    lines = textwrap.wrap(text, _WIDTH - len(indent) - 3, break_long_words=False, break_on_hyphens=False)
    return [f"{indent}/**", *(f"{indent} * {line}" for line in lines), f"{indent} */"]


def _section(title: str) -> str:
    return f"// ---- {title} ".ljust(_WIDTH - 10, "-")


def _key(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else _ts_string(name)


def _union_lines(head: str, members: list[str]) -> list[str]:
    """`head = a | b;` on one line, or one member per line when that is too long."""
    one = f"{head} = {' | '.join(members)};"
    if len(one) <= _WIDTH:
        return [one]
    return [f"{head} =", *(f"  | {m}" for m in members[:-1]), f"  | {members[-1]};"]


def _camel(words: str) -> str:
    """`sessions/list` -> `sessionsList`, `parse error` -> `parseError`."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", words) if p]
    return parts[0][:1].lower() + parts[0][1:] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _method_key(name: str) -> str:
    """A method's key in `Methods`: its name without the namespace (`mino/sessions/list` -> `sessionsList`)."""
    parts = name.split("/")
    return _camel("/".join(parts[1:] if len(parts) > 1 else parts))


class _Module:
    """The lines of the generated module, and the names it exports (each exactly once)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.exported: dict[str, str] = {}

    def export(self, name: str, what: str) -> str:
        if name in self.exported:
            raise GenerationError(
                f"docgen: the TypeScript module would export {name} twice ({self.exported[name]} and {what}); "
                "rename one of them in Python"
            )
        self.exported[name] = what
        return name

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def block(self, opening: str, rows: list[str], closing: str) -> None:
        self.add(opening, *rows, closing, "")


def _ts_vocabularies(out: _Module, names: Names) -> None:
    out.add(_section("vocabularies: each a union type and the list of its values"), "")
    done: list[tuple[Any, ...]] = []

    def visit(tp: Any) -> bool:
        values = typing.get_args(tp)
        if names.literal(tp) and values not in done:
            done.append(values)
            name = out.export(names.literals[values], "a vocabulary")
            listed = out.export(names.lists[values], f"the values of {name}")
            out.add(*_union_lines(f"export type {name}", [_ts_value(v, True) for v in values]))
            items = [_ts_value(v, True) for v in values]
            one = f"export const {listed}: readonly {name}[] = [{', '.join(items)}];"
            if len(one) <= _WIDTH:
                out.add(one)
            else:
                out.add(f"export const {listed}: readonly {name}[] = [", *(f"  {i}," for i in items), "];")
            out.add("")
        return True

    _walk_methods(visit)


def _ts_types(out: _Module, names: Names) -> None:
    out.add(_section("types: every params, result, event and shape the methods use"), "")
    for tp in all_types(names):
        name = out.export(_name(tp, names), "a type")
        if names.union(tp):
            out.add(*_jsdoc(_union_doc(tp)))
            out.add(*_union_lines(f"export type {name}", [a.__name__ for a in typing.get_args(tp)]))
            kinds = _discriminants(tp)
            if kinds:
                table = out.export(_plural(_constant_case(name) + "_TYPE"), f"the `type`s of {name}")
                alias = out.export(f"{name}Type", f"the `type` of {name}")
                out.add("", f"export type {alias} = {name}['type'];")
                out.add(*_jsdoc(f"Each {name}'s `type`, and the interface it names."))
                out.block(
                    f"export const {table} = {{",
                    [f"  {_key(k)}: {_ts_string(c.__name__)}," for k, c in kinds.items()],
                    f"}} as const satisfies Record<{alias}, string>;",
                )
            else:
                out.add("")
            continue
        out.add(*_jsdoc(_class_doc(tp)))
        fields = dataclasses.fields(tp)
        if not fields:
            out.add(f"export type {name} = Record<string, never>;", "")
            continue
        rows = []
        for f in fields:
            ftp, opt = _field_type(tp, f)
            rows.extend(_jsdoc(f.metadata.get("doc") or "", "  "))
            rows.append(f"  {_key(f.name)}{'?' if opt else ''}: {ts(ftp, names, module=True)};")
        out.block(f"export interface {name} {{", rows, "}")


def _ts_name(tp: Any, names: Names) -> str | None:
    """A method's params or result type by name, for the run-time method table."""
    return None if tp is None else ts(tp, names, module=True)


def _ts_methods(out: _Module, names: Names) -> None:
    out.add(_section("methods"), "")
    kind_of = {m.name: "notification" if m.result is P.NOTIFICATION else "request" for m in P.ALL_METHODS}
    keys: dict[str, str] = {}
    rows = []
    for m in P.ALL_METHODS:
        key = _method_key(m.name)
        if key in keys:
            raise GenerationError(
                f"docgen: methods {keys[key]} and {m.name} would both be Methods.{key}; rename one"
            )
        keys[key] = m.name
        rows.extend(_jsdoc(f"{m.sender.title()} {kind_of[m.name]}. {m.summary}", "  "))
        rows.append(f"  {_key(key)}: {_ts_string(m.name)},")
    out.add(*_jsdoc("Every method's name on the wire."))
    out.block(f"export const {out.export('Methods', 'the method names')} = {{", rows, "} as const;")
    out.add(
        f"export type {out.export('MethodName', 'a method name')} = (typeof Methods)[keyof typeof Methods];",
        "",
    )

    senders = " | ".join(_ts_value(s, True) for s in typing.get_args(P.hints(P.Method)["sender"]))
    out.add(*_jsdoc("A row of the method table."))
    out.block(
        f"export interface {out.export('MethodInfo', 'a row of the method table')} {{",
        [
            *_jsdoc("who sends it", "  "),
            f"  readonly sender: {senders};",
            *_jsdoc("a request is answered; a notification is not", "  "),
            "  readonly kind: 'request' | 'notification';",
            *_jsdoc("the type of its params; null: it has none", "  "),
            "  readonly params: string | null;",
            *_jsdoc("the type of its result; null: a null result, or a notification", "  "),
            "  readonly result: string | null;",
        ],
        "}",
    )
    rows = []
    for m in P.ALL_METHODS:
        result = None if m.result is P.NOTIFICATION else m.result
        cells = [
            f"sender: {_ts_string(m.sender)}",
            f"kind: {_ts_string(kind_of[m.name])}",
            f"params: {_ts_literal_or_null(_ts_name(m.params, names))}",
            f"result: {_ts_literal_or_null(_ts_name(result, names))}",
        ]
        rows.append(f"  {_ts_string(m.name)}: {{ {', '.join(cells)} }},")
    out.add(*_jsdoc("Who sends each method, whether it is answered, and the types of its params and result."))
    out.block(
        f"export const {out.export('METHOD_TABLE', 'the method table')}: {{ readonly [M in MethodName]: MethodInfo }} = {{",
        rows,
        "};",
    )

    groups = [
        ("client", "request", "Requests the client sends: the params and result of each."),
        ("client", "notification", "Notifications the client sends."),
        ("server", "request", "Requests the server sends: the params and result of each."),
        ("server", "notification", "Notifications the server sends."),
    ]
    for sender, kind, doc in groups:
        members = [m for m in P.ALL_METHODS if m.sender == sender and kind_of[m.name] == kind]
        if not members:
            continue
        rows = []
        for m in members:
            params = "undefined" if m.params is None else ts(m.params, names, module=True)
            cells = [f"params: {params}"]
            if kind == "request":
                cells.append(f"result: {'null' if m.result is None else ts(m.result, names, module=True)}")
            rows.append(f"  {_ts_string(m.name)}: {{ {'; '.join(cells)} }};")
        name = out.export(f"{sender.title()}{kind.title()}s", f"the {sender}'s {kind}s")
        out.add(*_jsdoc(doc))
        out.block(f"export interface {name} {{", rows, "}")


def _ts_literal_or_null(value: str | None) -> str:
    return "null" if value is None else _ts_string(value)


def _ts_checks(out: _Module, names: Names) -> None:
    rows = []
    for tp in all_types(names):
        if not _is_class(tp):
            continue
        for f in dataclasses.fields(tp):
            pattern = _pattern(f.metadata)
            if pattern:
                rows.append(f"  {_ts_string(f'{tp.__name__}.{f.name}')}: {_ts_string(pattern)},")
    out.add(_section("checks and errors"), "")
    out.add(
        *_jsdoc(
            "The regular expressions the server checks string fields against, by `Type.field`; a request "
            f"that breaks one gets error {P.INVALID_PARAMS}."
        )
    )
    out.block(
        f"export const {out.export('FIELD_PATTERNS', 'the field patterns')} = {{",
        rows,
        "} as const;",
    )
    rows = []
    for code, name, when in P.ERROR_CODES:
        rows.extend(_jsdoc(when, "  "))
        rows.append(f"  {_camel(name)}: {code},")
    out.add(*_jsdoc("The JSON-RPC error codes the server answers with."))
    out.block(f"export const {out.export('ErrorCodes', 'the error codes')} = {{", rows, "} as const;")


def _ts_words(out: _Module) -> None:
    """Words the extension shows that the core defines: written once, in the core."""
    from ..core.contract import APPROVAL_QUESTION
    from ..core.vocab import MODE_HELP, MODES

    out.add(*_jsdoc("The question of a call whose question names no risk (`ApprovalRequest.question`)."))
    out.add(
        f"export const {out.export('APPROVAL_QUESTION', 'the plain question')} = {_ts_string(APPROVAL_QUESTION)};"
    )
    out.add(*_jsdoc("Each permission mode in a few words, as `/mode` lists them."))
    rows = [f"  {_ts_string(m)}: {_ts_string(MODE_HELP[m])}," for m in MODES]
    out.block(f"export const {out.export('MODE_HELP', 'the modes in words')} = {{", rows, "} as const;")


def render_ts(names: Names | None = None) -> str:
    names = names or Names.find()
    out = _Module()
    out.add(TS_HEADER.format(version=P.PROTOCOL_VERSION).rstrip("\n"), "")
    out.add(*_jsdoc("The server sends it as `capabilities.experimental.mino.protocolVersion`."))
    out.add(f"export const {out.export('PROTOCOL_VERSION', 'the protocol version')} = {P.PROTOCOL_VERSION};")
    out.add(*_jsdoc("Message bodies larger than this are skipped with an error."))
    out.add(f"export const {out.export('MAX_MESSAGE_BYTES', 'the size limit')} = {P.MAX_MESSAGE_BYTES};", "")
    _ts_words(out)
    _ts_vocabularies(out, names)
    _ts_types(out, names)
    _ts_methods(out, names)
    _ts_checks(out, names)
    return "\n".join(out.lines).rstrip("\n") + "\n"


# ---- writing ------------------------------------------------------------------------------------
def outputs() -> dict[Path, str]:
    names = Names.find()
    return {DOC_PATH: render_doc(names), SCHEMA_PATH: render_schema(names), TS_PATH: render_ts(names)}


def _write(path: Path, text: str) -> None:
    """Replaces `path` whole: a reader (an editor, a build) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["--write"], ["--check"]):
        sys.stderr.write("usage: python -m mino_server.server.docgen --write | --check\n")
        return 2
    try:
        files = outputs()
    except GenerationError as exc:
        sys.stderr.write(f"{P.one_line(exc)}\n")
        return 1
    stale = []
    for path, text in files.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if argv == ["--write"]:
            _write(path, text)
    for path in stale:
        verb = "wrote" if argv == ["--write"] else "out of date:"
        sys.stderr.write(f"{verb} {path.relative_to(ROOT)}\n")
    return 1 if stale and argv == ["--check"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
