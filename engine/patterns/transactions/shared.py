"""The items and requests the clients, the invariants and the walkthrough of transactions share: the stock, a
customer's profile, the order's three writes and the snapshot read."""

from __future__ import annotations

from typing import Any

STOCK = {"PK": "PRODUCT#widget", "SK": "STOCK"}
PROFILE = "PROFILE"


STOCK_ACTION = 1  # where place_order_items takes the stock: a cancellation's reasons are in the actions' order


def place_order_items(table: str, customer: str, order: str, qty: int) -> list[dict[str, Any]]:
    """The seed's three actions: create the order, take the stock if there is enough, count the order."""
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": customer, "SK": f"ORDER#{order}", "qty": qty},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": STOCK,
                "UpdateExpression": "SET stock = stock - :q",
                "ConditionExpression": "stock >= :q",
                "ExpressionAttributeValues": {":q": qty},
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": {"PK": customer, "SK": PROFILE},
                "UpdateExpression": "ADD orderCount :one",
                "ExpressionAttributeValues": {":one": 1},
            }
        },
    ]


def snapshot_items(table: str, customer: str, order: str) -> list[dict[str, Any]]:
    keys = (STOCK, {"PK": customer, "SK": PROFILE}, {"PK": customer, "SK": f"ORDER#{order}"})
    return [{"Get": {"TableName": table, "Key": key}} for key in keys]
