"""DynamoDB error codes and operations by what they mean to a caller: a leaf that the record, the run's summary
and the dashboard's frames read without importing how calls are made."""

from __future__ import annotations

from collections.abc import Mapping

# Refusals for load, not for the request: sent again, the same call may well be taken.
THROTTLED = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"})
READS = frozenset({"GetItem", "Query", "Scan", "TransactGetItems", "BatchGetItem", "DescribeTable"})
# Exceptions after which the request may have been applied: the request left, the answer did not come back.
AMBIGUOUS = frozenset(
    {
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ResponseStreamingError",
        "IncompleteReadError",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


def conflicts(
    errors: Mapping[str, int],
    refusals: Mapping[tuple[str, str], int] | None = None,
    business: Mapping[str, str] | None = None,
) -> int:
    """Calls refused because another client got there first: refused conditions and cancelled transactions,
    less the pattern's business refusals (sold out, out of stock: `Pattern.business_refusals`) when the
    refusals by action are known (History.counts()["refusals"])."""
    total = sum(
        n
        for code, n in errors.items()
        if code in ("ConditionalCheckFailedException", "TransactionCanceledException", "TransactionConflictException")
    )
    if refusals and business:
        total -= sum(n for (action, code), n in refusals.items() if business.get(action) == code)
    return total
