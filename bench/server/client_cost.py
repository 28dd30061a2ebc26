"""What one PutItem costs the *client* against each server, and whether the answer's bytes are the reason.

    python -m bench.server.throughput --client-cost

At 1 thread an op takes the client's CPU plus the server's, so a client that works harder against one server
looks like a slower server. For the embedded server and dynalite, and for a replay server that answers every
request with the bytes the real one answered a PutItem with (and does nothing else), this measures the client's
Python calls per op (deterministic: more calls = the answer costs more to parse) and its CPU per op (median of
alternating rounds). Same calls and same CPU against a server and its replay: the bytes cost nothing more;
more CPU against the real server than against its replay: the server's own work slows the client (its caches).
"""

from __future__ import annotations

import multiprocessing
import socket
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from bench.server.app_cpu import python_calls
from bench.shared import capturing_client, client, create_table


def _answer_of(endpoint: str, table: str) -> bytes:
    """The raw bytes (status line, headers, body) the server at `endpoint` answers a botocore PutItem with."""
    ddb, sent = capturing_client()
    ddb.put_item(TableName=table, Item={"pk": {"S": "replayed"}, "v": {"N": "1"}})
    request = sent.pop()
    host, port = endpoint.rsplit("/", 1)[-1].split(":")
    head = f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(
        f"{k}: {v.decode() if isinstance(v, bytes) else v}\r\n" for k, v in request.headers.items()
    )
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head.encode() + b"\r\n" + request.body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            data += sock.recv(65536)
    return data


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _replay(answer: bytes, ports: Any) -> None:
    """A server (its own process) that answers every request on a kept-alive connection with `answer`."""
    listener = socket.create_server(("127.0.0.1", 0))
    ports.put(listener.getsockname()[1])
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        while chunk := sock.recv(65536):
            buffer += chunk
            while b"\r\n\r\n" in buffer and len(buffer.partition(b"\r\n\r\n")[2]) >= _length(buffer):
                buffer = buffer.partition(b"\r\n\r\n")[2][_length(buffer) :]
                sock.sendall(answer)


@contextmanager
def replay(answer: bytes) -> Iterator[str]:
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    process = context.Process(target=_replay, args=(answer, ports), daemon=True)
    process.start()
    try:
        yield f"http://127.0.0.1:{ports.get(timeout=30)}"
    finally:
        process.kill()
        process.join(5)


def _client_cost(endpoint: str, table: str, ops: int) -> tuple[float, float]:
    """(the client's Python calls per PutItem, its CPU ms per PutItem) over `ops` calls on one thread."""
    ddb = client(endpoint)
    counter = iter(range(10**9))

    def op() -> None:
        ddb.put_item(TableName=table, Item={"pk": {"S": f"c-{next(counter)}"}, "v": {"N": "1"}})

    for _ in range(50):
        op()
    calls = python_calls(op)
    start = time.process_time()
    for _ in range(ops):
        op()
    return calls, (time.process_time() - start) * 1000 / ops


def client_cost(rounds: int = 5, ops: int = 400) -> dict[str, tuple[float, float]]:
    """Per server (and its replay): (client Python calls per PutItem, median client CPU ms per PutItem)."""
    from bench.server.servers import dynalite, embedded

    endpoints: dict[str, tuple[str, str]] = {}
    with ExitStack() as stack:
        for name, server in (("embedded", embedded), ("dynalite", dynalite)):
            endpoint, _ = stack.enter_context(server())
            table = create_table(client(endpoint))
            endpoints[name] = (endpoint, table)
            endpoints[f"replay of {name}"] = (stack.enter_context(replay(_answer_of(endpoint, table))), table)
        seen: dict[str, list[tuple[float, float]]] = {name: [] for name in endpoints}
        for _ in range(rounds):  # alternating, as the throughput benchmark does
            for name, (endpoint, table) in endpoints.items():
                seen[name].append(_client_cost(endpoint, table, ops))
    return {name: (runs[0][0], statistics.median(ms for _, ms in runs)) for name, runs in seen.items()}
