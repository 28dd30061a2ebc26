"""The aws-like profile (SIMULATED contention) measured: is each behaviour what its knobs say, and what does it
cost the server?

    python -m bench.aws_like            # or python -m bench --only profile

- Transaction conflicts, checked against something real: the transactions pattern's TransactionConflict share
  (of its TransactWriteItems) at 4, 16 and 64 threads on Amazon's DynamoDB Local, on `exact` and on
  `aws-like`, side by side (info: three different servers, no target).
- Model check: n clients transacting on one item, each pausing a random (exponential) think time between
  attempts, so arrivals are close to Poisson at the measured rate λ. A commit holds the item for the window
  w; the next arrival after the hold commits. So each cycle has one commit and, on average, a = λ·w·(n−1)/n
  arrivals during the hold (the committer itself waits out its own window), all refused: the predicted
  conflict share is a / (1 + a). Target: measured within ±20 % of it. The arrival rate is kept low (about
  50/s) because the server answers requests that arrive together in one batch, and a batch of arrivals at one
  held item all conflict: at a few hundred per second on a busy 2-core machine that lifts the measured share
  above the Poisson prediction (ratios of 1.13-1.38 were seen at about 140 arrivals/s).
- Hot key: clients writing one key with the per-key ceiling lowered to 100 writes/s and no botocore retries:
  the accepted writes per second, of the ceiling (target 0.8-1.2); the same clients spread over many keys:
  throttled share (target 0).
- Server CPU per request, aws-like table / exact table, the same mixed workload (target ≤ 1.10).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from engine.backend import Backend, BackendSpec, RetryPolicy
from engine.runner import RunConfig, run_pattern
from engine.server.profile import AWS_LIKE, EXACT, ProfileSpec
from engine.summary import conflicts_by_cause
from engine.tables import TableSpec, drop_table, open_table

THREADS = (4, 16, 64)


def _transaction_conflict_share(backend: Backend, profile: ProfileSpec, threads: int) -> dict[str, Any]:
    run = run_pattern(
        RunConfig(pattern="transactions", variant="transact", threads=threads, ops_per_client=4, profile=profile),
        backend,
    )
    frame = run.history.snapshot()
    writes = int((frame["op"] == "TransactWriteItems").sum())
    causes = conflicts_by_cause(run.history, dict(run.pattern_cls.business_refusals))
    broken = [inv.name for inv in run.invariants if not inv.holds]
    return {
        "threads": threads,
        "transact_writes": writes,
        "transaction_conflicts": causes["transaction_conflict"],
        "share": round(causes["transaction_conflict"] / writes, 3) if writes else 0.0,
        "invariants_broken": broken,
        "state": run.state.value,
    }


def conflict_shares() -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    with Backend() as embedded:
        for name, profile in (("exact", EXACT), ("aws-like", AWS_LIKE)):
            rows[name] = [_transaction_conflict_share(embedded, profile, n) for n in THREADS]
    try:
        from tests import dynamodb_local

        why = dynamodb_local.missing()
        if why is None:
            proc, url = dynamodb_local.start()
            try:
                with Backend(BackendSpec.parse(url)) as local:
                    rows["dynamodb-local"] = [_transaction_conflict_share(local, EXACT, n) for n in THREADS]
            finally:
                proc.kill()
                proc.wait(10)
        else:
            rows["dynamodb-local"] = [{"note": why}]
    except Exception as e:  # a missing Java must not cost the other figures
        rows["dynamodb-local"] = [{"note": f"{type(e).__name__}: {e}"}]
    return rows


def model_check(
    seconds: float = 10.0, threads: int = 16, commit_ms: float = 20.0, think_ms: float = 300.0
) -> dict[str, Any]:
    """Clients transacting on one item: measured conflict share against a / (1 + a), a = λ·w·(n−1)/n."""
    spec = ProfileSpec.parse("aws-like", {"commit_ms": commit_ms, "latency_ms": 2, "latency_p99_ms": 6})
    with Backend() as backend:
        client = backend.client(threads=threads, retry=RetryPolicy("standard", 1))
        table = open_table(client, "bench-model", TableSpec(profile_tag=spec.tag_value()))
        counts = {"ok": 0, "conflict": 0, "other": 0}
        lock = threading.Lock()
        stop = time.monotonic() + seconds

        def worker(i: int) -> None:
            rng = random.Random(i)
            while time.monotonic() < stop:
                time.sleep(rng.expovariate(1000.0 / think_ms))
                try:
                    client.transact_write_items(
                        TransactItems=[
                            {
                                "Update": {
                                    "TableName": table.name,
                                    "Key": {"PK": "HOT", "SK": "ITEM"},
                                    "UpdateExpression": "ADD n :one",
                                    "ExpressionAttributeValues": {":one": 1},
                                }
                            }
                        ]
                    )
                    outcome = "ok"
                except ClientError as e:
                    reasons = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
                    outcome = "conflict" if "TransactionConflict" in reasons else "other"
                with lock:
                    counts[outcome] += 1

        started = time.monotonic()
        _run_threads(worker, threads, indexed=True)
        elapsed = time.monotonic() - started
        drop_table(table)
    attempts = sum(counts.values())
    arrivals = attempts / elapsed
    a = arrivals * commit_ms / 1000.0 * (threads - 1) / threads
    predicted = a / (1 + a)
    measured = counts["conflict"] / attempts if attempts else 0.0
    return {
        "threads": threads,
        "commit_ms": commit_ms,
        "attempts": attempts,
        "arrivals_per_s": round(arrivals, 1),
        "commits_per_s": round(counts["ok"] / elapsed, 1),
        "predicted_share": round(predicted, 3),
        "measured_share": round(measured, 3),
        "ratio": round(measured / predicted, 3) if predicted else None,
        "other_errors": counts["other"],
    }


def hot_key(seconds: float = 4.0, threads: int = 8, ceiling: float = 100.0) -> dict[str, Any]:
    spec = ProfileSpec.parse("aws-like", {"write_units": ceiling, "latency_ms": 1, "latency_p99_ms": 3})
    out: dict[str, Any] = {"ceiling_per_s": ceiling, "threads": threads}
    with Backend() as backend:
        client = backend.client(threads=threads, retry=RetryPolicy("standard", 1))
        table = open_table(client, "bench-hot", TableSpec(profile_tag=spec.tag_value()))
        for label, key_of in (("hot", lambda i, n: "HOT"), ("spread", lambda i, n: f"K{i}-{n}")):
            counts = {"ok": 0, "throttled": 0}
            lock = threading.Lock()
            stop = time.monotonic() + seconds

            def worker(
                i: int,
                key_of: Callable[[int, int], str] = key_of,
                stop: float = stop,
                lock: threading.Lock = lock,
                counts: dict[str, int] = counts,
            ) -> None:
                n = 0
                while time.monotonic() < stop:
                    n += 1
                    try:
                        client.put_item(TableName=table.name, Item={"PK": key_of(i, n), "SK": "S", "n": n})
                        outcome = "ok"
                    except ClientError:
                        outcome = "throttled"
                    with lock:
                        counts[outcome] += 1

            started = time.monotonic()
            _run_threads(worker, threads, indexed=True)
            elapsed = time.monotonic() - started
            total = sum(counts.values())
            out[label] = {
                "accepted_per_s": round(counts["ok"] / elapsed, 1),
                "throttled_share": round(counts["throttled"] / total, 3) if total else 0.0,
                "calls": total,
            }
        drop_table(table)
    out["hot_of_ceiling"] = round(out["hot"]["accepted_per_s"] / ceiling, 3)
    return out


def server_cpu(requests: int = 3000, threads: int = 8) -> dict[str, Any]:
    """Server CPU per request on an exact table and on an aws-like one (network time 0, so both see the same
    load; the model's bookkeeping is what is measured), alternating twice."""
    spec = ProfileSpec.parse("aws-like", {"latency_ms": 0, "latency_p99_ms": 0, "commit_ms": 0})
    per: dict[str, list[float]] = {"exact": [], "aws-like": []}
    with Backend() as backend:
        assert backend.server is not None and backend.server.pid is not None
        pid = backend.server.pid
        client = backend.client(threads=threads, retry=RetryPolicy("standard", 3))
        tables = {
            "exact": open_table(client, "bench-cpu", TableSpec()),
            "aws-like": open_table(client, "bench-cpu", TableSpec(profile_tag=spec.tag_value())),
        }
        for _ in range(2):
            for name, table in tables.items():
                counter = iter(range(requests))
                lock = threading.Lock()

                def worker(table: Any = table, counter: Any = counter, lock: threading.Lock = lock) -> None:
                    while True:
                        with lock:
                            n = next(counter, None)
                        if n is None:
                            return
                        key = {"PK": f"K{n % 50}", "SK": "S"}
                        if n % 2:
                            client.update_item(
                                TableName=table.name,
                                Key=key,
                                UpdateExpression="ADD n :one",
                                ExpressionAttributeValues={":one": 1},
                            )
                        else:
                            client.get_item(TableName=table.name, Key=key, ConsistentRead=n % 4 == 0)

                before = _cpu_s(pid)
                _run_threads(worker, threads)
                per[name].append((_cpu_s(pid) - before) / requests * 1e6)
        for table in tables.values():
            drop_table(table)
    exact, aws = min(per["exact"]), min(per["aws-like"])
    return {"exact_us": round(exact, 1), "aws_like_us": round(aws, 1), "ratio": round(aws / exact, 3)}


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_threads(target: Callable[..., None], n: int, indexed: bool = False) -> None:
    threads = [threading.Thread(target=target, args=(i,) if indexed else ()) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(quick: bool = False) -> dict[str, Any]:
    return {
        "conflict_shares": conflict_shares(),
        "model": model_check(seconds=4.0 if quick else 10.0),
        "hot_key": hot_key(seconds=2.0 if quick else 4.0),
        "server_cpu": server_cpu(requests=1500 if quick else 3000),
    }


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for server, rows in result["conflict_shares"].items():
        for row in rows:
            if "note" in row:
                out.append(
                    {"figure": f"TransactionConflict share, {server}", "value": "n/a", "target": "info", "pass": True}
                )
                continue
            out.append(
                {
                    "figure": f"TransactionConflict share of TransactWriteItems, {server}, {row['threads']} threads",
                    "value": row["share"],
                    "target": "info",
                    "pass": True,
                }
            )
    model = result["model"]
    out.append(
        {
            "figure": f"model: measured / predicted conflict share (a/(1+a) = {model['predicted_share']})",
            "value": model["ratio"],
            "target": "0.8-1.2",
            "pass": model["ratio"] is not None and 0.8 <= model["ratio"] <= 1.2,
        }
    )
    hot = result["hot_key"]
    out.append(
        {
            "figure": f"hot key: accepted writes/s of the {hot['ceiling_per_s']:g}/s ceiling",
            "value": hot["hot_of_ceiling"],
            "target": "0.8-1.2",
            "pass": 0.8 <= hot["hot_of_ceiling"] <= 1.2,
        }
    )
    out.append(
        {
            "figure": "spread keys: throttled share",
            "value": hot["spread"]["throttled_share"],
            "target": "0",
            "pass": hot["spread"]["throttled_share"] == 0,
        }
    )
    cpu = result["server_cpu"]
    out.append(
        {
            "figure": "server CPU per request, aws-like / exact",
            "value": cpu["ratio"],
            "target": "≤ 1.10",
            "pass": cpu["ratio"] <= 1.10,
        }
    )
    return out


if __name__ == "__main__":
    import json
    import sys

    data = measure(quick="--quick" in sys.argv)
    print(json.dumps(data, indent=1, default=str))
    for v in verdicts(data):
        print(f"{'PASS' if v['pass'] else 'FAIL'}  {v['figure']}: {v['value']} (target {v['target']})")
