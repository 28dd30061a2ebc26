"""The seed's "In practice" scene of idempotency keys: a charge, its retry with the same key, a new key."""

from __future__ import annotations

import itertools
import time
from typing import Any

from engine.patterns.idempotency_keys.shared import CHARGE, COMPLETED, DAY_S, IN_PROGRESS, charge_key, record_key
from engine.record.calls import ConditionFailed


def in_practice(walk: Any) -> None:
    charge_ids = itertools.count(1)

    def charge_card(request_id: str, amount: int) -> dict[str, Any]:
        """The seed's wrapped handler; the charge is a real item instead of a Python list."""
        key = record_key(request_id)
        claim = walk.call(
            "PutItem",
            Item={**key, "status": IN_PROGRESS, "expiresAt": int(time.time()) + DAY_S},
            ConditionExpression="attribute_not_exists(PK)",
        )
        if isinstance(claim, ConditionFailed):
            record = walk.read("GetItem", Key=key, ConsistentRead=True)["Item"]
            if record["status"] == COMPLETED:
                return _response(record["response"])
            raise RuntimeError("request already in progress - retry later")
        charge_id = f"ch_{next(charge_ids)}"
        walk.call("PutItem", show=False, Item={**charge_key(charge_id), "requestId": request_id, "amount": amount})
        response = {"chargeId": charge_id, "amount": amount}
        walk.call(
            "UpdateItem",
            Key=key,
            UpdateExpression="SET #s = :done, #r = :response",
            ExpressionAttributeNames={"#s": "status", "#r": "response"},
            ExpressionAttributeValues={":done": COMPLETED, ":response": response},
        )
        return response

    walk.result("First call", charge_card("req-123", 50))
    walk.result("Client retries same key", charge_card("req-123", 50))
    walk.result("New key", charge_card("req-456", 20))
    charges = walk.read(
        "Scan", show=False, FilterExpression="SK = :charge", ExpressionAttributeValues={":charge": CHARGE}
    )["Items"]
    walk.result(
        "Card was actually charged",
        [int(c["amount"]) for c in sorted(charges, key=lambda c: int(c["PK"].rsplit("_", 1)[1]))],
    )


def _response(stored: dict[str, Any]) -> dict[str, Any]:
    return {"chargeId": stored["chargeId"], "amount": stored["amount"]}
