"""A cancelled transaction leaves every item as it was, and its cost does not grow with the table."""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table


@pytest.fixture
def table(backend: Backend):
    client = backend.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, "undo-test", TableSpec())
    yield table
    drop_table(table)


def _cancelled(table, **extra) -> list[str]:
    try:
        table.client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table.name,
                        "Key": {"PK": "USER#alice", "SK": "PROFILE"},
                        "UpdateExpression": "ADD orderCount :one",
                        "ExpressionAttributeValues": {":one": 1},
                    }
                },
                {"Put": {"TableName": table.name, "Item": {"PK": "USER#alice", "SK": "ORDER#o2", "qty": 5}}},
                {"Delete": {"TableName": table.name, "Key": {"PK": "OLD", "SK": "ITEM"}}},
                {
                    "Update": {
                        "TableName": table.name,
                        "Key": {"PK": "PRODUCT#widget", "SK": "STOCK"},
                        "UpdateExpression": "SET stock = stock - :q",
                        "ConditionExpression": "stock >= :q",
                        "ExpressionAttributeValues": {":q": 5},
                    }
                },
            ]
        )
    except ClientError as e:
        return [r["Code"] for r in e.response["CancellationReasons"]]
    raise AssertionError("the transaction was not cancelled")


def test_a_cancelled_transaction_rolls_back_the_actions_before_the_failure(table) -> None:
    table.put({"PK": "USER#alice", "SK": "PROFILE", "orderCount": 1})
    table.put({"PK": "OLD", "SK": "ITEM", "keep": True})
    table.put({"PK": "PRODUCT#widget", "SK": "STOCK", "stock": 1})
    assert _cancelled(table) == ["None", "None", "None", "ConditionalCheckFailed"]
    assert table.get("USER#alice", "PROFILE")["orderCount"] == 1
    assert table.get("USER#alice", "ORDER#o2") is None
    assert table.get("OLD", "ITEM") == {"PK": "OLD", "SK": "ITEM", "keep": True}
    assert table.get("PRODUCT#widget", "STOCK")["stock"] == 1


def test_a_transaction_costs_the_same_on_a_big_table(table) -> None:
    table.put({"PK": "USER#alice", "SK": "PROFILE", "orderCount": 1})
    table.put({"PK": "PRODUCT#widget", "SK": "STOCK", "stock": 1})

    def cost() -> float:
        started = time.perf_counter()
        for _ in range(5):
            _cancelled(table)
        return (time.perf_counter() - started) / 5

    small = cost()
    with _batch(table) as put:
        for i in range(1500):
            put({"PK": f"FILLER#{i}", "SK": "X", "pad": "x" * 100})
    big = cost()
    assert big < max(4 * small, 0.05), (small, big)  # moto's whole-table copy took ~0.3 s here


class _batch:
    def __init__(self, table) -> None:
        self.table = table
        self.items: list[Any] = []

    def __enter__(self):
        return self.items.append

    def __exit__(self, *exc) -> None:
        for i in range(0, len(self.items), 25):
            self.table.client.batch_write_item(
                RequestItems={self.table.name: [{"PutRequest": {"Item": item}} for item in self.items[i : i + 25]]}
            )
