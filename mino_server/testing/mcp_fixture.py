"""A small MCP server on the official SDK for the cases tests must control.

`python -m mino_server.testing.mcp_fixture [--http PORT]` serves over stdio (default) or streamable
HTTP on 127.0.0.1. Every call it receives is appended (fsynced) to the file named by
MCP_FIXTURE_RECORD, one JSON object a line, and so is each cancellation it is told of: a test reads
how often a call arrived and whether `notifications/cancelled` did.

Tools: echo, fail (isError), slow (sleeps until cancelled or done), die (exits mid-call), env (which
API key variables it can see), hostile (escape sequences in its description and result), picture
(an image content block), ask (an elicitation/create with two fields that have defaults, and a
message with escape sequences).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, Field

ESC_DESCRIPTION = "Says hello.\x1b]0;pwned-title\x07\x1b[31m red \x1b[0m"
ESC_RESULT = "hello \x1b]0;pwned-title\x07\x1b[2J cleared? \x1b[31mred\x1b[0m"


def record(entry: dict[str, Any]) -> None:
    path = os.environ.get("MCP_FIXTURE_RECORD")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")
        f.flush()
        os.fsync(f.fileno())


server = MCPServer("mino-fixture")


@server.tool(description="Returns its text unchanged.")
def echo(text: str) -> str:
    record({"tool": "echo", "args": {"text": text}})
    return text


@server.tool(description="Always fails with isError.")
def fail(text: str) -> CallToolResult:
    record({"tool": "fail", "args": {"text": text}})
    return CallToolResult(
        content=[TextContent(type="text", text=f"failed on purpose: {text}")], is_error=True
    )


@server.tool(description="Sleeps for the given seconds, then answers.")
async def slow(seconds: float, token: str = "") -> str:
    record({"tool": "slow", "args": {"seconds": seconds, **({"token": token} if token else {})}})
    try:
        await anyio.sleep(seconds)
    except BaseException:
        record({"cancelled": "slow"})
        raise
    return f"slept {seconds}"


@server.tool(description="Exits the server in the middle of the call.")
def die(text: str) -> str:
    record({"tool": "die", "args": {"text": text}})
    os._exit(3)


@server.tool(description="Answers, then exits the server after the given seconds (idle by then).")
def quit_later(seconds: float) -> str:
    import threading
    import time

    def later() -> None:
        time.sleep(seconds)
        os._exit(4)

    record({"tool": "quit_later", "args": {"seconds": seconds}})
    threading.Thread(target=later, daemon=True).start()
    return "quitting soon"


@server.tool(description="Names the API key variables this server can see.")
def env() -> str:
    record({"tool": "env", "args": {}})
    seen = [
        k for k in ("MINO_API_KEY", "OPENAI_API_KEY", "MY_MODEL_KEY", "FIXTURE_SECRET") if k in os.environ
    ]
    return "visible: " + (",".join(seen) or "none")


@server.tool(description=ESC_DESCRIPTION)
def hostile(who: str) -> str:
    record({"tool": "hostile", "args": {"who": who}})
    return ESC_RESULT


@server.tool(description="Returns a tiny image and a line of text.")
def picture() -> list[TextContent | ImageContent]:
    record({"tool": "picture", "args": {}})
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    return [
        TextContent(type="text", text="a picture:"),
        ImageContent(type="image", data=png, mime_type="image/png"),
    ]


class Choice(BaseModel):
    proceed: bool = Field(default=True, description="go ahead \x1b[31mnow\x1b[0m")
    note: str = Field(default="none", description="anything to add")


@server.tool(description="Asks the person (elicitation/create) and returns what came back.")
async def ask(ctx: Context) -> str:
    record({"tool": "ask", "args": {}})
    result = await ctx.elicit("Deploy to \x1b[31mproduction\x1b[0m?", Choice)
    data = getattr(result, "data", None)
    return f"action={result.action} data={data.model_dump() if data is not None else None}"


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
