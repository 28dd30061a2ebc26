"""The sweep's conflict rate counts races lost to another client, not the stock running out."""

from __future__ import annotations

import time

import pandas as pd

from engine.backends.backend import Backend
from engine.record.history import Call, History, Outcome
from engine.run.runner import RunConfig, run_pattern
from engine.run.sweep import business_refusals, json_records, sweep_row
from tests.lockstep import Lockstep

CCF = "ConditionalCheckFailedException"
CANCELLED = "TransactionCanceledException"


def test_tickets_selling_out_under_add_are_not_conflicts(backend: Backend) -> None:
    # 8 clients want 160 tickets of 100: 60 sales are refused by remaining > 0, and ADD never conflicts.
    run = run_pattern(
        RunConfig(pattern="atomic-counters", variant="add", threads=8, ops_per_client=20, options={"tickets": 100}),
        backend,
    )
    frame = run.history.snapshot()
    sold_out = frame[(frame["action"] == "buy-ticket") & (frame["error"] == CCF)]
    assert len(sold_out) == 60
    row = sweep_row(run)
    assert row["conflict_rate"] == 0.0
    assert row["retries_per_success"] == 0.0  # a refused sale is the answer, not a retry
    assert row["client_cpu"] == max(run.client_cpu()) > 0  # why calls/s may stop growing with threads


def test_refused_version_checks_still_count_as_conflicts(backend: Backend) -> None:
    lockstep = Lockstep(backend, clients=8, rounds=2)  # all 8 read the one account before any writes: 7 refused
    run = run_pattern(
        RunConfig(pattern="optimistic-locking", variant="version-check", threads=8, ops_per_client=10), lockstep
    )
    lockstep.check()
    frame = run.history.snapshot()
    writes = frame[frame["op"] == "PutItem"]
    refused = int((writes["error"] == CCF).sum())
    assert refused > 0
    assert sweep_row(run)["conflict_rate"] == refused / len(writes)


def test_out_of_stock_orders_are_no_conflicts_but_a_colliding_transaction_is(backend: Backend) -> None:
    run = run_pattern(
        RunConfig(
            pattern="transactions",
            variant="transact",
            threads=8,
            ops_per_client=4,
            options={"stock": 10, "resend_share": 0.0},
        ),
        backend,
    )
    frame = run.history.snapshot()
    assert (frame["error"] == CANCELLED).sum() > 0  # 32 orders of 1..3 widgets, 10 in stock
    assert sweep_row(run)["conflict_rate"] == 0.0  # the embedded server serialises: no TransactionConflict

    # DynamoDB cancels a transaction that overlaps another on the same item with reason TransactionConflict
    # (the embedded server never does), so these two calls are written down as a real one records them.
    history = History()
    for reasons in (["None", "ConditionalCheckFailed", "None"], ["None", "TransactionConflict", "None"]):
        now = time.monotonic_ns()
        history.append(
            Call(
                client=0,
                action="place-order",
                op="TransactWriteItems",
                key="USER#c0/o0",
                invoke_ns=now,
                complete_ns=now + 1000,
                outcome=Outcome.FAIL,
                error=CANCELLED,
                detail={"reasons": reasons},
            )
        )
    assert list(business_refusals("transactions", history.snapshot(), history)) == [True, False]


def test_other_patterns_declare_no_business_refusals(backend: Backend) -> None:
    run = run_pattern(RunConfig(pattern="conditional-writes", threads=4, ops_per_client=3), backend)
    frame = run.history.snapshot()
    assert not business_refusals("conditional-writes", frame, run.history).any()
    assert float(sweep_row(run)["conflict_rate"]) > 0  # every client signs up the same users: all but one are refused


def test_json_records_read_rows_from_before_the_profile_tag(backend: Backend) -> None:
    # A row saved before sweep rows carried `profile_tag` (the name only) still gives the profile object.
    run = run_pattern(RunConfig(pattern="atomic-counters", variant="add", threads=1, ops_per_client=2), backend)
    row = sweep_row(run)
    assert row.pop("profile_tag") == "exact"
    [record] = json_records(pd.DataFrame([{**row, "repeat": 0}]))
    assert record["profile"] == record["per_run"][0]["profile"] == {"name": "exact", "simulated": False}
