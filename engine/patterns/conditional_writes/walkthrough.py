"""The seed's "In practice" scene of conditional writes: create-only, update-if-exists, a business rule, and the
item a refusal returns."""

from __future__ import annotations

from typing import Any

from engine.patterns.conditional_writes.shared import ACTIVE, PROFILE


def in_practice(walk: Any) -> None:
    from engine.record.calls import outcome

    alice = {"PK": "USER#alice", "SK": PROFILE}
    create = {
        "Item": {**alice, "name": "Alice", "credits": 10, "status": ACTIVE},
        "ConditionExpression": "attribute_not_exists(PK)",
    }
    walk.result("Create alice (first time)", outcome(walk.call("PutItem", **create)))
    walk.result("Create alice again (would overwrite)", outcome(walk.call("PutItem", **create)))
    bob = walk.call(
        "UpdateItem",
        Key={"PK": "USER#bob", "SK": PROFILE},
        ConditionExpression="attribute_exists(PK)",
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": "name"},
        ExpressionAttributeValues={":n": "Bob"},
    )
    walk.result("Update bob (doesn't exist)", outcome(bob))

    def spend(amount: int) -> Any:
        return walk.call(
            "UpdateItem",
            Key=alice,
            UpdateExpression="SET credits = credits - :a",
            ConditionExpression="credits >= :a AND #s = :active",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":a": amount, ":active": ACTIVE},
        )

    walk.result("Spend 7 credits", outcome(spend(7)))
    walk.result("Spend 7 more (only 3 left)", outcome(spend(7)))
    failed = walk.call(
        "UpdateItem",
        Key=alice,
        UpdateExpression="SET credits = credits - :a",
        ConditionExpression="credits >= :a",
        ExpressionAttributeValues={":a": 7},
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    walk.result("Item at failure time", failed.item)
    if failed.item is None:
        walk.note(
            "(this server returned no item: it ignores ReturnValuesOnConditionCheckFailure, as DynamoDB "
            "Local 1.x does; AWS returns the item as it was)"
        )
