"""The allowlist proxy of sandboxed commands (tools/network.py), attacked at its own socket.

A sandboxed command's only way out is this proxy, so it must judge the destination a request
really goes to: the request target, never the Host header; an IP address in any spelling as the
address it is; a name as listed whatever it resolves to; and it must not let a second request ride
on a first one (pipelining, conflicting Content-Length / Transfer-Encoding). Each test speaks raw
bytes to a per-command socket, with local servers on 127.0.0.1 recording what reached them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from network_helpers import Server, exchange, http_server, status

from mino_server.core.tools.network import (
    EntryError,
    Listener,
    Proxy,
    normalise_host,
    parse_entry,
    parse_list,
)


@pytest.fixture
def listed() -> Iterator[Server]:
    with http_server() as server:
        yield server


@pytest.fixture
def other() -> Iterator[Server]:
    with http_server() as server:
        yield server


@pytest.fixture
def open_listeners() -> Iterator[list[Listener]]:
    made: list[Listener] = []
    yield made
    for listener in made:
        listener.close()


def proxy(entries: list[str], made: list[Listener], resolver: object = None) -> tuple[str, Listener]:
    listener = Proxy(entries, resolver).listen()  # type: ignore[arg-type]
    made.append(listener)
    return os.path.join(listener.folder, "proxy.sock"), listener


def get(target: str, host: str | None = None, extra: str = "") -> bytes:
    host_line = f"Host: {host}\r\n" if host is not None else ""
    return f"GET {target} HTTP/1.1\r\n{host_line}{extra}\r\n".encode()


def test_listed_target_reached_unlisted_refused_with_one_line(
    listed: Server, other: Server, open_listeners: list[Listener]
) -> None:
    sock, listener = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    answer = exchange(sock, get(f"http://127.0.0.1:{listed.port}/ok", f"127.0.0.1:{listed.port}"))
    assert status(answer) == 200 and answer.endswith(b"hello /ok\n")
    for _ in range(2):  # refused twice, told once
        answer = exchange(sock, get(f"http://127.0.0.1:{other.port}/no", f"127.0.0.1:{other.port}"))
        assert status(answer) == 403
    assert b"Network: blocked 127.0.0.1:%d (not in sandbox_network)" % other.port in answer
    assert other.seen == []
    assert listener.close() == [f"Network: blocked 127.0.0.1:{other.port} (not in sandbox_network)"]


def test_absolute_form_is_judged_by_its_target_not_the_host_header(
    listed: Server, other: Server, open_listeners: list[Listener]
) -> None:
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    # A listed Host header does not carry a request to another target.
    answer = exchange(sock, get(f"http://127.0.0.1:{other.port}/x", f"127.0.0.1:{listed.port}"))
    assert status(answer) == 403 and other.seen == [] and listed.seen == []
    # A listed target with another Host header goes to the target, which sees its own name.
    answer = exchange(sock, get(f"http://127.0.0.1:{listed.port}/y", f"127.0.0.1:{other.port}"))
    assert status(answer) == 200
    assert listed.seen == [("GET", "/y", f"127.0.0.1:{listed.port}")] and other.seen == []
    # Userinfo could make two parsers see two hosts: refused outright.
    answer = exchange(sock, get(f"http://127.0.0.1:{listed.port}@127.0.0.1:{other.port}/z"))
    assert status(answer) == 400 and other.seen == [] and len(listed.seen) == 1
    # Origin-form (no target) is not a proxy request.
    assert status(exchange(sock, get("/x", f"127.0.0.1:{listed.port}"))) == 400
    assert status(exchange(sock, get(f"https://127.0.0.1:{listed.port}/x"))) == 400


def test_pipelined_second_request_goes_nowhere(
    listed: Server, other: Server, open_listeners: list[Listener]
) -> None:
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    first = get(f"http://127.0.0.1:{listed.port}/first", f"127.0.0.1:{listed.port}")
    second = get(f"http://127.0.0.1:{other.port}/second", f"127.0.0.1:{other.port}")
    # Also a second request meant for the listed server's socket but naming another host.
    third = get("/third", f"127.0.0.1:{other.port}")
    answer = exchange(sock, first + second + third)
    assert status(answer) == 200
    assert listed.paths == ["/first"] and other.seen == []
    assert answer.count(b"HTTP/1.1 ") == 1  # one answer: the connection then closes


@pytest.mark.parametrize(
    "framing",
    [
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        "Content-Length: 5\r\nContent-Length: 60\r\n",
        "Content-Length: +5\r\n",
        "Transfer-Encoding: chunked, identity\r\n",
        "Transfer-Encoding: xchunked\r\n",
        "Transfer-Encoding : chunked\r\n",
        "Content-Length: 5\r\n Transfer-Encoding: chunked\r\n",  # a folded line
        "X: a\nTransfer-Encoding: chunked\r\n",  # a bare LF
    ],
)
def test_ambiguous_framing_is_refused(
    framing: str, listed: Server, other: Server, open_listeners: list[Listener]
) -> None:
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    smuggled = get(f"http://127.0.0.1:{other.port}/smuggled", f"127.0.0.1:{other.port}")
    head = f"POST http://127.0.0.1:{listed.port}/p HTTP/1.1\r\nHost: 127.0.0.1:{listed.port}\r\n{framing}\r\n"
    answer = exchange(sock, head.encode() + b"0\r\n\r\n" + smuggled)
    assert status(answer) == 400
    assert listed.seen == [] and other.seen == []


def test_chunked_body_ends_the_request(listed: Server, other: Server, open_listeners: list[Listener]) -> None:
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    head = (
        f"POST http://127.0.0.1:{listed.port}/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    tail = get(f"http://127.0.0.1:{other.port}/after", "x") + get("/again", "x")
    answer = exchange(sock, head + b"5\r\nhello\r\n0\r\n\r\n" + tail)
    assert status(answer) == 200
    assert listed.seen == [("POST", "/c", f"127.0.0.1:{listed.port}")] and other.seen == []


def test_connect_to_localhost_or_unlisted_port_is_refused(
    listed: Server, other: Server, open_listeners: list[Listener]
) -> None:
    sock, listener = proxy(["localhost", f"127.0.0.1:{listed.port}"], open_listeners)
    for target, shown in [
        (f"localhost:{other.port}", f"localhost:{other.port}"),  # listed name, unlisted port
        (f"127.0.0.1:{other.port}", f"127.0.0.1:{other.port}"),  # listed address, unlisted port
        ("127.0.0.1:22", "127.0.0.1:22"),
        (f"[::1]:{listed.port}", f"[::1]:{listed.port}"),  # the same machine by another address
        (f"LocalHost.:{other.port}", f"localhost:{other.port}"),
    ]:
        answer = exchange(sock, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        assert status(answer) == 403, target
        assert f"Network: blocked {shown} (not in sandbox_network)".encode() in answer
    assert other.seen == [] and listed.seen == []
    assert len(listener.close()) == 4  # localhost:PORT told once though asked twice


def test_connect_to_the_proxy_itself_unless_listed(open_listeners: list[Listener]) -> None:
    # The proxy listens on no TCP port at all: its only address is the per-command unix socket, which
    # no CONNECT target can name. The relay's port inside the sandbox is 127.0.0.1 there, which is
    # only reachable when listed, and then it is the host's 127.0.0.1, not the relay.
    sock, _ = proxy(["example.com"], open_listeners)
    for target in ("127.0.0.1:443", "localhost:443", "[::1]:443", "0.0.0.0:443", "0:443"):
        answer = exchange(sock, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
        assert status(answer) == 403, target
    path = os.path.join(os.path.dirname(sock), "proxy.sock")
    assert status(exchange(sock, f"CONNECT {path}:443 HTTP/1.1\r\n\r\n".encode())) == 400


def test_connect_tunnels_to_listed_name_judged_by_name(
    listed: Server, open_listeners: list[Listener]
) -> None:
    # The name resolves to 127.0.0.1, which is not listed: the name decides.
    resolved: list[str] = []

    def resolver(host: str, port: int) -> list[tuple[int, str]]:
        resolved.append(host)
        return [(2, "127.0.0.1")]

    sock, listener = proxy([f"*.pkg.test:{listed.port}"], open_listeners, resolver)
    request = get("/tunnelled", f"files.pkg.test:{listed.port}", "Connection: close\r\n")
    answer = exchange(sock, f"CONNECT Files.PKG.test:{listed.port} HTTP/1.1\r\n\r\n".encode() + request)
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200")
    assert resolved == ["files.pkg.test"] and listed.paths == ["/tunnelled"]
    # The apex, a look-alike and the address itself are not covered by the wildcard.
    for target in (f"pkg.test:{listed.port}", f"evilpkg.test:{listed.port}", f"127.0.0.1:{listed.port}"):
        assert status(exchange(sock, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())) == 403, target
    assert resolved == ["files.pkg.test"]  # refused names are never looked up
    assert len(listener.close()) == 3


@pytest.mark.parametrize(
    "spelling",
    ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "017700000001", "127.0.0.1.",
     "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]"],
)  # fmt: skip
def test_ip_spellings_are_judged_as_the_address(
    spelling: str, listed: Server, open_listeners: list[Listener]
) -> None:
    target = f"{spelling}:{listed.port}"
    # Not listed (only a name is): refused, and told as the address it is.
    sock, listener = proxy([f"localhost:{listed.port}"], open_listeners)
    answer = exchange(sock, get(f"http://{target}/a"))
    assert status(answer) == 403 and listed.seen == []
    assert listener.close() == [f"Network: blocked 127.0.0.1:{listed.port} (not in sandbox_network)"]
    # Listed as 127.0.0.1: every spelling of it is that address.
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    assert status(exchange(sock, get(f"http://{target}/b"))) == 200
    assert listed.paths == ["/b"]


def test_ipv6_forms(open_listeners: list[Listener]) -> None:
    assert normalise_host("[0:0:0:0:0:0:0:1]") == ("::1", True)
    assert normalise_host("[::FFFF:10.0.0.1]") == ("10.0.0.1", True)
    assert normalise_host("[fe80::1%eth0]") is None
    assert normalise_host("[::1") is None
    sock, listener = proxy(["[::1]:8080", "10.1.2.3"], open_listeners)
    for target, shown in [
        ("[::1]:8081", "[::1]:8081"),
        ("[::2]:8080", "[::2]:8080"),
        ("[::ffff:10.1.2.3]:8443", "10.1.2.3:8443"),
        ("[::a01:203]:80", "[::a01:203]:80"),  # IPv4-compatible, not mapped: another address
    ]:
        assert status(exchange(sock, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())) == 403, target
        assert listener.blocked[-1] == shown
    for target in ("::1:8080", "[::1]x:80", "[::1]:", "[::1]:99999"):
        assert status(exchange(sock, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())) == 400, target


def test_overlong_head_is_refused(listed: Server, open_listeners: list[Listener]) -> None:
    sock, _ = proxy([f"127.0.0.1:{listed.port}"], open_listeners)
    big = get(f"http://127.0.0.1:{listed.port}/", "x", "X-Big: " + "a" * 20000 + "\r\n")
    assert status(exchange(sock, big)) == 431
    many = get(f"http://127.0.0.1:{listed.port}/", "x", "X: y\r\n" * 200)
    assert status(exchange(sock, many)) == 431
    assert status(exchange(sock, b"GET http://127.0.0.1:%d/\xff HTTP/1.1\r\n\r\n" % listed.port)) == 400
    assert listed.seen == []


def test_entries_are_checked() -> None:
    assert parse_entry("PyPI.org") == parse_entry("pypi.org")
    assert parse_entry("*.example.com:8443").wildcard
    assert parse_entry("2130706433:80").host == "127.0.0.1"
    assert parse_list(["a.com", " a.com ", "b.com"]) == ("a.com", "b.com")
    for bad in ["", "*", "*.127.0.0.1", "a.com:0", "a.com:x", "http://a.com", "a b", "a..com", "[::1", 5]:
        with pytest.raises(EntryError):
            parse_entry(bad)
    with pytest.raises(EntryError):
        parse_list("a.com")


def test_connections_per_command_are_bounded(
    open_listeners: list[Listener], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each open connection holds a thread in Mino: a command cannot open them without end.
    import socket

    from mino_server.core.tools import network

    monkeypatch.setattr(network, "MAX_CONNECTIONS", 3)
    sock, _ = proxy(["example.com"], open_listeners)
    held = []
    try:
        for _ in range(3):
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.sendall(b"GET")  # an unfinished head: the proxy keeps waiting for the rest
            held.append(s)
        answer = exchange(sock, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n", timeout=10)
        assert answer == b""  # closed unanswered
    finally:
        for s in held:
            s.close()
    # Room again once the proxy has seen them close (its threads may take a moment on a busy machine).
    for _ in range(100):
        if status(exchange(sock, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")) == 403:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the proxy did not take connections again")
