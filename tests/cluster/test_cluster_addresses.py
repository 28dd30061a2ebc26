"""`--cluster` at an address where no Dask scheduler answers: a web server, a socket that accepts and never answers,
a peer that answers garbage, the embedded DynamoDB, tls:// without TLS settings or with nothing listening, and
addresses Dask cannot read. Each is one line naming the problem and its fix, within 15 s, with no traceback, and
nothing left running: no thread, socket or event loop in this process, no process of the CLI's.

Each peer listens on 127.0.0.1 in this process (a thread of its own where it must answer).
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.clients.cluster import check as cluster_check
from engine.clients.cluster.home import check_cluster, normalize_address
from engine.errors import BadInput, LabError

pytest.importorskip("distributed")

# The lab's promise: a refusal within 15 s of the check's start, five times the 3 s connect timeout that bounds it.
# Timed in this process (`checked`): the CLI's time also counts a new interpreter's start, many seconds on a loaded
# machine and no part of the promise, so the CLI is held only to answering before its subprocess's 60 s timeout.
BOUND_S = 15.0
NOT_A_SCHEDULER = "but no Dask scheduler"
FIX = "give the Dask scheduler's own address"

# -- the peers -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Peer:
    address: str
    open_connections: Callable[[], int] = lambda: 0  # the peer's own sockets to clients, in this process


@contextlib.contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[Peer]:
    """A listener on 127.0.0.1 whose one thread handles its connections one after another with `handle`."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    handling = [0]

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            handling[0] = 1
            with conn:
                conn.settimeout(10)  # never held longer than a test, whatever the client does
                with contextlib.suppress(OSError):
                    handle(conn)
            handling[0] = 0

    thread = threading.Thread(target=accept, name="peer", daemon=True)
    thread.start()
    try:
        yield Peer(f"tcp://127.0.0.1:{listener.getsockname()[1]}", lambda: handling[0])
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            socket.create_connection(listener.getsockname(), timeout=1).close()  # wakes the accept
        listener.close()
        thread.join(timeout=15)


def _until_closed(conn: socket.socket) -> None:
    while conn.recv(65536):
        pass


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def web_server() -> Iterator[Peer]:
    """A tiny HTTP server (the standard library's, as a Dask dashboard or any web app would answer)."""
    with serving(lambda conn: _Hello(conn, ("127.0.0.1", 0), None)) as peer:  # type: ignore[arg-type]
        yield peer


@contextlib.contextmanager
def silent() -> Iterator[Peer]:
    """Accepts connections (the kernel does, from its backlog) and never answers a byte."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listener:
        yield Peer(f"tcp://127.0.0.1:{listener.getsockname()[1]}")


def garbage(first: bytes) -> Callable[[], contextlib.AbstractContextManager[Peer]]:
    """Answers `first` to every connection, then waits for the client to go (or 10 s)."""

    def answer(conn: socket.socket) -> None:
        conn.sendall(first)
        _until_closed(conn)

    return lambda: serving(answer)


SSH_BANNER = b"SSH-2.0-OpenSSH_9.6\r\n"  # read by Dask as a frame of about 6 EiB
# Framed as Dask frames its messages (total length, frame count, frame lengths), but the frame is no msgpack.
BAD_FRAME = struct.pack("<QQQ", 24, 1, 8) + b"\xc1" * 8


@contextlib.contextmanager
def nothing() -> Iterator[tuple[str, int]]:
    """A port of 127.0.0.1 that refuses connections: bound, for the test's length, and never listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()


PEERS: dict[str, Callable[[], contextlib.AbstractContextManager[Peer]]] = {
    "a web server": web_server,
    "a socket that accepts and never answers": silent,
    "a peer that answers an SSH banner": garbage(SSH_BANNER),
    "a peer that answers a Dask-framed non-message": garbage(BAD_FRAME),
}


# -- what is left running --------------------------------------------------------------------------------------


def _sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return n


@contextlib.contextmanager
def nothing_left(peer: Peer) -> Iterator[None]:
    """The block leaves no thread and no open socket behind in this process (Dask's loop thread, its executor's
    getaddrinfo thread, a comm to the peer: the peer sees each connection end, and closes its own side)."""
    threads, sockets = set(threading.enumerate()), _sockets()
    yield
    assert set(threading.enumerate()) == threads, [t.name for t in set(threading.enumerate()) - threads]
    deadline = time.monotonic() + 5
    while peer.open_connections() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert peer.open_connections() == 0, "the client's connection to the peer is still open"
    assert _sockets() <= sockets


def cli(address: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float, list[int]]:
    """`python -m engine run 22 --threads 2 --cluster ADDRESS`: the result, its seconds, and the pids of any process
    it started that is still running (they carry its environment's token)."""
    token = uuid.uuid4().hex
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "engine", "run", "22", "--threads", "2", "--cluster", address],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env, "DDBLAB_TEST_TOKEN": token},
    )
    return result, time.monotonic() - started, _carrying(f"DDBLAB_TEST_TOKEN={token}".encode())


def _carrying(marker: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:  # not ours to read, or just ended
                continue
    return found


def one_line_refusal(result: subprocess.CompletedProcess[str], seconds: float, left: list[int], code: int) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and " — " in lines[0], result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert result.returncode == code, result.stderr
    assert left == []  # it answered (no TimeoutExpired) and left nothing running; how fast is `checked`'s to say
    return lines[0]


def checked(address: str, backend: Backend, peer: Peer | None = None) -> tuple[LabError, float]:
    """What the dashboard's Cluster setting and the CLI ask before a run, in this process: refused, and how fast."""
    started = time.monotonic()
    with nothing_left(peer or Peer(address)), pytest.raises(LabError) as refused:
        check_cluster(address, backend)
    return refused.value, time.monotonic() - started


# -- the cases -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer", PEERS, ids=list(PEERS))
def test_a_peer_that_is_not_a_dask_scheduler_is_one_line_with_the_fix(peer: str, backend: Backend) -> None:
    with PEERS[peer]() as there:
        line = one_line_refusal(*cli(there.address), code=2)
        assert f"something listens at {there.address}, {NOT_A_SCHEDULER}" in line and FIX in line
        error, seconds = checked(there.address, backend, there)
    assert isinstance(error, BadInput) and str(error) == line.removeprefix("error: ") and seconds < BOUND_S


def test_the_embedded_dynamodbs_port_is_not_taken_for_a_scheduler(backend: Backend) -> None:
    if not backend.embedded:
        pytest.skip("needs the embedded server (set no DDBLAB_TEST_ENDPOINT)")
    address = normalize_address(str(backend.endpoint_url).removeprefix("http://"))
    line = one_line_refusal(*cli(address), code=2)
    assert f"something listens at {address}, {NOT_A_SCHEDULER}" in line and FIX in line
    error, seconds = checked(address, backend)
    assert str(error) == line.removeprefix("error: ") and seconds < BOUND_S


def test_tls_without_dasks_tls_settings_says_which_settings(backend: Backend) -> None:
    with nothing() as (host, port):
        address = f"tls://{host}:{port}"
        line = one_line_refusal(*cli(address), code=2)
        assert f"tls:// ({address}) needs Dask's TLS settings" in line and "distributed.comm.tls.ca-file" in line
        error, _ = checked(address, backend)
    assert str(error) == line.removeprefix("error: ")


def test_tls_with_dasks_tls_settings_where_nothing_listens_cannot_reach_it(backend: Backend) -> None:
    import dask
    from distributed.security import Security

    pems = Security.temporary()  # a CA and a client certificate, as PEM text (Dask takes it for a file's path too)
    settings = {
        "distributed.comm.tls.ca-file": pems.tls_ca_file,
        "distributed.comm.tls.client.cert": pems.tls_client_cert,
        "distributed.comm.tls.client.key": pems.tls_client_key,
    }
    env = {f"DASK_{key.upper().replace('.', '__').replace('-', '_')}": str(pem) for key, pem in settings.items()}
    with nothing() as (host, port):
        address = f"tls://{host}:{port}"
        line = one_line_refusal(*cli(address, **env), code=1)
        assert f"cannot reach the Dask scheduler at {address} (Connection refused)" in line and "dask worker" in line
        with dask.config.set(settings):
            error, seconds = checked(address, backend)
        assert str(error) == line.removeprefix("error: ") and seconds < BOUND_S
        with web_server() as web, dask.config.set(settings):  # TLS to a plain-text peer: its handshake fails
            error, _ = checked(web.address.replace("tcp://", "tls://"), backend, web)
    assert isinstance(error, BadInput) and NOT_A_SCHEDULER in str(error) and "SSL" in str(error)


@pytest.mark.parametrize("address", ["tcp://[::1", "tcp://::1:8786", "http://127.0.0.1:8786"])
def test_an_address_dask_cannot_read_is_refused_by_the_cli_before_anything_starts(address: str) -> None:
    line = one_line_refusal(*cli(address), code=2)
    assert f"cluster address {address!r} is not a scheduler address like tcp://127.0.0.1:8786" in line
    assert "e.g. --cluster tcp://scheduler:8786" in line


@pytest.mark.parametrize(
    "address, why",
    [
        ("tcp://[::1", "bracket is not closed"),
        ("[::1", "bracket is not closed"),
        ("tcp://::1:8786", "an IPv6 host is written in brackets"),
        ("tcp://fe80::1%eth0:8786", "an IPv6 host is written in brackets"),
        ("tcp://[::1]", "no port after the IPv6 host"),
        ("tcp://[::1]8786", "no port after the IPv6 host"),
        ("tcp://[127.0.0.1]:8786", "[127.0.0.1] is not an IPv6 address"),
        ("tcp://[]:8786", "[] is not an IPv6 address"),
        ("tcp://[::g]:8786", "[::g] is not an IPv6 address"),
        ("http://127.0.0.1:8786", "not http://"),
        ("https://scheduler:8786", "not https://"),
        ("inproc://127.0.0.1/1/2", "not inproc://"),
        ("ucx://127.0.0.1:8786", "not ucx://"),
        ("://127.0.0.1:8786", "not ://"),
        ("tcp://", "names no host and port"),
        ("", "names no host and port"),
        ("tcp://127.0.0.1", "no port"),
        ("tcp://:8786", "names no host"),
        ("tcp://127.0.0.1:0", "port '0' is not a number from 1 to 65535"),
        ("tcp://127.0.0.1:65536", "port '65536'"),
        ("tcp://127.0.0.1:-1", "port '-1'"),
        ("tcp://127.0.0.1:８７８６", "port '８７８６'"),
        ("tcp://127.0.0.1:", "it has no port"),
        ("tcp://10.0.0.300:8786", "'10.0.0.300' is not a host name or an IPv4 address"),
        ("tcp://sched_uler-.:8786", "is not a host name"),
        ("tcp://sché.local:8786", "is not a host name"),
        ("tcp://" + "a" * 64 + ":8786", "is not a host name"),
        ("tcp://sched uler:8786", "no path, query, user or spaces"),
        ("tcp://user@scheduler:8786", "no path, query, user or spaces"),
        ("tcp://scheduler:8786/status", "no path, query, user or spaces"),
        ("tcp://scheduler:8786?x=1", "no path, query, user or spaces"),
        ("tcp://scheduler:8786\x00", "no path, query, user or spaces"),
    ],
)
def test_every_malformed_address_names_what_is_wrong_and_the_fix(address: str, why: str, backend: Backend) -> None:
    error, seconds = checked(address, backend)
    assert isinstance(error, BadInput) and why in error.problem, error
    assert "is not a scheduler address like tcp://127.0.0.1:8786" in error.problem
    assert "e.g. --cluster tcp://scheduler:8786" in error.fix and seconds < 1.0
    if "IPv6" in why or "bracket" in why:
        assert "tcp://[::1]:8786" in error.fix


@pytest.mark.parametrize(
    "address, taken",
    [
        ("127.0.0.1:8786", "tcp://127.0.0.1:8786"),
        ("TCP://Scheduler:8786/", "tcp://Scheduler:8786"),
        ("[::1]:8786", "tcp://[::1]:8786"),
        ("tls://[fe80::1%eth0]:8786", "tls://[fe80::1%eth0]:8786"),
        ("ws://scheduler.example.com.:08786", "ws://scheduler.example.com.:8786"),
        ("wss://10.0.0.7:443", "wss://10.0.0.7:443"),
        ("dask_scheduler_1:8786", "tcp://dask_scheduler_1:8786"),
    ],
)
def test_the_addresses_dask_reads_are_taken(address: str, taken: str) -> None:
    assert normalize_address(address) == taken


def test_nothing_listening_at_an_ipv6_address_cannot_reach_it(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    monkeypatch.setattr(cluster_check, "CONNECT_TIMEOUT_S", 1.0)  # Dask retries a refused connection until then
    with socket.socket(socket.AF_INET6) as s:
        try:
            s.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback here")
        address = f"tcp://[::1]:{s.getsockname()[1]}"
        error, seconds = checked(address, backend)
    assert type(error) is LabError and f"cannot reach the Dask scheduler at {address}" in error.problem
    assert "dask scheduler" in error.fix and seconds < BOUND_S
