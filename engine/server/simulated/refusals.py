"""How the aws-like model says no: DynamoDB's error for a throttled key or a cancelled transaction (its body is
written by engine.server.wire, as every other refusal's)."""

from __future__ import annotations

from engine.server.wire import Refused

CONFLICT_MESSAGE = "Transaction is ongoing for the item"


# DynamoDB's own wording (as its answers give it): on-demand tables answer ThrottlingException, provisioned ones
# ProvisionedThroughputExceededException; a cancelled transaction's ThrottlingError reason uses the former's.
ON_DEMAND_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table"
    " or index so please try again shortly. If exceptions persist, check if you have a hot key:"
    " https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
PROVISIONED_MESSAGE = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your"
    " provisioning level with the UpdateTable API."
)
ACCOUNT = "123456789012"  # moto's account: the ARN a ThrottlingReason names


def key_range_reason(region: str, table: str, index: str, bucket: str) -> dict[str, str]:
    """One ThrottlingReason of a hot partition key: ResourceType+OperationType+LimitType (API_ThrottlingReason),
    e.g. TableWriteKeyRangeThroughputExceeded, with the table's (or index's) ARN."""
    resource = f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{table}" + (f"/index/{index}" if index else "")
    kind = ("Index" if index else "Table") + ("Write" if bucket == "w" else "Read")
    return {"reason": f"{kind}KeyRangeThroughputExceeded", "resource": resource}


def throttled(mode: str = "on-demand", reasons: list[dict[str, str]] | None = None) -> Refused:
    """A request past a partition key's bucket (botocore retries it per the run's retry policy): the error of the
    table's capacity mode, with its ThrottlingReasons (the member is spelt throttlingReasons on ThrottlingException
    and ThrottlingReasons on ProvisionedThroughputExceededException, as in DynamoDB's API model)."""
    if mode == "provisioned":
        return Refused(
            "ProvisionedThroughputExceededException", PROVISIONED_MESSAGE, extra={"ThrottlingReasons": reasons or []}
        )
    return Refused("ThrottlingException", ON_DEMAND_MESSAGE, extra={"throttlingReasons": reasons or []})


THROTTLED_REASON = {"Code": "ThrottlingError", "Message": ON_DEMAND_MESSAGE}


def cancelled(reasons: list[dict[str, str]]) -> Refused:
    """A transaction cancelled whole, one reason per item it names, in its order."""
    codes = ", ".join(r["Code"] for r in reasons)
    return Refused(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )
