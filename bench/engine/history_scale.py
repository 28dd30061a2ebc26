"""History scale: bytes per recorded call, DataFrame snapshot time, and append cost at 10k, 100k and 1M calls.

The calls are shaped like a real optimistic-locking run (distinct request texts, a six-field detail), built
before timing so only the History's own work is measured. Memory is the growth of the process's heap
(tracemalloc would slow appends a hundredfold, so it measures memory in a separate pass).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from typing import Any

from engine.record.calllog import format_request
from engine.record.history import Call, History, Outcome

SIZES = (10_000, 100_000, 1_000_000)
_POOL = 50_000  # distinct pre-built calls, cycled


def _calls(n: int) -> list[Call]:
    calls = []
    for i in range(n):
        params = {
            "TableName": "ddblab-optimistic-locking-1a2b3c",
            "Item": {"PK": f"ACCOUNT#a{i % 4 + 1}", "SK": "META", "balance": 1000 + i, "version": i + 2},
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": i + 1},
        }
        failed = i % 3 == 0
        calls.append(
            Call(
                client=i % 64,
                action="deposit",
                op="PutItem",
                key=f"ACCOUNT#a{i % 4 + 1}",
                invoke_ns=i * 1000,
                complete_ns=i * 1000 + 900,
                outcome=Outcome.FAIL if failed else Outcome.OK,
                error="ConditionalCheckFailedException" if failed else None,
                detail={
                    "amount": 17,
                    "read_version": i + 1,
                    "version": i + 2,
                    "balance": 1000 + i,
                    "attempt": 1,
                    "op": i // 64,
                },
                request=format_request("PutItem", params),
            )
        )
    return calls


def _fill(history: History, calls: list[Call], n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        history.append(calls[i % len(calls)])
    return time.perf_counter() - started


def measure() -> list[dict[str, Any]]:
    calls = _calls(_POOL)
    rows = []
    for n in SIZES:
        gc.collect()
        history = History()
        append_s = _fill(history, calls, n)
        started = time.perf_counter()
        frame = history.snapshot()
        snapshot_s = time.perf_counter() - started
        assert len(frame) == n
        del history, frame
        gc.collect()
        tracemalloc.start()
        history = History()
        _fill(history, calls, n)
        used, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del history
        rows.append(
            {"calls": n, "bytes_per_call": used / n, "append_us_per_call": append_s / n * 1e6, "snapshot_s": snapshot_s}
        )
    return rows


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_n = {r["calls"]: r for r in rows}
    worst_bytes = max(r["bytes_per_call"] for r in rows)
    growth = by_n[SIZES[-1]]["append_us_per_call"] / by_n[SIZES[0]]["append_us_per_call"]
    return [
        {
            "figure": "history bytes per call (max over sizes)",
            "value": round(worst_bytes, 1),
            "target": "≤ 200",
            "pass": worst_bytes <= 200,
        },
        {
            "figure": "snapshot of 1M calls (s)",
            "value": round(by_n[SIZES[-1]]["snapshot_s"], 3),
            "target": "≤ 1.0",
            "pass": by_n[SIZES[-1]]["snapshot_s"] <= 1.0,
        },
        {"figure": "append cost 1M / 10k", "value": round(growth, 2), "target": "≤ 1.2", "pass": growth <= 1.2},
    ]
