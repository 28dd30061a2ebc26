"""The Run page's conflicts by cause while a run goes on, from History.counts() alone."""

from __future__ import annotations

from engine.summary import live_causes


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
