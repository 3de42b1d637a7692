"""Issue 22, finding 3 and the rest of its family: system calls that reach kernel state beyond the
sandbox.

A key added outside to root's user keyring was read inside the sandbox (`keyctl search/read`), and
keys could be added from inside: keyrings are not namespaced. Now the seccomp filter refuses
keyctl, add_key and request_key, as container profiles do, together with the other calls they
refuse that a build does not need (BPF, perf events, userfaultfd, modules, kexec, the kernel log,
...), and every socket family but IPv4, IPv6 and netlink.
"""

from __future__ import annotations

import ctypes
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tool_helpers import SANDBOX, needs_bwrap, project_ctx, run_bash

from mino_server.core.tools import sandbox as sandbox_module

pytestmark = needs_bwrap

_libc = ctypes.CDLL(None, use_errno=True)
_KEY_SPEC_USER_KEYRING = -4
_KEYCTL_SEARCH, _KEYCTL_READ, _KEYCTL_INVALIDATE = 10, 11, 21
_SYS = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}.get(
    os.uname().machine
)

# Inside: search root's user keyring for the key, read it, and add one. Through libc's syscall(),
# so no keyutils package is needed.
KEY_SCRIPT = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = int(sys.argv[2]), int(sys.argv[3])
desc = sys.argv[1].encode()
found = libc.syscall(keyctl, 10, ctypes.c_long(-4), b"user", desc, 0)
print("search", found, ctypes.get_errno())
buf = ctypes.create_string_buffer(64)
print("read", libc.syscall(keyctl, 11, ctypes.c_long(found), buf, 64), buf.value.decode())
added = libc.syscall(add_key, b"user", desc + b"-inside", b"planted", 7, ctypes.c_long(-4))
print("add", added, ctypes.get_errno())
try:
    print("in /proc/keys", desc in open("/proc/keys", "rb").read())
except OSError:
    print("in /proc/keys unreadable")
"""


@pytest.fixture
def host_key() -> Iterator[str]:
    """A key in root's (this user's) user keyring, added outside the sandbox; removed after."""
    if _SYS is None:
        pytest.skip(f"system call numbers not written down for {os.uname().machine}")
    desc = f"mino-test-{uuid.uuid4().hex[:12]}"
    key = _libc.syscall(
        _SYS["add_key"], b"user", desc.encode(), b"host-secret", 11, ctypes.c_long(_KEY_SPEC_USER_KEYRING)
    )
    if key < 0:
        pytest.skip(f"no kernel keyrings here (add_key: {os.strerror(ctypes.get_errno())})")
    yield desc
    _libc.syscall(_SYS["keyctl"], _KEYCTL_INVALIDATE, ctypes.c_long(key))
    planted = _libc.syscall(
        _SYS["keyctl"],
        _KEYCTL_SEARCH,
        ctypes.c_long(_KEY_SPEC_USER_KEYRING),
        b"user",
        f"{desc}-inside".encode(),
        0,
    )
    if planted > 0:  # only on a sandbox that let the command add one
        _libc.syscall(_SYS["keyctl"], _KEYCTL_INVALIDATE, ctypes.c_long(planted))


def _run_key_script(
    tmp_path: Path, desc: str, sandbox: sandbox_module.Sandbox | None
) -> dict[str, list[str]]:
    assert _SYS is not None
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "keys.py").write_text(KEY_SCRIPT)
    command = f"python3 keys.py {desc} {_SYS['add_key']} {_SYS['keyctl']}"
    output = run_bash({"command": command}, project_ctx(tmp_path, sandbox)).output
    return {line.split(" ")[0]: line.split(" ")[1:] for line in output.splitlines() if line[:1].isalpha()}


def test_a_host_key_is_out_of_reach_and_none_can_be_added(tmp_path: Path, host_key: str) -> None:
    # Outside the sandbox the script finds, reads and adds: the test can tell the difference.
    plain = _run_key_script(tmp_path, host_key, None)
    assert plain["read"] == ["11", "host-secret"]
    assert int(plain["add"][0]) > 0
    assert plain["in"] == ["/proc/keys", "True"]
    inside = _run_key_script(tmp_path, host_key, SANDBOX)
    assert inside["search"] == ["-1", "1"]  # EPERM
    assert inside["read"][0] == "-1" and "host-secret" not in inside["read"]
    assert inside["add"] == ["-1", "1"]
    assert inside["in"] == ["/proc/keys", "unreadable"]


# Refused inside with EPERM whatever the arguments (x86_64 numbers; the filter names them).
REFUSED_X86_64 = {
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "request_key": 249,
    "syslog": 103,
    "kexec_load": 246,
    "init_module": 175,
    "finit_module": 313,
    "acct": 163,
    "swapon": 167,
    "reboot": 169,
    "open_by_handle_at": 304,
    "io_uring_setup": 425,
}
CALL_SCRIPT = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
for arg in sys.argv[1:]:
    name, nr = arg.split("=")
    r = libc.syscall(int(nr), 0, 0, 0, 0, 0)
    print(name, r, ctypes.get_errno() if r < 0 else 0)
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 system call numbers")
def test_calls_that_reach_the_kernel_beyond_the_sandbox_are_refused(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "calls.py").write_text(CALL_SCRIPT)
    args = " ".join(f"{name}={nr}" for name, nr in REFUSED_X86_64.items())
    output = run_bash({"command": f"python3 calls.py {args}"}, project_ctx(tmp_path, SANDBOX)).output
    results = {line.split()[0]: line.split()[1:] for line in output.splitlines()[:-1]}
    assert results == {name: ["-1", "1"] for name in REFUSED_X86_64}
    # Each is in the filter by name (so other architectures get the same list).
    names = {rule[0] for rule in sandbox_module.SECCOMP_RULES}
    assert set(REFUSED_X86_64) <= names


FAMILY_SCRIPT = """
import socket
for name in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX", "AF_VSOCK", "AF_ALG", "AF_PACKET",
             "AF_BLUETOOTH", "AF_TIPC", "AF_KEY", "AF_APPLETALK", "AF_X25", "AF_RDS", "AF_CAN"):
    family = getattr(socket, name, None)
    if family is None:
        continue
    kind = socket.SOCK_RAW if name in ("AF_NETLINK", "AF_PACKET", "AF_KEY") else (
        socket.SOCK_SEQPACKET if name in ("AF_ALG", "AF_BLUETOOTH", "AF_TIPC", "AF_X25") else socket.SOCK_DGRAM)
    if name == "AF_ALG":
        kind = socket.SOCK_SEQPACKET
    try:
        socket.socket(family, kind).close()
        print(name, "open")
    except OSError as e:
        print(name, e.errno)
"""


def test_only_ipv4_ipv6_and_netlink_sockets_open(tmp_path: Path) -> None:
    """Other families answer EAFNOSUPPORT (97), as on a kernel without them; AF_UNIX EPERM (1)."""
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "families.py").write_text(FAMILY_SCRIPT)
    output = run_bash({"command": "python3 families.py"}, project_ctx(tmp_path, SANDBOX)).output
    results = dict(line.split() for line in output.splitlines()[:-1])
    assert results.pop("AF_INET") == "open"
    assert results.pop("AF_INET6") in ("open", "97")  # a kernel without IPv6 says so itself
    assert results.pop("AF_NETLINK") == "open"  # the sandbox's own network namespace: ip, getaddrinfo
    assert results.pop("AF_UNIX") == "1"
    assert "AF_ALG" in results and "AF_VSOCK" in results
    assert results == {name: "97" for name in results}


def test_a_build_still_runs(tmp_path: Path) -> None:
    """What builds and tests do: threads and processes, pipes, loopback TCP, a name lookup."""
    code = (
        "import socket, subprocess, threading, concurrent.futures as cf\n"
        "with cf.ThreadPoolExecutor(4) as pool: print(sum(pool.map(abs, range(-3, 1))))\n"
        "print(subprocess.run(['sh', '-c', 'echo piped | cat'], capture_output=True, text=True).stdout.strip())\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'tcp'); print(a.recv(3).decode())\n"
        "print(socket.getaddrinfo('localhost', 80, type=socket.SOCK_STREAM)[0][4][1])\n"
    )
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "build.py").write_text(code)
    output = run_bash({"command": "python3 build.py"}, project_ctx(tmp_path, SANDBOX)).output
    assert output == "6\npiped\ntcp\n80\n[exit code: 0]"


def test_unix_sockets_are_refused_whatever_the_type(tmp_path: Path) -> None:
    """socket(AF_UNIX) compares the family only: every type, with any flags, and a family with
    junk in the upper 32 bits of the register (the kernel reads an int) is refused too."""
    code = (
        "import ctypes, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for kind in (1, 2, 3, 5, 1 | socket.SOCK_NONBLOCK, 2 | socket.SOCK_CLOEXEC, 5 | 0x80800):\n"
        "    r = libc.socket(1, kind, 0)\n"
        "    print(kind, r, ctypes.get_errno())\n"
        "r = libc.syscall(41, ctypes.c_long(0x100000001), 1, 0)\n"
        "print('high', r, ctypes.get_errno())\n"
    )
    if os.uname().machine != "x86_64":
        code = code.rsplit("r = libc.syscall", 1)[0]
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "unix.py").write_text(code)
    output = run_bash({"command": "python3 unix.py"}, project_ctx(tmp_path, SANDBOX)).output
    lines = output.splitlines()[:-1]
    assert len(lines) >= 7
    assert all(line.split()[1:] == ["-1", "1"] for line in lines), output


def _verdicts(rules: tuple, call: str, args: tuple[int, ...]) -> set[int]:
    """The errnos of every rule that matches `call(args)`, comparing as libseccomp does."""
    out = set()
    for name, errno, conditions in rules:
        if name != call:
            continue
        ok = True
        for arg, op, a, b in conditions:
            if op == sandbox_module._SCMP_CMP_MASKED_EQ:
                ok &= args[arg] & a == b
            elif op == sandbox_module._SCMP_CMP_GE:
                ok &= args[arg] >= a
            else:
                raise AssertionError(f"comparison {op} not modelled")
        if ok:
            out.add(errno)
    return out


def _one_rule_per_value() -> list:
    """The same policy written one value per rule, as it was before the rules were compacted."""
    m = sandbox_module
    rules = [("socket", m._EPERM, (m._eq(0, m._AF_UNIX),))]
    rules += [
        ("socketpair", m._EPERM, (m._eq(0, m._AF_UNIX), m._eq(1, kind, m._SOCK_TYPE_MASK)))
        for kind in range(16)
        if kind != m._SOCK_STREAM
    ]
    for call in ("socket", "socketpair"):
        rules += [
            (call, m._EAFNOSUPPORT, (m._eq(0, family),))
            for family in range(17)
            if family not in (m._AF_UNIX, m._AF_INET, m._AF_INET6, m._AF_NETLINK)
        ]
        rules.append((call, m._EAFNOSUPPORT, ((0, m._SCMP_CMP_GE, m._AF_NETLINK + 1, 0),)))
    return rules


def test_the_compact_rules_refuse_exactly_what_one_rule_per_value_did() -> None:
    """Families and socketpair types are written as aligned masked runs (60 rules instead of 90: a
    quicker build before the first command and a shorter filter): every value gets what the same
    policy written one value per rule gives, no more and no less."""
    compact = [r for r in sandbox_module.SECCOMP_RULES if r[0] in ("socket", "socketpair")]
    assert len(compact) < len(_one_rule_per_value()) // 2
    reference = tuple(_one_rule_per_value())
    families = [*range(64), 1 << 32 | socket.AF_INET, 1 << 32 | socket.AF_UNIX, 2**63, 2**32 - 1]
    kinds = [*range(16), 1 | 0x80800, 2 | 0x80000, 1 << 32 | 1, 2**32 - 1]
    for call in ("socket", "socketpair"):
        for family in families:
            for kind in kinds:
                args = (family, kind, 0, 0)
                want = _verdicts(reference, call, args)
                assert _verdicts(sandbox_module.SECCOMP_RULES, call, args) == want, (call, family, kind)
                if call == "socket" and family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):
                    assert want == set()
