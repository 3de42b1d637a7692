"""Local servers and a raw client for the sandbox network tests: HTTP servers on 127.0.0.1 that
record what reaches them, and requests written byte for byte to a proxy's unix socket."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Server:
    port: int
    seen: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Host header)
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        return [path for _, path, _ in self.seen]


@contextmanager
def http_server(files: dict[str, bytes] | None = None) -> Iterator[Server]:
    """A server on 127.0.0.1 answering every GET with `files[path]` (or `hello PATH`)."""
    record = Server(0, files=dict(files or {}))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            record.seen.append((self.command, self.path, self.headers.get("Host", "")))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = record.files.get(self.path.split("?")[0], f"hello {self.path}\n".encode())
            self.send_response(200)
            self.send_header(
                "Content-Type", "text/html" if self.path.endswith("/") else "application/octet-stream"
            )
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    record.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()


def exchange(socket_path: str, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data` to the proxy's unix socket and read until it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        return out


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
