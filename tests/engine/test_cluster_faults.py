"""Cluster faults that need no killing: a worker without the lab installed, and a batch of calls lost on its way
home. Each ends in one line (the fix, or FAILED with no verdict), against the session's real two-worker cluster
(`two_workers` in tests/conftest.py) and the embedded DynamoDB."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import cluster
from engine.backend import Backend
from engine.errors import LabError
from engine.runner import RunConfig, RunState, run_pattern

distributed = pytest.importorskip("distributed")

# Loaded by the worker before it joins: the lab's package cannot be imported there, as on a machine without it.
WITHOUT_THE_LAB = """
import sys

class NoLab:
    def find_spec(self, name, path=None, target=None):
        if name == "engine" or name.startswith("engine."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoLab())
"""


def workers(address: str, n: int) -> None:
    with distributed.Client(address, set_as_default=False, timeout=30) as client:
        deadline = time.monotonic() + 60
        while len(client.sync(client.scheduler.ncores)) != n:
            assert time.monotonic() < deadline, f"the scheduler never had {n} workers"
            time.sleep(0.1)


@pytest.fixture
def a_worker_without_the_lab(two_workers: Any, tmp_path: Path) -> Iterator[str]:
    """A third worker of the session's cluster, on which `engine` does not import; gone again afterwards."""
    address = str(two_workers.scheduler_address)
    workers(address, 2)
    preload = tmp_path / "without_the_lab.py"
    preload.write_text(WITHOUT_THE_LAB)
    worker = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny"]
        + ["--no-dashboard", "--preload", str(preload), "--name", "without-the-lab"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        workers(address, 3)
        yield address
    finally:
        worker.terminate()
        worker.wait(30)
        workers(address, 2)  # the other tests find the cluster as it was


def test_a_worker_without_the_lab_is_named_in_one_line_with_the_fix_before_any_table(
    backend: Backend, a_worker_without_the_lab: str
) -> None:
    with pytest.raises(LabError) as e:
        cluster.check_cluster(a_worker_without_the_lab, backend)  # what the CLI and the sidebar ask first
    assert "cannot load the lab" in e.value.problem and "No module named" in e.value.problem
    assert "install the lab on every worker" in e.value.fix and "\n" not in str(e.value)
    run = run_pattern(
        RunConfig(pattern="atomic-counters", threads=6, ops_per_client=2, cluster=a_worker_without_the_lab), backend
    )
    assert run.state is RunState.FAILED and len(run.history) == 0 and run.invariants == []
    assert run.error is not None and str(run.error) == str(e.value)


def test_a_batch_lost_on_its_way_home_ends_the_run_failed_with_no_verdict(
    backend: Backend, two_workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    workers(str(two_workers.scheduler_address), 2)
    handle = cluster._Home._handle
    dropped: list[Any] = []

    def lose_share_0s_second_batch(home: Any, message: Any) -> None:
        if message[:3] == ("calls", 0, 1) and not dropped:
            dropped.append(message)  # as if the scheduler had lost it: the next batch's number shows the gap
            return
        handle(home, message)

    monkeypatch.setattr(cluster._Home, "_handle", lose_share_0s_second_batch)
    run = run_pattern(
        RunConfig(pattern="atomic-counters", threads=4, duration_s=1.0, cluster=two_workers.scheduler_address),
        backend,
    )
    assert dropped, "the run sent fewer than two batches from share 0"
    assert run.state is RunState.FAILED and run.invariants == []  # never a verdict on partial data
    assert run.error is not None and "\n" not in str(run.error)
    assert "batch 2 arrived where 1 was due" in str(run.error) and "no verdict" in str(run.error)
    assert {e["client"] for e in run.worker_errors if e["kind"] == "lost"} == {0, 2}
    assert len(run.history) > 0  # what arrived is kept
