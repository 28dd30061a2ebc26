"""A workload spread over a Dask cluster's workers: each worker rebuilds the workload from the run's options."""

from __future__ import annotations

import argparse
from typing import Any

from engine.backends.backend import Backend
from engine.commands.workload import config_for, run_workload, with_load
from engine.run.runner import RunState
from engine.workloads.schema.parsing import load


def test_hot_customer_on_two_workers_holds_its_invariants(backend: Backend, two_workers: Any) -> None:
    w = with_load(load("workloads/hot-customer.yaml"), clients=4, ops=5)
    args = argparse.Namespace(profile="exact", profile_set=[], seed=9, cluster=two_workers.scheduler_address)
    run, data = run_workload(w, config_for(w, "as-written", args), backend)
    assert run.state is RunState.DONE, run.error
    assert sorted(run.history.snapshot()["client"].unique()) == [0, 1, 2, 3]
    assert sum(op["attempts"] for op in data["workload"]["operations"].values()) == 20
    assert data["invariants"] and all(inv["holds"] for inv in data["invariants"])
