"""The embedded server's CPU per request without the wire: its WSGI app called in this process on captured
botocore requests, and the Python calls each takes (a count the machine's load does not change). Also the same
request timed after other work has run (as a client's does between two requests over HTTP): its CPU caches cold.

    python -m bench.server.throughput --app-cpu [--baseline CHECKOUT]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.shared import capturing_client


def python_calls(op: Callable[[], Any], times: int = 20) -> float:
    """Python function calls (and calls into C) per run of `op`: a count that does not move with the machine's
    load, unlike its CPU time."""
    called = [0]

    def count(_frame: Any, event: str, _arg: Any) -> None:
        if event in ("call", "c_call"):
            called[0] += 1

    sys.setprofile(count)
    try:
        for _ in range(times):
            op()
    finally:
        sys.setprofile(None)
    return called[0] / times


def app_cpu(batches: int = 7, per_batch: int = 150) -> dict[str, float]:
    """The server's CPU per request without the wire: the embedded server's WSGI app (build_app) called in this
    process on captured botocore requests, ms per request, the least of `batches` batches (the machine is shared:
    the least-disturbed batch is the figure). Imports `engine` when called (see --baseline)."""
    from engine.server.host import http_in, serve

    ddb, sent = capturing_client()

    def captured(operation: str, **params: Any) -> Any:
        getattr(ddb, operation)(**params)
        request = sent.pop()
        headers = [(k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()]
        return http_in.Request("POST", "/", "HTTP/1.1", [*headers, ("Host", "127.0.0.1:9")], request.body)

    app = serve.build_app()
    table = "t-" + uuid.uuid4().hex[:8]  # moto's tables live as long as the process: a fresh one per call
    key = [{"AttributeName": "pk", "KeyType": "HASH"}]
    serve._call(
        app,
        captured(
            "create_table",
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=key,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ),
        "127.0.0.1",
        ("127.0.0.1", 9),
        multithread=False,
    )
    kinds = {
        "UpdateItem ADD": [
            captured(
                "update_item",
                TableName=table,
                Key={"pk": {"S": "counter"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        ],
        "PutItem": [
            captured("put_item", TableName=table, Item={"pk": {"S": f"p{i}"}, "v": {"N": "1"}}) for i in range(500)
        ],
        "GetItem": [captured("get_item", TableName=table, Key={"pk": {"S": "counter"}}, ConsistentRead=True)],
        "conditional PutItem": [
            captured(
                "put_item",
                TableName=table,
                Item={"pk": {"S": "doc"}, "version": {"N": str(i + 1)}},
                ConditionExpression="attribute_not_exists(pk) OR version = :v",
                ExpressionAttributeValues={":v": {"N": str(i)}},
            )
            for i in range((batches + 1) * per_batch + 40)  # every one a new version: none refused
        ],
    }
    out: dict[str, float] = {}
    for kind, requests in kinds.items():
        calls = iter(range(10**9))

        def one(requests: list[Any] = requests, calls: Iterator[int] = calls) -> None:
            n = next(calls)
            answer = serve._call(app, requests[n % len(requests)], "127.0.0.1", ("127.0.0.1", 9), multithread=False)
            assert answer[0].startswith(b"HTTP/1.1 200"), answer[0][:300]  # every one applied, none refused

        for _ in range(20):
            one()
        # Python function calls per request: the same count on a busy machine as on a quiet one.
        out[kind + " calls"] = python_calls(one)
        best = float("inf")
        for _ in range(batches):
            start = time.process_time()
            for _ in range(per_batch):
                one()
            best = min(best, (time.process_time() - start) / per_batch)
        out[kind] = round(best * 1000, 3)
        # Over HTTP a client's work runs between two requests and evicts the server's code and data from the CPU's
        # caches: the same request, each after such work, timed alone (median of `per_batch`).
        cold = []
        for _ in range(per_batch):
            _evict_caches()
            start = time.thread_time()
            one()
            cold.append(time.thread_time() - start)
        out[kind + " after other work"] = round(statistics.median(cold) * 1000, 3)
    return out


_OTHER_WORK = {f"k{i}": [i, str(i), {"x": i}] for i in range(20_000)}  # a few MB touched: the client's part


def _evict_caches() -> None:
    json.loads(json.dumps(_OTHER_WORK))


def app_cpu_of(checkout: Path, batches: int = 7, per_batch: int = 150) -> dict[str, float]:
    """app_cpu(batches, per_batch) with another checkout's engine (this checkout's bench), in a child process."""
    here = str(Path(__file__).resolve().parents[2])
    code = (
        f"import sys, json; sys.path.insert(0, {here!r}); import bench.server.app_cpu as sp\n"
        "for m in [m for m in sys.modules if m == 'engine' or m.startswith('engine.')]: del sys.modules[m]\n"
        f"sys.path.insert(0, {str(checkout)!r}); print(json.dumps(sp.app_cpu({batches}, {per_batch})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=checkout)
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))
