"""The witnesses of conditional writes' broken rules (unguarded): a create over a user another client had
created, a spend past the balance, a payment of an order already paid, a spend that landed on a suspended
user, a rename that made a ghost of a closed member, a spend a later create wiped out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import ABSENT, Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds
from engine.explain.witness import Anomaly, Edge, Relation, Step, Witness, before, clients
from engine.patterns.conditional_writes.invariants import (
    BALANCE_NEVER_NEGATIVE,
    NO_GHOST,
    ONE_WINNER,
    PAID_ONCE,
    SPENDS_ADD_UP,
    SPENDS_ONLY_WHILE_ACTIVE,
)
from engine.patterns.conditional_writes.shared import ACTIVE
from engine.record.history import Call, Outcome
from engine.words import client_name, plural

PATTERN = "conditional-writes"


def _ok(calls: Calls, action: str) -> list[tuple[int, Call]]:
    return [(s, c) for s, c in calls.where(action) if c.outcome is Outcome.OK]


def _last_before(
    calls: Calls, action: str, key: str, call: Call, *, other_client: bool = True
) -> tuple[int, Call] | None:
    """The latest acknowledged `action` on `key` that had returned before `call` was sent."""
    found = [
        (s, c)
        for s, c in _ok(calls, action)
        if c.key == key and before(c, call) and (not other_client or c.client != call.client)
    ]
    return max(found, key=lambda f: f[1].complete_ns) if found else None


@finds(PATTERN, ONE_WINNER)
def overwritten_user(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A create that came back with the old item (it replaced a user), and the create it replaced."""
    for seq, create in _ok(calls, "create-user"):
        if not create.detail.get("overwrote"):
            continue
        # The create it replaced: another client's acknowledged create of the same user, sent before this one
        # returned; one that had returned before this one was sent is certainly the one overwritten.
        others = [
            (s, c)
            for s, c in _ok(calls, "create-user")
            if c.key == create.key and c.client != create.client and c.invoke_ns < create.complete_ns
        ]
        others.sort(key=lambda o: (not before(o[1], create), -o[1].complete_ns))
        first = others[0] if others else None
        steps = [Step(seq, create, "created the user, and got the old item back: it replaced one")]
        edges = []
        if first is not None:
            steps.append(Step(first[0], first[1], "created the user"))
            if before(first[1], create):
                edges.append(Edge(seq, Relation.OVERWROTE, first[0]))
        story = (
            f"{clients([create.client, first[1].client])} both created {create.key}; both were told it worked; "
            "the later put replaced the first user, whose sign-up vanished"
            if first
            else f"{client_name(create.client)} created {create.key} and got the old item back: it replaced a "
            "user another create had made, whose sign-up vanished"
        )
        return Witness(
            anomaly=Anomaly.LOST_UPDATE,
            invariant=ONE_WINNER,
            key=create.key,
            steps=tuple(steps),
            story=story,
            edges=tuple(edges),
        )
    return None


@finds(PATTERN, BALANCE_NEVER_NEGATIVE)
def overdraft(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A spend the server answered with a balance below zero, the read its client checked, and a spend of
    another client that landed between them."""
    for seq, spend in _ok(calls, "spend"):
        after = spend.detail.get("credits_after")
        if after is None or after >= 0:
            continue
        amount = spend.detail.get("amount")
        steps = [Step(seq, spend, f"spent {amount}: the balance became {after}")]
        read = calls.previous(seq, "read-credits", spend.key)
        if read is not None:
            steps.append(Step(read[0], read[1], f"read enough credits for {amount}"))
            between = [
                (s, c)
                for s, c in _ok(calls, "spend")
                if c.key == spend.key
                and c.client != spend.client
                and c.complete_ns > read[1].invoke_ns
                and c.invoke_ns < spend.complete_ns
            ]
            steps += [Step(s, c, f"spent {c.detail.get('amount')}") for s, c in between[:1]]
        others = [st.call.client for st in steps if st.call.client != spend.client]
        between_text = f"{clients(others)} spent meanwhile; " if others else ""
        return Witness(
            anomaly=Anomaly.OVERSELL,
            invariant=BALANCE_NEVER_NEGATIVE,
            key=spend.key,
            steps=tuple(steps),
            story=(
                f"{client_name(spend.client)} checked {spend.key} had credits for {amount}; {between_text}"
                f"{client_name(spend.client)}'s spend landed anyway and left the balance at {after}"
            ),
        )
    return None


@finds(PATTERN, PAID_ONCE)
def paid_twice(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A payment that found the order already PAID, and the payment that made it so."""
    for seq, pay in _ok(calls, "pay"):
        if pay.detail.get("from") != "PAID":
            continue
        first = next(
            (
                (s, c)
                for s, c in _ok(calls, "pay")
                if c.key == pay.key and s != seq and c.detail.get("from") == "PENDING"
            ),
            None,
        )
        if first is None:
            continue
        steps = [Step(seq, pay, "paid: the order was already PAID"), Step(first[0], first[1], "paid: PENDING → PAID")]
        for s, c in (first, (seq, pay)):
            read = calls.previous(s, "read-order", c.key)
            if read is not None:
                steps.append(Step(read[0], read[1], "read PENDING"))
        return Witness(
            anomaly=Anomaly.DOUBLE_APPLY,
            invariant=PAID_ONCE,
            key=pay.key,
            steps=tuple(steps),
            story=(
                f"{clients([pay.client, first[1].client])} both read {pay.key} PENDING; both paid it; the order "
                "was paid twice"
            ),
            edges=(Edge(seq, Relation.OVERWROTE, first[0]),),
        )
    return None


@finds(PATTERN, SPENDS_ONLY_WHILE_ACTIVE)
def spend_on_suspended(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A spend the server answered with a status other than active, the read its client checked, the suspend."""
    for seq, spend in _ok(calls, "spend"):
        status = spend.detail.get("status_after", ACTIVE)
        if status == ACTIVE:
            continue
        steps = [Step(seq, spend, f"spent {spend.detail.get('amount')}: the user was {status}")]
        read = calls.previous(seq, "read-credits", spend.key)
        if read is not None:
            steps.append(Step(read[0], read[1], "read the user active"))
        suspend = _last_before(calls, "suspend", spend.key, spend)
        if suspend is not None:
            steps.append(Step(suspend[0], suspend[1], "suspended the user"))
        return Witness(
            anomaly=Anomaly.STALE_READ,
            invariant=SPENDS_ONLY_WHILE_ACTIVE,
            key=spend.key,
            steps=tuple(steps),
            story=(
                f"{client_name(spend.client)} read {spend.key} active"
                + (f"; {client_name(suspend[1].client)} suspended it" if suspend else "")
                + f"; the spend landed on a {status} user"
            ),
        )
    return None


@finds(PATTERN, SPENDS_ADD_UP)
def spend_wiped(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """An acknowledged spend, then a create that replaced the user with full credits: sent after the spend
    returned, or overlapping it when the user it replaced had the balance that spend left (the create's old item
    is the spend's result)."""
    for seq, create in _ok(calls, "create-user"):
        if not create.detail.get("overwrote"):
            continue
        spend = _last_before(calls, "spend", create.key, create, other_client=False) or _replaced_spend(calls, create)
        if spend is None:
            continue
        amount, left = spend[1].detail.get("amount"), create.detail.get("old_credits")
        replaced = "" if left is None else f" (the user it replaced had {plural(left, 'credit')} left)"
        return Witness(
            anomaly=Anomaly.LOST_UPDATE,
            invariant=SPENDS_ADD_UP,
            key=create.key,
            steps=(
                Step(spend[0], spend[1], f"spent {amount}"),
                Step(seq, create, "created the user again, with full credits" + replaced),
            ),
            story=(
                f"{client_name(spend[1].client)} spent {amount} of {create.key}'s credits; "
                f"then {client_name(create.client)}'s create replaced the user with full credits{replaced}; "
                "the spend vanished"
            ),
            edges=(Edge(seq, Relation.OVERWROTE, spend[0]),),
        )
    return None


def _replaced_spend(calls: Calls, create: Call) -> tuple[int, Call] | None:
    """The acknowledged spend whose result the create replaced: sent before the create returned, and leaving the
    balance the create's old item had."""
    left = create.detail.get("old_credits")
    if left is None:
        return None
    found = [
        (s, c)
        for s, c in _ok(calls, "spend")
        if c.key == create.key and c.invoke_ns < create.complete_ns and c.detail.get("credits_after") == left
    ]
    return max(found, key=lambda f: f[1].complete_ns) if found else None


@finds(PATTERN, NO_GHOST)
def ghost(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A rename that came back with no old item (it created one), after a close of that member."""
    for seq, rename in _ok(calls, "rename"):
        if not rename.detail.get("created"):
            continue
        close = _last_before(calls, "close", rename.key, rename, other_client=False)
        steps = [Step(seq, rename, "renamed: no old item came back, so it created one")]
        if close is not None:
            steps.append(Step(close[0], close[1], "closed (deleted) the member"))
        return Witness(
            anomaly=Anomaly.STALE_READ,
            invariant=NO_GHOST,
            key=rename.key,
            steps=tuple(steps),
            story=(
                (f"{client_name(close[1].client)} closed {rename.key}; " if close else "")
                + f"{client_name(rename.client)}'s rename then wrote to the member as if it still existed, "
                "and made a ghost item with a name and nothing else"
            ),
        )
    return None


@operations(PATTERN)
def item_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """What each write means, sent with its condition or not: a create inserts a user that must not exist, a
    payment moves an order from PENDING to PAID, a rename updates a member that must exist, a close deletes
    it. A refusal of the condition says the item was not in that state at some instant of the call. Spends
    and suspends are not modelled (a create resets the credits they move: two attributes of one item)."""
    ops: list[Op | None] = []
    initial: dict[str, Any] = {}
    for seq, call in calls:
        if call.action == "create-user":
            ops.append(op_of(calls, seq, Kind.INSERT, value="user"))
        elif call.action == "pay":
            initial[call.key] = "PENDING"
            ops.append(op_of(calls, seq, Kind.CAS, read_action="read-order", expect="PENDING", value="PAID"))
        elif call.action == "rename":
            initial[call.key] = "member"
            ops.append(op_of(calls, seq, Kind.READ_NOT, value=ABSENT))
        elif call.action == "close":
            initial[call.key] = "member"
            ops.append(op_of(calls, seq, Kind.REMOVE))
    for _, call in calls.where("create-user"):
        initial[call.key] = ABSENT
    return Reading([op for op in ops if op is not None], initial)
