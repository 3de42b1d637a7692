"""Mino's MCP client as npm's @modelcontextprotocol/conformance drives a client: `--command` runs
`python -m mino_server.testing.mcp_conformance_client URL`. It does what a Mino session does with a
streamable HTTP server: the hub connects (initialize, tools/list), then every listed tool is called
once through Mino's tool (McpTool.run) with arguments made from its schema, and the hub closes."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from mino_server.core.cancel import CancelToken
from mino_server.core.mcp import McpHub, ServerSpec
from mino_server.core.mcp_client import connect
from mino_server.core.tools.base import ToolContext


def example(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a value of each required property's type."""
    values = {"number": 1, "integer": 2, "string": "mino", "boolean": True, "array": [], "object": {}}
    props = schema.get("properties", {})
    return {name: values.get(props.get(name, {}).get("type"), "mino") for name in schema.get("required", [])}


def main(argv: list[str]) -> int:
    url = argv[-1]
    hub = McpHub((ServerSpec(name="conformance", url=url),), Path.cwd(), frozenset(), connect)
    hub.start()
    hub.wait_started(60)
    (status,) = hub.status()
    print(f"state {status.state} tools {status.tools} {status.error or ''}", file=sys.stderr)
    home = Path(tempfile.mkdtemp())
    ctx = ToolContext(workdir=Path.cwd(), home=home, memory_dir=home, cancel=CancelToken())
    for name, tool in hub.tools().items():
        args = example(tool.parameters)
        result = tool.run(args, ctx, tool.prepare(args, ctx))
        print(f"{name}: {result.status}: {result.output[:200]}", file=sys.stderr)
    for line in hub.lines():
        print(line, file=sys.stderr)
    hub.close()
    return 0 if status.state == "ready" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
