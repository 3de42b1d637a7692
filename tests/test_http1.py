"""The model client's HTTP/1.1 (core/http1.py) against real sockets on loopback: proxies from the
environment (absolute-form and CONNECT tunnels), TLS verified against a CA the test makes, bodies
sent compressed, broken and oversized answers, and connections the server closed while idle.

The servers here are raw sockets, so each test says exactly what goes over the wire.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mino_server.core import http1
from mino_server.core.cancel import CancelToken
from mino_server.core.http1 import CannotSend, Client, HTTPFailure
from mino_server.core.model_client import ModelClient, ModelError

BODY = {"instructions": "Be brief.", "input": [{"role": "user", "content": "hello"}], "tools": []}
SSE_HELLO = (
    b'data: {"type":"response.output_text.delta","delta":"Hello"}\n\n'
    b'data: {"type":"response.completed","response":{"output":[{"type":"message",'
    b'"content":[{"type":"output_text","text":"Hello"}]}]}}\n\n'
)


def read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    """The request head (up to the blank line) and whatever body bytes came with it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def read_request(conn: socket.socket) -> tuple[bytes, bytes]:
    """One whole request: its head and its Content-Length body."""
    head, body = read_head(conn)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head, body


class RawServer:
    """A loopback listener; `serve(conn)` runs in a thread per connection. Records the request heads."""

    def __init__(
        self,
        serve: Callable[[RawServer, socket.socket], None],
        tls: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
    ):
        self.sock = socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.port = self.sock.getsockname()[1]
        self.heads: list[bytes] = []
        self.connections = 0
        self._serve, self._tls = serve, tls
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            if self._tls is not None:
                conn = self._tls.wrap_socket(conn, server_side=True)
            self._serve(self, conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for server in made:
        server.close()


def answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def sse_server(server: RawServer, conn: socket.socket) -> None:
    """Answers each request on the connection with the SSE hello, keep-alive."""
    while True:
        head, _ = read_request(conn)
        if not head:
            return
        server.heads.append(head)
        conn.sendall(answer(SSE_HELLO, "Content-Type: text/event-stream"))


def forwarding_proxy(server: RawServer, conn: socket.socket) -> None:
    """An HTTP proxy: CONNECT opens a tunnel to the named port on loopback; anything else is
    answered by the proxy itself with the SSE hello (the test reads the absolute-form head)."""
    head, rest = read_request(conn)
    server.heads.append(head)
    if not head.startswith(b"CONNECT "):
        conn.sendall(answer(SSE_HELLO, "Content-Type: text/event-stream", "Connection: close"))
        return
    port = int(head.split(b" ")[1].rsplit(b":", 1)[1])
    upstream = socket.create_connection(("127.0.0.1", port))
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if rest:
        upstream.sendall(rest)

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for end in (src, dst):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join(10)
    upstream.close()


def stream_hello(base_url: str) -> str:
    client = ModelClient(base_url, "sk-test", "m", timeout_s=10.0, max_retries=0)
    try:
        return client.stream(BODY, lambda _: None, CancelToken()).text
    finally:
        client.close()


def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


# -- proxies from the environment -------------------------------------------------------------------


def test_a_remote_model_server_is_reached_through_the_environments_http_proxy(
    servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain http through a proxy: the request goes to the proxy in absolute form, with the proxy's
    credentials from its URL; the model server's host is never resolved by Mino."""
    proxy = RawServer(forwarding_proxy)
    servers.append(proxy)
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://ann:s%40cret@127.0.0.1:{proxy.port}")
    assert stream_hello("http://models.example.invalid/v1") == "Hello"
    lines = proxy.heads[0].split(b"\r\n")
    assert lines[0] == b"POST http://models.example.invalid/v1/responses HTTP/1.1"
    assert b"proxy-authorization: Basic YW5uOnNAY3JldA==" in [line.lower()[:21] + line[21:] for line in lines]
    assert b"host: models.example.invalid" in [line.lower() for line in lines]


def test_no_proxy_and_loopback_go_direct(servers: list[RawServer], monkeypatch: pytest.MonkeyPatch) -> None:
    model, proxy = RawServer(sse_server), RawServer(forwarding_proxy)
    servers += [model, proxy]
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{proxy.port}")
    # A model server on loopback never goes through a proxy (ModelClient: trust_env off).
    assert stream_hello(f"http://127.0.0.1:{model.port}/v1") == "Hello"
    # Any host NO_PROXY names goes direct too (the client here trusts the environment).
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    with Client(10.0, trust_env=True) as client:
        response = client.get(f"http://127.0.0.1:{model.port}/v1/models")
        assert response.status_code == 200 and response.read() == SSE_HELLO
    assert proxy.heads == [] and len(model.heads) == 2


def test_a_proxy_that_refuses_the_tunnel_is_named_in_the_error(
    servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing(server: RawServer, conn: socket.socket) -> None:
        server.heads.append(read_request(conn)[0])
        conn.sendall(answer(b"", "Proxy-Authenticate: Basic", status="407 Proxy Authentication Required"))

    proxy = RawServer(refusing)
    servers.append(proxy)
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    with pytest.raises(ModelError) as info:
        stream_hello("https://api.example.invalid/v1")
    assert str(info.value) == (
        f"Model request failed: the proxy 127.0.0.1:{proxy.port} refused the tunnel to"
        " api.example.invalid:443: HTTP 407 Proxy Authentication Required (https://api.example.invalid/v1)"
    )
    assert proxy.heads[0].startswith(b"CONNECT api.example.invalid:443 HTTP/1.1\r\n")


def test_a_proxy_mino_cannot_speak_through_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    with pytest.raises(CannotSend, match=r"socks5://127.0.0.1 is not an http:// or https:// proxy"):
        Client(5.0, trust_env=True).get("https://api.example.invalid/v1/models")
    client = ModelClient("https://api.example.invalid/v1", None, "m", max_retries=3, backoff_s=10.0)
    with pytest.raises(ModelError, match="is not an http:// or https:// proxy") as info:
        client.stream(BODY, lambda _: None, CancelToken())
    assert "attempts" not in str(info.value)  # one attempt: no retry can help


# -- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1: (certificate, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def tls_server(certificate: tuple[Path, Path], servers: list[RawServer]) -> RawServer:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = RawServer(sse_server, tls=context)
    servers.append(server)
    return server


def test_tls_is_verified_against_the_ca_store_the_environment_names(
    certificate: tuple[Path, Path], servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = tls_server(certificate, servers)
    monkeypatch.setattr(http1, "_tls", None)  # the process's context is made anew with the variable
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    with Client(10.0, trust_env=False) as client:
        for _ in range(2):
            response = client.post(f"https://localhost:{server.port}/v1/responses", b"{}")
            assert response.status_code == 200 and response.read() == SSE_HELLO
    assert server.connections == 1  # one TLS connection, kept alive


def test_a_certificate_nobody_vouches_for_is_refused(
    certificate: tuple[Path, Path], servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = tls_server(certificate, servers)
    monkeypatch.setattr(http1, "_tls", None)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    client = ModelClient(f"https://localhost:{server.port}/v1", None, "m", max_retries=3, backoff_s=10.0)
    with pytest.raises(ModelError) as info:
        client.stream(BODY, lambda _: None, CancelToken())
    assert str(info.value) == (
        "Model request failed: TLS: certificate verify failed: self-signed certificate"
        f" (https://localhost:{server.port}/v1)"
    )  # said at once: the same certificate would fail again
    assert server.heads == []  # nothing was sent to it


def test_an_https_proxy_is_spoken_to_in_tls_and_carries_tls_to_the_origin(
    certificate: tuple[Path, Path], servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTPS_PROXY=https://…: TLS to the proxy (verified), CONNECT inside it, and the origin's own
    TLS inside that tunnel (verified too); a plain http origin goes absolute-form over the proxy's TLS."""
    origin = tls_server(certificate, servers)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    proxy = RawServer(forwarding_proxy, tls=context)
    servers.append(proxy)
    monkeypatch.setattr(http1, "_tls", None)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", f"https://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("HTTP_PROXY", f"https://127.0.0.1:{proxy.port}")
    with Client(10.0, trust_env=True) as client:
        response = client.post(f"https://localhost:{origin.port}/v1/responses", b"{}")
        assert response.status_code == 200 and response.read() == SSE_HELLO
        plain = client.get("http://models.example.invalid/v1/models")
        assert plain.status_code == 200 and plain.read() == SSE_HELLO
    assert proxy.heads[0].startswith(f"CONNECT localhost:{origin.port} HTTP/1.1\r\n".encode())
    assert origin.heads[0].startswith(b"POST /v1/responses HTTP/1.1\r\n")  # it came through the tunnel
    assert proxy.heads[1].startswith(b"GET http://models.example.invalid/v1/models HTTP/1.1\r\n")


def test_an_https_proxy_with_a_certificate_nobody_vouches_for_is_named(
    certificate: tuple[Path, Path], servers: list[RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    proxy = RawServer(forwarding_proxy, tls=context)
    servers.append(proxy)
    monkeypatch.setattr(http1, "_tls", None)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    no_proxy_variables(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", f"https://127.0.0.1:{proxy.port}")
    with pytest.raises(ModelError) as info:
        stream_hello("https://api.example.invalid/v1")
    assert str(info.value).startswith(
        f"Model request failed: the proxy 127.0.0.1:{proxy.port}: TLS: certificate verify failed:"
    )
    assert proxy.heads == []


# -- what comes back -----------------------------------------------------------------------------


def serving(reply: bytes) -> Callable[[RawServer, socket.socket], None]:
    def serve(server: RawServer, conn: socket.socket) -> None:
        server.heads.append(read_request(conn)[0])
        conn.sendall(reply)

    return serve


def test_a_body_sent_compressed_anyway_is_read(servers: list[RawServer]) -> None:
    server = RawServer(serving(answer(gzip.compress(SSE_HELLO), "Content-Encoding: gzip")))
    servers.append(server)
    assert stream_hello(f"http://127.0.0.1:{server.port}/v1") == "Hello"
    assert b"Accept-Encoding: identity" in server.heads[0]


def test_a_compressed_bomb_is_read_in_bounded_pieces(servers: list[RawServer]) -> None:
    bomb = gzip.compress(b"\0" * (256 * 1024 * 1024))  # 256 MiB in ~250 KiB
    server = RawServer(serving(answer(bomb, "Content-Encoding: gzip")))
    servers.append(server)
    with Client(10.0, trust_env=False) as client:
        response = client.get(f"http://127.0.0.1:{server.port}/")
        read = 0
        for piece in response.iter_bytes():
            assert 0 < len(piece) <= 1024 * 1024
            read += len(piece)
            if read > 8 * 1024 * 1024:  # the caller's own bound (the model client's), met early
                break
        response.close()
    assert read <= 9 * 1024 * 1024


def test_a_compressed_body_is_read_whole(servers: list[RawServer]) -> None:
    body = bytes(range(256)) * 20_000  # 5 MiB that compress well: pieces end inside the last chunk
    server = RawServer(serving(answer(gzip.compress(body), "Content-Encoding: gzip")))
    servers.append(server)
    with Client(10.0, trust_env=False) as client:
        assert client.get(f"http://127.0.0.1:{server.port}/").read() == body


def test_an_encoding_mino_does_not_read_is_an_error_not_garbage(servers: list[RawServer]) -> None:
    server = RawServer(serving(answer(b"\x8b\x02\x80", "Content-Encoding: br")))
    servers.append(server)
    with pytest.raises(ModelError) as info:
        stream_hello(f"http://127.0.0.1:{server.port}/v1")
    assert "an encoding Mino does not read (br)" in str(info.value)


def test_an_endless_header_block_is_refused(servers: list[RawServer]) -> None:
    huge = "X-Filler: " + "a" * 1_000_000
    server = RawServer(serving(answer(b"", huge)))
    servers.append(server)
    with pytest.raises(HTTPFailure, match="the server broke HTTP/1.1"):
        Client(10.0, trust_env=False).get(f"http://127.0.0.1:{server.port}/")


def test_an_answer_cut_before_its_length_is_an_error(servers: list[RawServer]) -> None:
    server = RawServer(serving(answer(SSE_HELLO)[:-20]))  # then the server closes
    servers.append(server)
    with Client(10.0, trust_env=False) as client:
        response = client.get(f"http://127.0.0.1:{server.port}/")
        with pytest.raises(HTTPFailure):
            response.read()


def test_a_connection_the_server_closed_while_idle_is_not_reused(servers: list[RawServer]) -> None:
    """The server answers keep-alive, then hangs up while the connection sits idle: the next
    request opens a new one instead of failing on the dead one."""
    hung_up = threading.Event()

    def one_then_hang_up(server: RawServer, conn: socket.socket) -> None:
        server.heads.append(read_request(conn)[0])
        conn.sendall(answer(SSE_HELLO))
        conn.shutdown(socket.SHUT_RDWR)
        hung_up.set()

    server = RawServer(one_then_hang_up)
    servers.append(server)
    with Client(10.0, trust_env=False) as client:
        for _ in range(2):
            assert client.get(f"http://127.0.0.1:{server.port}/").read() == SSE_HELLO
            assert hung_up.wait(10)
            hung_up.clear()
    assert server.connections == 2 and len(server.heads) == 2


def test_a_header_value_with_a_line_break_is_never_sent(servers: list[RawServer]) -> None:
    """A key pasted with a newline cannot smuggle a header (or a second request) onto the wire."""
    server = RawServer(sse_server)
    servers.append(server)
    client = ModelClient(f"http://127.0.0.1:{server.port}/v1", "sk-1\r\nX-Evil: 1", "m", backoff_s=10.0)
    with pytest.raises(ModelError, match="the request could not be sent: Illegal header value") as info:
        client.stream(BODY, lambda _: None, CancelToken())
    assert server.heads == [] and "attempts" not in str(info.value)  # refused once, not retried


def test_an_ipv6_model_server_gets_its_address_in_brackets(servers: list[RawServer]) -> None:
    try:
        server = RawServer(sse_server, host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    servers.append(server)
    assert stream_hello(f"http://[::1]:{server.port}/v1") == "Hello"
    assert f"Host: [::1]:{server.port}".encode() in server.heads[0].split(b"\r\n")


def test_keep_alive_holds_for_a_socket_numbered_past_1023(servers: list[RawServer]) -> None:
    """A process with many files open (an editor server with many sessions) still reuses its
    connection: the idle check works whatever the descriptor's number."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip("the descriptor limit is too low here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        server = RawServer(sse_server)
        servers.append(server)
        with Client(10.0, trust_env=False) as client:
            for _ in range(2):
                response = client.get(f"http://127.0.0.1:{server.port}/")
                assert response.read() == SSE_HELLO
        assert server.connections == 1 and len(server.heads) == 2
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
