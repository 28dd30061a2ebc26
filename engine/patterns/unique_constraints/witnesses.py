"""The witnesses of unique constraints' broken rule (check-then-write): two users both found an email free in
the index and both wrote it, so two users held one email at once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import Kind, Op, Reading, operations
from engine.explain.registry import finds
from engine.explain.witness import Anomaly, Step, Witness, clients
from engine.patterns.unique_constraints import CHANGE_EMAIL, CHECK_EMAIL, SIGN_UP
from engine.patterns.unique_constraints.invariants import NO_SHARED_EMAIL
from engine.record.history import Call, Outcome

PATTERN = "unique-constraints"


@finds(PATTERN, NO_SHARED_EMAIL)
def shared_email(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """An acknowledged write of an email that returned while another user certainly held it: from the end of
    that user's acknowledged write of it to the sending of that user's next write (only a user's own client
    writes its profile)."""
    by_user: dict[str, list[tuple[int, Call]]] = defaultdict(list)
    for seq, call in calls:
        if call.action in (SIGN_UP, CHANGE_EMAIL) and "user" in call.detail:
            by_user[str(call.detail["user"])].append((seq, call))
    held = []  # (email, from, until, seq, call)
    for writes in by_user.values():
        writes.sort(key=lambda w: w[1].invoke_ns)
        for i, (seq, call) in enumerate(writes):
            if call.outcome is Outcome.OK:
                until = writes[i + 1][1].invoke_ns if i + 1 < len(writes) else 2**63 - 1
                held.append((str(call.detail["email"]).lower(), call.complete_ns, until, seq, call))
    for email, start, _, seq, call in sorted(held, key=lambda h: h[1]):
        for other_email, begun, until, other_seq, other in held:
            if other_email != email or other.detail["user"] == call.detail["user"] or not begun < start < until:
                continue
            # Who did it as the timeline names them, then whose profiles they wrote.
            users = f"{clients((other.client, call.client))} (users {other.detail['user']} and {call.detail['user']})"
            steps = [Step(other_seq, other, f"wrote email {email}"), Step(seq, call, f"wrote email {email}")]
            for s in (other_seq, seq):
                check = calls.previous(s, CHECK_EMAIL)
                if check is not None and check[1].detail.get("taken") == 0:
                    steps.append(Step(check[0], check[1], f"found {email} free"))
            return Witness(
                anomaly=Anomaly.DUPLICATE_UNIQUE,
                invariant=NO_SHARED_EMAIL,
                key=email,
                steps=tuple(steps),
                story=f"{users} both found {email} free in the index; both wrote it; two users hold one email",
            )
    return None


@operations(PATTERN)
def email_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each email (lower-cased) is an object holding the user who has it: a sign-up or a change inserts the
    user on the new email (which must be free), a change removes the user from the old one. Refusals are left
    out (a cancelled transaction may have been refused for the user's item, not the email)."""
    ops: list[Op] = []
    for seq, call in calls:
        if call.action not in (SIGN_UP, CHANGE_EMAIL) or call.outcome is Outcome.FAIL or "email" not in call.detail:
            continue
        d = call.detail
        for obj, kind, value in (
            (str(d["email"]).lower(), Kind.INSERT, str(d["user"])),
            (d.get("old"), Kind.REMOVE, None),
        ):
            if obj:
                ops.append(
                    Op(
                        obj=str(obj).lower(),
                        kind=kind,
                        invoke_ns=call.invoke_ns,
                        complete_ns=call.complete_ns,
                        outcome=call.outcome,
                        seqs=(seq,),
                        value=value,
                    )
                )
    return Reading(ops)
