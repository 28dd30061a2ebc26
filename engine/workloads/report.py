"""What a workload run reports, from its History: per operation, the hottest keys, capacity units, the load.

An operation is the calls of one client that share its op index `o` (a read-modify-write's read, its writes and
retries). Its outcome is its last call's; its latency runs from its scheduled arrival (open loop: the arrival, not
the moment the client got round to it) to its last call's end. Refusals are counted per call, by cause:
- condition_refused: a condition another client's write made false (a version moved on, a key taken);
- transaction_conflict: a transaction collided with another one (TransactionConflict);
- throttled: the partition's throughput was used up (each refused send; the client sends it again after a
  backoff, up to 8 times, as it does a TransactionConflictException);
- business: the file's own rule said no (a guard condition, a transfer's floor, a conditional delete);
- validation: DynamoDB refused the request itself (ValidationException);
- other: anything else; unknown: calls whose answer was lost (applied or not).
Retries per success: writes sent again after a refused or unanswered write of the same operation, plus botocore's
own retries, over the operations that succeeded. Goodput: operations that succeeded, per second of the run.
Capacity: the units each call consumed (from the declared item size, as DynamoDB counts them; a throttled call
consumes none), per partition key: the mean over the run and the busiest second, against the per-partition
ceilings of 1,000 write and 3,000 read units per second. The run's general summary (conflicts, conflicts by
cause) counts every refused condition; this report keeps the business refusals apart."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from engine.record.calls import THROTTLED
from engine.record.history import History
from engine.workloads.capacity import PARTITION_RCU, PARTITION_WCU
from engine.workloads.load import LATE_MS, LATE_SHARE, SUSTAINED_SHARE
from engine.workloads.operations.layout import DETAIL_BUSINESS, DETAIL_COUNTED
from engine.workloads.schema.workload import Workload

CAUSES = ("condition_refused", "transaction_conflict", "throttled", "business", "validation", "other", "unknown")
HOT_KEYS = 5


def cause(outcome: str, error: str, detail: Mapping[str, Any]) -> str | None:
    """Why a call was refused (one of CAUSES), or None when it succeeded."""
    if outcome == "info":
        return "unknown"
    if outcome == "ok" or not error:
        return None
    business = bool(detail.get(DETAIL_BUSINESS))
    if error == "TransactionCanceledException":
        reasons = set(detail.get("reasons") or ()) - {"None"}
        if "TransactionConflict" in reasons:
            return "transaction_conflict"
        if "ThrottlingError" in reasons:
            return "throttled"
        if "ConditionalCheckFailed" in reasons:
            return "business" if business else "condition_refused"
        return "validation" if "ValidationError" in reasons else "other"
    if error == "ConditionalCheckFailedException":
        return "business" if business else "condition_refused"
    if error == "TransactionConflictException":
        return "transaction_conflict"
    if error in THROTTLED:
        return "throttled"
    if error == "ValidationException":
        return "validation"
    return "other"


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    p = np.percentile(np.asarray(values), [50, 95, 99])
    return {"p50": round(float(p[0]), 2), "p95": round(float(p[1]), 2), "p99": round(float(p[2]), 2)}


def _keys_of(key: str, detail: Mapping[str, Any]) -> Iterable[str]:
    return detail.get(DETAIL_COUNTED) or detail.get("keys") or (key,)


def report(w: Workload, history: History, duration_s: float) -> dict[str, Any]:
    frame = history.snapshot(detail=True)
    ops: dict[tuple[int, int], dict[str, Any]] = {}
    per_op: dict[str, dict[str, Any]] = {
        op.name: {"calls": 0, "refusals": dict.fromkeys(CAUSES, 0), "botocore_retries": 0} for op in w.operations
    }
    conflicts: Counter[str] = Counter()
    wcu: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    rcu: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    rows = zip(
        frame["client"].astype(int),
        frame["action"].astype(str),
        frame["key"].astype(str),
        frame["invoke_ns"].astype(int),
        frame["complete_ns"].astype(int),
        frame["outcome"].astype(str),
        frame["error"].astype(str),
        frame["retries"].astype(int),
        frame["detail"] if not frame.empty else [],
    )
    for client, action, key, invoke, complete, outcome, error, retries, detail in rows:
        if action not in per_op or "o" not in detail:
            continue
        stats = per_op[action]
        stats["calls"] += 1
        stats["botocore_retries"] += retries
        why = cause(outcome, error, detail)
        if why is not None:
            stats["refusals"][why] += 1
            if why in ("condition_refused", "transaction_conflict"):
                for k in _keys_of(key, detail):
                    conflicts[k] += 1
        one = ops.setdefault(
            (client, int(detail["o"])),
            {
                "client": client,
                "o": int(detail["o"]),
                "name": action,
                "start": invoke,
                "end": complete,
                "late": 0.0,
                "retries": 0,
                "refused_write": False,
                "last": (outcome, why),
            },
        )
        one["start"] = min(one["start"], invoke)
        one["end"] = max(one["end"], complete)
        one["late"] = max(one["late"], float(detail.get("late_ms", 0.0)))
        if "stream" in detail:
            one["stream"] = detail["stream"]
        if detail.get("step") == "write":
            # A write after a refused (or unanswered) write of the same operation is a retry of it: a version
            # conflict's read-and-write again, a transaction resent, a throttled call sent again.
            one["retries"] += one["refused_write"]
            one["refused_write"] = outcome != "ok"
        one["last"] = (outcome, why)
        if why != "throttled":  # a throttled request consumed nothing
            second = int(invoke // 1_000_000_000)
            keys = list(_keys_of(key, detail))
            for k in keys:
                partition = k.split("/")[0]
                if "wcu" in detail:
                    wcu[partition][second] += float(detail["wcu"]) / len(keys)
                if "rcu" in detail:
                    rcu[partition][second] += float(detail["rcu"]) / len(keys)
    latencies: dict[str, list[float]] = defaultdict(list)
    for one in ops.values():
        stats = per_op[one["name"]]
        stats["attempts"] = stats.get("attempts", 0) + 1
        outcome, _why = one["last"]
        stats["successes"] = stats.get("successes", 0) + (outcome == "ok")
        stats["retries"] = stats.get("retries", 0) + one["retries"]
        latencies[one["name"]].append((one["end"] - one["start"]) / 1e6 + one["late"])
    out_ops = {}
    for name, stats in per_op.items():
        successes = stats.get("successes", 0)
        retries = stats.get("retries", 0) + stats["botocore_retries"]
        out_ops[name] = {
            "attempts": stats.get("attempts", 0),
            "successes": successes,
            "calls": stats["calls"],
            "refusals": stats["refusals"],
            "retries": retries,
            "retries_per_success": round(retries / successes, 3) if successes else None,
            "goodput_per_s": round(successes / duration_s, 1) if duration_s > 0 else 0.0,
            "latency_ms": _percentiles(latencies[name]),
        }
    return {
        "name": w.name,
        "operations": out_ops,
        "warnings": [
            f"{name}: {op['refusals']['validation']} of its calls were refused as invalid (ValidationException): "
            "check its condition, values and attribute names (#word for a reserved word)"
            for name, op in out_ops.items()
            if op["refusals"]["validation"]
        ],
        "hot_keys": [{"key": k, "conflicts": n} for k, n in conflicts.most_common(HOT_KEYS)],
        "capacity": _capacity(wcu, rcu, duration_s),
        "load": _load(w, ops.values()),
    }


def _capacity(wcu: dict[str, dict[int, float]], rcu: dict[str, dict[int, float]], duration_s: float) -> dict[str, Any]:
    """Units per second of the busiest partitions: mean over the run and the busiest second of it (a second the run
    only partly covered counts at its rate), against the ceiling."""

    def top(units: dict[str, dict[int, float]], ceiling: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = [
            {
                "partition": p,
                "per_s": round(sum(c.values()) / duration_s, 1) if duration_s > 0 else 0.0,
                "peak_per_s": round(max(u / _covered(second, duration_s) for second, u in c.items()), 1),
                "ceiling_per_s": ceiling,
            }
            for p, c in units.items()
        ]
        return sorted(rows, key=lambda r: -float(r["peak_per_s"]))[:HOT_KEYS]

    total_w = sum(sum(c.values()) for c in wcu.values())
    total_r = sum(sum(c.values()) for c in rcu.values())
    return {
        "write_units_per_s": round(total_w / duration_s, 1) if duration_s > 0 else 0.0,
        "read_units_per_s": round(total_r / duration_s, 1) if duration_s > 0 else 0.0,
        "write_partitions": top(wcu, PARTITION_WCU),
        "read_partitions": top(rcu, PARTITION_RCU),
    }


def _covered(second: int, duration_s: float) -> float:
    """How much of this second of the run the run lasted (a run of 0.4 s has 0.4 s in its first second)."""
    return max(0.001, min(1.0, duration_s - second)) if duration_s > 0 else 1.0


def _load(w: Workload, ops: Iterable[dict[str, Any]]) -> dict[str, Any]:
    load: dict[str, Any] = {"mode": w.load.mode, "clients": w.load.clients}
    if w.load.mode == "closed":
        load["think_ms"] = w.load.think_ms
        return load
    starts: dict[str, list[float]] = defaultdict(list)
    late = 0
    count = 0
    for one in ops:
        starts[str(one.get("stream") or one["client"])].append(one["start"] / 1e9)
        late += one["late"] > LATE_MS
        count += 1
    # Each schedule's rate over its own span (from the run's start to its last arrival), summed: a run of several
    # schedules ends with its slowest, whose Poisson schedule ran long by chance, and dividing all arrivals by that
    # end would read low. (n - 1) / T: T, the sum of n exponential gaps, makes n / T read high by n / (n - 1).
    achieved = sum((len(s) - 1) / max(s) for s in starts.values() if len(s) > 1 and max(s) > 0)
    target = float(w.load.rate or 0.0)
    sustained = count > 0 and achieved >= SUSTAINED_SHARE * target and late <= LATE_SHARE * count
    load.update(
        {
            "target_per_s": target,
            "achieved_per_s": round(achieved, 1),
            "arrivals": count,
            "late": late,
            "late_after_ms": LATE_MS,
            "sustained": sustained,
        }
    )
    return load


def load_line(load: Mapping[str, Any]) -> str | None:
    """The one line an open-loop run ends with: sustained, or not and by how much."""
    if load.get("mode") != "open":
        return None
    target, achieved, late, n = load["target_per_s"], load["achieved_per_s"], load["late"], load["arrivals"]
    if load["sustained"]:
        return f"open loop: target {target:g}/s, achieved {achieved:g}/s, {late:,} of {n:,} arrivals late: sustained"
    return (
        f"open loop: the rate of {target:g}/s could not be sustained: achieved {achieved:g}/s, {late:,} of {n:,} "
        f"arrivals sent more than {load['late_after_ms']:g} ms late (more clients, or a lower rate)"
    )
