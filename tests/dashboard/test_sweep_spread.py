"""The Sweep page's harm figure: the racy variant's harm per 1,000 ops beside the safe variant's conflict rate and
retries per success, each point the mean of its runs with a min-max band."""

from __future__ import annotations

import pandas as pd

from dashboard.figures import sweep as sweep_charts
from engine.run.sweep import summarize


def rows() -> pd.DataFrame:
    base = {"calls": 10, "ops": 10, "harm_count": 1, "calls_per_s": 100.0, "p95_ms": 2.0, "client_cpu": 0.1}
    out = []
    for threads in (1, 4):
        for repeat, harm in enumerate((10.0 * threads, 30.0 * threads)):
            out.append(
                {
                    **base,
                    "variant": "read-then-put",
                    "safe": False,
                    "threads": threads,
                    "harm": "lost increments",
                    "harm_per_1k_ops": harm,
                    "conflict_rate": 0.0,
                    "retries_per_success": 0.0,
                    "invariants_broken": 1,
                    "state": "done",
                }
            )
            out.append(
                {
                    **base,
                    "variant": "add",
                    "safe": True,
                    "threads": threads,
                    "harm": "lost increments",
                    "harm_per_1k_ops": 0.0,
                    "conflict_rate": 0.1 * (repeat + 1),
                    "retries_per_success": 0.5,
                    "invariants_broken": 0,
                    "state": "done",
                }
            )
    return pd.DataFrame(out)


def test_harm_beside_its_price_with_the_spread_of_the_runs() -> None:
    fig = sweep_charts.sweep_spread(summarize(rows()), harm="lost increments")
    assert fig.layout.meta["panels"] == ["harm_per_1k_ops", "conflict_rate", "retries_per_success"]
    titles = [a.text.replace("<br>", " ") for a in fig.layout.annotations]
    assert "racy: harm per 1,000 ops" in titles  # a panel's title is short; what the harm is, the subtitle says
    assert "racy harm: lost increments" in fig.layout.title.subtitle.text
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    bands = [t for t in fig.data if t.fill == "toself"]
    harm = next(t for t in lines if t.xaxis == "x")
    assert harm.name == "read-then-put (racy)" and list(harm.y) == [20.0, 80.0]  # the mean of 10 and 30, 40 and 120
    band = next(b for b in bands if b.xaxis == "x")
    assert list(band.y) == [30.0, 120.0, 40.0, 10.0]  # max out, min back
    conflict = next(t for t in lines if t.xaxis == "x2")
    assert conflict.name == "add (safe)" and [round(v, 2) for v in conflict.y] == [0.15, 0.15]


def test_no_results_yet_is_an_empty_figure() -> None:
    assert sweep_charts.sweep_spread(pd.DataFrame()).layout.meta["empty"]


def test_conflicts_by_cause_are_drawn_per_cause_and_simulated_runs_say_so() -> None:
    points = pd.DataFrame(
        [
            {"variant": v, "safe": v == "transact", "threads": t, "profile": "aws-like", **shares}
            for v in ("transact", "separate-writes")
            for t, shares in (
                (4, {"condition_refused_share": 0.1, "transaction_conflict_share": 0.05, "throttled_share": 0.0}),
                (16, {"condition_refused_share": 0.2, "transaction_conflict_share": 0.3, "throttled_share": 0.01}),
            )
        ]
    )
    fig = sweep_charts.sweep_shares(points)
    assert fig.layout.meta["panels"] == ["condition_refused_share", "transaction_conflict_share", "throttled_share"]
    assert fig.layout.meta["simulated"] and "SIMULATED" in fig.layout.title.text
    conflict = [t for t in fig.data if t.xaxis == "x2" and t.name.startswith("transact ")][0]
    assert list(conflict.y) == [0.05, 0.3]
    exact = sweep_charts.sweep_shares(points.assign(profile="exact"))
    assert not exact.layout.meta["simulated"] and "SIMULATED" not in exact.layout.title.text


def test_a_measure_at_zero_everywhere_is_said_not_drawn_as_a_flat_line() -> None:
    # Under the exact profile nothing throttles, no transaction conflicts, no stale read: three flat lines at 0.
    points = pd.DataFrame(
        [
            {
                "variant": v,
                "safe": v == "add",
                "threads": t,
                "profile": "exact",
                "condition_refused_share": 0.1 * t if v == "add" else 0.0,
                "transaction_conflict_share": 0.0,
                "throttled_share": 0.0,
                "stale_read_share": 0.0,
                "conflict_rate": 0.1 * t if v == "add" else 0.0,
                "retries_per_success": 0.0,
                "calls_per_s": 100.0,
                "p95_ms": 5.0,
                "harm_per_1k_ops": 0.0 if v == "add" else 50.0 * t,
                "runs": 1,
            }
            for v in ("add", "read-then-put")
            for t in (1, 2, 4)
        ]
    )
    shares = sweep_charts.sweep_shares(points)
    assert shares.layout.meta["panels"] == ["condition_refused_share"]
    said = shares.layout.title.subtitle.text.replace("<br>", " ")
    assert "none under the exact profile: transaction conflict, throttled, stale reads" in said, said
    lines = sweep_charts.sweep_lines(points)
    assert lines.layout.meta["panels"] == ["conflict_rate", "calls_per_s", "p95_ms"]
    assert "none under the exact profile: retries per success" in lines.layout.title.subtitle.text
    spread = sweep_charts.sweep_spread(points, harm="lost increments")
    assert spread.layout.meta["panels"] == ["harm_per_1k_ops", "conflict_rate"]  # harm is kept, even at zero
    quiet = sweep_charts.sweep_shares(points.assign(condition_refused_share=0.0))
    assert quiet.layout.meta["empty"]  # nothing at all: said in words, no chart of four flat lines
