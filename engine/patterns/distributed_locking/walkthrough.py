"""The seed's "In practice" scene of distributed locking: acquire, contend, heartbeat, release, a crashed
holder's lease expiring, and a zombie's release refused by the owner check (the seed's epoch seconds)."""

from __future__ import annotations

import time
from typing import Any

from engine.patterns.base import succeeded
from engine.patterns.distributed_locking.shared import ACQUIRE_CONDITION, OWNER


def in_practice(walk: Any) -> None:
    key = {"PK": "LOCK#invoice-run", "SK": "LOCK"}
    lease_s = 2

    def acquire(who: str) -> bool | str:
        now = int(time.time())
        return succeeded(
            walk.call(
                "PutItem",
                Item={**key, "owner": who, "expiresAt": now + lease_s},
                ConditionExpression=ACQUIRE_CONDITION,
                ExpressionAttributeValues={":now": now},
            )
        )

    def owner_checked(op: str, who: str, **params: Any) -> bool | str:
        return succeeded(
            walk.call(
                op,
                Key=key,
                ConditionExpression="#owner = :me",
                ExpressionAttributeNames=OWNER,
                ExpressionAttributeValues={":me": who, **params.pop("values", {})},
                **params,
            )
        )

    walk.result("worker-A acquires", acquire("worker-A"))
    walk.result("worker-B tries while A holds it", acquire("worker-B"))
    owner_checked(
        "UpdateItem",
        "worker-A",
        UpdateExpression="SET expiresAt = :later",
        values={":later": int(time.time()) + lease_s},
    )
    walk.note("...")
    walk.result("worker-A releases", owner_checked("DeleteItem", "worker-A"))
    walk.result("worker-B acquires after release", acquire("worker-B"))
    walk.note("... worker-B crashes, waiting 3s for the lease to expire ...")
    time.sleep(lease_s + 1)
    walk.result("worker-C takes over the expired lock", acquire("worker-C"))
    walk.result("zombie worker-B tries to release C's lock", owner_checked("DeleteItem", "worker-B"))
    walk.result("lock still held by", walk.read("GetItem", Key=key)["Item"]["owner"])
