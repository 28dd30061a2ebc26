"""The committed docs/workloads.md is the one the schema generates; open loop counts its arrivals and their lateness.

Open loop is checked for what holds whatever the machine's load: every arrival is made and accounted for, and
each operation's latency counts from its scheduled time. Whether a rate is sustained is a timing figure:
`python -m bench --only workload` measures it."""

from __future__ import annotations

import argparse

from engine.backends.backend import Backend
from engine.commands.workload import config_for, run_workload
from engine.workloads.docs import DOC, main, render
from engine.workloads.report import load_line
from engine.workloads.schema.parsing import parse


def test_the_committed_docs_are_generated_from_the_schema() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run python -m engine.workloads.docs"
    assert main(["--check"]) == 0


OPEN = """
name: open
table: {items: 10, item_size: 300}
operations:
  - {name: read, type: get, weight: 1}
  - {name: add, type: update, weight: 1, mode: add}
load: {mode: open, rate: 400, clients: 4, ops: 10}
"""


def test_open_loop_makes_every_arrival_and_counts_the_late_ones(backend: Backend) -> None:
    w = parse(OPEN)
    run, data = run_workload(
        w, config_for(w, "as-written", argparse.Namespace(profile="exact", profile_set=[])), backend
    )
    load = data["workload"]["load"]
    assert load["mode"] == "open" and load["target_per_s"] == 400
    assert load["arrivals"] == 40 and 0 <= load["late"] <= 40
    assert sum(op["attempts"] for op in data["workload"]["operations"].values()) == 40
    assert all(inv["holds"] for inv in data["invariants"])
    line = load_line(load)
    assert line is not None and line.startswith("open loop:")
    assert ("sustained" in line) or ("could not be sustained" in line)


def test_a_rate_no_client_can_keep_says_so_in_one_line() -> None:
    line = load_line(
        {
            "mode": "open",
            "target_per_s": 5000.0,
            "achieved_per_s": 300.0,
            "late": 90,
            "arrivals": 100,
            "late_after_ms": 10.0,
            "sustained": False,
        }
    )
    assert line == (
        "open loop: the rate of 5000/s could not be sustained: achieved 300/s, 90 of 100 arrivals sent more than "
        "10 ms late (more clients, or a lower rate)"
    )


def test_open_loop_in_two_client_processes_makes_every_arrival() -> None:
    """Client processes do not know their share of the threads: each thread follows a stream of its own."""
    from engine.backends.backend import BackendSpec

    w = parse(OPEN)
    args = argparse.Namespace(profile="exact", profile_set=[], processes=2)
    with Backend(BackendSpec()) as backend:  # its own server: client processes reach it by its URL
        run, data = run_workload(w, config_for(w, "as-written", args), backend)
    load = data["workload"]["load"]
    assert run.state.value == "done" and load["arrivals"] == 40 and load["achieved_per_s"] > 0
