"""The witnesses of transactions' broken rules (separate-writes): a resent order whose put was refused went on
to take the stock and count the order again, so one order moved the stock and the count twice."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import ABSENT, Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds
from engine.explain.witness import Anomaly, Step, Witness, applied
from engine.patterns.transactions.invariants import COUNTS_AGREE, RESEND_APPLIES_ONCE
from engine.record.history import Call, Outcome
from engine.words import client_name

PATTERN = "transactions"


def _twice(calls: Calls, invariant: str, action: str, says: str, harm: str) -> Witness | None:
    """Two applied calls of `action` for one order: each separate write is one step of the order, once."""
    by_order: dict[tuple[str, str], list[tuple[int, Call]]] = defaultdict(list)
    for seq, call in calls.where(action):
        if applied(call) and "order" in call.detail:
            by_order[(str(call.detail.get("customer")), str(call.detail["order"]))].append((seq, call))
    for (customer, order), group in by_order.items():
        if len(group) < 2:
            continue
        pair = group[:2]
        steps = [Step(s, c, says + (" (the resend)" if c.detail.get("resend") else "")) for s, c in pair]
        resend = next((c for _, c in pair if c.detail.get("resend")), pair[1][1])
        put = calls.previous(pair[1][0], "put-order", pair[1][1].key)
        if put is not None and put[1].detail.get("resend"):
            steps.append(Step(put[0], put[1], f"put the order again: {put[1].outcome.value}"))
        return Witness(
            anomaly=Anomaly.DOUBLE_APPLY,
            invariant=invariant,
            key=pair[0][1].key,
            steps=tuple(steps),
            story=(
                f"{client_name(resend.client)} placed order {order} of {customer} and sent it again; the separate "
                f"writes have no request token, so the resend {harm}"
            ),
        )
    return None


@finds(PATTERN, COUNTS_AGREE)
def stock_taken_twice(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return _twice(calls, COUNTS_AGREE, "take-stock", "took the order's stock", "took the stock twice for one order")


@finds(PATTERN, RESEND_APPLIES_ONCE)
def counted_twice(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return _twice(calls, RESEND_APPLIES_ONCE, "count-order", "counted the order", "counted one order twice")


@operations(PATTERN)
def order_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each order is placed once: a transaction (or its resend under the same token) places it if it is not
    there, the separate writes put it (refused when it is there), take its stock once and count it once; a
    snapshot reads whether it is there. The shared stock and the customers' counts are not modelled (each is
    moved by many orders' calls, recorded under the orders' keys)."""
    ops: list[Op | None] = []
    initial: dict[str, Any] = {}
    for seq, call in calls:
        initial[call.key] = ABSENT
        if call.action in ("place-order", "resend-order"):
            if call.outcome is not Outcome.FAIL:  # cancelled: nothing applied, and the reasons say why
                ops.append(op_of(calls, seq, Kind.SETNX, value="placed"))
        elif call.action == "put-order":
            ops.append(op_of(calls, seq, Kind.INSERT, value="placed"))
        elif call.action in ("take-stock", "count-order"):
            obj = f"{call.key} {call.action}"
            initial[obj] = ABSENT
            ops.append(op_of(calls, seq, Kind.INSERT, obj=obj, value="done"))
        elif call.action == "snapshot" and "order_present" in call.detail:
            present = "placed" if call.detail["order_present"] else ABSENT
            ops.append(op_of(calls, seq, Kind.READ, value=present))
    return Reading([op for op in ops if op is not None], initial)
