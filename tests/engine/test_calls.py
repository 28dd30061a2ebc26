"""Recorded calls: outcomes are honest, including the ambiguous write whose response was lost."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.faults import FaultInjector, FaultPlan
from engine.backends.tables import Table, TableSpec, drop_table, open_table
from engine.record.calls import Ambiguous, Caller, ConditionFailed, TransactionCanceled
from engine.record.history import History, Outcome


@contextmanager
def calls_table(backend: Backend, attempts: int) -> Iterator[Table]:
    """A fresh table whose client makes up to `attempts` attempts per call and can lose responses."""
    client = backend.client(retry=RetryPolicy("standard", attempts))
    injector = FaultInjector(client, FaultPlan())
    table = open_table(client, "calls-test", TableSpec())
    try:
        yield table
    finally:
        drop_table(table)
        injector.close()


@pytest.fixture
def table(backend: Backend) -> Iterator[Table]:
    with calls_table(backend, attempts=3) as table:
        yield table


def recorder(table: Table, client_id: int = 0, **options: Any) -> tuple[History, Caller]:
    """A history and a caller that records into it."""
    history = History()
    return history, Caller(table.client, history, client_id=client_id, **options)


def add_one(caller: Caller, table: Table, **params: Any) -> dict[str, Any]:
    """ADD 1 to counter C, its response lost on the way back."""
    return caller.call(
        "add",
        "UpdateItem",
        key="C",
        lose_response=True,
        TableName=table.name,
        Key={"PK": "C", "SK": "C"},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": 1},
        **params,
    )


def test_a_won_condition_is_ok_and_a_lost_one_is_fail(table) -> None:
    history, caller = recorder(table, client_id=3)
    put = dict(
        TableName=table.name, Item={"PK": "USER#alice", "SK": "PROFILE"}, ConditionExpression="attribute_not_exists(PK)"
    )
    caller.call("create", "PutItem", key="USER#alice", **put)
    with pytest.raises(ConditionFailed):
        caller.call("create", "PutItem", key="USER#alice", **put)
    first, second = history.calls()
    assert (first.outcome, first.error) == (Outcome.OK, None)
    assert (second.outcome, second.error) == (Outcome.FAIL, "ConditionalCheckFailedException")
    assert second.client == 3 and second.invoke_ns <= second.complete_ns
    assert second.request is not None
    assert second.request.startswith(">>> PutItem") and "attribute_not_exists(PK)" in second.request


def test_a_refused_call_leaves_no_reference_cycle_behind(table) -> None:
    # A refused call's frame, its request and the response used to stay in a cycle with the raised error until
    # the garbage collector came by: with a conflict on most calls, those collections slowed a whole run.
    table.put({"PK": "TICKETS#gig", "SK": "COUNTER", "remaining": 0})
    sale = dict(
        TableName=table.name,
        Key={"PK": "TICKETS#gig", "SK": "COUNTER"},
        UpdateExpression="ADD remaining :minus",
        ConditionExpression="remaining > :zero",
        ExpressionAttributeValues={":minus": -1, ":zero": 0},
    )
    _, caller = recorder(table)

    def garbage(call: Callable[[], None]) -> int:
        gc.collect()
        gc.disable()
        try:
            for _ in range(10):
                call()
            return gc.collect()
        finally:
            gc.enable()

    def bare() -> None:
        with pytest.raises(ClientError):
            table.client.update_item(**sale)

    def recorded() -> None:
        with pytest.raises(ConditionFailed):
            caller.call("buy-ticket", "UpdateItem", key="tickets", detail={"op": 1}, **sale)

    assert garbage(recorded) <= garbage(bare)  # what boto3's own call leaves, nothing more


def test_all_old_on_failure_keeps_the_item_as_it_was(table) -> None:
    history, caller = recorder(table)
    table.put({"PK": "USER#alice", "SK": "PROFILE", "credits": 3})
    with pytest.raises(ConditionFailed) as e:
        caller.call(
            "spend",
            "UpdateItem",
            key="USER#alice",
            TableName=table.name,
            Key={"PK": "USER#alice", "SK": "PROFILE"},
            UpdateExpression="SET credits = credits - :a",
            ConditionExpression="credits >= :a",
            ExpressionAttributeValues={":a": 7},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert e.value.item is not None and e.value.item["credits"] == 3
    assert history.call(0).detail["old_item"]["credits"] == 3


def test_cancellation_reasons_are_recorded_per_action(table) -> None:
    history, caller = recorder(table)
    table.put({"PK": "PRODUCT#widget", "SK": "STOCK", "stock": 1})
    with pytest.raises(TransactionCanceled) as e:
        caller.call(
            "order",
            "TransactWriteItems",
            key="ORDER#o2",
            TransactItems=[
                {
                    "Put": {
                        "TableName": table.name,
                        "Item": {"PK": "USER#alice", "SK": "ORDER#o2"},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {
                    "Update": {
                        "TableName": table.name,
                        "Key": {"PK": "PRODUCT#widget", "SK": "STOCK"},
                        "UpdateExpression": "SET stock = stock - :q",
                        "ConditionExpression": "stock >= :q",
                        "ExpressionAttributeValues": {":q": 5},
                    }
                },
            ],
        )
    assert e.value.reasons == ["None", "ConditionalCheckFailed"]
    assert history.call(0).detail["reasons"] == ["None", "ConditionalCheckFailed"]


def test_a_lost_response_on_a_create_only_put_is_ambiguous_not_a_failure(table) -> None:
    """The classic case: the server applied the put, the response was lost, botocore retried, and the retry
    met our own item: ConditionalCheckFailed. That is not a failure: the outcome is unknown (info)."""
    history, caller = recorder(table)
    with pytest.raises(Ambiguous) as e:
        caller.call(
            "claim",
            "PutItem",
            key="REQ#1",
            lose_response=True,
            TableName=table.name,
            Item={"PK": "REQ#1", "SK": "RECORD"},
            ConditionExpression="attribute_not_exists(PK)",
        )
    call = history.call(0)
    assert e.value.code == "ConditionalCheckFailedException"
    assert call.outcome is Outcome.INFO and call.retries == 1
    assert call.detail["lost_response"] is True and call.detail["attempts"][0] == "ReadTimeoutError"
    assert table.get("REQ#1", "RECORD") is not None  # it was applied


def test_a_lost_response_without_retries_ends_as_info(backend: Backend) -> None:
    with calls_table(backend, attempts=1) as table:
        history, caller = recorder(table)
        with pytest.raises(Ambiguous):
            add_one(caller, table)
        assert history.call(0).outcome is Outcome.INFO and history.call(0).error == "ReadTimeoutError"
        assert (table.get("C", "C") or {})["n"] == 1


def test_lost_response_share_only_hits_writes(table) -> None:
    history, caller = recorder(table, lost_response_share=1.0)
    table.put({"PK": "A", "SK": "A"})
    caller.call("read", "GetItem", key="A", TableName=table.name, Key={"PK": "A", "SK": "A"})
    assert history.call(0).outcome is Outcome.OK and "lost_response" not in history.call(0).detail


def test_a_write_that_succeeds_after_a_lost_response_is_unknown_not_ok(table) -> None:
    """The first attempt was applied and its answer lost; the retry applied it again: once or twice?"""
    history, caller = recorder(table)
    table.put({"PK": "C", "SK": "C", "n": 0})
    response = add_one(caller, table, ReturnValues="UPDATED_NEW")
    call = history.call(0)
    assert response["Attributes"]["n"] == 2  # really applied twice
    assert call.outcome is Outcome.INFO and call.error is None and call.detail["ambiguous_retry"] is True
