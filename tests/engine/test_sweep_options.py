"""`sweep` takes the options `run` has for the shape of each run (--duration, --set, --gsi-lag-ms, --latency-ms),
under the same names and refused the same way before any server starts; `workload sweep` takes --latency-ms too."""

from __future__ import annotations

import json

import pytest

from engine.cli import main


def exit_code(argv: list[str]) -> int:
    """main's status, or argparse's (it exits on a value its type refuses)."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--set", "nope=1"], "has no option 'nope'"),
        (["--set", "tickets"], "--set 'tickets' is not NAME=VALUE"),
        (["--set", "tickets=3", "--set", "tickets=4"], "--set tickets was given twice"),
        (["--latency-ms", "20000"], "latency must be from 0 to 10000 ms"),
        (["--duration", "-1"], "duration must be above 0 s"),
        (["--latency-ms", "nan"], "is not a finite number"),
    ],
)
def test_sweep_refuses_a_bad_run_option_as_run_does(
    extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["run", "atomic-counters"], ["sweep", "atomic-counters", "--threads", "1"]):
        assert exit_code([*command, *extra]) == 2
        assert said in capsys.readouterr().err  # the same words from both commands


def test_sweep_refuses_gsi_lag_given_twice_ways() -> None:
    assert main(["sweep", "gsi-consistency", "--gsi-lag-ms", "5", "--set", "gsi_lag_ms=3"]) == 2


def test_a_sweep_with_a_duration_and_added_latency_runs_each_point_under_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["sweep", "atomic-counters", "--threads", "1", "--variants", "add", "--duration", "0.3"]
    assert main([*argv, "--latency-ms", "30", "--set", "tickets=50", "--json"]) == 0
    [point] = json.loads(capsys.readouterr().out)
    # Every call waits 30 ms more, so 0.3 s holds a few operations, not the 20 of a sweep without --duration.
    assert point["p95_ms"] >= 30 and 1 <= point["ops"] < 20


def test_workload_sweep_adds_the_latency_to_every_call(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "sweep", "workloads/ticket-sale.yaml", "--clients", "2", "--ops", "2", "--variants", "racy"]
    assert main([*argv, "--latency-ms", "25", "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["clients"] == 2 and row["ops"] == 4 and row["p99_ms"] >= 25
    assert exit_code([*argv, "--latency-ms", "-1"]) == 2
