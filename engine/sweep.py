"""Conflict rate, retries, throughput and latency against thread count, for both variants of a pattern."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from engine.backend import Backend
from engine.calls import READS
from engine.history import History
from engine.patterns import get_pattern
from engine.runner import Run, RunConfig, conflicts


def sweep(
    backend: Backend,
    pattern: str,
    thread_counts: Sequence[int],
    *,
    ops_per_client: int = 20,
    variants: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """One run per (variant, threads); one row each."""
    cls = get_pattern(pattern)
    rows: list[dict[str, object]] = []
    for threads in thread_counts:
        for variant in variants or list(cls.variants):
            if stop is not None and stop():
                return pd.DataFrame(rows)
            if progress:
                progress(f"{cls.name} {variant} × {threads} threads")
            run = Run(
                RunConfig(pattern=cls.name, variant=variant, threads=threads, ops_per_client=ops_per_client), backend
            ).run_to_end()
            rows.append(sweep_row(run))
    return pd.DataFrame(rows)


def sweep_row(run: Run) -> dict[str, object]:
    counts = run.history.counts()
    frame = run.history.snapshot()
    duration = run.elapsed_s()
    calls = counts["calls"]
    writes = frame[~frame["op"].isin(list(READS))]
    contested = writes[~business_refusals(run.config.pattern, writes, run.history)]
    refused = int((contested["outcome"] != "ok").sum())
    applied = int((writes["outcome"] == "ok").sum())
    return {
        "variant": run.config.variant,
        "safe": run.pattern_cls.variants[str(run.config.variant)].safe,
        "threads": run.config.threads,
        "calls": calls,
        # Of the writes: refused because another client got there first (not because the stock ran out), and
        # refused or unknown per applied write.
        "conflict_rate": conflicts(_error_counts(contested)) / len(writes) if len(writes) else 0.0,
        "retries_per_success": refused / applied if applied else float("nan"),
        "calls_per_s": calls / duration if duration > 0 else 0.0,
        "p95_ms": float(frame["latency_ms"].quantile(0.95)) if calls else float("nan"),
        # Where calls/s stops growing with threads, this near 1.0 says the client process is CPU-bound.
        "client_cpu": max(run.client_cpu(), default=0.0),
        "invariants_broken": sum(1 for inv in run.invariants if inv.holds is False),
        "invariants_undecided": sum(1 for inv in run.invariants if inv.holds is None),
        "state": run.state.value,
    }


def business_refusals(pattern: str, calls: pd.DataFrame, history: History) -> pd.Series:
    """Which of `calls` (rows of history.snapshot()) the business rule refused: outcomes, not conflicts.

    A cancellation that names TransactionConflict collided with another transaction, whatever its action,
    so it stays a conflict even where an out-of-stock cancellation would not be.
    """
    rules = get_pattern(pattern).business_refusals
    declared = calls["action"].astype(str).map(rules).eq(calls["error"].astype(str))
    if not declared.any():
        return declared
    details = history.details(int(seq) for seq in calls.loc[declared, "seq"])
    collided = ["TransactionConflict" in d.get("reasons", ()) for d in details]
    refusals = declared.copy()
    refusals[declared] = [not c for c in collided]
    return refusals


def _error_counts(calls: pd.DataFrame) -> dict[str, int]:
    return {str(code): int(n) for code, n in calls["error"].astype(str).value_counts().items() if code}


def render_sweep(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda x: f"{x:.3f}")
