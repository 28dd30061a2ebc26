"""A workload at several client counts (closed loop) or target rates (open loop), in both its forms: the plan, each
run's row and the table. `python -m engine workload sweep` and the dashboard's "Your workload" page run the same
code: they differ only in how a run is made (the CLI's backend, the dashboard's registry with its caps and budgets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.digits import ONLY, foreign_digits
from engine.errors import BadInput, LabError
from engine.record.history import csv_labels
from engine.run.runner import Run, RunState
from engine.server.profile import EXACT
from engine.workloads.pattern import AS_WRITTEN, RACY
from engine.workloads.report import CAUSES, load_line, report
from engine.workloads.schema.parsing import parse_data
from engine.workloads.schema.workload import Workload

AXES: dict[str, type] = {"clients": int, "rate": float}  # what a sweep varies, and the type of its values
MAX_POINTS = 12  # values of one sweep: each is a run per form, one after another


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a workload sweep: the axis value, the form, and the workload with that value in its load."""

    value: float
    variant: str
    workload: Workload


def sweep_values(text: str, axis: str, name: str) -> list[Any]:
    """ "1,4,16" as sorted values of the axis ("clients": whole numbers, "rate": numbers); BadInput naming `name`
    (the flag or the control) for anything else. Their ranges are the schema's, checked by `plan`."""
    kind = AXES[axis]
    like = f"e.g. {name} {'1,4,16,64' if kind is int else '100,500,2000'}"
    if foreign_digits(text):
        raise BadInput(f"{name} {text[:60]!r} has digits other than 0-9", ONLY)
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts:
        raise BadInput(f"{name} is empty: a sweep needs at least one value", like)
    try:
        values = sorted({kind(t) for t in parts})
    except ValueError:
        raise BadInput(f"{name} {text[:60]!r} is not a comma-separated list of numbers", like) from None
    if len(values) != len(parts):  # "4,4" would run one point without a word
        raise BadInput(f"{name} {text[:60]!r} names a value twice", f"name each value once, {like}")
    if len(values) > MAX_POINTS:
        raise BadInput(f"{name} names {len(values)} values: a sweep takes at most {MAX_POINTS}", like)
    return values


def with_load(w: Workload, **changes: Any) -> Workload:
    """The workload with load fields replaced, checked again (a value past a cap is refused like the file's, naming
    its field: load.clients, load.rate); a rate makes the loop open."""
    data = w.model_dump(mode="json")
    data["load"].update({k: v for k, v in changes.items() if v is not None})
    if changes.get("rate") is not None:
        data["load"]["mode"] = "open"
    return parse_data(data, "the workload with the sweep's load")


def plan(
    base: Workload,
    axis: str,
    values: Sequence[Any],
    variants: Sequence[str] = (AS_WRITTEN, RACY),
    **load: Any,
) -> list[SweepPoint]:
    """Every run of the sweep, by value then form, each checked now (before any server starts): a value past the
    schema's caps is refused as WorkloadInvalid naming load.clients or load.rate. `load` replaces more load fields
    for every run (ops, duration_s)."""
    if axis not in AXES:
        raise BadInput(f"a workload sweep varies {axis!r}", f"sweep over {' or '.join(AXES)}")
    for v in variants:
        if v not in (AS_WRITTEN, RACY):
            raise BadInput(f"a workload has no form {v!r}", f"use {AS_WRITTEN} and/or {RACY}")
    points: list[SweepPoint] = []
    for value in values:
        w = with_load(base, **load, **{axis: value})
        points.extend(SweepPoint(value, v, w) for v in variants)
    return points


def run_points(
    points: Sequence[SweepPoint],
    axis: str,
    new_run: Callable[[SweepPoint], Run],
    *,
    on_row: Callable[[dict[str, Any]], None],
    stop: Callable[[], bool] = lambda: False,
    on_start: Callable[[SweepPoint, Run], None] | None = None,
) -> None:
    """Each point's run to its end, one after another; `on_row` gets each finished run's row. A run that FAILED
    ends the sweep with its error (LabError, naming the point); a stop ends it after the run under way (stopped
    and verified, its row says so)."""
    from engine.run.summary import summary

    for point in points:
        if stop():
            return
        run = new_run(point)
        if on_start is not None:
            on_start(point, run)
        run.start()
        while not run.wait(0.1):  # polled, so a stop asked mid-run ends this run too, verified
            if stop():
                run.stop()
        if run.state is RunState.FAILED:
            raise LabError(
                f"the run at {axis} {point.value:g} ({point.variant}) failed: {run.error}", "fix it, then sweep again"
            )
        data = summary(run)
        data["workload"] = report(point.workload, run.history, run.elapsed_s())
        on_row(sweep_row(axis, point.value, point.variant, data))


def sweep_row(axis: str, value: Any, variant: str, data: dict[str, Any]) -> dict[str, Any]:
    """What one finished run contributes to a workload sweep: totals over its operations."""
    wl = data["workload"]
    ops = wl["operations"].values()
    refusals = {c: sum(op["refusals"][c] for op in ops) for c in CAUSES}
    attempts = sum(op["attempts"] for op in ops)
    p99 = max((op["latency_ms"]["p99"] or 0.0 for op in ops), default=0.0)
    return {
        axis: value,
        "variant": variant,
        "ops": attempts,
        "goodput_per_s": round(sum(op["goodput_per_s"] for op in ops), 1),
        "refusals": refusals,
        # Of the operations, the share each cause refused: what the dashboard's lines draw.
        "refused_share": {c: (n / attempts if attempts else 0.0) for c, n in refusals.items()},
        "retries_per_success": round(sum(op["retries"] for op in ops) / max(1, sum(op["successes"] for op in ops)), 3),
        "p99_ms": p99,
        "violations": sum(inv["violations"] for inv in data["invariants"]),
        "failed_invariants": [inv["key"] for inv in data["invariants"] if inv["holds"] is False],
        "state": data.get("state", "done"),
        "load": wl["load"],
        # The server profile the run ran under (`run --json`'s object) and its label: an aws-like row's figures
        # came from the model, and a row read alone (a CSV, a --json line) says SIMULATED.
        "profile": data.get("profile") or EXACT.as_dict(),
        "server_profile": csv_labels(data).get("server_profile", EXACT.name.value),
    }


def sweep_table(axis: str, rows: Sequence[dict[str, Any]]) -> str:
    """The sweep as the CLI prints it; a line first for each aws-like profile its runs ran under (SIMULATED)."""
    simulated = dict.fromkeys(r["server_profile"] for r in rows if (r.get("profile") or {}).get("simulated"))
    out = [f"server profile {label}: conflicts, throughput and latencies come from the model" for label in simulated]
    out += [
        f"{axis:>8} {'variant':<11} {'ops':>6} {'ok/s':>8} {'cond':>6} {'txconf':>6} {'throt':>6} {'busin':>6} "
        f"{'retry/ok':>8} {'p99 ms':>8} {'violations':>10}"
    ]
    for r in rows:
        ref = r["refusals"]
        out.append(
            f"{r[axis]:>8g} {r['variant']:<11} {r['ops']:>6} {r['goodput_per_s']:>8.1f} {ref['condition_refused']:>6} "
            f"{ref['transaction_conflict']:>6} {ref['throttled']:>6} {ref['business']:>6} "
            f"{r['retries_per_success']:>8.2f} {r['p99_ms']:>8.1f} {r['violations']:>10}"
        )
        line = load_line(r["load"])
        if line and not r["load"]["sustained"]:
            out.append(f"         {line}")
    return "\n".join(out)
