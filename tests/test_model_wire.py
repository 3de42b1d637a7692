"""Both ends of the model wire over real loopback HTTP: ScriptedModel (server) and ModelClient."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from mino_server.core.cancel import Cancelled, CancelToken
from mino_server.core.model_client import FunctionCall, ModelClient, ModelError, ModelResponse
from mino_server.testing.scripted_model import ScriptedModel, parse_reply

LONG_TEXT = "The answer is in the file README.md, on the third line, next to the licence notice."
BODY = {"instructions": "Be brief.", "input": [{"role": "user", "content": "hello"}], "tools": []}


def client_for(model: ScriptedModel, **kwargs: float) -> ModelClient:
    options = {"timeout_s": 5.0, "max_retries": 3, "backoff_s": 0.01, **kwargs}
    return ModelClient(model.base_url, "sk-test", "test-model", **options)  # type: ignore[arg-type]


def run(client: ModelClient, body: dict | None = None) -> tuple[ModelResponse, list[str]]:
    deltas: list[str] = []
    try:
        return client.stream(body or BODY, deltas.append, CancelToken()), deltas
    finally:
        client.close()


def fail(client: ModelClient) -> str:
    with pytest.raises(ModelError) as info:
        run(client)
    message = str(info.value)
    assert "\n" not in message
    return message


def sse_events(model: ScriptedModel) -> list[tuple[str, dict]]:
    """The raw stream as (event line, data) pairs, read with plain httpx."""
    pairs: list[tuple[str, dict]] = []
    content = json.dumps(BODY).encode()
    with httpx.stream("POST", f"{model.base_url}/responses", content=content) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                pairs.append((name, json.loads(line[6:])))
    return pairs


# -- the server's stream shape -----------------------------------------------------------------


def test_stream_follows_the_responses_api_event_shape(model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT, "calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]})
    pairs = sse_events(model)
    assert all(name == data["type"] for name, data in pairs)
    assert [d["sequence_number"] for _, d in pairs] == list(range(len(pairs)))
    types = [d["type"] for _, d in pairs]
    deltas = types.count("response.output_text.delta")
    assert deltas >= 3
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * deltas,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * types.count("response.function_call_arguments.delta"),
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    by_type = {d["type"]: d for _, d in pairs}
    delta = by_type["response.output_text.delta"]
    assert {"item_id", "output_index", "content_index", "delta"} <= delta.keys()
    assert by_type["response.output_text.done"]["text"] == LONG_TEXT
    done = by_type["response.function_call_arguments.done"]
    assert done["arguments"] == '{"path": "README.md"}' and done["output_index"] == 1
    final = by_type["response.completed"]["response"]
    assert final["status"] == "completed"
    message, call = final["output"]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0] == {
        "type": "output_text",
        "text": LONG_TEXT,
        "annotations": [],
        "logprobs": [],
    }
    assert call["type"] == "function_call" and call["call_id"] == "call_1" and call["name"] == "read_file"
    assert final["usage"]["input_tokens"] == len(json.dumps(BODY).encode()) // 4
    assert final["usage"]["total_tokens"] == final["usage"]["input_tokens"] + final["usage"]["output_tokens"]
    assert model.errors == [] and model.remaining == 0


def test_parse_reply_names_the_bad_field() -> None:
    assert parse_reply({"text": "hi", "require": "x"}) == {"text": "hi", "require": ["x"]}
    assert (
        parse_reply({"calls": [{"name": "bash", "arguments": "{oops"}]})["calls"][0]["arguments"] == "{oops"
    )
    cases = [
        ({"calls": [{"name": 3}]}, "reply 3: 'calls[0].name' must be a string"),
        ({"txt": "hi"}, "reply 3: unknown key 'txt'"),
        ({"status": 200}, "'status' must be an HTTP error status"),
        ({"status": 500, "text": "x"}, "'status' cannot be combined"),
        ({"require": ["ok", 1]}, "'require' must be a string or a list"),
        ({"cut_after": -1}, "'cut_after' must be a non-negative integer"),
        ({"delay": "slow"}, "'delay' must be a non-negative number"),
        ({"usage": {"input_tokens": "many"}}, "'usage.input_tokens' must be"),
        ("just text", "reply 3: must be a mapping"),
    ]
    for reply, expected in cases:
        with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace("[", r"\[")):
            parse_reply(reply, "reply 3")
    with pytest.raises(ValueError, match="reply 2: 'calls' must be a list"):
        ScriptedModel([{"text": "ok"}, {"calls": "bash"}])


# -- text and calls ----------------------------------------------------------------------------


def test_text_arrives_in_several_deltas(model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT, "usage": {"input_tokens": 7, "output_tokens": 3}})
    result, deltas = run(client_for(model))
    assert len(deltas) >= 3 and "".join(deltas) == LONG_TEXT
    assert result == ModelResponse(text=LONG_TEXT, calls=[], usage=result.usage)
    assert result.usage is not None and (result.usage["input_tokens"], result.usage["output_tokens"]) == (
        7,
        3,
    )
    sent = model.requests[0]
    assert (sent["model"], sent["stream"], sent["store"]) == ("test-model", True, False)
    assert sent["instructions"] == "Be brief." and sent["input"] == BODY["input"]
    assert model.request_headers[0]["authorization"] == "Bearer sk-test"
    assert len(model.request_times) == 1 and model.errors == []


def test_one_function_call(model: ScriptedModel) -> None:
    model.add({"calls": [{"name": "bash", "arguments": {"command": "ls -la"}, "call_id": "call_abc"}]})
    result, deltas = run(client_for(model))
    assert deltas == [] and result.text == ""
    assert result.calls == [FunctionCall("call_abc", "bash", '{"command": "ls -la"}')]


def test_text_then_two_calls_with_raw_arguments_preserved(model: ScriptedModel) -> None:
    raw = '{"path": "a.txt", "content": "unterminated'
    model.add(
        {
            "text": "Two things.",
            "calls": [
                {"name": "write_file", "arguments": raw},
                {"name": "read_file", "arguments": {"path": "é"}},
            ],
        }
    )
    result, deltas = run(client_for(model))
    assert "".join(deltas) == result.text == "Two things."
    assert result.calls == [
        FunctionCall("call_1", "write_file", raw),
        FunctionCall("call_2", "read_file", '{"path": "é"}'),
    ]


# -- the script's checks -----------------------------------------------------------------------


def test_require_met(model: ScriptedModel) -> None:
    model.add({"require": ["Be brief.", "hello"], "text": "ok"})
    result, _ = run(client_for(model))
    assert result.text == "ok" and model.errors == []


def test_require_matches_decoded_strings(model: ScriptedModel) -> None:
    model.add({"require": 'say "hi"\nto 中文', "text": "ok"})
    body = {**BODY, "input": [{"role": "user", "content": 'say "hi"\nto 中文'}]}
    deltas: list[str] = []
    client = client_for(model)
    assert client.stream(body, deltas.append, CancelToken()).text == "ok"
    client.close()
    assert model.errors == []


def test_require_unmet_is_recorded_and_answered_400(model: ScriptedModel) -> None:
    model.add({"require": "Saved memory", "text": "never sent"})
    message = fail(client_for(model))
    assert message.startswith("Model request failed: HTTP 400: scripted model: request #1 does not contain")
    assert model.errors == ["request #1 does not contain 'Saved memory'"]
    assert len(model.requests) == 1  # 400 is not retried


def test_unexpected_request(model: ScriptedModel) -> None:
    message = fail(client_for(model))
    assert "HTTP 400" in message and "unexpected request #1" in message
    assert len(model.errors) == 1 and model.errors[0].startswith('unexpected request #1: {"instructions"')


# -- HTTP errors and retries ---------------------------------------------------------------------


def test_500_then_success_is_retried(model: ScriptedModel) -> None:
    model.add({"status": 500, "error": "The server had an error"}, {"text": "recovered"})
    result, _ = run(client_for(model))
    assert result.text == "recovered" and len(model.requests) == 2 and model.errors == []


def test_429_honours_retry_after(model: ScriptedModel) -> None:
    model.add({"status": 429, "error": "Rate limit reached", "headers": {"Retry-After": 0}}, {"text": "ok"})
    started = time.perf_counter()
    result, _ = run(client_for(model, backoff_s=5.0))  # Retry-After: 0 wins over the 5 s backoff
    assert result.text == "ok" and len(model.requests) == 2
    assert time.perf_counter() - started < 1.0


def test_retries_are_bounded(model: ScriptedModel) -> None:
    model.add(*[{"status": 503, "error": "Overloaded"}] * 3)
    message = fail(client_for(model, max_retries=2))
    assert message == "Model request failed: HTTP 503: Overloaded (after 3 attempts)"
    assert len(model.requests) == 3


def test_401_is_not_retried(model: ScriptedModel) -> None:
    model.add({"status": 401, "error": "Incorrect API key provided"}, {"text": "must stay unused"})
    message = fail(client_for(model))
    assert message == "Model request failed: HTTP 401: Incorrect API key provided"
    assert len(model.requests) == 1 and model.remaining == 1


def test_failed_event_reports_the_service_message(model: ScriptedModel) -> None:
    model.add({"text": "partial", "fail": "The model crashed"})
    assert fail(client_for(model)) == "Model request failed: The model crashed"
    assert len(model.requests) == 1


# -- broken streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("cut_after", [5, 15])  # 5: mid text; 15: inside the call's arguments
def test_cut_stream(model: ScriptedModel, cut_after: int) -> None:
    model.add(
        {
            "text": LONG_TEXT,
            "calls": [{"name": "bash", "arguments": {"command": "ls"}}],
            "cut_after": cut_after,
        }
    )
    message = fail(client_for(model))
    assert message.startswith("Model stream ended before the response completed")
    assert len(model.requests) == 1  # events had arrived: no retry


def test_malformed_sse(model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT, "malformed": True})
    assert fail(client_for(model)).startswith("Model stream sent malformed data")


def test_stall_times_out(model: ScriptedModel) -> None:
    model.add({"text": LONG_TEXT, "stall": 30})
    started = time.perf_counter()
    message = fail(client_for(model, timeout_s=0.5))
    assert message == "Model request timed out after 0.5 s"
    # It waited its 0.5 s, and gave up before the 30 s stall ended (no latency: a loaded machine).
    assert 0.4 < time.perf_counter() - started < 30
    assert len(model.requests) == 1


def test_stop_interrupts_a_stall() -> None:
    model = ScriptedModel([{"text": LONG_TEXT, "stall": 30}]).start()
    with httpx.stream("POST", f"{model.base_url}/responses", json=BODY) as response:
        lines = response.iter_lines()
        next(lines)  # the first event arrived; the server now stalls
        started = time.perf_counter()
        model.stop()
        assert time.perf_counter() - started < 30  # it did not wait for the stall to end
        with pytest.raises(httpx.HTTPError):
            list(lines)


def _no_stream_thread_left() -> bool:
    """The cut socket also ends the client's worker thread (waited for as an event, 30 s a hang)."""
    deadline = time.monotonic() + 30
    while any(t.name == "model-stream" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not any(t.name == "model-stream" for t in threading.enumerate())


def test_cancel_during_slow_stream(model: ScriptedModel) -> None:
    """A cancel mid-stream: not one delta more reaches the caller, and the stream is cut."""
    model.add({"text": LONG_TEXT * 3, "delay": 0.05})
    cancel = CancelToken()
    deltas: list[str] = []
    client = client_for(model)

    def on_text(delta: str) -> None:
        deltas.append(delta)
        if len(deltas) == 3:
            cancel.cancel()

    with pytest.raises(Cancelled):
        client.stream(BODY, on_text, cancel)
    client.close()
    assert len(deltas) == 3  # the cancel was the last thing the caller saw: causality, not a clock
    assert _no_stream_thread_left()


def test_cancel_while_the_stream_stalls(model: ScriptedModel) -> None:
    """The caller leaves on cancel while the worker is blocked in a read, not when the read ends."""
    model.add({"text": LONG_TEXT, "stall": 60})
    cancel = CancelToken()
    client = client_for(model, timeout_s=120)

    def cancel_once_stalling() -> None:
        # Not once the request is recorded: that is before the headers are sent, a case of its own
        # (test_cancel_while_waiting_for_the_response_headers).
        model.stalling.wait(60)
        cancel.cancel()

    threading.Thread(target=cancel_once_stalling, daemon=True).start()
    started = time.perf_counter()
    deltas: list[str] = []
    with pytest.raises(Cancelled):
        client.stream(BODY, deltas.append, cancel)
    client.close()
    assert time.perf_counter() - started < 60 and deltas == []  # before the stall's end
    assert _no_stream_thread_left()


def test_cancel_while_waiting_for_the_response_headers() -> None:
    """A service that took the request and answers nothing: the caller leaves at once, and the
    worker with it (the socket is cut from before the request is sent), while the service still
    holds the connection open."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = ModelClient(f"http://127.0.0.1:{server.getsockname()[1]}/v1", None, "m", timeout_s=120.0)
        cancel = CancelToken()
        threading.Timer(0.3, cancel.cancel).start()
        started = time.perf_counter()
        try:
            with pytest.raises(Cancelled):
                client.stream(BODY, lambda _: None, cancel)
            assert 0.25 < time.perf_counter() - started < 60
            assert _no_stream_thread_left()  # not the 120 s timeout: the cut woke its read
        finally:
            client.close()


def test_cancel_during_backoff(model: ScriptedModel) -> None:
    """A cancel while the client waits to try again (a 60 s backoff after a 500) ends the wait."""
    model.add({"status": 500}, {"text": "unused"})
    cancel = CancelToken()

    def cancel_once_answered() -> None:  # the first request answered 500: the backoff has begun
        deadline = time.monotonic() + 60
        while not model.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        cancel.cancel()

    threading.Thread(target=cancel_once_answered, daemon=True).start()
    started = time.perf_counter()
    with pytest.raises(Cancelled):
        client_for(model, backoff_s=60.0).stream(BODY, lambda _: None, cancel)
    # Well before the backoff would have ended (a loaded machine may take seconds, never 60).
    assert time.perf_counter() - started < 30 and len(model.requests) == 1


def test_connection_refused() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ModelError) as info:
        ModelClient(url, None, "m", timeout_s=2.0, max_retries=1, backoff_s=0.01).stream(
            BODY, lambda _: None, CancelToken()
        )
    assert str(info.value) == f"Model request failed: connection refused ({url}) (after 2 attempts)"


# -- connection reuse and the command ------------------------------------------------------------


def test_keep_alive_reuses_one_connection(model: ScriptedModel) -> None:
    model.add(
        {"text": "one"}, {"status": 500}, {"calls": [{"name": "bash", "arguments": {}}]}, {"text": "three"}
    )
    client = client_for(model)
    try:
        texts = [client.stream(BODY, lambda _: None, CancelToken()) for _ in range(3)]
    finally:
        client.close()
    assert [r.text for r in texts] == ["one", "", "three"]
    assert model.connections == 1 and len(model.requests) == 4 and model.errors == []


def test_command_line_serves_a_yaml_file(tmp_path: Path) -> None:
    replies = tmp_path / "replies.yaml"
    replies.write_text("- text: from yaml\n- calls:\n    - name: bash\n      arguments: {command: pwd}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "mino_server.testing.scripted_model", "--replies", str(replies)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = ModelClient(base_url, None, "m", timeout_s=5.0)
        try:
            assert client.stream(BODY, lambda _: None, CancelToken()).text == "from yaml"
            call = client.stream(BODY, lambda _: None, CancelToken()).calls[0]
        finally:
            client.close()
        assert (call.name, call.arguments) == ("bash", '{"command": "pwd"}')
    finally:
        process.terminate()
        process.wait(5)


def test_a_body_cut_short_by_the_client_is_not_a_request(model: ScriptedModel) -> None:
    model.add({"text": "kept for the next request"})
    host, port = model.base_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port))) as sock:  # a client killed while sending its body
        sock.sendall(b'POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mod')
    time.sleep(0.3)
    assert model.requests == [] and model.errors == [] and model.remaining == 1
    reply = httpx.post(f"{model.base_url}/responses", json={"input": []}, timeout=5)
    assert reply.status_code == 200 and "kept for the next request" in reply.text
