"""The benchmarks still run: each section's measuring code on a tiny workload. No figure is judged here (speed
and memory targets live in `python -m bench`, never in a timed test on a shared machine); what is checked is that
the figures come out, well formed, and that each verdict says what its figure says."""

from __future__ import annotations

from bench.engine import latency_scaling
from bench.engine import overhead as engine_overhead


def test_engine_overhead_is_measured_in_pairs_of_passes() -> None:
    result = engine_overhead.measure(threads=2, ops=3, passes=2)
    assert len(result["pass_ratios"]) == 2 and result["bare_calls_per_s"] > 0 and result["engine_calls_per_s"] > 0
    ratio, cpu = engine_overhead.verdicts(result)
    assert ratio["value"] == round(result["ratio"], 3) and ratio["target"] == "≥ 0.95"
    assert result["bare_cpu_us_per_call"] > 0 and result["engine_cpu_us_per_call"] > 0 and cpu["target"] == "info"


def test_the_latency_curve_runs_against_the_stand_in_server_in_its_own_process() -> None:
    rows = latency_scaling._remote_like(10.0, 1.0, threads=(1, 4))
    assert [row["threads"] for row in rows] == [1, 4]
    assert all(row["calls_per_s"] > 0 and row["client_cpu_ms_per_call"] > 0 for row in rows)
    assert rows[1]["linear"] == 4 * rows[0]["calls_per_s"]


def test_the_cluster_quieting_bench_reports_each_figure_as_the_median_pair_with_its_range() -> None:
    from bench.cluster import quiet as cluster_quiet

    ratios = {field: [0.8, 0.9, 1.1] for field in cluster_quiet.FIELDS}
    modes = {mode: dict.fromkeys(cluster_quiet.FIELDS, 100.0) for mode in cluster_quiet.MODES}
    asked = {"quiet": {"heartbeat_worker": 1.0}, "loud": {"identity": 1.3, "heartbeat_worker": 1.0}}
    lines = cluster_quiet.report({"pairs": 3, "modes": modes, "ratios": ratios, "requests_per_s": asked})
    assert lines[0] == "plumbing_ms_per_s, quiet / loud: 0.900 [0.80–1.10 over 3 pairs]; medians 100 / 100"
    assert lines[-1].endswith("answered a second while the clients ran: identity 1.30, heartbeat_worker 1.00")


def test_the_server_ratio_pairs_each_round_so_a_drifting_load_does_not_pick_the_figure() -> None:
    from bench.server import throughput as server_profile

    # The machine was quiet in round 1 and busy in round 2 (1.2x dynalite in both); in round 3 the load rose
    # between the two servers' turns. Each server's median rate alone comes from another round: 360 / 900 = 0.4x.
    embedded = [(1200.0, 0.4), (300.0, 0.4), (360.0, 0.4)]
    dynalite = [(1000.0, 0.5), (250.0, 0.5), (900.0, 0.5)]
    results = {("embedded", "put_distinct", 4): embedded, ("dynalite", "put_distinct", 4): dynalite}
    (row,) = server_profile.paired_rows(results, ["embedded", "dynalite"], ["put_distinct"], [4])
    assert row["embedded"] == 360.0 and row["dynalite"] == 900.0  # the medians, as before
    assert row["embedded_ratios"] == [1.2, 1.2, 0.4] and row["ratio"] == 1.2
    (verdict,) = server_profile.verdicts({"servers": ["embedded", "dynalite"], "rows": [row]})
    assert verdict["pass"] and verdict["value"] == 1.2 and "range 0.40-1.20" in verdict["note"]
