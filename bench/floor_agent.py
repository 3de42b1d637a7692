"""The floor: a minimal stdlib agent, measured exactly like `mino` by bench/run.py.

One question from stdin, streamed Responses-API requests over one keep-alive connection, an SSE
parse, one `bash` tool, at most 8 requests. No sessions, memory, approvals or retries: whatever Mino
costs above this is the price of those.
"""

import http.client
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

TOOLS = [
    {
        "type": "function",
        "name": "bash",
        "description": "Run a bash command and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]


def ask(conn: http.client.HTTPConnection, path: str, items: list) -> list:
    body = {"model": "floor", "input": items, "tools": TOOLS, "stream": True, "store": False}
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    conn.request("POST", path, json.dumps(body).encode(), headers)
    response = conn.getresponse()
    if response.status != 200:
        sys.exit(f"HTTP {response.status}: {response.read()[:200]!r}")
    done, data = [], []
    for raw in response:  # lines of the de-chunked body
        line = raw.decode().rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            event, data = json.loads("\n".join(data)), []
            if event["type"] == "response.output_text.delta":
                sys.stdout.write(event["delta"])
                sys.stdout.flush()
            elif event["type"] == "response.output_item.done":
                done.append(event["item"])
    return done


def main() -> None:
    url = urlsplit(os.environ["MINO_BASE_URL"])
    conn = http.client.HTTPConnection(url.hostname, url.port)
    question = sys.stdin.readline().strip()
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]}]
    for _ in range(8):
        output = ask(conn, url.path.rstrip("/") + "/responses", items)
        calls = [item for item in output if item["type"] == "function_call"]
        items += [{k: v for k, v in item.items() if k not in ("id", "status")} for item in output]
        if not calls:
            break
        for call in calls:
            command = json.loads(call["arguments"])["command"]
            run = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            output_text = run.stdout.decode(errors="replace")
            items.append({"type": "function_call_output", "call_id": call["call_id"], "output": output_text})
    print()


if __name__ == "__main__":
    main()
