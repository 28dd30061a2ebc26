"""The witnesses of idempotency keys' broken rules (without-key): one logical request charged under two charge
ids, each charge certainly made, so the card was charged twice and the caller got two different replies."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import ABSENT, Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds, key_of
from engine.explain.witness import Anomaly, Step, Witness, applied, clients
from engine.patterns.idempotency_keys.invariants import ONE_CHARGE, REUSE_REFUSED, SAME_REPLY
from engine.patterns.idempotency_keys.shared import CHARGE_CARD, DETAIL_CHARGE, DETAIL_REQUEST, DETAIL_REUSE
from engine.record.history import Call, Outcome

PATTERN = "idempotency-keys"


def _says(call: Call) -> str:
    lost = (
        "; its answer was lost, botocore sent it again and it was answered"
        if call.detail.get("ambiguous_retry")
        else ""
    )
    return f"charged {call.detail.get('amount')} as {call.detail.get(DETAIL_CHARGE)}{lost}"


@finds(PATTERN, ONE_CHARGE, SAME_REPLY)
def charged_twice(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """Two charges of one request (same amount, not a reuse) under different charge ids, both certainly made."""
    by_request: dict[str, list[tuple[int, Call]]] = defaultdict(list)
    for seq, call in calls.where(CHARGE_CARD):
        if applied(call) and not call.detail.get(DETAIL_REUSE) and call.detail.get(DETAIL_REQUEST):
            by_request[str(call.detail[DETAIL_REQUEST])].append((seq, call))
    for request, charges in sorted(by_request.items(), key=lambda kv: kv[1][0][0]):
        first = charges[0]
        other = next(
            (c for c in charges[1:] if c[1].detail.get(DETAIL_CHARGE) != first[1].detail.get(DETAIL_CHARGE)), None
        )
        if other is None:
            continue
        pair = (first, other)
        ids = " and ".join(str(c.detail.get(DETAIL_CHARGE)) for _, c in pair)
        who = {c.client for _, c in pair}
        handled = (
            f"{clients(who)} both handled request {request}"
            if len(who) > 1
            else f"{clients(who)} handled request {request} twice"
        )
        return Witness(
            anomaly=Anomaly.DOUBLE_APPLY,
            invariant=key_of(invariant),
            key=request,
            steps=tuple(Step(s, c, _says(c)) for s, c in pair),
            story=(f"{handled}, with nothing to say it had been handled already: the card was charged twice ({ids})"),
        )
    return None


@finds(PATTERN, REUSE_REFUSED)
def reuse_charged(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A charge certainly made for a request id reused with another amount, and the request's first charge."""
    first: dict[str, tuple[int, Call]] = {}
    for seq, call in calls.where(CHARGE_CARD):
        request = call.detail.get(DETAIL_REQUEST)
        if request is not None and applied(call) and not call.detail.get(DETAIL_REUSE):
            first.setdefault(str(request), (seq, call))
    for seq, call in calls.where(CHARGE_CARD):
        request = str(call.detail.get(DETAIL_REQUEST))
        original = first.get(request)
        if not call.detail.get(DETAIL_REUSE) or not applied(call) or original is None:
            continue
        if original[1].detail.get("amount") == call.detail.get("amount"):
            continue
        return Witness(
            anomaly=Anomaly.DOUBLE_APPLY,
            invariant=REUSE_REFUSED,
            key=request,
            steps=(Step(original[0], original[1], _says(original[1])), Step(seq, call, _says(call) + " (reused id)")),
            story=(
                f"request {request} was charged {original[1].detail.get('amount')}; {clients([call.client])} sent "
                f"the same id with {call.detail.get('amount')} and was charged again: nothing compared the payloads"
            ),
        )
    return None


@operations(PATTERN)
def request_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each charge of a request is one set-if-absent of the request's charge: the first charge made is the one
    every later charge of that request must be (a retry under the same charge id), as an idempotent request
    means. A charge answered after botocore resent it was certainly made: it counts as made."""
    ops: list[Op] = []
    for seq, call in calls.where(CHARGE_CARD):
        d = call.detail
        if d.get(DETAIL_REUSE) or DETAIL_CHARGE not in d or DETAIL_REQUEST not in d:
            continue
        if call.outcome is Outcome.FAIL:
            continue
        outcome = Outcome.OK if applied(call) else Outcome.INFO
        op = op_of(calls, seq, Kind.SETNX, obj=str(d[DETAIL_REQUEST]), value=str(d[DETAIL_CHARGE]), outcome=outcome)
        if op is not None:
            ops.append(op)
    return Reading(ops, {op.obj: ABSENT for op in ops})
