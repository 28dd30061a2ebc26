"""A run's clients on a Dask cluster's workers: one run, one History, the same invariants; a lost worker, a lost
batch or a worker without the lab fails it in one line.

The cluster is a real two-worker LocalCluster on 127.0.0.1 (worker processes, no dashboard; `two_workers` in
tests/conftest.py, one for this module); the workers call the session's embedded DynamoDB over HTTP like any client.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.backends.backend import Backend, BackendKind, BackendSpec
from engine.cli import build_parser, config_from_args
from engine.clients.cluster import check as cluster_check
from engine.clients.cluster import home as cluster
from engine.clients.cluster import share as cluster_share
from engine.clients.cluster.home import WorkerInfo, check_reach, normalize_address
from engine.errors import BadInput, LabError
from engine.run.runner import Run, RunConfig, RunState, run_pattern

distributed = pytest.importorskip("distributed")


def worker_pids(address: str) -> dict[str, int]:
    with distributed.Client(address, set_as_default=False, timeout=30) as client:
        client.wait_for_workers(2, timeout=60)  # a worker killed by an earlier test comes back under its nanny
        return client.run(os.getpid)


def wait_for_calls(run: Run, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while run.progress()["calls"] < n and not run.finished and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.progress()["state"] == "running", run.error


def test_version_checks_on_two_workers_hold_and_record_one_history_shaped_like_a_thread_run(
    backend: Backend, two_workers: Any
) -> None:
    config = RunConfig(pattern="optimistic-locking", variant="version-check", threads=8, ops_per_client=4, seed=7)
    spread = run_pattern(dataclasses.replace(config, cluster=two_workers.scheduler_address), backend)
    assert spread.state is RunState.DONE, spread.error
    assert spread.invariants and all(inv.holds for inv in spread.invariants), [
        i.as_dict() for i in spread.invariants if not i.holds
    ]
    here = run_pattern(config, backend)
    a, b = spread.history.snapshot(detail=True, requests=True), here.history.snapshot(detail=True, requests=True)
    assert list(a.columns) == list(b.columns) and a.dtypes.astype(str).tolist() == b.dtypes.astype(str).tolist()
    assert set(a["action"].unique()) == set(b["action"].unique()) and a["request"].str.len().min() > 0
    assert [inv.name for inv in spread.invariants] == [inv.name for inv in here.invariants]
    assert sorted(a["client"].unique()) == list(range(8))
    # Every call once: no (client, invoke) pair twice, and every client finished its four ops.
    assert not a.duplicated(["client", "invoke_ns"]).any()
    assert spread.progress()["fraction"] == 1.0
    # Whether the two workers' clients meet a newer version is left to their scheduling (no forced schedule reaches
    # a worker): what holds either way is that any refused save is a version check's.
    assert set(a.loc[a["outcome"] == "fail", "error"]) <= {"ConditionalCheckFailedException"}
    assert len(spread.client_cpu()) == 2  # one figure per worker share
    # One clock: calls sit inside the run's window, as a thread run's do.
    assert spread.t_start_ns is not None and spread.t_end_ns is not None
    assert a["invoke_ns"].min() >= 0 and a["complete_ns"].max() <= spread.t_end_ns - spread.t_start_ns


def test_a_racy_read_then_put_on_two_workers_is_judged_on_both_workers_calls(
    backend: Backend, two_workers: Any
) -> None:
    run = run_pattern(
        RunConfig(
            pattern="atomic-counters",
            variant="read-then-put",
            threads=8,
            ops_per_client=10,
            cluster=two_workers.scheduler_address,
        ),
        backend,
    )
    assert run.state is RunState.DONE, run.error
    count = next(inv for inv in run.invariants if inv.name == "final count = acknowledged increments")
    # Whether clients on two workers lose an increment is left to their scheduling (no forced schedule reaches a
    # worker): what holds either way is that the verdict counts all 80 increments and fails exactly on a loss.
    assert count.expected == 80 and 1 <= count.observed <= 80
    assert count.holds is (count.observed == 80) and count.violations == 80 - count.observed


# A stop ends a cluster run in seconds, not at its 600 s duration: each worker looks for it every 0.25 s (SHIP_S)
# and its clients end at their next call, 2 s on an idle machine (docs/scaling.md). The bound is generous: two
# worker processes and this one share a loaded machine's cores.
STOP_BOUND_S = 10.0


def test_stop_reaches_every_worker_within_seconds_and_their_diagnostics_and_heartbeat_resume(
    backend: Backend, two_workers: Any
) -> None:
    address = two_workers.scheduler_address
    worker_pids(address)
    with distributed.Client(address, set_as_default=False, timeout=30) as client:
        assert all(all(v.values()) for v in client.run(_diagnostics_running).values())  # Dask's defaults
        run = Run(RunConfig(pattern="optimistic-locking", threads=8, duration_s=600, cluster=address), backend).start()
        wait_for_calls(run, 50)
        during = client.run(_diagnostics_running)  # paused while the workers run their shares
        asked = time.monotonic()
        run.stop()
        assert run.wait(30)
        assert run.t_end_ns is not None and run.t_end_ns / 1e9 - asked < STOP_BOUND_S
        assert run.state is RunState.STOPPED, run.error
        assert all(inv.holds for inv in run.invariants)
        deadline = time.monotonic() + 10
        while not all(all(v.values()) for v in client.run(_diagnostics_running).values()):
            assert time.monotonic() < deadline, "the workers' diagnostics and heartbeat did not resume after the run"
            time.sleep(0.1)
    assert len(during) == 2 and not any(any(v.values()) for v in during.values()), during


def _diagnostics_running(dask_worker: Any) -> dict[str, bool]:
    """Dask's diagnostics and its 0.5 s heartbeat, and whether the lab's slower heartbeat stands in for it."""
    names = (*cluster_share.QUIET_CALLBACKS, "heartbeat")
    running = {name: dask_worker.periodic_callbacks[name].is_running() for name in names}
    ours = dask_worker.periodic_callbacks.get("ddblab-heartbeat")
    # The worker's own client (made by its first share) refreshes the scheduler's description: paused too.
    client = dask_worker._client
    for name in cluster_share.QUIET_CLIENT_CALLBACKS:
        running[f"client {name}"] = client is None or client._periodic_callbacks[name].is_running()
    return {**running, "not the lab's heartbeat": ours is None or not ours.is_running()}


def test_an_unreachable_cluster_fails_the_run_with_one_line_and_the_fix(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_check, "CONNECT_TIMEOUT_S", 1.0)
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=2, cluster="127.0.0.1:1"), backend)
    assert run.state is RunState.FAILED and len(run.history) == 0
    assert run.error is not None and "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in str(run.error)
    assert "dask scheduler" in run.error.fix and "leave out --cluster" in run.error.fix
    with pytest.raises(LabError) as e:  # what the CLI asks first, so it says this in one line before any table
        cluster.check_cluster("127.0.0.1:1", backend)
    assert str(e.value) == str(run.error)


def test_a_reachable_cluster_is_checked_before_the_run(backend: Backend, two_workers: Any) -> None:
    assert cluster.check_cluster(two_workers.scheduler_address, backend) == 2


@pytest.mark.parametrize(
    "config, message",
    [
        (RunConfig(pattern="idempotency-keys", threads=4, cluster="127.0.0.1:8786"), "cannot be spread"),
        (RunConfig(pattern="distributed-locking", threads=4, cluster="127.0.0.1:8786"), "cannot be spread"),
        (RunConfig(pattern="atomic-counters", threads=4, processes=2, cluster="127.0.0.1:8786"), "both given"),
        (RunConfig(pattern="atomic-counters", cluster="http://127.0.0.1:8786"), "not a scheduler address"),
        (RunConfig(pattern="atomic-counters", cluster="scheduler"), "not a scheduler address"),
    ],
)
def test_runs_that_cannot_be_spread_are_refused_with_the_reason_and_a_fix(config: RunConfig, message: str) -> None:
    with pytest.raises(BadInput) as e:
        config.validated()
    assert message in str(e.value) and e.value.fix


def test_addresses_are_taken_as_dask_writes_them() -> None:
    assert normalize_address("127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    assert normalize_address(" tcp://scheduler:8786/ ") == "tcp://scheduler:8786"
    assert normalize_address("tls://[::1]:8786") == "tls://[::1]:8786"


def test_workers_on_another_machine_cannot_reach_a_loopback_endpoint() -> None:
    far = [WorkerInfo("tcp://10.0.0.7:40000", "w", same_machine=False, clock_offset_ns=5)]
    near = [WorkerInfo("tcp://127.0.0.1:40000", "w", same_machine=True, clock_offset_ns=0)]
    loopback = Backend(BackendSpec(BackendKind.ENDPOINT, "http://127.0.0.1:8000"))
    with pytest.raises(LabError) as e:
        check_reach(loopback, far)
    assert "10.0.0.7" in str(e.value) and "--endpoint-url" in e.value.fix and "--host 0.0.0.0" in e.value.fix
    check_reach(loopback, near)
    check_reach(Backend(BackendSpec(BackendKind.ENDPOINT, "http://dynamodb-local:8000")), far)


def test_the_cli_flag_reaches_the_run_config() -> None:
    args = build_parser().parse_args(["run", "atomic-counters", "--cluster", "tcp://127.0.0.1:8786"])
    assert config_from_args(args).config.cluster == "tcp://127.0.0.1:8786"


def test_the_cli_runs_on_the_cluster_and_says_so_in_its_summary(
    backend: Backend, two_workers: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.cli import main

    address = two_workers.scheduler_address
    argv = ["run", "atomic-counters", "--threads", "4", "--ops", "3", "--cluster", address, "--json"]
    assert main([*argv, "--endpoint-url", str(backend.endpoint_url)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cluster"] == address and summary["state"] == "done" and summary["calls"] > 0
    assert len(summary["client_cpu_cores"]) == 2 and all(inv["holds"] for inv in summary["invariants"])


def test_the_cluster_bench_measures_a_run_on_the_workers(backend: Backend, two_workers: Any) -> None:
    from bench.cluster import scaling as cluster_scaling

    row = cluster_scaling.one_run(backend, "2 cluster workers", 1.0, two_workers.scheduler_address)
    assert row["calls_per_s"] > 0 and row["cpu_us_per_call"] > 0 and row["staleness_ms"] >= 0
    parts = [row[field] for field, _ in cluster_scaling.PARTS]
    assert sum(parts) == pytest.approx(row["cpu_us_per_call"])
    assert all(p > 0 for p in parts), parts  # the home, the workers' Dask loops, their clients: each one charged
    modes = {mode: row for mode in cluster_scaling.MODES}
    ratios = {"calls_per_s": [0.9, 1.0, 1.2], "cpu_us_per_call": [1.2, 1.0, 1.1]}  # three passes' own ratios
    result = {"threads": 64, "latency_ms": 10.0, "cluster_start_s": 1.0, "modes": modes, "ratios": ratios}
    figures = {v["figure"]: v for v in cluster_scaling.verdicts(result)}
    rate = figures["calls/s, 2 cluster workers / 2 processes [0.90–1.20 over 3 passes]"]
    assert rate["value"] == 1.0 and rate["pass"]  # the median pass, not the mean
    cpu = figures["client-side CPU per call, 2 cluster workers / 2 processes [1.00–1.20 over 3 passes]"]
    assert cpu["value"] == 1.1 and not cpu["pass"]  # above 1.05: FAIL stays FAIL
    # The cluster's back-to-back runs (last of one pass, first of the next): the machine's own swing, shown beside.
    result["back_to_back"] = {"calls_per_s": [0.8, 1.1], "cpu_us_per_call": [1.3, 0.9]}
    figures = {v["figure"]: v for v in cluster_scaling.verdicts(result)}
    swing = figures[
        "the machine's own swing: client-side CPU per call, a cluster run / the next one, back to back"
        " [0.90–1.30 over 2 pairs]"
    ]
    assert swing["value"] == 1.1 and swing["target"] == "info"


def test_a_worker_lost_mid_run_ends_the_run_failed_with_one_line_and_keeps_the_calls(
    backend: Backend, two_workers: Any
) -> None:
    address = two_workers.scheduler_address
    pids = worker_pids(address)
    run = Run(RunConfig(pattern="atomic-counters", threads=8, duration_s=600, cluster=address), backend).start()
    wait_for_calls(run, 50)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    assert run.wait(30)
    assert run.state is RunState.FAILED
    assert run.error is not None and "\n" not in str(run.error)
    assert f"cluster worker {victim} was lost mid-run" in str(run.error) and "no verdict" in str(run.error)
    assert run.invariants == []  # never a verdict on partial data
    assert len(run.history) >= 50  # what arrived is kept
    assert {e["client"] for e in run.worker_errors if e["kind"] == "lost"} == {0, 2, 4, 6}


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
    """A third worker of the module's cluster, on which `engine` does not import; gone again afterwards."""
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


def test_the_scheduler_keeps_none_of_a_runs_messages_after_it(
    backend: Backend, two_workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget = cluster._Home._forget
    kept: list[int] = []

    def count_around(home: Any) -> None:
        kept.append(len(home.client.get_events(home.topics[0])))  # the scheduler keeps what it pushed
        forget(home)
        kept.append(len(home.client.get_events(home.topics[0])))

    monkeypatch.setattr(cluster._Home, "_forget", count_around)
    run = run_pattern(
        RunConfig(pattern="atomic-counters", threads=4, ops_per_client=2, cluster=two_workers.scheduler_address),
        backend,
    )
    assert run.state is RunState.DONE, run.error
    assert kept[0] >= 6 and kept[1] == 0, kept  # two shares' ready, calls and done, then nothing


def test_a_run_whose_tasks_the_scheduler_cancelled_ends_failed_not_short(backend: Backend, two_workers: Any) -> None:
    """What a reconnect to the scheduler does: the scheduler cancels every task of the client it lost, the
    shares end early and cleanly, and every batch they sent arrives. Without a look at the tasks the run would
    end DONE with a verdict, shorter than asked; it ends FAILED."""
    address = two_workers.scheduler_address
    workers(str(address), 2)
    run = Run(RunConfig(pattern="atomic-counters", threads=4, duration_s=600, cluster=address), backend).start()
    wait_for_calls(run, 20)
    with distributed.Client(address, set_as_default=False, timeout=30) as other:
        keys = other.run_on_scheduler(
            lambda dask_scheduler: [k for k in dask_scheduler.tasks if str(k).startswith("ddblab-share-")]
        )
        assert len(keys) == 2, keys
        other.cancel([distributed.Future(k, client=other) for k in keys], force=True)
    assert run.wait(30)
    assert run.state is RunState.FAILED and run.invariants == []
    assert run.error is not None and "lost the connection to the Dask scheduler" in str(run.error)
    assert "\n" not in str(run.error)
