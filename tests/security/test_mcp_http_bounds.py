"""An HTTP MCP server's answers are bounded as a stdio server's lines are (docs/SECURITY.md, "Bounded
inputs"): no one message (a JSON answer, one event of an event stream, on a POST or the standalone
GET) makes Mino hold more than mcp_client.MAX_MESSAGE_BYTES. Past it the server's connection is
closed, the call fails with the same one line as for stdio, the turn goes on and the server's tools
are gone. The hostile server is a real HTTP server (standard library) in a subprocess on 127.0.0.1;
it writes with a small send buffer and records how many bytes Mino took before the cut."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import RecordingUI, conversation_with_servers, read_jsonl, turn, wait_until

from mino_server.core.inbound import MAX_JSON_VALUES
from mino_server.core.mcp_client import MAX_MESSAGE_BYTES
from mino_server.testing.scripted_model import ScriptedModel

MiB = 1024 * 1024
LINE = f"the server sent a message longer than {MAX_MESSAGE_BYTES // MiB} MiB; its connection was closed"
# What Mino may have taken past the bound: the chunk that crossed it, and what the two kernels'
# socket buffers held when it closed (the server's send buffer is set small; the receive buffer
# grows to a few MiB on loopback). A server that is read to the end sends 20 MiB or more.
SLACK = 8 * MiB

# A Streamable HTTP MCP server with one tool, `big`, answered as MODE says:
#   json      a 20 MiB JSON body          sse       one 20 MiB event
#   endless   an event line with no end   legal     a 1 MiB answer as JSON, legal_sse as an event
#   get       a 20 MiB event on the standalone GET stream, as soon as it is opened
#   crowded   2 MiB of JSON numbers (a million values) as JSON, crowded_sse as an event
#   gzip      20 MiB of JSON answer gzipped into a few KiB, though Mino asked for no compression
# Each answer's bytes the client took are appended to RECORD as {"what", "sent"}.
SERVER = r"""
import gzip, http.server, json, os, socket, sys

MODE, RECORD, PORT_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
MiB = 1 << 20

def record(what, sent):
    with open(RECORD, "a") as f:
        f.write(json.dumps({"what": what, "sent": sent}) + "\n")

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32768)

    def head(self, status, kind, length=None, encoding=None):
        self.send_response(status)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("Content-Type", kind)
        self.send_header("Mcp-Session-Id", "s1")
        self.send_header("Connection", "close")
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self.close_connection = True

    def stream(self, what, parts):
        sent = 0
        try:
            for part in parts:
                for at in range(0, len(part), 65536):  # counted to 64 KiB
                    self.wfile.write(part[at : at + 65536])
                    sent += len(part[at : at + 65536])
            self.wfile.flush()
        except OSError:
            pass
        record(what, sent)

    def do_DELETE(self):
        self.head(200, "application/json", 0)

    def do_GET(self):
        if MODE != "get":
            self.head(405, "text/plain", 0)
            return
        self.head(200, "text/event-stream")
        self.stream("get", event(20 * MiB))

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in msg:
            self.head(202, "application/json", 0)
            return
        method = msg.get("method")
        if method == "tools/call":
            record("accept-encoding", self.headers.get("Accept-Encoding"))
            self.call(msg["id"])
            return
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "big", "description": "A big answer.", "inputSchema": {"type": "object"}}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        self.head(200, "application/json", len(body))
        self.wfile.write(body)

    def call(self, id):
        if MODE in ("json", "legal"):
            size = 20 * MiB if MODE == "json" else MiB
            head, tail = answer(id)
            self.head(200, "application/json", len(head) + size + len(tail))
            self.stream(MODE, [head, *[b"A" * MiB] * (size // MiB), tail])
        elif MODE in ("sse", "legal_sse"):
            self.head(200, "text/event-stream")
            self.stream(MODE, event(20 * MiB if MODE == "sse" else MiB, id))
        elif MODE == "endless":
            self.head(200, "text/event-stream")
            self.stream(MODE, [b"data: " + b"A" * MiB] + [b"A" * MiB] * 63)
        elif MODE in ("crowded", "crowded_sse"):
            body = b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [], "x": [' % id + b"1," * MiB + b'1]}}'
            if MODE == "crowded":
                self.head(200, "application/json", len(body))
                self.stream(MODE, [body])
            else:
                self.head(200, "text/event-stream")
                self.stream(MODE, [b"data: " + body + b"\n\n"])
        elif MODE == "gzip":
            head, tail = answer(id)
            body = gzip.compress(head + b"A" * (20 * MiB) + tail)
            self.head(200, "application/json", len(body), "gzip")
            self.stream(MODE, [body])
        else:  # get: the call waits for an answer that never comes
            self.head(200, "text/event-stream")
            self.stream("call", [b": waiting\n\n"])

def answer(id):
    head, tail = json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "@"}]}}).split("@")
    return head.encode(), tail.encode()

def event(size, id=None):
    head, tail = answer(id if id is not None else 0)
    if id is None:  # a request of the server's own on the GET stream
        head = b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "'
        tail = b'"}}'
    return [b"event: message\ndata: " + head, *[b"A" * MiB] * (size // MiB), tail + b"\n\n"]

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
"""


@contextlib.contextmanager
def hostile(mode: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    script, record, port_file = tmp_path / "hostile.py", tmp_path / "sent.jsonl", tmp_path / "port"
    script.write_text(SERVER)
    proc = subprocess.Popen(
        [sys.executable, str(script), mode, str(record), str(port_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(port_file.exists, "the hostile server listening")
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp", record
    finally:
        proc.kill()
        proc.wait()


def configure(home: Path, url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = {"sandbox": "off", "mcp_servers": {"h": {"url": url, "allow": ["big"], "start_timeout_s": 120}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def call_big(model: ScriptedModel, workdir: Path) -> tuple[dict[str, Any], RecordingUI, Any]:
    """One turn calling `big`, then a second turn; returns the call's result, the UI, the state."""
    model.add({"calls": [{"name": "mcp__h__big", "arguments": {}}]}, {"text": "on"}, {"text": "two"})
    ui = RecordingUI()
    conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
    try:
        turn(conversation, "go")
        turn(conversation, "again")
        (result,) = ui.of_type("tool_result")
        return result, ui, conversation.state().mcp
    finally:
        conversation.close()


def sent(record: Path, what: str) -> int:
    wait_until(lambda: record.exists() and any(r["what"] == what for r in read_jsonl(record)), "the count")
    return next(int(r["sent"]) for r in read_jsonl(record) if r["what"] == what)


@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode", ["json", "sse", "endless"])
def test_an_http_mcp_answer_past_the_bound_closes_the_connection(
    mode: str, model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    with hostile(mode, tmp_path) as (url, record):
        configure(mino_home, url)
        result, ui, state = call_big(model, workdir)
        took = sent(record, mode)
        print(f"{mode}: Mino took {took / MiB:.2f} MiB before the cut")
        assert result["status"] == "failed", result
        assert result["text"] == f"MCP server h stopped during the call: {LINE}", result["text"]
        assert took < MAX_MESSAGE_BYTES + SLACK, f"{mode}: Mino read {took} bytes"
        # The turn went on: the model had the failure and answered; the next turn has no `h` tools.
        assert len(model.requests) == 3
        assert any(LINE in i.get("output", "") for i in model.requests[1]["input"])
        assert not any(t["name"].startswith("mcp__h__") for t in model.requests[2].get("tools", []))
        assert state is not None and state[0].state == "failed" and LINE in (state[0].error or "")
        lines = [e["text"] for e in ui.of_type("notice") if e["text"].startswith("MCP server h")]
        assert len(lines) <= 1, lines


@pytest.mark.timeout(200)
def test_an_http_mcp_event_past_the_bound_on_the_get_stream_ends_the_server(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    with hostile("get", tmp_path) as (url, record):
        configure(mino_home, url)
        model.add({"text": "one"})
        ui = RecordingUI()
        conversation = conversation_with_servers(model.base_url, workdir, ui, mode="bypass")
        try:
            wait_until(lambda: (conversation.state().mcp or [])[0].state == "failed", "the server ended")
            took = sent(record, "get")
            print(f"get: Mino took {took / MiB:.2f} MiB before the cut")
            assert took < MAX_MESSAGE_BYTES + SLACK
            (status,) = conversation.state().mcp or []
            assert status.error == LINE
            turn(conversation, "hi")
            assert not any(t["name"].startswith("mcp__h__") for t in model.requests[0].get("tools", []))
            lines = [e["text"] for e in ui.of_type("notice") if e["text"].startswith("MCP server h")]
            assert lines == [f"MCP server h: {LINE}"]
        finally:
            conversation.close()


@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode", ["legal", "legal_sse"])
def test_a_large_legal_http_mcp_answer_still_works(
    mode: str, model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    with hostile(mode, tmp_path) as (url, record):
        configure(mino_home, url)
        result, _ui, state = call_big(model, workdir)
        assert result["status"] == "completed", result
        assert result["text"].startswith("AAAA")
        assert sent(record, mode) > MiB
        assert state is not None and state[0].state == "ready"
        assert any(t["name"] == "mcp__h__big" for t in model.requests[2]["tools"])
        assert json.dumps(model.requests[1]).count("A") > 1000


@pytest.mark.timeout(200)
def test_a_compressed_http_mcp_answer_is_refused_not_inflated(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """Counted bytes are the bytes read: an answer gzipped from 20 MiB to a few KiB is refused
    (Mino asks for no compression) rather than inflated past the bound."""
    with hostile("gzip", tmp_path) as (url, record):
        configure(mino_home, url)
        result, _ui, state = call_big(model, workdir)
        assert [r["sent"] for r in read_jsonl(record) if r["what"] == "accept-encoding"] == ["identity"]
        said = "the server sent a compressed answer (gzip) Mino did not ask for; its connection was closed"
        assert result["status"] == "failed" and result["text"].endswith(said), result["text"]
        assert state is not None and state[0].state == "failed"
        assert not any(t["name"].startswith("mcp__h__") for t in model.requests[2].get("tools", []))


@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode", ["crowded", "crowded_sse"])
def test_an_http_mcp_answer_past_the_json_bounds_is_refused_unparsed(
    mode: str, model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    """As for a stdio line (core/inbound.py): 2 MiB that would parse into a million values."""
    with hostile(mode, tmp_path) as (url, _record):
        configure(mino_home, url)
        result, _ui, state = call_big(model, workdir)
        assert result["status"] == "failed", result
        assert result["text"].startswith(
            "MCP server h stopped during the call: the server sent a message that holds"
        )
        assert result["text"].endswith(f"the limit is {MAX_JSON_VALUES}; its connection was closed")
        assert state is not None and state[0].state == "failed"


def test_event_ends_are_found_as_the_sse_parser_finds_them() -> None:
    """The counter's event ends, over random chunkings of random line ends: each is the parser's
    (an empty line), or a byte before one (a chunk-ending `\\r` whose `\\n` comes next), and the
    bytes between them are the stream's, in order. A false end would restart the count."""
    import itertools
    import random
    import re

    from mino_server.core import mcp_http

    class Judge:
        limit = 1 << 30
        events: list[bytes] = []

        def judge(self, message: bytes) -> None:
            self.events.append(message)

        def cut(self, what: str | None) -> None:
            raise AssertionError(what)

    def parser_ends(data: bytes) -> set[int]:
        ends, at, empty = set(), 0, False
        for m in re.finditer(rb"\r\n|\r|\n", data):
            empty = m.start() == at and at > 0 and data[at - 1 : at] in (b"\r", b"\n")
            if empty:
                ends.add(m.end())
            at = m.end()
        return ends

    rng = random.Random(7)
    pieces = [b"data: x", b"\r\n", b"\n", b"\r", b"yy", b"\r\n\r\n", b"\n\n"]
    small, mcp_http._SMALL = mcp_http._SMALL, -1  # every event judged: the test sees each
    try:
        for _ in range(5000):
            data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
            judge = Judge()
            judge.events = []
            counted = mcp_http._Counted(None, True, judge)  # type: ignore[arg-type]
            cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 5))))
            for start, end in itertools.pairwise([0, *cuts, len(data)]):
                counted._events_in(data[start:end])
            found = set(itertools.accumulate(len(e) for e in judge.events))
            real = parser_ends(data)
            assert all(end in real or end + 1 in real for end in found), (data, cuts, judge.events)
            assert b"".join(judge.events) + b"".join(counted._parts) == data
    finally:
        mcp_http._SMALL = small
