"""The sidebar's Cluster setting: checked when set, used by Run, Compare and Sweep, refused for patterns whose clients
meet in memory. Against a real two-worker Dask LocalCluster (`two_workers` in tests/conftest.py) and
the embedded DynamoDB, as a user would click it (AppTest), and through the registry for the pair and the sweep."""

from __future__ import annotations

import time
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets.registry import Registry, SweepState
from engine.backends.backend import Backend, BackendSpec
from engine.clients.cluster import check as cluster_check
from engine.errors import BadInput, LabError
from engine.run.runner import RunConfig, RunState
from tests.cluster.test_cluster_addresses import SSH_BANNER, garbage, nothing, silent
from tests.dashboard.test_pages import app, text, until

SPEC = BackendSpec()


def both_workers(local: Any) -> str:
    """The cluster's address once both its workers are up (an engine test kills one; its nanny brings it back)."""
    import distributed

    with distributed.Client(local.scheduler_address, set_as_default=False, timeout=30) as client:
        client.wait_for_workers(2, timeout=60)
    return str(local.scheduler_address)


def use_cluster(at: AppTest, address: str) -> AppTest:
    at.sidebar.text_input(key="cluster_input").set_value(address).run()
    at.sidebar.button(key="cluster_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_unreachable_or_malformed_cluster_address_is_one_line_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_check, "CONNECT_TIMEOUT_S", 1.0)
    at = use_cluster(app(), "127.0.0.1:1")
    errors = [e.value for e in at.sidebar.error]
    assert any("cannot reach the Dask scheduler at tcp://127.0.0.1:1" in e and "dask scheduler" in e for e in errors)
    assert not any("--cluster" in e for e in errors)  # the page's words: the fix names the sidebar's setting
    use_cluster(at, "scheduler")
    assert any("is not a scheduler address like tcp://127.0.0.1:8786" in e.value for e in at.sidebar.error)
    assert not any("Cluster" in s.value for s in at.sidebar.success)  # nothing set: runs stay in this process
    assert not at.number_input(key="run-atomic-counters-processes").disabled


def test_an_address_where_no_dask_scheduler_answers_is_one_line_with_the_fix_in_time() -> None:
    # A socket that accepts and never answers used to keep the setting's spinner up for good; a peer that answers
    # garbage, tls:// without TLS settings and a malformed IPv6 address raised "This app has encountered an error".
    at = app()
    with silent() as quiet, garbage(SSH_BANNER)() as chatty, nothing() as (host, port):
        cases = [
            (f"tls://{host}:{port}", "needs Dask's TLS settings", "distributed.comm.tls.ca-file"),
            ("tcp://[::1", "its IPv6 host's bracket is not closed", "e.g. tcp://scheduler:8786"),
            (quiet.address, f"something listens at {quiet.address}, but no Dask scheduler", "Run here"),
            (chatty.address, f"something listens at {chatty.address}, but no Dask scheduler", "Run here"),
        ]
        for address, problem, fix in cases:
            started = time.monotonic()
            use_cluster(at, address)
            errors = [e.value for e in at.sidebar.error]
            assert len(errors) == 1 and problem in errors[0] and fix in errors[0], errors
            assert "--cluster" not in errors[0] and time.monotonic() - started < 15
            assert not any("Cluster" in s.value for s in at.sidebar.success)


def test_a_run_started_with_a_cluster_set_runs_on_its_workers_and_says_so(two_workers: Any) -> None:
    address = both_workers(two_workers)
    at = use_cluster(app(), address)
    assert any(f"**Cluster** {address}" in s.value and "2 workers" in s.value for s in at.sidebar.success), [
        e.value for e in at.sidebar.error
    ]
    assert at.number_input(key="run-atomic-counters-processes").disabled  # off while a cluster is set, and says so
    assert any("Off while a cluster is set" in c.value for c in at.caption)
    at.number_input(key="run-atomic-counters-threads").set_value(4)
    at.number_input(key="run-atomic-counters-ops").set_value(3)
    at.button(key="run-start").click().run()
    assert not at.error, [e.value for e in at.error]
    until(at, lambda a: "DONE" in text(a) or "FAILED" in text(a))
    assert "DONE" in text(at) and ":green-badge[PASS]" in text(at)
    assert any(f"on cluster {address}, 2 workers" in c.value for c in at.caption)

    # A pattern whose clients meet in memory says why before Start, and Start is refused with that reason.
    at.selectbox(key="run-pattern").set_value("idempotency-keys").run()
    assert any("cannot be spread over the cluster" in w.value for w in at.warning)
    at.button(key="run-start").click().run()
    refused = [e.value for e in at.error]
    assert any("meet in memory" in e and "cannot be spread" in e and "Run here" in e for e in refused), refused

    at.sidebar.button(key="cluster_clear").click().run()  # back to this process
    assert not any("Cluster" in s.value for s in at.sidebar.success)
    assert not any("cannot be spread" in w.value for w in at.warning)


@pytest.fixture
def registry(backend: Backend) -> Registry:
    return Registry(max_threads_per_run=16, max_total_threads=16, backend_factory=lambda spec: backend)


def wait(records: Any, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while any(r.running for r in records):
        assert time.monotonic() < deadline, "run did not finish"
        time.sleep(0.05)


def test_a_compare_pair_and_a_sweep_run_on_the_cluster(registry: Registry, two_workers: Any) -> None:
    address = both_workers(two_workers)
    config = RunConfig(pattern="atomic-counters", threads=4, ops_per_client=3, cluster=address)
    pair = registry.start_pair(config, SPEC)
    wait(pair)
    for record in pair:
        assert record.run is not None and record.run.state is RunState.DONE, record.run and record.run.error
        assert record.run.config.cluster == address and len(record.run.client_cpu()) == 2
        assert f"on cluster {address}, 2 workers" in record.backend_label
    job = registry.start_sweep("atomic-counters", [1], 1, SPEC, cluster=address)
    deadline = time.monotonic() + 90
    while job.running:
        assert time.monotonic() < deadline, "sweep did not finish"
        time.sleep(0.1)
    assert job.state is SweepState.DONE, job.error
    assert len(job.rows) == 2 and job.current_run is not None and job.current_run.config.cluster == address


def test_the_pair_and_the_sweep_refuse_a_pattern_that_cannot_be_spread_and_an_unreachable_cluster(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BadInput) as e:
        registry.start_sweep("distributed-locking", [2], 2, SPEC, cluster="tcp://127.0.0.1:1")
    assert "cannot be spread" in e.value.problem and "Run here" in e.value.fix and "--cluster" not in e.value.fix
    monkeypatch.setattr(cluster_check, "CONNECT_TIMEOUT_S", 1.0)
    config = RunConfig(pattern="atomic-counters", threads=2, ops_per_client=1, cluster="tcp://127.0.0.1:1")
    with pytest.raises(LabError) as e2:
        registry.start_pair(config, SPEC)
    assert "cannot reach the Dask scheduler" in e2.value.problem and "Run here" in e2.value.fix
    assert registry.records() == [] and registry.sweeps() == []  # refused before anything started
