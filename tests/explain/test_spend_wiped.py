"""A spend wiped by a create of the same user: the create may overlap the spend in time (a racy run of four clients
with no pause between calls does that), and then what proves the spend landed first is the create's old item,
which holds the balance the spend left. Shown on calls written out here, since a live run cannot make that overlap
certain."""

from __future__ import annotations

from typing import Any

from engine.explain import explain
from engine.patterns.conditional_writes.invariants import SPENDS_ADD_UP
from engine.record.history import Call, History, Outcome
from tests.explain.proofs import PROOFS

MS = 1_000_000
BROKEN = [{"key": SPENDS_ADD_UP, "name": "spends add up to credits taken", "holds": False}]


def _call(client: int, action: str, start_ms: int, end_ms: int, **detail: Any) -> Call:
    return Call(
        client=client,
        action=action,
        op="PutItem" if action == "create-user" else "UpdateItem",
        key="USER#u0",
        invoke_ns=start_ms * MS,
        complete_ns=end_ms * MS,
        outcome=Outcome.OK,
        detail=detail,
    )


def _explain(*calls: Call) -> Any:
    history = History(t0_ns=0)
    history.extend(calls)
    return explain("conditional-writes", history, BROKEN)[SPENDS_ADD_UP]


def test_a_create_overlapping_a_spend_that_replaced_the_spends_balance_wiped_it() -> None:
    spend = _call(1, "spend", 10, 30, amount=7, credits_after=93)
    create = _call(2, "create-user", 12, 40, op=0, overwrote=True, old_credits=93)
    witness = _explain(spend, create)
    assert witness is not None and witness.anomaly.value == "lost update"
    assert "the user it replaced had 93 credits left" in witness.story
    PROOFS[SPENDS_ADD_UP](witness)


def test_an_overlapping_create_that_replaced_another_balance_is_no_proof() -> None:
    spend = _call(1, "spend", 10, 30, amount=7, credits_after=93)
    create = _call(2, "create-user", 12, 40, op=0, overwrote=True, old_credits=100)
    assert _explain(spend, create) is None


def test_a_create_sent_after_the_spend_returned_still_proves_it_without_the_old_balance() -> None:
    spend = _call(1, "spend", 10, 20, amount=7, credits_after=93)
    create = _call(2, "create-user", 25, 40, op=0, overwrote=True)  # a recording made before old_credits was kept
    witness = _explain(spend, create)
    assert witness is not None
    PROOFS[SPENDS_ADD_UP](witness)
