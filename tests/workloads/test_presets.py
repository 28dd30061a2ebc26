"""Every preset runs green at a small size; the racy form of each breaks its invariants, for certain.

Certain, not likely: both forms open with one round in which every client runs the mix's first
read-modify-write on the hottest key and the clients meet at a barrier between its read and its write. In the
racy form all of them then put back the same version + 1, so with c clients c - 1 acknowledged changes are
lost whatever the scheduling (probability 1); the as-written form's version check refuses c - 1 of them, and
they retry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from engine.backends.backend import Backend, BackendSpec
from engine.cli import main
from engine.commands.workload import config_for, run_workload, with_load
from engine.run.runner import RunState
from engine.workloads.report import CAUSES
from engine.workloads.schema.parsing import load, parse_data

PRESETS = sorted(Path(__file__).resolve().parents[2].joinpath("workloads").glob("*.yaml"))
ARGS = argparse.Namespace(profile="exact", profile_set=[], seed=11)


def test_the_five_presets_are_there() -> None:
    assert [p.stem for p in PRESETS] == [
        "hot-customer",
        "idempotent-payments",
        "inventory-transfers",
        "leaderboard",
        "ticket-sale",
    ]


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_a_preset_holds_its_invariants_as_written_and_breaks_them_racy(path: Path, backend: Backend) -> None:
    w = with_load(load(str(path)), clients=4, ops=6)
    assert w.description, "each preset says what a team learns from it"
    run, data = run_workload(w, config_for(w, "as-written", ARGS), backend)
    assert run.state is RunState.DONE, run.error
    assert data["invariants"] and all(inv["holds"] for inv in data["invariants"])
    # Racy without lost answers: a put whose answer is lost is not acknowledged, so it would count in no loss.
    racy = parse_data({**w.model_dump(mode="json"), "lost_responses": 0.0})
    run, data = run_workload(racy, config_for(racy, "racy", ARGS), backend)
    assert run.state is RunState.DONE, run.error
    lost = {inv["key"]: inv for inv in data["invariants"]}["no-lost-change"]
    assert lost["holds"] is False and lost["violations"] >= 3  # the opening round: 4 clients, 3 changes lost


def test_hot_customer_reports_per_operation_on_aws_like(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "run", "workloads/hot-customer.yaml", "--profile", "aws-like", "--json", "--ops", "6"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pattern"] == "workload" and data["profile"]["simulated"] is True
    ops = data["workload"]["operations"]
    assert set(ops) == {"update-customer", "transfer-3"}
    update = ops["update-customer"]
    assert set(update["refusals"]) == set(CAUSES)
    assert update["attempts"] >= 16  # the opening round alone: one per client
    assert update["successes"] <= update["attempts"]
    # The opening round: 16 clients write version 0 of one item, one wins; each of the others is refused, by its
    # version check or (aws-like holds items a transaction commits) by a TransactionConflict first.
    refused = update["refusals"]
    assert refused["condition_refused"] + refused["transaction_conflict"] >= 15
    assert update["retries_per_success"] is not None and set(update["latency_ms"]) == {"p50", "p95", "p99"}
    hot = {k["key"]: k["conflicts"] for k in data["workload"]["hot_keys"]}
    assert hot.get("customer#0", 0) >= 15
    partitions = {p["partition"]: p for p in data["workload"]["capacity"]["write_partitions"]}
    assert partitions["customer#0"]["ceiling_per_s"] == 1000 and partitions["customer#0"]["peak_per_s"] > 0
    assert all(inv["holds"] for inv in data["invariants"])


def test_hot_customer_racy_loses_changes_on_aws_like(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "run", "workloads/hot-customer.yaml", "--profile", "aws-like", "--json", "--ops", "3"]
    assert main([*argv, "--variant", "racy"]) == 0
    data = json.loads(capsys.readouterr().out)
    lost = {inv["key"]: inv for inv in data["invariants"]}["no-lost-change"]
    # 16 unguarded puts of the same read: 15 lost once all are acknowledged. Under aws-like a put may first meet a
    # transaction's hold (TransactionConflict) and be sent again up to 8 times over seconds: half is a wide margin.
    assert lost["holds"] is False and lost["violations"] >= 8


def test_every_operation_type_runs_across_two_processes_without_a_refused_request(tmp_path: Path) -> None:
    """Each operation's request is one DynamoDB takes (no ValidationException), in client processes too."""
    path = tmp_path / "all.yaml"
    ops = [
        "{name: get, type: get, weight: 1, consistent: false}",
        "{name: put-u, type: put, weight: 1, mode: unconditional}",
        "{name: put-c, type: put, weight: 1, mode: create-only}",
        "{name: put-v, type: put, weight: 1, mode: version-checked}",
        "{name: add, type: update, weight: 1, mode: add}",
        "{name: set-v, type: update, weight: 1, mode: set, guard: version}",
        "{name: set-c, type: update, weight: 1, mode: set, guard: condition, condition: 'balance >= :zero'}",
        "{name: del-c, type: delete, weight: 1, conditional: true}",
        "{name: tw, type: transact_write, weight: 1, items: 3, token: true, floor: true}",
        "{name: tg, type: transact_get, weight: 1, items: 3}",
        "{name: bw, type: batch_write, weight: 1, items: 5}",
        "{name: q, type: query, weight: 1}",
        "{name: qi, type: query, weight: 1, index: true}",
    ]
    path.write_text(
        "name: all\ntable: {sort_key: {name: sk}, items: 24, items_per_partition: 3, gsi: {name: by-g, groups: 4}}\n"
        "operations:\n" + "".join(f"  - {op}\n" for op in ops) + "load: {clients: 4, ops: 20}\n"
    )
    w = load(str(path))
    args = argparse.Namespace(profile="exact", profile_set=[], seed=4, processes=2)
    with Backend(BackendSpec()) as backend:  # its own server: client processes reach it by its URL
        run, data = run_workload(w, config_for(w, "as-written", args), backend)
    assert run.state is RunState.DONE, run.error
    report = data["workload"]["operations"]
    assert sum(op["attempts"] for op in report.values()) == 80
    assert all(op["refusals"]["validation"] == 0 and op["refusals"]["other"] == 0 for op in report.values())
    assert [inv["key"] for inv in data["invariants"]] == ["one-winner"] and data["invariants"][0]["holds"]


def test_sweep_runs_both_forms_at_each_client_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workload", "sweep", "workloads/ticket-sale.yaml", "--clients", "1,3", "--ops", "4", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["clients"], r["variant"]) for r in rows] == [
        (1, "as-written"),
        (1, "racy"),
        (3, "as-written"),
        (3, "racy"),
    ]
    assert rows[2]["violations"] == 0 and rows[3]["violations"] >= 2  # the opening round: 3 clients, 2 sales lost
