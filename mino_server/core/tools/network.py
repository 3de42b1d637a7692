"""Network for sandboxed commands, by allowlist (docs/BEHAVIOUR.md, "Sandbox"; docs/SECURITY.md).

config.yaml's `sandbox_network` lists names (`pypi.org`, `host:8080`, `*.example.com`) and IP
addresses. A sandboxed command still runs in its own empty network namespace with the seccomp filter
that refuses unix sockets; its only way out is an HTTP proxy Mino runs here, outside the sandbox,
which allows CONNECT and absolute-form HTTP to what the list names and nothing else.

The bridge: per command, the proxy listens on a unix socket in a private folder, bind-mounted
read-only into the sandbox at SOCKET_DIR. Inside, RELAY_SOURCE runs first (with `python -I -S`): it
listens on 127.0.0.1 of the sandbox's namespace, forks a relay that copies each connection to that
unix socket, then installs the command's seccomp filter on itself and execs the command with
HTTP_PROXY and friends pointing at the relay. So the relay (made non-dumpable before the fork: the
command cannot ptrace it or read its memory) is the one process without the filter, and all it can
reach is the proxy, which judges every destination by the name the command asked for.

The proxy resolves names itself (the command has no DNS), judges IP literals after normalising
them as the C library would read them (decimal, octal and hex IPv4 forms, IPv6 with or without
brackets, IPv4-mapped IPv6), forwards one request per connection (`Connection: close`: whatever a
client pipelines after the first request's body is dropped, so a second request never goes
anywhere unjudged), refuses requests whose framing could be read two ways, and reports each refused
destination once: `Network: blocked HOST:PORT (not in sandbox_network)`.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import field

from ..values import Frozen, Mutable, frozen, mutable

DEFAULT_PORTS = (80, 443)
MAX_HEAD = 16 * 1024  # a request head longer than this is refused (431)
MAX_HEADER_LINES = 100
MAX_CHUNK_LINE = 1024
HEAD_TIMEOUT_S = 30.0  # a client that sends no complete head in this long is dropped
CONNECT_TIMEOUT_S = 10.0
# Connections one command may hold open at once (each costs a thread or two in Mino); more are
# closed at once.
MAX_CONNECTIONS = 256
# Inside the sandbox: where the proxy's per-command folder is mounted (the private /tmp).
SOCKET_DIR = "/tmp/.mino-network"
SOCKET_NAME = "proxy.sock"
BLOCKED_LINE = "Network: blocked {} (not in sandbox_network)"

Resolver = Callable[[str, int], list[tuple[int, str]]]  # (host, port) -> [(family, address)]


class EntryError(ValueError):
    """A sandbox_network entry that cannot be read; the message names it."""


# --- names and addresses ---------------------------------------------------------------------------

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


def normalise_host(raw: str) -> tuple[str, bool] | None:
    """(canonical host, is an IP address) as the proxy judges it, or None when it is neither a
    plain DNS name nor an IP address. IPv4 in any form the C library accepts (`2130706433`,
    `0177.0.0.1`, `0x7f.1`) becomes dotted decimal, since that is what a connection to it reaches;
    IPv6 (bracketed or not) its compressed form, or the IPv4 address it maps."""
    host = raw.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        return _ipv6(host[1:-1])
    if ":" in host:
        return _ipv6(host)
    if host.endswith("."):
        host = host[:-1]
    if not host or len(host) > 253 or not set(host) <= _NAME_CHARS:
        return None
    if all(label for label in host.split(".")):
        try:
            return socket.inet_ntoa(socket.inet_aton(host)), True
        except OSError:
            pass
    else:
        return None
    if host.replace(".", "").isdigit():  # numeric but not an address inet_aton takes (1.2.3.4.5)
        return None
    return host, False


def _ipv6(text: str) -> tuple[str, bool] | None:
    if "%" in text:  # a zone: a link-local interface of this machine, never listed by name
        return None
    import ipaddress  # only for IPv6 literals

    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return (str(mapped), True) if mapped is not None else (str(address), True)


def show(host: str, port: int) -> str:
    """HOST:PORT as the blocked line and the list show it (IPv6 bracketed)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@frozen
class Entry(Frozen):
    host: str  # canonical (normalise_host); for a wildcard, the domain after `*.`
    port: int | None  # None: DEFAULT_PORTS
    wildcard: bool
    ip: bool

    def allows(self, host: str, ip: bool, port: int) -> bool:
        if ip != self.ip:
            return False  # a name never covers an address, nor an address a name
        if not (host.endswith("." + self.host) if self.wildcard else host == self.host):
            return False
        return port == self.port if self.port is not None else port in DEFAULT_PORTS


def parse_entry(text: object) -> Entry:
    if not isinstance(text, str) or not text.strip():
        raise EntryError(f"entries must be host names, got {text!r}")
    raw = text.strip()
    if "/" in raw:
        raise EntryError(f"{text!r} is not a host name, *.domain or IP address (with an optional :PORT)")
    host, port = raw, None
    if raw.startswith("["):  # [IPv6] or [IPv6]:PORT
        end = raw.find("]")
        if end < 0:
            raise EntryError(f"{text!r} has no closing ]")
        host, rest = raw[: end + 1], raw[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise EntryError(f"{text!r} is not HOST or HOST:PORT")
            port = _port(rest[1:], text)
    elif raw.count(":") == 1:
        host, _, number = raw.partition(":")
        port = _port(number, text)
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    found = normalise_host(host)
    if found is None or (wildcard and found[1]):
        raise EntryError(f"{text!r} is not a host name, *.domain or IP address (with an optional :PORT)")
    return Entry(found[0], port, wildcard, found[1])


def _port(text: str, entry: object) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise EntryError(f"{entry!r} has no valid port (1 to 65535)")
    return int(text)


def parse_list(value: object) -> tuple[str, ...]:
    """config.yaml's sandbox_network, checked: the entries as written (stripped), once each."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise EntryError(f"must be a list of host names, got {value!r}")
    out: list[str] = []
    for item in value:
        parse_entry(item)
        if item.strip() not in out:
            out.append(item.strip())
    return tuple(out)


def shown_list(entries: Iterable[str]) -> str:
    """The approval's `Network:` value (the display quotes it: `Network: "a.com, b.com"`)."""
    return ", ".join(entries)


def allowed(entries: Iterable[Entry], host: str, ip: bool, port: int) -> bool:
    return any(entry.allows(host, ip, port) for entry in entries)


def system_resolver(host: str, port: int) -> list[tuple[int, str]]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [(family, str(sockaddr[0])) for family, _, _, _, sockaddr in infos]


# --- the proxy -------------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, status: str, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


@mutable
class Listener(Mutable):
    """One command's way to the proxy: a unix socket in a private folder (`folder`, to mount at
    SOCKET_DIR), and the destinations refused on it."""

    proxy: Proxy
    folder: str
    server: socket.socket
    blocked: list[str] = field(default_factory=list)
    _open: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    client.close()
                    return
                if len(self._open) >= MAX_CONNECTIONS:
                    client.close()
                    continue
                self._open.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True, name="mino-proxy").start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            upstream = self.proxy.handle(client, self)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(client)
                if upstream is not None:
                    self._open.discard(upstream)
            for s in (client, upstream):
                if s is not None:
                    s.close()

    def track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._open.add(sock)
            return True

    def block(self, where: str) -> None:
        with self._lock:
            if where not in self.blocked:
                self.blocked.append(where)

    def close(self) -> list[str]:
        """Stop serving this command (its open connections too); the lines for what was refused."""
        with self._lock:
            if self._closed:
                return [BLOCKED_LINE.format(where) for where in self.blocked]
            self._closed = True
            still = list(self._open)
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        for s in still:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)
        return [BLOCKED_LINE.format(where) for where in self.blocked]


class Proxy:
    """The allowlist proxy (one per process; each command listens on its own socket)."""

    def __init__(self, entries: Iterable[str], resolver: Resolver | None = None) -> None:
        self.entries = tuple(parse_entry(e) for e in entries)
        self.resolver = resolver or system_resolver

    def listen(self) -> Listener:
        # Here, not at import: config.yaml's check imports this module on the way to start-up.
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="mino-net-")  # 0700: only this user reaches the socket
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(os.path.join(folder, SOCKET_NAME))
            server.listen(64)
        except BaseException:
            server.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        listener = Listener(self, folder, server)
        threading.Thread(target=listener._accept_loop, daemon=True, name="mino-proxy-accept").start()
        return listener

    def handle(self, client: socket.socket, listener: Listener) -> socket.socket | None:
        client.settimeout(HEAD_TIMEOUT_S)
        reader = _Reader(client)
        try:
            method, target, headers = _read_head(reader)
            if method == "CONNECT":
                host, port = _authority(target, None)
            else:
                if not target.lower().startswith("http://"):
                    raise _Refused("400 Bad Request", "only CONNECT and absolute-form http:// requests")
                rest = target[7:]
                cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
                host, port = _authority(rest[:cut], 80)
                path = rest[cut:] or "/"
                if not path.startswith("/"):
                    path = "/" + path
                path = path.split("#", 1)[0]
            where = show(host[0], port)
            if not allowed(self.entries, host[0], host[1], port):
                listener.block(where)
                raise _Refused("403 Forbidden", BLOCKED_LINE.format(where))
            if method != "CONNECT":
                length, chunked = _framing(headers)
            upstream = self._connect(host, port)
        except _Refused as refusal:
            body = (refusal.text + "\n").encode("utf-8", "replace")
            client.sendall(
                f"HTTP/1.1 {refusal.status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}"
                f"\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            return None
        if not listener.track(upstream):
            return upstream
        client.settimeout(None)
        if method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            early = reader.take()
            if early:
                upstream.sendall(early)
            _splice(client, upstream)
            return upstream
        out = [f"{method} {path} HTTP/1.1", f"Host: {target[7 : 7 + cut]}"]
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                out.append(f"{name}: {value}")
        out.append("Connection: close")
        upstream.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
        back = threading.Thread(target=_copy, args=(upstream, client), daemon=True, name="mino-proxy-back")
        back.start()  # at once: a client may wait for `100 Continue` before its body
        try:
            if chunked:
                _copy_chunked(reader, upstream)
            elif length:
                _copy_exact(reader, upstream, length)
        except _Refused:  # a malformed chunk: the request ends here, answer and all
            upstream.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the server closed first (it may have answered without reading the body)
        back.join()
        return upstream

    def _connect(self, host: tuple[str, bool], port: int) -> socket.socket:
        name, ip = host
        addresses: list[tuple[int, str]]
        try:
            if ip:
                addresses = [(int(socket.AF_INET6 if ":" in name else socket.AF_INET), name)]
            else:
                addresses = self.resolver(name, port)
        except OSError as e:
            raise _Refused("502 Bad Gateway", f"cannot resolve {name}: {e.strerror or e}") from None
        last: OSError | None = None
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT_S)
            try:
                sock.connect((address, port))
            except OSError as e:
                sock.close()
                last = e
                continue
            sock.settimeout(None)
            return sock
        why = (last.strerror or str(last)) if last is not None else "no address"
        raise _Refused("502 Bad Gateway", f"cannot connect to {show(name, port)}: {why}")


# Not forwarded: the proxy's own (Connection: close is set), and Host (the target decides it).
_HOP_BY_HOP = frozenset(
    ("connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
     "te", "trailer", "upgrade", "host", "content-length", "transfer-encoding")
)  # fmt: skip
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class _Reader:
    """Buffered reads from a socket: the head, lines and exact byte counts."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def fill(self) -> bool:
        data = self.sock.recv(65536)
        self.buf += data
        return bool(data)

    def line(self, limit: int) -> bytes:
        while b"\r\n" not in self.buf:
            if len(self.buf) > limit or not self.fill():
                raise _Refused("400 Bad Request", "malformed chunked body")
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def take(self, n: int | None = None) -> bytes:
        if n is None:
            out, self.buf = self.buf, b""
        else:
            out, self.buf = self.buf[:n], self.buf[n:]
        return out


def _read_head(reader: _Reader) -> tuple[str, str, list[tuple[str, str]]]:
    while b"\r\n\r\n" not in reader.buf:
        if len(reader.buf) > MAX_HEAD:
            raise _Refused("431 Request Header Fields Too Large", "request head too long")
        if not reader.fill():
            raise OSError("client closed")
    raw, _, reader.buf = reader.buf.partition(b"\r\n\r\n")
    if len(raw) > MAX_HEAD:
        raise _Refused("431 Request Header Fields Too Large", "request head too long")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise _Refused("400 Bad Request", "request head is not ASCII") from None
    lines = text.split("\r\n")
    if len(lines) > MAX_HEADER_LINES:
        raise _Refused("431 Request Header Fields Too Large", "too many header lines")
    if any("\r" in line or "\n" in line or "\0" in line for line in lines):
        raise _Refused("400 Bad Request", "bare CR or LF in the request head")
    parts = lines[0].split(" ")
    if (
        len(parts) != 3
        or parts[2] not in ("HTTP/1.1", "HTTP/1.0")
        or not parts[0]
        or not set(parts[0]) <= _TOKEN
    ):
        raise _Refused("400 Bad Request", "malformed request line")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        # No space before the colon, no folded lines: what two parsers could read two ways.
        if not colon or not name or not set(name) <= _TOKEN:
            raise _Refused("400 Bad Request", "malformed header line")
        headers.append((name, value.strip(" \t")))
    return parts[0], parts[1], headers


def _authority(text: str, default_port: int | None) -> tuple[tuple[str, bool], int]:
    """((canonical host, is IP), port) of `host:port` / `[v6]:port`; _Refused if malformed."""
    bad = _Refused("400 Bad Request", "malformed request target")
    if "@" in text or not text:
        raise bad
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise bad
        host, rest = text[: end + 1], text[end + 1 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, rest = text, ""
        else:
            rest = ":" + port_text
        if ":" in host:  # IPv6 only in brackets: `::1:8080` could be read with or without a port
            raise bad
    if rest:
        if not rest.startswith(":") or not rest[1:].isdigit() or not 0 < int(rest[1:]) < 65536:
            raise bad
        port = int(rest[1:])
    elif default_port is None:
        raise bad
    else:
        port = default_port
    found = normalise_host(host)
    if found is None:
        raise bad
    return found, port


def _framing(headers: list[tuple[str, str]]) -> tuple[int, bool]:
    """(Content-Length, chunked) of a request; _Refused when the two disagree or either is odd:
    a body two servers could delimit differently is a request smuggled past the proxy."""
    lengths = [v for n, v in headers if n.lower() == "content-length"]
    codings = [v for n, v in headers if n.lower() == "transfer-encoding"]
    if lengths and codings:
        raise _Refused("400 Bad Request", "both Content-Length and Transfer-Encoding")
    if codings:
        if len(codings) != 1 or codings[0].lower() != "chunked":
            raise _Refused("400 Bad Request", "unsupported Transfer-Encoding")
        return 0, True
    if lengths:
        if len(set(lengths)) != 1 or not lengths[0].isdigit():
            raise _Refused("400 Bad Request", "conflicting or malformed Content-Length")
        return int(lengths[0]), False
    return 0, False


def _copy_exact(reader: _Reader, upstream: socket.socket, n: int) -> None:
    while n > 0:
        if not reader.buf and not reader.fill():
            return
        data = reader.take(min(n, len(reader.buf)))
        upstream.sendall(data)
        n -= len(data)


def _copy_chunked(reader: _Reader, upstream: socket.socket) -> None:
    while True:
        line = reader.line(MAX_CHUNK_LINE)
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _Refused("400 Bad Request", "malformed chunk size") from None
        if not size_text or size < 0 or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
            raise _Refused("400 Bad Request", "malformed chunk size")
        upstream.sendall(line + b"\r\n")
        if size == 0:
            while True:  # trailers, then the empty line
                trailer = reader.line(MAX_HEAD)
                upstream.sendall(trailer + b"\r\n")
                if not trailer:
                    return
        _copy_exact(reader, upstream, size)
        if reader.line(2) != b"":
            raise _Refused("400 Bad Request", "malformed chunk")
        upstream.sendall(b"\r\n")


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _splice(a: socket.socket, b: socket.socket) -> None:
    other = threading.Thread(target=_copy, args=(b, a), daemon=True, name="mino-proxy-tunnel")
    other.start()
    _copy(a, b)
    other.join()


_proxies: dict[tuple[str, ...], Proxy] = {}
_proxies_lock = threading.Lock()


def proxy_for(entries: tuple[str, ...]) -> Proxy:
    """The process's proxy for this list, made on the first command that needs it."""
    with _proxies_lock:
        proxy = _proxies.get(entries)
        if proxy is None:
            proxy = _proxies[entries] = Proxy(entries)
        return proxy


# --- inside the sandbox ----------------------------------------------------------------------------

# Run as `python -I -S -c RELAY_SOURCE SOCKET FILTER_FD -- ARGV...` inside bwrap (FILTER_FD `-`: no
# filter). -I: no PYTHON* variables, no working directory on sys.path (the command could plant a
# module there for a later import), -S: no site. Errors before the exec end it with 126.
RELAY_SOURCE = r"""
import _socket, _thread, ctypes, os, sys
def fail(why):
    os.write(2, ("mino: network relay: %s\n" % why).encode()); os._exit(126)
path, fd, argv = sys.argv[1], sys.argv[2], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
program = b""
if fd != "-":
    with open(int(fd), "rb") as f:
        program = f.read()
    if not program or len(program) % 8:
        fail("empty seccomp filter")
try:
    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(128)
except OSError as e:
    fail("cannot listen on 127.0.0.1: %s" % e)
port = server.getsockname()[1]
# Not dumpable before the fork, so the relay is never ptrace-able (exec makes the command dumpable).
if libc.prctl(4, 0, 0, 0, 0) != 0:
    fail("cannot make the relay non-dumpable")
def pump(a, b, done=None):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(_socket.SHUT_WR)
    except OSError:
        pass
    if done is not None:
        done.release()
def serve(client):
    up = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        client.close(); up.close(); return
    done = _thread.allocate_lock(); done.acquire()
    _thread.start_new_thread(pump, (up, client, done))
    pump(client, up); done.acquire(); client.close(); up.close()
if os.fork() == 0:
    try:
        null = os.open("/dev/null", os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(null, n)
        while True:
            conn, _ = server._accept()
            _thread.start_new_thread(serve, (_socket.socket(fileno=conn),))
    finally:
        os._exit(0)
server.close()
url = "http://127.0.0.1:%d" % port
for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    os.environ[name] = url
os.environ.pop("ALL_PROXY", None); os.environ.pop("all_proxy", None)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ""
if program:
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    buf = ctypes.create_string_buffer(program, len(program))
    prog = Prog(len(program) // 8, ctypes.addressof(buf))
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        fail("cannot set no_new_privs")
    if libc.prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:
        fail("cannot install the seccomp filter: %s" % os.strerror(ctypes.get_errno()))
try:
    os.execvp(argv[0], argv)
except OSError as e:
    fail("cannot run %s: %s" % (argv[0], e.strerror))
"""


def relay_argv(python: str, filter_fd: int | None, argv: list[str]) -> list[str]:
    fd = "-" if filter_fd is None else str(filter_fd)
    return [python, "-I", "-S", "-c", RELAY_SOURCE, f"{SOCKET_DIR}/{SOCKET_NAME}", fd, "--", *argv]
