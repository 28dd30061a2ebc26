"""Conflicts by cause: the Run page's while a run goes on (History.counts() alone), and cancellations by reason."""

from __future__ import annotations

from engine.record.history import Call, History, Outcome
from engine.run.summary import cancellation_reasons, live_causes


def test_refusals_are_split_by_code_and_business_refusals_left_out() -> None:
    counts = {
        "errors": {
            "ConditionalCheckFailedException": 7,
            "TransactionConflictException": 3,
            "ThrottlingException": 2,
            "ProvisionedThroughputExceededException": 1,
            "TransactionCanceledException": 4,
        },
        # 5 of the refused conditions were tickets sold out: an outcome of the pattern, not a conflict
        "refusals": {("sell", "ConditionalCheckFailedException"): 5, ("buy", "TransactionCanceledException"): 1},
    }
    causes = live_causes(counts, {"sell": "ConditionalCheckFailedException"})
    assert causes == {"condition_refused": 2, "transaction_conflict": 3, "throttled": 3, "cancelled": 4}


def test_no_refusals_no_causes() -> None:
    assert live_causes({"errors": {}, "refusals": {}}) == dict.fromkeys(
        ("condition_refused", "transaction_conflict", "throttled", "cancelled"), 0
    )


def test_cancelled_transactions_are_counted_by_the_reasons_dynamodb_gave() -> None:
    history = History()
    reasons = [["None", "TransactionConflict"], ["ConditionalCheckFailed", "None"], ["TransactionConflict"] * 2, []]
    for i, why in enumerate(reasons):
        history.append(
            Call(
                client=i,
                action="place-order",
                op="TransactWriteItems",
                key="PRODUCT#1",
                invoke_ns=i,
                complete_ns=i + 1,
                outcome=Outcome.FAIL,
                error="TransactionCanceledException",
                detail={"reasons": why},
            )
        )
    history.append(Call(client=9, action="read", op="GetItem", key="k", invoke_ns=5, complete_ns=6, outcome=Outcome.OK))
    # Both-items-conflicted counts once: the count is of cancelled calls per reason, not of items.
    assert cancellation_reasons(history) == {"ConditionalCheckFailed": 1, "TransactionConflict": 2}
    assert cancellation_reasons(History()) == {}
