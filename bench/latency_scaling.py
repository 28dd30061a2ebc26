"""Realistic latency: with 10 ms per call (as on AWS), does throughput grow with threads up to 64?

Two endpoints, measured side by side:
- `remote-like`: a stand-in for a far-away DynamoDB with unlimited parallelism: a local HTTP server that
  waits 10 ms and answers every UpdateItem with an empty success. It is not DynamoDB and is only used here,
  to measure the engine's own ability to keep N calls in flight (its call path: Caller -> botocore -> History).
- `embedded`: the real embedded server with 10 ms injected latency (POST /_lab/config latency_ms=10). It
  serializes requests, so its own service time caps throughput; shown for contrast, not judged.
Linear = threads × the 1-thread rate.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.backend import Backend, BackendSpec, RetryPolicy
from engine.calls import Caller, CallError
from engine.faults import FaultInjector, FaultPlan
from engine.history import History
from engine.server.process import lab_config
from engine.tables import TableSpec, drop_table, open_table

THREADS = (1, 8, 16, 32, 64)
LATENCY_MS = 10.0


class _RemoteLike(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(LATENCY_MS / 1000)
        body = b"{}"
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
                         b"Content-Length: 2\r\n\r\n" + body)

    def log_message(self, *args: Any) -> None:
        pass


def _rate(client: Any, table: str, threads: int, seconds: float) -> float:
    history = History()
    stop = threading.Event()
    barrier = threading.Barrier(threads + 1)

    def work(i: int) -> None:
        caller = Caller(client, history, i)
        barrier.wait()
        while not stop.is_set():
            try:
                caller.call("increment", "UpdateItem", key="views", TableName=table,
                            Key={"PK": "POST#hello-world", "SK": "STATS"}, UpdateExpression="ADD #v :one",
                            ExpressionAttributeNames={"#v": "views"}, ExpressionAttributeValues={":one": 1})
            except CallError:
                pass  # recorded in the history like any call; only the rate matters here

    workers = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    started = time.perf_counter()
    time.sleep(seconds)
    count = len(history)
    elapsed = time.perf_counter() - started
    stop.set()
    for w in workers:
        w.join()
    return count / elapsed


def _curve(client: Any, table: str, seconds: float) -> list[dict[str, Any]]:
    injector = FaultInjector(client, FaultPlan())
    rows = []
    base = None
    for threads in THREADS:
        rate = _rate(client, table, threads, seconds)
        base = base or rate
        rows.append({"threads": threads, "calls_per_s": rate, "linear": base * threads,
                     "of_linear": rate / (base * threads)})
    injector.close()
    return rows


def measure(seconds: float = 2.0) -> dict[str, list[dict[str, Any]]]:
    ThreadingHTTPServer.request_queue_size = 256  # the default backlog of 5 resets connections at 64 threads
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RemoteLike)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        remote = Backend(BackendSpec.parse(f"http://127.0.0.1:{server.server_port}"))
        client = remote.client(threads=64, retry=RetryPolicy("standard", 1))
        remote_rows = _curve(client, "remote-like", seconds)
    finally:
        server.shutdown()
    with Backend() as backend:
        client = backend.client(threads=64, retry=RetryPolicy("standard", 1))
        table = open_table(client, "bench-latency", TableSpec())
        lab_config(backend.endpoint_url, latency_ms=LATENCY_MS)
        embedded_rows = _curve(client, table.name, seconds)
        lab_config(backend.endpoint_url, latency_ms=0)
        drop_table(table)
    return {"remote_like": remote_rows, "embedded": embedded_rows}


def verdicts(result: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    at_64 = next(r for r in result["remote_like"] if r["threads"] == 64)
    return [{"figure": "engine throughput at 64 threads, 10 ms latency (of linear)",
             "value": round(at_64["of_linear"], 3), "target": "≥ 0.8", "pass": at_64["of_linear"] >= 0.8}]
