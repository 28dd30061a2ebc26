"""The seed's "In practice" scene of transactions: an order that fits the stock, one that is cancelled with its
reasons, and a TransactGetItems snapshot."""

from __future__ import annotations

import uuid
from typing import Any

from engine.patterns.transactions.shared import PROFILE, STOCK, place_order_items, snapshot_items
from engine.record.calls import TransactionCanceled


def in_practice(walk: Any) -> None:
    walk.put({**STOCK, "stock": 3})
    walk.put({"PK": "USER#alice", "SK": PROFILE, "orderCount": 0})
    # A fresh token per replay: a replay on the same server within 10 minutes must not hit the old one.
    suffix = uuid.uuid4().hex[:8]
    for order, qty in (("o1", 2), ("o2", 5)):
        response = walk.call(
            "TransactWriteItems",
            TransactItems=place_order_items(walk.name, "USER#alice", order, qty),
            ClientRequestToken=f"place-order-{order}-{suffix}",
        )
        if isinstance(response, TransactionCanceled):
            walk.result(f"Order {order} (qty {qty}) cancelled - per-item reasons", response.reasons)
        else:
            walk.result(f"Order {order} (qty {qty}) succeeded")
    snapshot = walk.read("TransactGetItems", TransactItems=snapshot_items(walk.name, "USER#alice", "o2"))
    walk.result("TransactGetItems: stock, profile, ORDER#o2", [r.get("Item") for r in snapshot["Responses"]])
