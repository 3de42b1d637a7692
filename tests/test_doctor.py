"""`mino doctor` (issue 29): every check over pipes (text and --json) and a pty, against the
scripted model, an unreachable port and a wrong path; exit 0 only when a turn can run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
from cli_driver import piped, spawn
from helpers import free_port

from mino_server import PROTOCOL_VERSION
from mino_server.testing.scripted_model import ScriptedModel

REPO = Path(__file__).resolve().parent.parent


def env_for(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(mode=0o700, exist_ok=True)
    env = {
        k: v for k, v in os.environ.items() if k not in ("MINO_API_KEY", "OPENAI_API_KEY", "MINO_BASE_URL")
    }
    return {**env, "MINO_HOME": str(home), **extra}


def doctor(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], bool]:
    done = piped(env, cwd, "", "doctor", "--json", *args)
    assert done.stderr == ""
    report = json.loads(done.stdout)
    return done.returncode, {c["name"]: c for c in report["checks"]}, report["ready"]


def doctor_text(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, list[str]]:
    done = piped(env, cwd, "", "doctor", *args)
    return done.returncode, done.stdout.splitlines()


def test_all_there_exits_0_and_never_shows_the_key(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    env = env_for(mino_home, MINO_BASE_URL=model.base_url, MINO_API_KEY="sk-secret-value")
    code, checks, ready = doctor(env, workdir)
    assert (code, ready) == (0, True)
    assert [c for c in checks] == ["config", "key", "endpoint", "wire", "sandbox", "home", "vscode"]
    assert checks["wire"]["ok"] and checks["wire"]["found"] == (
        "/responses answers; /chat/completions answers (wire_api: responses)"
    )
    assert checks["key"]["ok"] and checks["key"]["found"] == "from MINO_API_KEY (the value is not shown)"
    assert checks["endpoint"] == {
        "name": "endpoint",
        "ok": True,
        "needed": True,
        "found": f"GET {model.base_url}/models: HTTP 200 (base URL from MINO_BASE_URL)",
        "fix": None,
    }
    assert model.model_lists[0]["authorization"] == "Bearer sk-secret-value"  # the key was tried
    assert model.requests == []  # no model ran
    assert model.probes == ["/v1/responses", "/v1/chat/completions"]
    code, lines = doctor_text(env, workdir)
    assert code == 0
    assert lines[0] == f"✓ Config file: {mino_home / 'config.yaml'}: none (defaults)"
    assert lines[1] == "✓ API key: from MINO_API_KEY (the value is not shown)"
    assert (
        lines[2] == f"✓ Model endpoint: GET {model.base_url}/models: HTTP 200 (base URL from MINO_BASE_URL)"
    )
    assert lines[-1] == "Ready: a turn can run."
    assert "sk-secret-value" not in "\n".join(lines)


def test_no_key_for_openai_is_not_ready(mino_home: Path, workdir: Path) -> None:
    code, checks, ready = doctor(env_for(mino_home), workdir)
    assert (code, ready) == (1, False)
    assert checks["key"]["ok"] is False and checks["key"]["needed"]
    assert (
        checks["key"]["fix"]
        == 'set OPENAI_API_KEY, or MINO_BASE_URL for a local server (README.md, "First run")'
    )
    assert checks["endpoint"]["ok"] is None  # not asked: no network without a key
    code, lines = doctor_text(env_for(mino_home), workdir)
    assert code == 1
    assert lines[1].startswith(
        "✗ API key: none set (MINO_API_KEY, OPENAI_API_KEY) for https://api.openai.com/v1 — fix: "
    )
    assert lines[2] == "– Model endpoint: https://api.openai.com/v1: not asked until a key is set"
    assert lines[-1] == "Not ready: fix the ✗ lines above."


def test_local_server_without_a_key_is_ready(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    code, checks, _ = doctor(env_for(mino_home, MINO_BASE_URL=model.base_url), workdir)
    assert code == 0
    assert (
        checks["key"]["found"] == f"none set (MINO_API_KEY, OPENAI_API_KEY); none is sent to {model.base_url}"
    )
    assert "authorization" not in model.model_lists[0]


def test_a_server_with_only_chat_completions_gets_the_wire_api_fix(mino_home: Path, workdir: Path) -> None:
    import http.server
    import threading

    class ChatOnly(http.server.BaseHTTPRequestHandler):
        """As llama-cpp-python's server: a model list, /chat/completions, no /responses."""

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int) -> None:
            body = b'{"data": []}' if status == 200 else b'{"detail": "x"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(200 if self.path == "/v1/models" else 404)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send(422 if self.path == "/v1/chat/completions" else 404)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ChatOnly)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        code, checks, _ = doctor(env_for(mino_home, MINO_BASE_URL=url), workdir)
        assert code == 1 and checks["wire"]["ok"] is False
        assert (
            checks["wire"]["found"] == "/responses not found; /chat/completions answers (wire_api: responses)"
        )
        assert checks["wire"]["fix"] == "set wire_api: chat in config.yaml"
        (mino_home / "config.yaml").write_text("wire_api: chat\n")
        code, checks, _ = doctor(env_for(mino_home, MINO_BASE_URL=url), workdir)
        assert checks["wire"]["ok"] is True and checks["wire"]["found"].endswith("(wire_api: chat)")
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_port(mino_home: Path, workdir: Path) -> None:
    mino_home.mkdir(mode=0o700)
    url = f"http://127.0.0.1:{free_port()}/v1"
    (mino_home / "config.yaml").write_text(f"base_url: {url}\n")
    code, checks, _ = doctor(env_for(mino_home), workdir)
    assert code == 1
    assert checks["endpoint"]["found"] == (
        f"GET {url}/models: connection refused ({url}, base URL from {mino_home / 'config.yaml'})"
    )
    assert checks["endpoint"]["fix"].startswith("start the server, or correct the base URL")


def test_wrong_path_is_a_404_with_the_fix(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    root = model.base_url.removesuffix("/v1")
    code, lines = doctor_text(env_for(mino_home), workdir, "--base-url", root)
    assert code == 1
    endpoint = lines[2]
    assert endpoint.startswith(f"✗ Model endpoint: GET {root}/models: HTTP 404: ")
    assert endpoint.endswith(
        f"({root}, base URL from --base-url) — fix: correct the base URL: the server's OpenAI-compatible root, "
        "which usually ends in /v1"
    )
    model.errors.clear()  # the scripted model recorded the unexpected GET: this test's point


def test_bad_config_is_not_ready(mino_home: Path, workdir: Path) -> None:
    mino_home.mkdir(mode=0o700)
    (mino_home / "config.yaml").write_text("modle: gpt-5.1\n")
    code, checks, _ = doctor(env_for(mino_home), workdir)
    assert code == 1
    assert checks["config"]["ok"] is False
    assert "unknown key 'modle'" in checks["config"]["found"]
    assert set(checks) == {"config", "home", "sandbox", "vscode"}  # the rest needs a usable config


def test_sandbox_verdict_is_the_probes_and_does_not_stop_a_turn(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    mino_home.mkdir(mode=0o700)
    (mino_home / "config.yaml").write_text("sandbox: off\n")
    code, checks, _ = doctor(env_for(mino_home, MINO_BASE_URL=model.base_url), workdir)
    assert code == 0  # commands then ask before running unsandboxed: a turn still runs
    assert checks["sandbox"] == {
        "name": "sandbox",
        "ok": False,
        "needed": False,
        "found": "unavailable (sandbox: off in config)",
        "fix": "set sandbox: auto in config.yaml to sandbox commands",
    }
    code, lines = doctor_text(env_for(mino_home, MINO_BASE_URL=model.base_url), workdir)
    assert lines[4].endswith("(a turn runs without it)")
    (mino_home / "config.yaml").write_text("sandbox: auto\n")
    from mino_server.core.tools.sandbox import detect

    box, line = detect()
    _, checks, _ = doctor(env_for(mino_home, MINO_BASE_URL=model.base_url), workdir)
    assert checks["sandbox"]["ok"] is (box is not None)
    assert checks["sandbox"]["found"].startswith(line.removeprefix("Sandbox: "))


def test_home_permissions_counts_problems_and_escaping(
    model: ScriptedModel, mino_home: Path, workdir: Path
) -> None:
    env = env_for(mino_home, MINO_BASE_URL=model.base_url)
    piped(env, workdir, "/new\n")  # two sessions: the one start-up made, and /new's
    memory = mino_home / "memory"
    memory.mkdir()
    (memory / "bad\x1b[31mname.md").write_text("no front matter\n")
    os.chmod(mino_home, 0o755)
    code, checks, _ = doctor(env, workdir)
    assert code == 0  # a readable home and a broken memory file do not stop a turn
    home = checks["home"]
    assert home["ok"] is False
    assert f"{mino_home} (0755), sessions: 2, memories: 0, no session open" in home["found"]
    assert "mode 755: others can read it" in home["found"] and "1 memory file(s) not loaded" in home["found"]
    assert f"chmod 700 {mino_home}" in home["fix"]
    done = piped(env, workdir, "", "doctor")
    assert "\x1b" not in done.stdout  # the file name is shown, never obeyed
    assert "bad\\x1b[31mname.md" in done.stdout


def test_home_names_who_holds_a_session(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    env = env_for(mino_home, MINO_BASE_URL=model.base_url)
    child = spawn(env, workdir)
    child.expect(r"Session: ([0-9a-f]{32})")
    sid = child.match.group(1)
    child.expect_exact("You> ")
    try:
        _, checks, _ = doctor(env, workdir)
        assert f"open: {sid[:8]} by pid {child.pid} in {workdir.resolve()}" in checks["home"]["found"]
    finally:
        child.sendeof()
        child.expect(pexpect.EOF)
        child.close()


def install_extension(user_home: Path, version: object, folder: str = ".vscode/extensions") -> Path:
    ext = user_home / folder / "mino.mino-vscode-0.13.0"
    ext.mkdir(parents=True)
    manifest: dict[str, Any] = {"name": "mino-vscode", "version": "0.13.0"}
    if version is not None:
        manifest["mino"] = {"protocolVersion": version}
    (ext / "package.json").write_text(json.dumps(manifest))
    return ext


def test_vscode_extension_protocol(
    model: ScriptedModel, mino_home: Path, workdir: Path, tmp_path: Path
) -> None:
    user_home = tmp_path / "user-home"
    env = env_for(mino_home, MINO_BASE_URL=model.base_url, HOME=str(user_home))
    _, checks, _ = doctor(env, workdir)
    assert checks["vscode"]["ok"] is None
    ext = install_extension(user_home, PROTOCOL_VERSION - 1, ".vscode-server/extensions")
    code, checks, _ = doctor(env, workdir)
    assert code == 0  # the terminal does not need the extension
    assert checks["vscode"]["ok"] is False
    assert checks["vscode"]["found"] == (
        f"{ext}: protocol {PROTOCOL_VERSION - 1}; this mino speaks protocol {PROTOCOL_VERSION}"
    )
    (ext / "package.json").write_text(
        json.dumps({"name": "mino-vscode", "mino": {"protocolVersion": PROTOCOL_VERSION}})
    )
    _, checks, _ = doctor(env, workdir)
    assert checks["vscode"]["ok"] is True


def test_the_extensions_package_json_states_the_servers_protocol() -> None:
    manifest = json.loads((REPO / "editor/vscode/package.json").read_text())
    assert manifest["name"] == "mino-vscode"
    assert manifest["mino"]["protocolVersion"] == PROTOCOL_VERSION  # what doctor compares


def test_doctor_through_a_pty(model: ScriptedModel, mino_home: Path, workdir: Path) -> None:
    child = spawn(env_for(mino_home, MINO_BASE_URL=model.base_url, MINO_API_KEY="k"), workdir, "doctor")
    child.expect_exact("✓ API key: from MINO_API_KEY (the value is not shown)")
    child.expect_exact("✓ Model endpoint: GET ")
    child.expect_exact("Ready: a turn can run.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_bad_argument_and_lazy_import(mino_home: Path, workdir: Path) -> None:
    done = piped(env_for(mino_home), workdir, "", "doctor", "--bogus")
    assert done.returncode == 2 and done.stderr.startswith("mino doctor: unknown argument: --bogus")
    done = piped(env_for(mino_home), workdir, "", "doctor", "--help")
    assert (done.returncode, done.stdout) == (
        0,
        "usage: mino doctor [--json] [--model MODEL] [--base-url URL]\n",
    )
    code = "import sys, mino_server.main, mino_server.cli; print('mino_server.core.doctor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # the CLI's start-up does not load doctor
