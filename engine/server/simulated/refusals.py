"""How the aws-like model says no: DynamoDB's error for a throttled key or a cancelled transaction, and the JSON
body the server answers with."""

from __future__ import annotations

import json
from typing import Any

from engine.server.faithful.limits import Refused

CONFLICT_MESSAGE = "Transaction is ongoing for the item"


def throttled() -> Refused:
    """A request past its partition key's bucket (botocore retries it per the run's retry policy)."""
    return Refused(
        "ProvisionedThroughputExceededException",
        "The level of throughput for one partition key was exceeded (simulated per-key ceiling)",
    )


def cancelled(reasons: list[dict[str, str]]) -> Refused:
    """A transaction cancelled whole, one reason per item it names, in its order."""
    codes = ", ".join(r["Code"] for r in reasons)
    return Refused(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )


def encode_error(refused: Refused) -> bytes:
    """DynamoDB's JSON error body, with the cancellation reasons of a cancelled transaction."""
    body: dict[str, Any] = {"__type": f"com.amazonaws.dynamodb.v20120810#{refused.code}", "message": refused.message}
    body.update(refused.extra)
    return json.dumps(body).encode()
