"""HTTP/1.1 to the model server: h11 speaks the protocol, this module connects and carries the bytes.

Why not httpx: importing it costs ~55 ms of CPU (its cookie jar, auth, multipart, logging, the
email package through urllib.request, anyio through httpcore), the largest single part of a cold
start, for features a model request never uses. h11 is the HTTP/1.1 state machine underneath
httpx itself (through httpcore) and costs ~8 ms: it parses and frames every message (status line,
headers, chunked and Content-Length bodies, keep-alive), bounds the header block, and refuses a
malformed answer. What is written here is the glue around it: a TCP (and TLS) connection, an HTTP
or HTTPS proxy from the environment, a timeout on every socket operation, and connections kept for
reuse.
MCP's HTTP servers still go through the MCP SDK's own httpx client.

Failures are HTTPFailure (HTTPTimeout, ConnectFailure) with a message a person can read.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import h11

if TYPE_CHECKING:
    import ssl

__all__ = ["CannotSend", "Client", "ConnectFailure", "HTTPFailure", "HTTPTimeout", "Response"]

_READ_BYTES = 64 * 1024
# The status line and headers of an answer, at most (h11 refuses more once a read leaves them
# incomplete beyond it, so ~128 KiB is held at worst: a hostile server cannot make Mino buffer
# without end before the body).
_MAX_HEAD_BYTES = 64 * 1024
_PIECE_BYTES = 1024 * 1024  # of a compressed body, decoded at a time


class HTTPFailure(Exception):
    """The exchange failed: no connection, TLS refused, the peer broke HTTP/1.1 or hung up."""


class HTTPTimeout(HTTPFailure):
    """A connect, read or write took longer than the client's timeout."""


class ConnectFailure(HTTPFailure):
    """No connection to the server (or to the proxy in front of it)."""


class CannotSend(HTTPFailure):
    """The request cannot go out as it is (its URL, the proxy the environment names, a header
    value, a certificate that fails verification): trying again cannot help."""


def _failure(exc: BaseException, connecting: bool = False) -> HTTPFailure:
    """The HTTPFailure for a socket, TLS or protocol error; its text says what happened."""
    if isinstance(exc, HTTPFailure):
        return exc
    if isinstance(exc, TimeoutError):
        return HTTPTimeout("timed out")
    if isinstance(exc, socket.gaierror):
        return ConnectFailure("cannot resolve the host name")
    if isinstance(exc, ConnectionRefusedError):
        return ConnectFailure("connection refused")
    if isinstance(exc, h11.LocalProtocolError):  # e.g. a header value with a line break (a pasted key)
        return CannotSend(f"the request could not be sent: {exc}")
    if isinstance(exc, h11.ProtocolError):
        return HTTPFailure(f"the server broke HTTP/1.1: {exc}")
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if getattr(exc, "verify_message", None):  # ssl.SSLCertVerificationError: the same next time
        return CannotSend(f"TLS: certificate verify failed: {exc.verify_message}")  # type: ignore[attr-defined]
    if type(exc).__module__ == "ssl":
        text = f"TLS: {getattr(exc, 'reason', None) or exc}"
    return (ConnectFailure if connecting else HTTPFailure)(text)


class _Origin:
    """Where a request goes: scheme, host, port, and the request target's path and query."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise CannotSend(f"not an http:// or https:// URL: {url!r}")
        if not parts.hostname:
            raise CannotSend(f"no host in the URL {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        try:
            port = parts.port
        except ValueError:
            raise CannotSend(f"not a port number in the URL {url!r}") from None
        self.port = port or (443 if self.scheme == "https" else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = self.port == (443 if self.scheme == "https" else 80)
        self.authority = host if default else f"{host}:{self.port}"
        self.hostport = f"{host}:{self.port}"  # a CONNECT's target names the port always


class _Proxy:
    """A proxy from the environment: its address, whether Mino speaks TLS to it (an https:// proxy
    URL), and the Proxy-Authorization it wants."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CannotSend(
                f"the proxy {parts.scheme}://{parts.hostname or ''} is not an http:// or https:// proxy,"
                " the kinds Mino speaks through (set NO_PROXY for the model server's host to go direct)"
            )
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        try:
            self.port = parts.port or (443 if self.tls else 80)
        except ValueError:
            raise CannotSend(f"not a port number in the proxy URL {parts.scheme}://{parts.netloc}") from None
        self.authorization: str | None = None
        if parts.username is not None:
            import base64

            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self.authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


def _environment_proxy(origin: _Origin) -> _Proxy | None:
    """The proxy the environment names for `origin` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, in
    either case), or None. The variables are read by the standard library's own rules; urllib.request
    is imported only when one is set."""
    if not any(name.lower().endswith("_proxy") for name in os.environ):
        return None
    from urllib.request import getproxies_environment, proxy_bypass

    proxies = getproxies_environment()
    chosen = proxies.get(origin.scheme) or proxies.get("all")
    if not chosen or proxy_bypass(origin.host):
        return None
    return _Proxy(chosen)


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for the process: the system's CA store (SSL_CERT_FILE and
    SSL_CERT_DIR are honoured), or certifi's bundle on a system that has none. Made at the first
    https connection (loading the store costs ~25 ms), never for plain http."""
    global _tls
    with _tls_lock:
        if _tls is None:
            import ssl

            context = ssl.create_default_context()
            paths = ssl.get_default_verify_paths()
            if not (paths.cafile and os.path.isfile(paths.cafile)) and not (
                paths.capath and os.path.isdir(paths.capath)
            ):
                import certifi

                context.load_verify_locations(certifi.where())
            context.set_alpn_protocols(["http/1.1"])
            _tls = context
        return _tls


class _TunnelledTLS:
    """TLS to the origin inside the TLS connection to an https:// proxy: an ssl.SSLObject over
    memory buffers, its records carried by the proxy's socket (an SSLSocket cannot be wrapped in
    TLS again). Offers what _Connection uses of a socket."""

    def __init__(self, outer: ssl.SSLSocket, context: ssl.SSLContext, server_hostname: str) -> None:
        import ssl

        self.outer = outer
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._want_read: type[Exception] = ssl.SSLWantReadError
        self._ended: type[Exception] = ssl.SSLZeroReturnError
        self._run(self._tls.do_handshake)

    def _run(self, step: Callable[..., Any], *args: Any) -> Any:
        while True:
            try:
                result = step(*args)
            except self._want_read:
                self._flush()
                data = self.outer.recv(_READ_BYTES)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
                continue
            self._flush()
            return result

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self.outer.sendall(data)

    def recv(self, size: int) -> bytes:
        try:
            return bytes(self._run(self._tls.read, size))
        except self._ended:  # the origin closed TLS cleanly
            return b""

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[self._run(self._tls.write, view) :]

    def fileno(self) -> int:
        return self.outer.fileno()

    def close(self) -> None:
        self.outer.close()


class _Connection:
    """One socket to an origin (directly or through a proxy's tunnel) and its h11 state. `raw` is the
    operating system's socket under it all: what a cancel shuts down."""

    def __init__(
        self, sock: socket.socket | _TunnelledTLS, key: tuple[Any, ...], absolute_form: bool
    ) -> None:
        self.sock = sock
        self.raw: socket.socket = sock.outer if isinstance(sock, _TunnelledTLS) else sock
        self.key = key
        self.absolute_form = absolute_form  # plain http through a proxy: the target is the whole URL
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)

    def send(self, event: Any) -> None:
        data = self.h11.send(event)
        if data:
            self.sock.sendall(data)

    def next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(self.sock.recv(_READ_BYTES))

    def read_response(self, closed: type[HTTPFailure], said: str) -> h11.Response:
        """The answer's status line and headers (a 100 Continue and the like before it are passed
        over); `closed(said)` is raised when the peer hangs up first."""
        while True:
            event = self.next_event()
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.ConnectionClosed):
                raise closed(said)

    def reusable(self) -> bool:
        """Nothing has arrived while it sat idle (a server that closed it sent its FIN by now)."""
        import select

        try:  # poll, not select: a descriptor number past 1023 is fine (a process with many files)
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _head(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names lowercased (h11 gives them so), values as text; a repeated header's values joined."""
    out: dict[str, str] = {}
    for name, value in headers:
        key, text = name.decode("ascii", "replace"), value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


class Response:
    """An answer whose body is read as it arrives (`iter_bytes`), once. Closing it before the end
    closes the connection; reading it to the end gives the connection back for the next request."""

    def __init__(self, client: Client, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self._client = client
        self._conn: _Connection | None = conn
        self.status_code = status
        self.headers = headers
        self._decoder = _decoder(headers.get("content-encoding", ""))

    def iter_bytes(self) -> Iterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        try:
            while True:
                event = conn.next_event()
                if isinstance(event, h11.Data):
                    if self._decoder is None:
                        yield bytes(event.data)
                    else:
                        yield from (piece for piece in self._decoder(bytes(event.data)) if piece)
                elif isinstance(event, h11.EndOfMessage):
                    self._conn = None
                    self._client._finished(conn)
                    return
                elif isinstance(event, h11.ConnectionClosed):
                    raise HTTPFailure("the server closed the connection before the answer ended")
        except (OSError, h11.ProtocolError) as exc:
            self.close()
            raise _failure(exc) from None
        except BaseException:
            self.close()
            raise

    def read(self, limit: int | None = None) -> bytes:
        """The whole body (or its first `limit` bytes: the rest is not read, the connection closed)."""
        body = bytearray()
        for chunk in self.iter_bytes():
            body += chunk
            if limit is not None and len(body) > limit:
                self.close()
                return bytes(body[:limit])
        return bytes(body)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _decoder(encoding: str) -> Callable[[bytes], Iterator[bytes]] | None:
    """A body sent compressed although Mino asks for `identity`: gzip and deflate are read, in pieces
    of at most 1 MiB (a small compressed chunk can hold a huge body: the reader's bounds see it grow)."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return None
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise HTTPFailure(f"the server sent its answer in an encoding Mino does not read ({encoding})")
    import zlib

    inflater = zlib.decompressobj(47 if coding != "deflate" else zlib.MAX_WBITS)  # 47: gzip or zlib header

    def decode(data: bytes) -> Iterator[bytes]:
        try:
            while True:
                piece = inflater.decompress(data, _PIECE_BYTES)
                data = inflater.unconsumed_tail
                if piece:
                    yield piece
                if not data and len(piece) < _PIECE_BYTES:  # a full piece may have more behind it
                    return
        except zlib.error as exc:
            raise HTTPFailure(f"the server sent a broken {coding} body ({exc})") from None

    return decode


class Client:
    """Requests to one or more origins; the connections are kept and reused (keep-alive).

    `timeout_s` bounds each connect, read and write. `trust_env`: a proxy from the environment
    applies (never for a model server on loopback). Safe to use from several threads."""

    def __init__(self, timeout_s: float, trust_env: bool = True, user_agent: str = "mino") -> None:
        self.timeout_s = timeout_s
        self.trust_env = trust_env
        self.user_agent = user_agent
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        on_socket: Callable[[socket.socket], None] | None = None,
    ) -> Response:
        """Send the request and read the answer's status and headers; the body is the caller's to read.

        `on_socket` gets the connection's socket before anything is sent: shutting it down from
        another thread (a cancel) ends this call, and a read of the body, at once."""
        origin = _Origin(url)
        proxy = _environment_proxy(origin) if self.trust_env else None
        key = (origin.scheme, origin.host, origin.port, proxy and (proxy.host, proxy.port))
        conn = self._idle_connection(key) or self._connect(origin, proxy, key)
        if on_socket is not None:
            on_socket(conn.raw)
        target = (
            f"{origin.scheme}://{origin.authority}{origin.target}" if conn.absolute_form else origin.target
        )
        head = [
            ("Host", origin.authority),
            ("User-Agent", self.user_agent),
            ("Accept-Encoding", "identity"),
        ]
        if conn.absolute_form and proxy is not None and proxy.authorization:
            head.append(("Proxy-Authorization", proxy.authorization))
        if body is not None:
            head.append(("Content-Length", str(len(body))))
        head += [(name, value) for name, value in (headers or {}).items()]
        try:
            conn.send(h11.Request(method=method, target=target, headers=head))
            if body:
                conn.send(h11.Data(data=body))
            conn.send(h11.EndOfMessage())
            event = conn.read_response(HTTPFailure, "the server closed the connection without an answer")
        except (OSError, h11.ProtocolError) as exc:
            conn.close()
            raise _failure(exc) from None
        except BaseException:
            conn.close()
            raise
        try:
            return Response(self, conn, event.status_code, _head(event.headers))
        except HTTPFailure:  # an encoding it cannot read
            conn.close()
            raise

    def get(self, url: str, headers: dict[str, str] | None = None) -> Response:
        return self.request("GET", url, headers)

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str] | None = None,
        on_socket: Callable[[socket.socket], None] | None = None,
    ) -> Response:
        return self.request("POST", url, headers, body, on_socket)

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for conn in idle:
            conn.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections --------------------------------------------------------------------------

    def _idle_connection(self, key: tuple[Any, ...]) -> _Connection | None:
        while True:
            with self._lock:
                conn = next((c for c in self._idle if c.key == key), None)
                if conn is None:
                    return None
                self._idle.remove(conn)
            if conn.reusable():
                return conn
            conn.close()

    def _finished(self, conn: _Connection) -> None:
        """An answer was read to its end: keep the connection if both sides may go on with it."""
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            with self._lock:
                if not self._closed:
                    self._idle.append(conn)
                    return
        conn.close()

    def _connect(self, origin: _Origin, proxy: _Proxy | None, key: tuple[Any, ...]) -> _Connection:
        host, port = (proxy.host, proxy.port) if proxy else (origin.host, origin.port)
        try:
            sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except (OSError, ValueError) as exc:
            failure = _failure(exc, connecting=True)
            if proxy is not None:
                failure = type(failure)(f"the proxy {proxy.host}:{proxy.port}: {failure}")
            raise failure from None
        stream: socket.socket | _TunnelledTLS = sock
        at_proxy = proxy is not None  # what a failure is about: the proxy, until the origin is reached
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if proxy is not None and proxy.tls:
                stream = sock = _tls_context().wrap_socket(sock, server_hostname=proxy.host)
            if proxy is not None and origin.scheme == "https":
                self._tunnel(sock, origin, proxy)
            at_proxy = False
            if origin.scheme == "https" and proxy is not None and proxy.tls:
                stream = _TunnelledTLS(sock, _tls_context(), origin.host)  # type: ignore[arg-type]
            elif origin.scheme == "https":
                stream = _tls_context().wrap_socket(sock, server_hostname=origin.host)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, (OSError, h11.ProtocolError)):
                failure = _failure(exc, connecting=True)
                if at_proxy and proxy is not None:
                    failure = type(failure)(f"the proxy {proxy.host}:{proxy.port}: {failure}")
                raise failure from None
            raise
        return _Connection(stream, key, absolute_form=proxy is not None and origin.scheme == "http")

    def _tunnel(self, sock: socket.socket, origin: _Origin, proxy: _Proxy) -> None:
        """CONNECT through the proxy: afterwards the socket carries bytes to the origin as they are."""
        authority = origin.hostport
        head = [("Host", authority), ("User-Agent", self.user_agent)]
        if proxy.authorization:
            head.append(("Proxy-Authorization", proxy.authorization))
        tunnel = _Connection(sock, (), absolute_form=False)
        tunnel.send(h11.Request(method="CONNECT", target=authority, headers=head))
        tunnel.send(h11.EndOfMessage())
        event = tunnel.read_response(
            ConnectFailure, f"the proxy {proxy.host}:{proxy.port} closed the connection"
        )
        if not 200 <= event.status_code < 300:
            reason = bytes(event.reason).decode("latin-1", "replace")
            raise ConnectFailure(
                f"the proxy {proxy.host}:{proxy.port} refused the tunnel to {authority}:"
                f" HTTP {event.status_code} {reason}".rstrip()
            )
