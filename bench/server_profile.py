"""Throughput of the embedded DynamoDB, side by side with dynalite, plus the race checks it must keep passing.

    python -m bench.server_profile                 # embedded vs dynalite, 3 rounds, 1 and 16 threads
    python -m bench.server_profile --check         # the race checks only (exit 1 on a failure)
    python -m bench.server_profile --only embedded --rounds 1 --seconds 5

The machine is small and shared, so servers are measured alternately, round after round, and the report
gives medians and the embedded/dynalite ratio rather than single runs. One boto3 client is shared by all
threads, as the lab's pools do. dynalite is installed with npm into ~/.cache/ddblab/dynalite on first use.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from engine.server.process import EmbeddedServer

DYNALITE_DIR = Path.home() / ".cache" / "ddblab" / "dynalite"
WORKLOADS = ("update_add", "put_distinct", "cond_put")


def client(endpoint: str) -> Any:
    return boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(max_pool_connections=32, retries={"max_attempts": 1, "mode": "standard"}))


def create_table(ddb: Any) -> str:
    name = "bench-" + uuid.uuid4().hex[:8]
    ddb.create_table(TableName=name, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    for _ in range(200):  # dynalite keeps a new table CREATING for --createTableMs
        if ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE":
            break
        time.sleep(0.02)
    return name


# -- servers -------------------------------------------------------------------------------------------------

@contextmanager
def embedded() -> Iterator[str]:
    with EmbeddedServer() as server:
        yield server.endpoint_url


@contextmanager
def dynalite() -> Iterator[str]:
    cli = DYNALITE_DIR / "node_modules" / "dynalite" / "cli.js"
    if not cli.exists():
        DYNALITE_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(DYNALITE_DIR), "dynalite"], check=True, capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["node", str(cli), "--host", "127.0.0.1", "--port", str(port), "--createTableMs", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(5)


SERVERS: dict[str, Callable[[], Any]] = {"embedded": embedded, "dynalite": dynalite}


# -- workloads: each returns a function one thread calls repeatedly; one call = one op ----------------------

def workload(kind: str, ddb: Any, table: str, thread: int) -> Callable[[], bool]:
    if kind == "update_add":
        def op() -> bool:
            ddb.update_item(TableName=table, Key={"pk": {"S": "counter"}}, UpdateExpression="ADD n :one",
                            ExpressionAttributeValues={":one": {"N": "1"}})
            return True
        return op
    if kind == "put_distinct":
        counter = iter(range(10**9))

        def op() -> bool:
            ddb.put_item(TableName=table, Item={"pk": {"S": f"t{thread}-{next(counter)}"}, "v": {"N": "1"}})
            return True
        return op
    if kind == "cond_put":
        def op() -> bool:  # one read-check-write attempt (a GetItem and a PutItem); True when the put won
            item = ddb.get_item(TableName=table, Key={"pk": {"S": "doc"}}, ConsistentRead=True).get("Item")
            version = int(item["version"]["N"]) if item else 0
            try:
                if item:
                    ddb.put_item(TableName=table, Item={"pk": {"S": "doc"}, "version": {"N": str(version + 1)}},
                                 ConditionExpression="version = :v", ExpressionAttributeValues={":v": {"N": str(version)}})
                else:
                    ddb.put_item(TableName=table, Item={"pk": {"S": "doc"}, "version": {"N": "1"}},
                                 ConditionExpression="attribute_not_exists(pk)")
            except ddb.exceptions.ConditionalCheckFailedException:
                return False
            return True
        return op
    raise ValueError(kind)


def run_threads(ops: list[Callable[[], bool]], *, seconds: float | None = None, count: int | None = None) -> tuple[float, int, int]:
    """Run each op in its own thread, for `seconds` or `count` calls each. Returns (elapsed, calls, successes)."""
    calls = [0] * len(ops)
    wins = [0] * len(ops)
    start = threading.Barrier(len(ops) + 1)
    deadline = [0.0]

    def loop(i: int) -> None:
        start.wait()
        n = 0
        while (count is not None and n < count) or (seconds is not None and time.perf_counter() < deadline[0]):
            wins[i] += ops[i]()
            n += 1
        calls[i] = n

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(ops))]
    for t in threads:
        t.start()
    deadline[0] = time.perf_counter() + (seconds or 0)
    t0 = time.perf_counter()
    start.wait()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, sum(calls), sum(wins)


def measure(endpoint: str, kind: str, threads: int, seconds: float) -> float:
    ddb = client(endpoint)
    table = create_table(ddb)
    ops = [workload(kind, ddb, table, i) for i in range(threads)]
    run_threads(ops, seconds=0.3)  # warm the connection pool and moto's caches
    elapsed, calls, _ = run_threads(ops, seconds=seconds)
    return calls / elapsed


# -- race checks ---------------------------------------------------------------------------------------------

def check(endpoint: str) -> list[str]:
    """The atomicity and idempotency the embedded server promises. Returns the failures."""
    ddb = client(endpoint)
    failures: list[str] = []
    table = create_table(ddb)
    run_threads([workload("update_add", ddb, table, i) for i in range(16)], count=100)
    n = int(ddb.get_item(TableName=table, Key={"pk": {"S": "counter"}}, ConsistentRead=True)["Item"]["n"]["N"])
    if n != 1600:
        failures.append(f"16 x 100 UpdateItem ADD ended at {n}, not 1600")

    _, _, wins = run_threads([workload("cond_put", ddb, table, i) for i in range(16)], count=30)
    version = int(ddb.get_item(TableName=table, Key={"pk": {"S": "doc"}}, ConsistentRead=True)["Item"]["version"]["N"])
    # the first successful put creates version 1, every later one adds 1
    if version != wins:
        failures.append(f"conditional puts: version {version} after {wins} successful puts")

    items = [{"Update": {"TableName": table, "Key": {"pk": {"S": "tx"}}, "UpdateExpression": "ADD n :one",
                         "ExpressionAttributeValues": {":one": {"N": "1"}}}}]
    token = uuid.uuid4().hex
    ddb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    ddb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    n = int(ddb.get_item(TableName=table, Key={"pk": {"S": "tx"}}, ConsistentRead=True)["Item"]["n"]["N"])
    if n != 1:
        failures.append(f"TransactWriteItems with one token twice applied {n} times")
    try:
        ddb.transact_write_items(TransactItems=items + [{"Put": {"TableName": table, "Item": {"pk": {"S": "x"}}}}],
                                 ClientRequestToken=token)
        failures.append("same token with other parameters did not fail")
    except ddb.exceptions.IdempotentParameterMismatchException:
        pass
    try:
        ddb.put_item(TableName=table, Item={"pk": {"S": "doc"}}, ConditionExpression="attribute_not_exists(pk)")
        failures.append("a failing condition did not raise ConditionalCheckFailedException")
    except ddb.exceptions.ConditionalCheckFailedException:
        pass
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_profile")
    parser.add_argument("--check", action="store_true", help="only run the race checks against the embedded server")
    parser.add_argument("--only", choices=sorted(SERVERS), action="append")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)

    with embedded() as endpoint:
        failures = check(endpoint)
    print("race checks:", "OK" if not failures else "FAILED", *failures, sep="\n  " if failures else " ")
    if args.check:
        return 1 if failures else 0

    names = args.only or [n for n in SERVERS if n != "dynalite" or shutil.which("node")]
    results: dict[tuple[str, str, int], list[float]] = {}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else reversed(names):  # alternate who goes first
            with SERVERS[name]() as endpoint:
                for kind in args.workloads:
                    for threads in args.threads:
                        rate = measure(endpoint, kind, threads, args.seconds)
                        results.setdefault((name, kind, threads), []).append(rate)
                        print(f"round {r + 1} {name:9} {kind:13} {threads:2} threads {rate:8.0f} ops/s", flush=True)

    print(f"\nmedian ops/s over {args.rounds} rounds (cond_put: one GetItem + one conditional PutItem per op)")
    print(f"{'workload':13} {'thr':>3} " + " ".join(f"{n:>9}" for n in names) + ("   ratio" if len(names) == 2 else ""))
    for kind in args.workloads:
        for threads in args.threads:
            medians = [statistics.median(results[(n, kind, threads)]) for n in names]
            ratio = f"  {medians[0] / medians[1]:6.2f}" if len(names) == 2 and medians[1] else ""
            print(f"{kind:13} {threads:3} " + " ".join(f"{m:9.0f}" for m in medians) + ratio)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
