"""A client lost mid-run (its process killed, its thread gone, stopped half-way by an unexpected error) ends the
run FAILED with one line naming it, and no invariant is judged on the calls that are left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

import engine.clients.threads
from engine.backends.backend import Backend
from engine.errors import ClientsLost
from engine.run.runner import Run, RunConfig, RunState, run_pattern
from tests.engine.test_pool import pool_children


def children_of(pid: int, marker: bytes) -> list[int]:
    """Pids of `pid`'s live children whose command line holds `marker`."""
    found = []
    for child in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{child}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{child}/cmdline", "rb") as f:
                command = f.read()
        except OSError:
            continue
        if parent == pid and marker in command:
            found.append(int(child))
    return found


def _customers_with_an_order(client: Any, table: str) -> set[str]:
    """The transactions run's customers (one per client) the server holds an order of: clients that have called."""
    try:
        items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    except client.exceptions.ResourceNotFoundException:
        return set()  # not created yet
    return {item["PK"] for item in items if str(item["SK"]).startswith("ORDER#")}


def test_a_client_process_killed_mid_run_fails_the_run_with_exit_1_and_names_the_process(embedded: Backend) -> None:
    # The run calls this session's server, so the test sees its calls land: the kill comes once every client of
    # both processes has an order written, so the surviving process has calls to ship home, however slow the
    # machine (it finishes the calls in flight and ships them when told to stop).
    table, threads = f"ddblab-lost-clients-{os.getpid()}", 8
    cli = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "transactions", "--threads", str(threads), "--processes", "2"]
        + ["--duration", "120", "--json", "--endpoint-url", str(embedded.endpoint_url), "--table", table],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    client = embedded.client()
    try:
        deadline = time.monotonic() + 90
        while len(_customers_with_an_order(client, table)) < threads:
            assert time.monotonic() < deadline and cli.poll() is None, "the run's clients never all called"
            time.sleep(0.1)
        victim = children_of(cli.pid, b"engine.clients.processes")[0]
        os.kill(victim, signal.SIGKILL)  # what the kernel's OOM killer does
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
        try:
            client.delete_table(TableName=table)
        except client.exceptions.ResourceNotFoundException:
            pass  # the run dropped it
    summary = json.loads(out)
    assert cli.returncode == 1
    assert summary["state"] == "failed" and summary["invariants"] == []  # no verdict on part of the calls
    assert summary["calls"] > 0  # what arrived is kept
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"client process {victim} (clients " in line and "died mid-run (killed by SIGKILL" in line
    assert "calls it had not yet shipped are lost" in line and "no invariant is judged" in line


def test_a_killed_client_process_ends_the_run_at_once_and_leaves_no_child(backend: Backend) -> None:
    run = Run(RunConfig(pattern="atomic-counters", threads=4, duration_s=600, processes=2), backend).start()
    deadline = time.monotonic() + 90
    while run.progress()["calls"] < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    victim = sorted(pool_children())[0]
    os.kill(victim, signal.SIGKILL)
    assert run.wait(20)  # the other process is stopped too: the run could not be judged any more
    assert run.state is RunState.FAILED and isinstance(run.error, ClientsLost)
    assert str(victim) in run.error.problem and run.invariants == []
    assert [e["kind"] for e in run.worker_errors] == ["lost"]
    assert not pool_children()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_client_thread_that_dies_unreported_fails_the_run(backend: Backend, monkeypatch) -> None:
    real = engine.clients.threads.client_failure

    def dies_silently(pattern: Any, ctx: Any) -> Any:
        if ctx.client_id == 2:
            raise SystemExit  # ends the thread with no record, as a thread killed from outside would
        return real(pattern, ctx)

    monkeypatch.setattr(engine.clients.threads, "client_failure", dies_silently)
    run = run_pattern(RunConfig(pattern="atomic-counters", variant="add", threads=4, ops_per_client=5), backend)
    assert run.state is RunState.FAILED and isinstance(run.error, ClientsLost)
    assert "client thread(s) 2 ended without finishing" in run.error.problem
    assert run.invariants == [] and set(run.history.snapshot()["client"]) == {0, 1, 3}


def test_a_client_stopped_half_way_by_an_unexpected_error_fails_the_run(backend: Backend, monkeypatch) -> None:
    real = engine.clients.threads.client_failure

    def errs(pattern: Any, ctx: Any) -> Any:
        failure = real(pattern, ctx)
        if ctx.client_id == 1:
            return {"kind": "error", "message": "UpdateItem ValidationException", "trace": None}
        return failure

    monkeypatch.setattr(engine.clients.threads, "client_failure", errs)
    run = run_pattern(RunConfig(pattern="atomic-counters", variant="add", threads=3, ops_per_client=2), backend)
    assert run.state is RunState.FAILED and run.invariants == []
    assert str(run.error).startswith("client 1 stopped half-way on an unexpected error: UpdateItem Validation")


@pytest.mark.parametrize("pattern", ["transactions"])
def test_injected_crashes_are_part_of_the_pattern_and_still_judged(backend: Backend, pattern: str) -> None:
    run = run_pattern(
        RunConfig(pattern=pattern, variant="transact", threads=4, ops_per_client=4, options={"crash_share": 1.0}),
        backend,
    )
    assert run.state is RunState.DONE and run.invariants
    assert {e["kind"] for e in run.worker_errors} == {"crash"}
