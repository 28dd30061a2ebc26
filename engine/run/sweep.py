"""Harm, conflict rate, retries, throughput and latency against thread count, for every variant of a pattern.

A point of a sweep is one (variant, threads); with `repeats` it is run several times, and `summarize` gives each
point the mean and the spread (min, max, standard deviation) of what varies from run to run. Harm is the
pattern's own damage (`Pattern.harm`: lost updates, duplicate numbers, double charges...) counted from the
run's verified invariants, per 1,000 operations the clients completed. A run that FAILED has no verdict, so
its harm is unknown (NaN), never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.backends.backend import Backend
from engine.errors import BadInput
from engine.patterns import get_pattern
from engine.record.calls import READS
from engine.record.history import History
from engine.run.runner import Run, RunConfig, RunState, conflicts
from engine.run.summary import conflicts_by_cause
from engine.server.profile import EXACT, ProfileSpec

MAX_REPEATS = 100
# Measures that vary from run to run: a point gets their mean and spread.
SPREAD = ("harm_per_1k_ops", "conflict_rate", "retries_per_success")
# Measures a point reports as the mean of its runs.
MEAN = (
    "calls",
    "ops",
    "harm_count",
    "calls_per_s",
    "p95_ms",
    "client_cpu",
    # shares of all calls by cause, and of eventually consistent reads the lagging copy served (aws-like: SIMULATED)
    "condition_refused_share",
    "transaction_conflict_share",
    "throttled_share",
    "stale_read_share",
)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a sweep: which variant, how many threads, which repeat (0-based)."""

    variant: str
    threads: int
    repeat: int


def plan(thread_counts: Sequence[int], variants: Sequence[str], repeats: int = 1) -> Iterator[SweepPoint]:
    """The runs of a sweep in the order they are made: by thread count, then repeat, then variant, so a
    sweep stopped half-way has compared the variants at every thread count it reached."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise BadInput(f"repeats must be from 1 to {MAX_REPEATS}, got {repeats}", "use e.g. --repeats 3")
    for threads in thread_counts:
        for repeat in range(repeats):
            for variant in variants:
                yield SweepPoint(variant, threads, repeat)


def sweep(
    backend: Backend,
    pattern: str,
    thread_counts: Sequence[int],
    *,
    ops_per_client: int | None = 20,
    duration_s: float | None = None,
    options: Mapping[str, Any] | None = None,
    latency_ms: float = 0.0,
    profile: ProfileSpec = EXACT,
    repeats: int = 1,
    variants: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """One run per point of `plan`, each with the same ops, time limit, knobs and added latency; one row each (`sweep_row` and the repeat). Ends early after a run that
    FAILED (its row says so) or when `stop()` says so: a run under way is then stopped and verified, as `run`
    stops on Ctrl-C, and its row says "stopped"."""
    cls = get_pattern(pattern)
    chosen = list(variants or cls.variants)
    for name in chosen:
        if name not in cls.variants:
            raise BadInput(f"pattern {cls.name!r} has no variant {name!r}", f"use some of: {', '.join(cls.variants)}")
    points = list(plan(thread_counts, chosen, repeats))
    rows: list[dict[str, object]] = []
    for i, point in enumerate(points):
        if stop is not None and stop():
            break
        if progress:
            again = f" (repeat {point.repeat + 1} of {repeats})" if repeats > 1 else ""
            progress(f"[{i + 1}/{len(points)}] {cls.name} {point.variant} × {point.threads} threads{again}")
        run = Run(
            RunConfig(
                pattern=cls.name,
                variant=point.variant,
                threads=point.threads,
                ops_per_client=ops_per_client,
                duration_s=duration_s,
                options=dict(options or {}),
                latency_ms=latency_ms,
                profile=profile,
            ),
            backend,
        )
        if stop is None:
            run.run_to_end()
        else:
            run.start()
            while not run.wait(0.1):  # polled, so a stop asked mid-run ends this run too, verified
                if stop():
                    run.stop()
        rows.append({**sweep_row(run), "repeat": point.repeat})
        if run.state in (RunState.FAILED, RunState.STOPPED):
            break
    return pd.DataFrame(rows)


def sweep_row(run: Run) -> dict[str, Any]:
    """What one finished run contributes to a sweep."""
    counts = run.history.counts()
    frame = run.history.snapshot()
    duration = run.elapsed_s()
    calls = counts["calls"]
    causes = conflicts_by_cause(run.history, dict(run.pattern_cls.business_refusals))
    writes = frame[~frame["op"].isin(list(READS))]
    contested = writes[~business_refusals(run.config.pattern, writes, run.history)]
    refused = int((contested["outcome"] != "ok").sum())
    applied = int((writes["outcome"] == "ok").sum())
    ops = int(sum(run.shared.get("_ops_done") or ()))
    verified = run.state is not RunState.FAILED
    harm = run.pattern_cls.harm
    harm_count = harm.count(run.invariants) if verified else None
    return {
        "variant": run.options.variant,
        "safe": run.pattern_cls.variants[run.options.variant].safe,
        "threads": run.config.threads,
        "calls": calls,
        "ops": ops,  # operations the clients completed (a retried change is one op)
        # Of the writes: refused because another client got there first (not because the stock ran out), and
        # refused or unknown per applied write.
        "conflict_rate": conflicts(_error_counts(contested)) / len(writes) if len(writes) else 0.0,
        "retries_per_success": refused / applied if applied else float("nan"),
        "harm": harm.name,
        "harm_count": float("nan") if harm_count is None else harm_count,
        "harm_per_1k_ops": 1000 * harm_count / ops if harm_count is not None and ops else float("nan"),
        "calls_per_s": calls / duration if duration > 0 else 0.0,
        "p95_ms": float(frame["latency_ms"].quantile(0.95)) if calls else float("nan"),
        # Where calls/s stops growing with threads, this near 1.0 says the client process is CPU-bound.
        "client_cpu": max(run.client_cpu(), default=0.0),
        "invariants_broken": sum(1 for inv in run.invariants if inv.holds is False),
        "invariants_undecided": sum(1 for inv in run.invariants if inv.holds is None),
        # Shares of all calls, by cause; and of reads without ConsistentRead, the ones the lagging copy served
        # (SIMULATED by the aws-like profile: "profile" says which one the row ran under).
        "profile": run.config.profile.name.value,
        "profile_tag": run.config.profile.tag_value(),  # name and knobs: `json_records` gives the profile object
        **{f"{cause}_share": n / calls if calls else 0.0 for cause, n in causes.items()},
        "stale_read_share": (
            run.server_stats.get("stale_reads", 0) / run.server_stats["eventual_reads"]
            if run.server_stats.get("eventual_reads")
            else 0.0
        ),
        "state": run.state.value,
        "error": str(run.error) if run.error else None,
    }


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, threads) from the runs of a sweep (rows of `sweep_row`): `runs`, the mean of each
    measure, and for harm per 1,000 ops, conflict rate and retries per success also `_min`, `_max` and `_std`
    (0 for one run). Failed runs are counted (`failed`) and left out of the figures; a point with no verified
    run has NaN figures and state "failed"."""
    if rows.empty:
        return pd.DataFrame()
    out = []
    for (variant, threads), group in rows.groupby(["variant", "threads"], sort=False):
        good = group[group["state"] != RunState.FAILED.value]
        point: dict[str, Any] = {
            "variant": variant,
            "safe": bool(group["safe"].iloc[0]),
            "threads": int(threads),
            "runs": len(group),
            "failed": len(group) - len(good),
            "harm": str(group["harm"].iloc[0]) if "harm" in group else "",
            "profile": str(group["profile"].iloc[0]) if "profile" in group else "exact",
            "profile_tag": str(group["profile_tag"].iloc[0]) if "profile_tag" in group else "",
        }
        for name in MEAN:
            point[name] = _mean(good[name]) if name in good else float("nan")
        for name in SPREAD:
            values = good[name].dropna() if name in good else pd.Series(dtype=float)
            point[name] = _mean(values)
            point[f"{name}_min"] = float(values.min()) if len(values) else float("nan")
            point[f"{name}_max"] = float(values.max()) if len(values) else float("nan")
            point[f"{name}_std"] = float(values.std(ddof=0)) if len(values) else float("nan")
        point["invariants_broken"] = int(good["invariants_broken"].max()) if len(good) else 0
        states = set(group["state"])
        point["state"] = next((s for s in ("failed", "stopped") if s in states), "done")
        out.append(point)
    return pd.DataFrame(out)


def json_records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """The sweep as `sweep --json` prints it: one record per point (`summarize`) with its runs in `per_run`;
    `profile` on both is the object `run --json` gives (name, simulated, knobs), so a reader of the file alone
    sees which figures were SIMULATED and under which knobs."""
    points = summarize(rows)
    if points.empty:
        return []
    records: list[dict[str, Any]] = json.loads(points.to_json(orient="records"))
    for record in records:
        mine = rows[(rows["variant"] == record["variant"]) & (rows["threads"] == record["threads"])]
        record["per_run"] = [_with_profile_object(r) for r in json.loads(mine.to_json(orient="records"))]
        _with_profile_object(record)
    return records


def _with_profile_object(record: dict[str, Any]) -> dict[str, Any]:
    tag = record.pop("profile_tag", "") or str(record.get("profile") or "exact")  # rows from before the tag
    record["profile"] = ProfileSpec.from_tag(tag).as_dict()
    return record


def spread_series(points: pd.DataFrame) -> pd.DataFrame:
    """The spread figures of `summarize(rows)` in long form, one row per (variant, threads, measure), for a
    chart with a band or error bars: variant, safe, threads, runs, measure (one of SPREAD), mean, min, max, std.
    What a sweep shows: the racy variants' harm against threads beside the safe ones' conflict rate and retries
    per success; every variant has all three, so a view picks."""
    if points.empty:
        return pd.DataFrame(columns=["variant", "safe", "threads", "runs", "measure", "mean", "min", "max", "std"])
    parts = []
    for measure in SPREAD:
        part = points[["variant", "safe", "threads", "runs"]].copy()
        part["measure"] = measure
        part["mean"] = points[measure]
        for stat in ("min", "max", "std"):
            part[stat] = points[f"{measure}_{stat}"]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


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


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mean()) if len(values) else float("nan")


# -- text ------------------------------------------------------------------------------------------------------


def spread_text(mean: float, low: float, high: float, *, percent: bool = False, digits: int = 1) -> str:
    """ "12.5 [10.0–15.0]" (or "4.0%" when the runs agree, or "–" when unknown)."""

    def one(x: float) -> str:
        return f"{100 * x:.{digits}f}%" if percent else f"{x:.{digits}f}"

    if mean is None or math.isnan(mean):
        return "–"
    if math.isnan(low) or math.isnan(high) or one(low) == one(high):
        return one(mean)
    return f"{one(mean)} [{one(low)}–{one(high)}]"


def render_sweep(rows: pd.DataFrame, pattern: str | None = None) -> str:
    """The sweep as the CLI prints it: a line naming the harm, then one line per point with each figure's
    mean and, where its runs differ, [min–max]."""
    points = summarize(rows)
    if points.empty:
        return "no runs"
    repeats = int(points["runs"].max())
    name = pattern or ""
    head = (
        f"{name}{': ' if name else ''}harm = {points['harm'].iloc[0]}, per 1,000 ops; "
        + (f"{repeats} runs per point, mean [min–max]" if repeats > 1 else "one run per point")
        + "; conflict rate of the writes; retries (refused or unknown writes) per applied write"
        + (
            "; server profile aws-like: SIMULATED"
            if "profile" in points and (points["profile"] == "aws-like").any()
            else ""
        )
    )
    table = pd.DataFrame(
        {
            "variant": points["variant"],
            "safe": points["safe"].map({True: "safe", False: "RACY"}),
            "threads": points["threads"],
            "runs": points["runs"],
            "harm/1k ops": [
                spread_text(r.harm_per_1k_ops, r.harm_per_1k_ops_min, r.harm_per_1k_ops_max)
                for r in points.itertuples()
            ],
            "conflict rate": [
                spread_text(r.conflict_rate, r.conflict_rate_min, r.conflict_rate_max, percent=True)
                for r in points.itertuples()
            ],
            "retries/success": [
                spread_text(r.retries_per_success, r.retries_per_success_min, r.retries_per_success_max, digits=2)
                for r in points.itertuples()
            ],
            "calls/s": [f"{x:.0f}" if not math.isnan(x) else "–" for x in points["calls_per_s"]],
            "p95 ms": [f"{x:.1f}" if not math.isnan(x) else "–" for x in points["p95_ms"]],
            "client CPU": [f"{x:.2f}" if not math.isnan(x) else "–" for x in points["client_cpu"]],
            "broken": points["invariants_broken"],
            "state": [
                f"{f} of {n} failed" if f else s for s, f, n in zip(points["state"], points["failed"], points["runs"])
            ],
        }
    )
    return head + "\n" + table.to_string(index=False)
