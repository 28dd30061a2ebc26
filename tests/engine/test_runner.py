"""The runner: N clients released together, stopped by count, time or signal, watched while they run."""

from __future__ import annotations

import random
import threading
import time

import pytest

from engine.backends.backend import Backend, BackendSpec
from engine.backends.tables import PREFIX
from engine.clients.work import client_failure
from engine.errors import BadInput
from engine.record.calls import ClientContext, ClientCrash
from engine.record.history import History
from engine.run.runner import Run, RunConfig, RunState, run_pattern
from engine.run.summary import client_cpu_text, render_text, summary
from tests.engine.test_pool import pool_children
from tests.lockstep import Lockstep


def test_every_client_makes_its_ops_and_the_table_is_dropped(backend: Backend, client) -> None:
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=4, ops_per_client=5), backend)
    assert run.state is RunState.DONE
    frame = run.history.snapshot()
    assert sorted(frame["client"].unique()) == [0, 1, 2, 3]
    assert (frame[frame["action"] == "increment"].groupby("client").size() == 5).all()
    assert run.table is not None and run.table.name.startswith(PREFIX)
    assert run.table.name not in client.list_tables()["TableNames"]


def test_clients_overlap_in_time(backend: Backend) -> None:
    # The first calls leave only once all 8 clients are in one (lockstep): a runner that ran them one after
    # another would never meet there (check() fails); one that runs them at once overlaps in every run.
    lockstep = Lockstep(backend, clients=8, rounds=1)
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=8, ops_per_client=5), lockstep)
    lockstep.check()
    frame = run.history.snapshot().sort_values("start_s")
    # at least one call started before the previous one completed: the clients really ran concurrently
    assert (frame["start_s"].to_numpy()[1:] < frame["end_s"].cummax().to_numpy()[:-1]).any()


def test_a_time_limit_ends_the_run(backend: Backend) -> None:
    started = time.monotonic()
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=4, duration_s=1.0), backend)
    assert run.state is RunState.DONE
    assert 0.9 <= run.elapsed_s() < 8.0  # ended by the limit: the ops in flight at 1 s finish, even on a busy machine
    assert time.monotonic() - started < 30


# A stop ends a run in seconds, not at its 600 s duration: each client sees it before its next call, well under 2 s
# on an idle machine. The bound is generous: 16 client threads share a loaded machine's cores with others.
STOP_BOUND_S = 10.0


def test_stop_ends_a_long_run_within_seconds_and_keeps_the_calls(backend: Backend) -> None:
    run = Run(RunConfig(pattern="optimistic-locking", threads=16, duration_s=600), backend).start()
    deadline = time.monotonic() + 30
    while run.progress()["calls"] < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    progress = run.progress()
    assert progress["state"] == "running" and progress["calls"] >= 50  # readable while it runs
    asked = time.monotonic()
    run.stop()
    assert run.wait(30)
    assert run.t_end_ns is not None and (run.t_end_ns / 1e9) - asked < STOP_BOUND_S
    assert run.state is RunState.STOPPED
    assert len(run.history) >= progress["calls"]
    assert run.invariants and all(inv.holds for inv in run.invariants)
    assert run.stop_reason == "stopped by the user"
    text = render_text(summary(run))
    assert "STOPPED    stopped by the user, after" in text and "not a whole run" in text


def test_a_run_its_call_budget_cut_short_ends_stopped_and_says_why(backend: Backend) -> None:
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=4, ops_per_client=100, max_calls=50), backend)
    assert len(run.history) < 4 * 100  # cut well short of the planned ops
    assert run.state is RunState.STOPPED and run.stop_reason == "its call budget of 50 calls ran out"
    data = summary(run)
    assert data["state"] == "stopped" and data["stop_reason"] == run.stop_reason
    assert "STOPPED    its call budget of 50 calls ran out" in render_text(data)
    assert "(4 × 100 ops were planned)" in render_text(data)
    whole = run_pattern(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=3), backend)
    assert whole.state is RunState.DONE and summary(whole)["stop_reason"] is None
    assert "STOPPED" not in render_text(summary(whole))


@pytest.mark.parametrize(
    "config, message",
    [
        (RunConfig(pattern="optimistic-locking", threads=0), "threads must be at least 1"),
        (RunConfig(pattern="optimistic-locking", threads=300), "above the cap of 256"),
        (RunConfig(pattern="optimistic-locking", ops_per_client=0), "ops per client"),
        (RunConfig(pattern="nope"), "unknown pattern"),
        (RunConfig(pattern="optimistic-locking", variant="nope"), "has no variant"),
        (RunConfig(pattern="optimistic-locking", options={"accounts": 0}), "out of range"),
        (RunConfig(pattern="optimistic-locking", options={"colour": 1}), "has no option"),
        (RunConfig(pattern="optimistic-locking", lost_response_share=2.0), "lost-response share"),
    ],
)
def test_bad_settings_are_refused_with_a_fix(config: RunConfig, message: str) -> None:
    with pytest.raises(BadInput) as e:
        config.validated()
    assert message in str(e.value) and e.value.fix


def test_the_thread_cap_can_be_raised() -> None:
    RunConfig(pattern="optimistic-locking", threads=300, max_threads=512).validated()


@pytest.mark.parametrize("processes", [1, 2])
def test_the_run_ends_with_a_clear_error_when_the_server_dies(processes: int) -> None:
    with Backend(BackendSpec()) as backend:
        run = Run(
            RunConfig(pattern="optimistic-locking", threads=32, duration_s=600, processes=processes), backend
        ).start()
        deadline = time.monotonic() + 60
        while run.progress()["calls"] < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        recorded = run.progress()["calls"]
        killed = time.monotonic()
        assert backend.server is not None
        backend.server.kill()
        assert run.wait(10)
        assert time.monotonic() - killed < 5.0
        assert run.state is RunState.FAILED and "stopped during the run" in str(run.error)
        assert len(run.history) >= recorded
    assert not pool_children()  # and no client process is left behind


def test_sold_out_refusals_are_outcomes_not_conflicts(backend: Backend) -> None:
    # 8 clients buy 160 tickets of 100 with ADD: 60 refusals, all "sold out", none a race lost.
    run = run_pattern(
        RunConfig(pattern="atomic-counters", variant="add", threads=8, ops_per_client=20, options={"tickets": 100}),
        backend,
    )
    counts = run.history.counts()
    assert counts["refusals"] == {("buy-ticket", "ConditionalCheckFailedException"): 60}
    assert run.progress()["conflicts"] == 0
    lockstep = Lockstep(backend, clients=8, rounds=2)  # all 8 read the one account before any writes: 7 refused
    raced = run_pattern(RunConfig(pattern="optimistic-locking", threads=8, ops_per_client=5), lockstep)
    lockstep.check()
    refused = raced.history.counts()["errors"].get("ConditionalCheckFailedException", 0)
    assert refused > 0 and raced.progress()["conflicts"] == refused


def test_the_client_cpu_figure_says_when_the_clients_are_cpu_bound(backend: Backend) -> None:
    run = run_pattern(RunConfig(pattern="atomic-counters", threads=4, ops_per_client=5), backend)
    [cores] = run.progress()["client_cpu"]  # one process: its client threads' CPU over the run
    assert cores > 0
    assert client_cpu_text([0.42]) == "0.42 of a core"
    assert client_cpu_text([0.95, 0.5]) == (
        "0.95, 0.50 of a core each (2 processes): CPU-bound (Python runs one "
        "thread at a time per process), so more threads add few calls"
    )


def test_a_clients_cpu_counts_to_its_end_even_when_it_crashes_mid_operation() -> None:
    class BurnsThenCrashes:
        def client(self, ctx: ClientContext) -> None:
            busy_until = time.thread_time() + 0.05
            while time.thread_time() < busy_until:
                pass
            raise ClientCrash("the process died mid-operation")

    ctx = ClientContext(
        client=None,
        history=History(),
        client_id=0,
        table=None,
        options={},
        variant="v",
        threads=1,
        ops_per_client=1,
        deadline=None,
        stop=threading.Event(),
        shared={},
        rng=random.Random(0),
    )
    failure = client_failure(BurnsThenCrashes(), ctx)  # type: ignore[arg-type]
    assert failure is not None and failure["kind"] == "crash"
    assert ctx.cpu_s >= 0.05  # the op it crashed in is counted, though it never finished


@pytest.mark.parametrize("pattern", ["optimistic-locking", "unique-constraints"])
def test_a_run_stopped_before_its_first_call_judges_nothing_rather_than_passing(backend: Backend, pattern: str) -> None:
    # Every invariant holds on an empty history: printed as PASS, it claimed a run that tested nothing was safe.
    run = Run(RunConfig(pattern=pattern, threads=4, duration_s=60), backend)
    run.stop()  # before the start: no client makes a call
    run.start().wait(60)
    assert len(run.history) == 0 and run.state is RunState.STOPPED
    assert run.invariants and all(inv.holds is None for inv in run.invariants)
    assert "nothing was tested" in render_text(summary(run))
    assert "PASS" not in render_text(summary(run))
