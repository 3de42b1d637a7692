"""The layers of mino_server, checked on the import graph built from the source (AST, not runtime).

Every `import` counts, wherever it is written: at the top, inside a function (lazy imports for
start-up time still make one module depend on another) and under `if TYPE_CHECKING:`. The rules:
- every module belongs to one layer: the core, a front end, what the protocol front ends share,
  the entry point, the scripted model (a new top-level module fails until it is given one);
- the core (mino_server.core) knows no front end: it imports nothing from the front ends
  (mino_server.cli, mino_server.oneshot, mino_server.server, mino_server.acp, mino_server.evals),
  from what they share (mino_server.stdio, mino_server.jsonrpc) or from the entry point;
- front ends stay apart: none imports another; what two need lives in the core or in a shared
  module, and the shared modules import no front end. Only the entry point (mino_server.main,
  which picks one by its arguments) imports them;
- mino_server.testing (the scripted model) is for tests, benchmarks and evals only: inside
  mino_server only the eval runner imports it;
- pygls and lsprotocol are imported by one module, mino_server.server.pygls_fence, which fences
  the pygls internals Mino relies on (tests/test_pygls_fence.py checks them);
- no import cycles. Outside the core none at all; in the core only the cycles listed in
  KNOWN_CORE_CYCLES, each of which must still exist (a fixed one is taken off the list).
- no module uses another module's private names (`_name`): what another module needs is public.

Run as a script to print the graph: `python tests/test_import_layers.py`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "mino_server"

# The front ends: the terminal (`mino`), `mino -p`, the editor server (`mino --stdio`), ACP
# (`mino --acp`) and the eval runner (`mino eval`).
FRONT_ENDS = (
    "mino_server.cli",
    "mino_server.oneshot",
    "mino_server.server",
    "mino_server.acp",
    "mino_server.evals",
)
# What the two protocol front ends share: stdio.py (their stdin/stdout, stderr log, SIGTERM) and
# jsonrpc.py (JSON-RPC 2.0 as both speak it). Not front ends; they import none.
SHARED = ("mino_server.stdio", "mino_server.jsonrpc")
ENTRY = ("mino_server.main", "mino_server.__main__")  # `mino`'s arguments pick a front end
CORE = "mino_server.core"
TESTING = "mino_server.testing"
TESTING_USERS = ("mino_server.testing", "mino_server.evals")
FENCE = "mino_server.server.pygls_fence"
FENCED_LIBRARIES = ("pygls", "lsprotocol")

# Cycles inside the core that are being taken apart; each entry is the set of modules of one
# strongly connected component. Empty this list as they are fixed: the test fails on a listed
# cycle that no longer exists, so the list cannot outlive the cycles.
# An entry looks like frozenset({"mino_server.core.compaction", "mino_server.core.conversation"}),
# with a comment saying what is being done about it. None left.
KNOWN_CORE_CYCLES: list[frozenset[str]] = []


@dataclass
class Graph:
    modules: dict[str, Path]
    edges: dict[str, set[str]] = field(default_factory=dict)  # module -> mino_server modules it imports
    external: dict[str, set[str]] = field(default_factory=dict)  # module -> top-level outside packages


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The module that `import target` runs last: target itself, or its nearest package."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def _imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterable[str]:
    """Dotted names this import statement may load: `from a import b` loads a, and a.b if it is a module."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    if node.level:
        base = module.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    yield prefix
    for alias in node.names:
        if alias.name != "*":
            yield f"{prefix}.{alias.name}"


def build_graph(root: Path = ROOT) -> Graph:
    modules = {
        module_name(path, root): path
        for path in sorted((root / PACKAGE).rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    graph = Graph(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        external: set[str] = set()
        for node in ast.walk(tree):  # every import, in functions and under TYPE_CHECKING too
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported_names(node, name, path.name == "__init__.py"):
                if not _within(target, PACKAGE):
                    if target and not (isinstance(node, ast.ImportFrom) and node.level):
                        external.add(target.split(".")[0])
                    continue
                resolved = _resolve(target, modules)
                if resolved is None or resolved == name:
                    continue
                edges.add(resolved)
                # Importing a.b.c runs a and a.b first; the importer's own packages have run already.
                parent = resolved.rpartition(".")[0]
                while parent and not _within(name, parent):
                    edges.add(parent)
                    parent = parent.rpartition(".")[0]
        graph.edges[name] = edges
        graph.external[name] = external
    return graph


def cycles(graph: Graph) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _show(component: Iterable[str], graph: Graph) -> str:
    members = sorted(component)
    links = [f"{a} -> {b}" for a in members for b in sorted(graph.edges[a]) if b in members]
    return "{" + ", ".join(members) + "}: " + "; ".join(links)


# ---- the tests ----------------------------------------------------------------------------------
def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .sub.b import X\n"
        "def f():\n    from .sub import c\n"
    )
    (pkg / "sub" / "b.py").write_text("import mino_server.a\nimport yaml\n")
    (pkg / "sub" / "c.py").write_text("from .. import a\n")
    graph = build_graph(tmp_path)
    assert graph.edges["mino_server.a"] == {"mino_server.sub", "mino_server.sub.b", "mino_server.sub.c"}
    assert graph.edges["mino_server.sub"] == {"mino_server.sub.b"}
    assert graph.edges["mino_server.sub.b"] == {"mino_server.a"}
    assert graph.edges["mino_server.sub.c"] == {"mino_server", "mino_server.a"}
    assert graph.external["mino_server.sub.b"] == {"yaml"}
    assert sorted(map(sorted, cycles(graph))) == [
        ["mino_server.a", "mino_server.sub", "mino_server.sub.b", "mino_server.sub.c"]
    ]


def _front_end(module: str) -> str | None:
    return next((front for front in FRONT_ENDS if _within(module, front)), None)


def test_every_module_has_a_layer() -> None:
    """A new front end (or anything else at the top) is placed in a layer before it can land."""
    layers = (CORE, TESTING, *FRONT_ENDS, *SHARED, *ENTRY)
    unplaced = [
        module
        for module in sorted(build_graph().modules)
        if module != PACKAGE and not any(_within(module, layer) for layer in layers)
    ]
    assert unplaced == [], "give these a layer in tests/test_import_layers.py: " + ", ".join(unplaced)


def test_the_core_imports_no_front_end() -> None:
    graph = build_graph()
    outside = (*FRONT_ENDS, *SHARED, *ENTRY)
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.edges.items())
        if _within(module, CORE)
        for target in sorted(targets)
        if any(_within(target, layer) for layer in outside)
    ]
    assert wrong == [], "the core must not know its front ends:\n" + "\n".join(wrong)


def crossings(graph: Graph) -> list[str]:
    """Imports from one front end (or a shared module) into another front end."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(graph.edges.items())
        if _front_end(module) is not None or any(_within(module, shared) for shared in SHARED)
        for target in sorted(targets)
        if _front_end(target) is not None and _front_end(target) != _front_end(module)
    ]


def test_front_ends_stay_apart() -> None:
    """No front end imports another, and what they share imports none: a change to one front end
    never changes another (what both need is in the core, stdio.py or jsonrpc.py)."""
    wrong = crossings(build_graph())
    assert wrong == [], "front ends must not import each other:\n" + "\n".join(wrong)


def test_the_front_end_rule_sees_a_crossing(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("def f():\n    from .oneshot import g\n")  # lazy: counts too
    (pkg / "oneshot.py").write_text("from . import stdio\n")
    (pkg / "stdio.py").write_text("from .acp import x\n")
    (pkg / "acp.py").write_text("from . import stdio\n")
    assert crossings(build_graph(tmp_path)) == [
        "mino_server.cli imports mino_server.oneshot",
        "mino_server.stdio imports mino_server.acp",
    ]


def test_the_scripted_model_is_for_tests_and_evals_only() -> None:
    graph = build_graph()
    wrong = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.edges.items())
        if not any(_within(module, user) for user in TESTING_USERS)
        for target in sorted(targets)
        if _within(target, TESTING)
    ]
    assert wrong == [], f"only tests, benchmarks and {TESTING_USERS} may import {TESTING}:\n" + "\n".join(
        wrong
    )


def test_only_the_fence_imports_pygls() -> None:
    graph = build_graph()
    wrong = [
        f"{module} imports {library}"
        for module, libraries in sorted(graph.external.items())
        if module != FENCE
        for library in sorted(libraries & set(FENCED_LIBRARIES))
    ]
    assert wrong == [], f"pygls and lsprotocol are used through {FENCE} only:\n" + "\n".join(wrong)


def test_only_the_mcp_client_imports_the_mcp_sdk() -> None:
    """The MCP SDK (0.3-0.6 s of imports) sits behind core/mcp.py's Connection port: only
    core/mcp_client.py (and the test fixtures in testing/) import it, so nothing else pays for it."""
    graph = build_graph()
    allowed = {"mino_server.core.mcp_client", "mino_server.testing.mcp_fixture"}
    wrong = [
        f"{module} imports mcp"
        for module, libraries in sorted(graph.external.items())
        if module not in allowed and "mcp" in libraries
    ]
    assert wrong == [], "\n".join(wrong)


def test_no_import_cycles() -> None:
    graph = build_graph()
    found = cycles(graph)
    outside = [c for c in found if not all(_within(m, "mino_server.core") for m in c)]
    unknown = [c for c in found if c not in outside and c not in KNOWN_CORE_CYCLES]
    gone = [c for c in KNOWN_CORE_CYCLES if c not in found]
    problems = [f"cycle outside the core: {_show(c, graph)}" for c in outside]
    problems += [f"new cycle in the core: {_show(c, graph)}" for c in unknown]
    problems += [
        f"KNOWN_CORE_CYCLES lists {sorted(c)}, which is no longer a cycle: take it off the list" for c in gone
    ]
    assert problems == [], "\n".join(problems)


if __name__ == "__main__":
    g = build_graph()
    for mod in sorted(g.modules):
        inside = sorted(t.removeprefix("mino_server.") for t in g.edges[mod])
        print(f"{mod.removeprefix('mino_server.') or 'mino_server'} -> {', '.join(inside) or '-'}")
    for c in cycles(g):
        print("CYCLE", _show(c, g), file=sys.stderr)


# Private names of the standard library that are its public API.
PUBLIC_UNDERSCORED = {"os._exit"}


def private_reaches(path: Path) -> list[str]:
    """Where a module uses another module's private name (`_name`): imported from it, read off it
    (`module._name`), or read off an object whose class is not defined here (`conv._claim` in a
    module that defines no `_claim`, or only in a Protocol describing that object). A module's own
    private names, on `self` or not, are its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own: set[str] = set()
    modules: set[str] = set()
    found: list[str] = []
    # A Protocol's members describe another module's class: declaring `_claim` there does not make
    # it this module's own.
    described = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("Protocol") for b in node.bases)
        for member in node.body
        for inner in ast.walk(member)
    }
    for node in ast.walk(tree):
        if id(node) in described:
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.add(node.target.id)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: from {node.module} import {a.name}")
                modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        text = f"{ast.unparse(base)}.{node.attr}"
        if text in PUBLIC_UNDERSCORED:
            continue
        if (isinstance(base, ast.Name) and base.id in modules) or node.attr not in own:
            found.append(f"{path.name}:{node.lineno}: {text}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    """What another module needs is public: a private name is its module's own business."""
    found = [hit for path in sorted((ROOT / PACKAGE).rglob("*.py")) for hit in private_reaches(path)]
    assert not found, "private names used across modules (make them public):\n" + "\n".join(found)


def test_the_private_name_rule_sees_each_kind_of_reach(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text(
        "from . import mapping as M\nfrom .a import _hidden\nimport os\n"
        "class C:\n    def __init__(self):\n        self._mine = 1\n"
        "class Conv(Protocol):\n    _claim: int\n"
        "def f(conv: Conv, c: C):\n    os._exit(0)\n    c._mine\n    conv._claim\n    M._short('x')\n"
    )
    assert [hit.split(": ", 1)[1] for hit in private_reaches(mod)] == [
        "from a import _hidden",
        "conv._claim",
        "M._short",
    ]
