"""Dashboard refresh cost: rebuild every chart of the Run page from a History of 10k, 100k and 1M calls.

Measured as a live run sees it: the run registry's incremental frame (new calls' details parsed once, as
they arrive), then each refresh's snapshot and charts, then the figures serialized as they go to the browser.
The history is a recorded optimistic-locking run (tests/data) repeated later and later in time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dashboard import analysis as an
from dashboard import charts
from dashboard.registry import RunRecord, Source
from engine.history import Call, History, read_jsonl

SIZES = (10_000, 100_000, 1_000_000)
RECORDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "optimistic-locking-racy.jsonl"


def scaled(n_calls: int) -> tuple[History, dict[str, Any]]:
    source, meta = read_jsonl(RECORDED)
    calls = source.calls()
    span = max(c.complete_ns for c in calls) + 1_000_000
    big = History(t0_ns=0)
    shift = 0
    while len(big) < n_calls:
        for c in calls[: n_calls - len(big)]:
            big.append(Call(client=c.client, action=c.action, op=c.op, key=c.key, invoke_ns=c.invoke_ns + shift,
                            complete_ns=c.complete_ns + shift, outcome=c.outcome, error=c.error,
                            retries=c.retries, detail=c.detail, request=c.request))
        shift += span
    return big, meta["summary"]


def refresh(record: RunRecord, invariants: list[dict[str, Any]]) -> tuple[float, int]:
    record._frames.final = None  # type: ignore[union-attr]  # a running record re-snapshots every refresh
    started = time.perf_counter()
    frame = record.frame()
    figures = [charts.timeline(frame, flagged=an.flagged_calls(invariants)), charts.outcomes_over_time(frame),
               charts.latency(frame), *charts.pattern_views(record.pattern, frame, invariants),
               charts.final_state(invariants)]
    sent = sum(len(fig.to_json()) for fig in figures)
    return time.perf_counter() - started, sent


def measure(repeats: int = 3) -> list[dict[str, Any]]:
    rows = []
    for n in SIZES:
        history, summary = scaled(n)
        record = RunRecord(id=f"bench-{n}", source=Source.IMPORTED, pattern=summary["pattern"],
                           variant=summary["variant"], threads=summary["threads"], ops_per_client=None,
                           duration_s=None, history=history, imported_summary=summary)
        record.frame()  # the details arrive once, during the run
        timings = [refresh(record, summary["invariants"]) for _ in range(repeats)]
        rows.append({"calls": n, "refresh_s": min(t for t, _ in timings), "bytes_sent": timings[0][1]})
    return rows


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_n = {r["calls"]: r for r in rows}
    at_100k, at_1m = by_n[100_000]["refresh_s"], by_n[1_000_000]["refresh_s"]
    worst_bytes = max(r["bytes_sent"] for r in rows)
    return [
        {"figure": "refresh of every chart at 100k calls (s)", "value": round(at_100k, 3), "target": "≤ 0.5",
         "pass": at_100k <= 0.5},
        {"figure": "refresh at 1M / at 100k", "value": round(at_1m / at_100k, 2), "target": "≤ 2.0",
         "pass": at_1m <= 2 * at_100k},
        {"figure": "bytes sent per refresh (max, MB)", "value": round(worst_bytes / 1e6, 2), "target": "≤ 5",
         "pass": worst_bytes <= 5e6},
    ]
