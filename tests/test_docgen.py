"""docgen writes its outputs from whatever the method table reaches, wherever the classes live.

These tests swap in a small method table whose classes, vocabularies and union are defined here, as
a new event defined in the core would be, and read the TypeScript and the schema written for it.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from typing import Literal, Union

import pytest

from mino_server.server import docgen
from mino_server.server import protocol as P
from mino_server.server.protocol import doc, optional

Colour = Literal["red", "green"]
PALETTE: tuple[Colour, ...] = typing.get_args(Colour)  # a tuple of the same values names the list
Shade = Literal["light", "dark"]  # no tuple: the list is SHADES


@dataclass(kw_only=True)
class Ping:
    """Asks for a pong."""

    type: Literal["ping"] = "ping"
    colour: Colour = doc("what it is painted")
    shade: Shade | None = optional("how dark */ it is")


@dataclass(kw_only=True)
class Pong:
    type: Literal["pong"] = "pong"
    count: int
    id: str = doc("an id", pattern=r"^[a-z]+$")


Signal = Union[Ping, Pong]  # noqa: UP007  (as protocol.py's Event)


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        P,
        "ALL_METHODS",
        [
            P.Method("x/ask", "client", Pong, Ping, "Asks."),
            P.Method("x/signal", "server", Signal, P.NOTIFICATION, "A signal."),
        ],
    )


def test_typescript_from_classes_defined_outside_protocol_py(table: None) -> None:
    out = docgen.render_ts()
    assert (
        "export type Colour = 'red' | 'green';\nexport const PALETTE: readonly Colour[] = ['red', 'green'];"
        in out
    )
    assert (
        "export type Shade = 'light' | 'dark';\nexport const SHADES: readonly Shade[] = ['light', 'dark'];"
        in out
    )
    assert (
        "/** Asks for a pong. */\n"
        "export interface Ping {\n"
        "  type: 'ping';\n"
        "  /** what it is painted */\n"
        "  colour: Colour;\n"
        "  /** how dark *\\/ it is */\n"  # the comment does not end early
        "  shade?: Shade;\n"
        "}\n"
    ) in out
    assert (
        "export interface Pong {\n  type: 'pong';\n  count: number;\n  /** an id */\n  id: string;\n}\n"
        in out
    )
    assert "export type Signal = Ping | Pong;\n\nexport type SignalType = Signal['type'];" in out
    assert (
        "export const SIGNAL_TYPES = {\n  ping: 'Ping',\n  pong: 'Pong',\n} as const satisfies Record<SignalType, string>;"
        in out
    )
    assert "  ask: 'x/ask',\n" in out and "  signal: 'x/signal',\n" in out
    assert "  'x/ask': { sender: 'client', kind: 'request', params: 'Pong', result: 'Ping' },\n" in out
    assert (
        "  'x/signal': { sender: 'server', kind: 'notification', params: 'Signal', result: null },\n" in out
    )
    assert "export interface ClientRequests {\n  'x/ask': { params: Pong; result: Ping };\n}" in out
    assert "export interface ServerNotifications {\n  'x/signal': { params: Signal };\n}" in out
    assert "ServerRequests" not in out and "ClientNotifications" not in out  # no empty maps
    assert "  'Pong.id': '^[a-z]+$',\n" in out
    assert not [
        line for line in out.splitlines() if line.startswith(("import ", "export * from", "export {"))
    ]
    # the vocabularies and the union keep their Python names in the schema and the document too
    schema = json.loads(docgen.render_schema())
    assert schema["$defs"]["Signal"]["oneOf"] == [{"$ref": "#/$defs/Ping"}, {"$ref": "#/$defs/Pong"}]
    assert schema["$defs"]["Ping"]["required"] == ["type", "colour"]
    assert schema["$defs"]["x/signal.params"] == {"$ref": "#/$defs/Signal"}
    assert "type Signal =\n  | Ping\n  | Pong;" in docgen.all_interfaces(docgen.Names.find())


def test_a_name_the_module_would_export_twice_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(kw_only=True)
    class Methods:  # clashes with the generated `Methods` constant
        n: int

    monkeypatch.setattr(P, "ALL_METHODS", [P.Method("x/ask", "client", Methods, None, "Asks.")])
    with pytest.raises(docgen.GenerationError, match="export Methods twice"):
        docgen.render_ts()
    monkeypatch.setattr(
        P,
        "ALL_METHODS",
        [P.Method("a/list", "client", None, None, ""), P.Method("b/list", "client", None, None, "")],
    )
    with pytest.raises(docgen.GenerationError, match="a/list and b/list would both be Methods.list"):
        docgen.render_ts()


def test_a_type_the_outputs_cannot_express_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @dataclass(kw_only=True)
    class Odd:
        table: dict[str, int]

    monkeypatch.setattr(P, "ALL_METHODS", [P.Method("x/odd", "client", Odd, None, "Odd.")])
    assert docgen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("docgen cannot write dict[str, int] in the protocol: use str, int")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_the_architecture_recipes_name_files_and_names_that_exist() -> None:
    """docs/ARCHITECTURE.md's recipes "A config key" and "An ACP update kind": every file they name
    exists (paths from the repository root or from mino_server/), every name they send a reader to
    is still there, and the config recipe's file count is its number of steps."""
    import re
    from pathlib import Path

    from mino_server.acp.session import SessionUI
    from mino_server.cli import TerminalUI
    from mino_server.core import config
    from mino_server.core.compaction import StreamingClient
    from mino_server.evals import schema

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index("**A config key**")
    recipes = text[start : text.index("**A slash command.**", start)]
    paths = set(re.findall(r"`([\w./-]+\.(?:py|md|json|ts))`", recipes))
    paths |= set(re.findall(r"\b(docs/[A-Z]+\.md)\b", recipes))
    assert len(paths) > 10
    missing = [
        p for p in sorted(paths) if not (root / p).exists() and not (root / "mino_server" / p).exists()
    ]
    assert not missing, missing
    assert config.CONFIG_KEYS and config.load_config and schema.CONFIG_KEYS_NOT_IN_CASES
    assert SessionUI.event and TerminalUI.event and StreamingClient.stream
    config_recipe = recipes[: recipes.index("**An ACP update kind**")]
    (count,) = re.findall(r"^\*\*A config key\*\* \((\d+) files", config_recipe)
    assert int(count) == len(re.findall(r"^\d+\. ", config_recipe, re.M))
