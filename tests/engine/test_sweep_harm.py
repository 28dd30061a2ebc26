"""The sweep's harm per 1,000 ops, and `repeats` per point with the spread of each figure."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from engine.backends.backend import Backend
from engine.cli import main
from engine.errors import BadInput
from engine.patterns import all_patterns
from engine.patterns.base import Harm, Invariant
from engine.run.sweep import plan, render_sweep, spread_series, summarize, sweep
from tests.lockstep import Lockstep


def row(variant: str, threads: int, harm: float, conflicts: float, retries: float, state: str = "done") -> dict:
    return {
        "variant": variant,
        "safe": variant == "add",
        "threads": threads,
        "calls": 100,
        "ops": 50,
        "harm": "lost increments",
        "harm_count": harm / 20,
        "harm_per_1k_ops": harm,
        "conflict_rate": conflicts,
        "retries_per_success": retries,
        "calls_per_s": 200.0,
        "p95_ms": 5.0,
        "client_cpu": 0.5,
        "invariants_broken": int(harm > 0),
        "state": state,
    }


def test_each_point_gets_the_mean_and_spread_of_its_runs_and_a_failed_run_is_left_out() -> None:
    rows = pd.DataFrame(
        [
            row("read-then-put", 4, 100.0, 0.0, 0.0),
            row("read-then-put", 4, 300.0, 0.0, 0.0),
            row("read-then-put", 4, float("nan"), 0.0, 0.0, state="failed"),
            row("add", 4, 0.0, 0.2, 0.5),
            row("add", 4, 0.0, 0.4, 1.5),
        ]
    )
    points = summarize(rows).set_index("variant")
    racy, safe = points.loc["read-then-put"], points.loc["add"]
    assert (racy["runs"], racy["failed"], racy["state"]) == (3, 1, "failed")
    assert (racy["harm_per_1k_ops"], racy["harm_per_1k_ops_min"], racy["harm_per_1k_ops_max"]) == (200.0, 100.0, 300.0)
    assert racy["harm_per_1k_ops_std"] == 100.0
    assert (safe["runs"], safe["failed"], safe["state"]) == (2, 0, "done")
    assert safe["conflict_rate"] == pytest.approx(0.3) and safe["retries_per_success_max"] == 1.5
    text = render_sweep(rows, "atomic-counters")
    assert "harm = lost increments, per 1,000 ops; 3 runs per point, mean [min–max]" in text
    assert "200.0 [100.0–300.0]" in text and "30.0% [20.0%–40.0%]" in text and "1 of 3 failed" in text


def test_the_spread_in_long_form_has_one_row_per_variant_threads_and_measure() -> None:
    rows = pd.DataFrame([row("read-then-put", 4, 100.0, 0.0, 0.0), row("read-then-put", 4, 300.0, 0.0, 0.0)])
    series = spread_series(summarize(rows)).set_index("measure")
    harm = series.loc["harm_per_1k_ops"]
    assert (harm["mean"], harm["min"], harm["max"], harm["runs"]) == (200.0, 100.0, 300.0, 2)
    assert set(series.index) == {"harm_per_1k_ops", "conflict_rate", "retries_per_success"}
    assert spread_series(pd.DataFrame()).empty


def test_a_point_whose_runs_all_failed_has_no_harm_figure_rather_than_zero() -> None:
    points = summarize(pd.DataFrame([row("add", 1, float("nan"), 0.0, 0.0, state="failed")]))
    assert math.isnan(points["harm_per_1k_ops"].iloc[0]) and points["state"].iloc[0] == "failed"
    assert "–" in render_sweep(pd.DataFrame([row("add", 1, float("nan"), 0.0, 0.0, state="failed")]))


def test_the_plan_compares_the_variants_at_each_thread_count_before_the_next() -> None:
    points = [(p.threads, p.repeat, p.variant) for p in plan([1, 4], ["add", "read-then-put"], repeats=2)]
    assert points[:4] == [(1, 0, "add"), (1, 0, "read-then-put"), (1, 1, "add"), (1, 1, "read-then-put")]
    assert len(points) == 8
    with pytest.raises(BadInput, match="repeats"):
        list(plan([1], ["add"], repeats=0))


def test_every_pattern_names_its_harm_after_invariants_it_has() -> None:
    for pattern in all_patterns().values():
        assert pattern.harm.name != "invariant violations", pattern.name
        # keys, not display names: rewording an invariant must not change what the sweep counts
        assert pattern.harm.invariants and all(k and " " not in k for k in pattern.harm.invariants), pattern.name
    harm = Harm("lost updates", ("no-lost-update",))
    invariants = [
        Invariant(name="no lost update", holds=False, expected=0, observed=3, explanation="", violations=3),
        Invariant(
            name="version = 1 + successful writes", holds=False, expected=9, observed=6, explanation="", violations=3
        ),
    ]
    assert harm.count(invariants) == 3  # only the named invariant's violations, not the other symptom of them


def test_harm_per_1000_ops_is_zero_for_add_and_for_one_client_and_positive_for_racy_clients(backend: Backend) -> None:
    # Each run's first op in lockstep (its own thread count): the 8 racy clients read before any writes back.
    lockstep = Lockstep(backend, rounds=6)
    rows = sweep(lockstep, "atomic-counters", [1, 8], ops_per_client=10)
    lockstep.check()
    assert len(rows) == 4 and set(rows["state"]) == {"done"}
    assert (rows["ops"] == rows["threads"] * 10).all()
    points = summarize(rows).set_index(["variant", "threads"])
    assert points.loc[("add", 1), "harm_per_1k_ops_max"] == points.loc[("add", 8), "harm_per_1k_ops_max"] == 0
    assert points.loc[("read-then-put", 1), "harm_per_1k_ops_max"] == 0  # one client alone races nobody
    assert points.loc[("read-then-put", 8), "harm_per_1k_ops_min"] > 0


def test_the_cli_sweep_prints_harm_with_its_spread_and_json_has_the_same(backend: Backend, capsys) -> None:
    args = ["sweep", "atomic-counters", "--threads", "2", "--repeats", "2", "--ops", "3", "--variants", "add"]
    assert main([*args, "--endpoint-url", str(backend.endpoint_url)]) == 0
    out = capsys.readouterr().out
    assert "harm = lost increments, duplicate numbers and oversold tickets, per 1,000 ops; 2 runs per point" in out
    assert "harm/1k ops" in out and "conflict rate" in out and "retries/success" in out
    args = ["sweep", "atomic-counters", "--threads", "4", "--repeats", "2", "--ops", "3", "--variants", "read-then-put"]
    assert main([*args, "--json", "--endpoint-url", str(backend.endpoint_url)]) == 0
    points = json.loads(capsys.readouterr().out)
    assert [(p["variant"], p["threads"], p["runs"]) for p in points] == [("read-then-put", 4, 2)]
    for p in points:
        assert {"harm_per_1k_ops_min", "harm_per_1k_ops_max", "conflict_rate_std"} <= set(p)
        assert len(p["per_run"]) == 2 and p["harm"].startswith("lost increments")


def test_bad_sweep_arguments_are_one_line_before_any_server_starts(capsys) -> None:
    assert main(["sweep", "24", "--repeats", "0"]) == 2
    assert main(["sweep", "24", "--variants", "add,nope"]) == 2
    err = capsys.readouterr().err
    assert "has no variant 'nope'" in err
