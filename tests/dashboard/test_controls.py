"""The Run, Compare and Sweep controls: a value out of range is refused by the control's name, in the dashboard's
words, and Start never runs the previous value instead."""

from __future__ import annotations

import pytest

from dashboard.state.run_settings import RunSettings, build_config, in_dashboard_words
from dashboard.widgets.registry import get_registry
from engine.errors import BadInput
from tests.dashboard.test_pages import app


@pytest.mark.parametrize(
    "change, control",
    [
        ({"threads": 999}, "DDBLAB_MAX_THREADS_PER_RUN"),
        ({"threads": 0}, "Threads (clients)"),
        ({"threads": -4}, "Threads (clients)"),
        ({"latency_ms": -5.0}, "Added latency (ms)"),
        ({"latency_ms": 1e9}, "Added latency (ms)"),
        ({"processes": 99}, "Client processes"),
        ({"lost_response_share": 2.0}, "Lost-response share"),
        ({"seed": -1}, "random seed"),
        ({"max_attempts": 0}, "max attempts"),
        ({"options": {"accounts": 0}}, "accounts"),
    ],
)
def test_an_out_of_range_control_is_refused_by_its_name(change: dict, control: str) -> None:
    settings = RunSettings(pattern="optimistic-locking", ops_per_client=5, **change)
    with pytest.raises(BadInput) as e:
        build_config(settings, max_threads=256)
    message = f"{e.value.problem} — {e.value.fix}"
    assert control in message and "--" not in message, message


def test_cli_flags_become_the_controls_that_set_them() -> None:
    assert in_dashboard_words("use --threads 1 or more") == "set “Threads (clients)” to 1 or more"
    assert in_dashboard_words("use e.g. --latency-ms 10") == "set “Added latency (ms)” to e.g. 10"
    assert in_dashboard_words("use --set accounts=<int>") == "use “accounts”"


def test_start_with_threads_above_the_cap_refuses_and_runs_nothing() -> None:
    registry = get_registry()
    before = {r.id for r in registry.records()}
    at = app()
    at.number_input(key="run-atomic-counters-threads").set_value(10_000)
    at.button(key="run-start").click().run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "10000 threads is above the cap" in errors and "--" not in errors
    assert {r.id for r in registry.records()} == before  # nothing started, not even with the previous value


def test_a_sweep_with_ops_below_one_refuses_and_runs_nothing() -> None:
    registry = get_registry()
    before = {s.id for s in registry.sweeps()}
    at = app("app_pages/sweep.py")
    at.number_input(key="sweep-ops").set_value(-5)
    at.button(key="sweep-start").click().run()
    assert not at.exception
    assert any("ops per client must be at least 1, got -5" in e.value for e in at.error)
    assert {s.id for s in registry.sweeps()} == before
