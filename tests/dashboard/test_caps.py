"""Every admission path is counted against the dashboard's caps for as long as it holds threads: runs, Compare
pairs, sweeps (their largest run, from admission to end), and imports (their calls in memory)."""

from __future__ import annotations

import json
import time

import pytest

from dashboard.widgets.registry import Registry, env_int
from engine.backends.backend import Backend, BackendSpec
from engine.errors import BadInput
from engine.run.runner import RunConfig
from tests.dashboard.helpers import DATA


def test_sweeps_and_runs_started_together_never_pass_the_thread_cap(backend: Backend) -> None:
    registry = Registry(max_total_threads=12, backend_factory=lambda spec: backend)
    spec = BackendSpec()
    sweep = registry.start_sweep("atomic-counters", [1, 8], 20, spec)  # holds 8 until it ends, from now on
    # It only holds 4 threads while the sweep runs: a latency keeps it from taking the sweep's CPU.
    run = registry.start(RunConfig(pattern="atomic-counters", threads=4, duration_s=600, latency_ms=50), spec)
    try:
        assert registry.threads_in_use() == 12
        with pytest.raises(BadInput, match="limit of 12"):
            registry.start(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1), spec)
        with pytest.raises(BadInput, match="limit of 12"):
            registry.start_sweep("atomic-counters", [1], 1, spec)
        with pytest.raises(BadInput, match="limit of 12"):
            registry.start_pair(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1), spec)
        deadline = time.monotonic() + 120
        while sweep.running and time.monotonic() < deadline:  # what really runs stays within the cap
            current = sweep.current_run
            sweeping = current.config.threads if current is not None and not current.finished else 0
            assert sum(r.threads for r in registry.records() if r.running) + sweeping <= 12
            time.sleep(0.05)
        assert sweep.state.value == "done", sweep.error
        assert registry.threads_in_use() == 4  # the sweep's 8 are free once it has ended
        registry.start(RunConfig(pattern="atomic-counters", threads=8, ops_per_client=1), spec)
    finally:
        sweep.stop()
        assert run.run is not None
        run.run.stop()
        run.run.wait(30)


def test_imports_count_against_a_cap_on_calls_kept_in_memory(backend: Backend) -> None:
    registry = Registry(max_imported_calls=1_000, backend_factory=lambda spec: backend)
    data = (DATA / "atomic-counters-racy.jsonl").read_bytes()  # 960 calls
    first = registry.import_history("a.jsonl", data)
    with pytest.raises(BadInput) as e:
        registry.import_history("b.jsonl", data)
    assert "limit of 1,000 imported calls" in e.value.problem and "DDBLAB_MAX_IMPORTED_CALLS" in e.value.fix
    registry.remove(first.id)
    registry.import_history("b.jsonl", data)  # room again once one is deleted
    assert json.loads(data.splitlines()[0])["format"] == "ddblab-history"


@pytest.mark.parametrize("raw", ["lots", "-1", "0", "1e3", "99999999999999"])
def test_a_bad_cap_setting_is_one_line_naming_the_variable(monkeypatch, raw: str) -> None:
    monkeypatch.setenv("DDBLAB_MAX_RUNS", raw)
    with pytest.raises(BadInput) as e:
        env_int("DDBLAB_MAX_RUNS", 40, 1, 10_000)
    assert "DDBLAB_MAX_RUNS" in e.value.problem and "default (40)" in e.value.fix
