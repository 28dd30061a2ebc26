"""The witnesses of GSI consistency's broken rules (gsi-read): a read through the index sent after its own
client's write was acknowledged, which did not see that write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import ABSENT, Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds, key_of
from engine.explain.witness import Anomaly, Step, Witness, before
from engine.patterns.gsi_consistency import (
    DETAIL_OP,
    DETAIL_STALE,
    READ_BACK,
    READ_YOUR_WRITES,
    VISIBLE_WITHIN_LAG,
    WRITE,
    email_key,
)
from engine.record.history import Call, Outcome
from engine.words import client_name

PATTERN = "gsi-consistency"


@finds(PATTERN, READ_YOUR_WRITES, VISIBLE_WITHIN_LAG)
def stale_read(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """The acknowledged write and a stale read of it sent after it returned: the latest such read, which
    shows the lag longest (the read-your-writes rule is broken by any of them)."""
    writes = {(c.client, c.detail.get(DETAIL_OP)): (s, c) for s, c in calls.where(WRITE) if c.outcome is Outcome.OK}
    found: tuple[int, int, Call, tuple[int, Call]] | None = None
    for seq, read in calls.where(READ_BACK):
        if read.outcome is not Outcome.OK or not read.detail.get(DETAIL_STALE):
            continue
        acked = writes.get((read.client, read.detail.get(DETAIL_OP)))
        if acked is None or not before(acked[1], read):
            continue
        late = read.invoke_ns - acked[1].complete_ns
        if found is None or late > found[0]:
            found = (late, seq, read, acked)
    if found is None:
        return None
    late, seq, read, (write_seq, write) = found
    version = write.detail.get("version")
    return Witness(
        anomaly=Anomaly.STALE_READ,
        invariant=key_of(invariant),
        key=write.key,
        steps=(
            Step(write_seq, write, f"wrote version {version}, email {read.key}"),
            Step(seq, read, f"queried the index for {read.key}: not found"),
        ),
        story=(
            f"{client_name(write.client)} wrote {write.key} (email {read.key}) and was told it worked; "
            f"{late / 1e6:.0f} ms later its own query of the index for that email found nothing"
        ),
    )


@operations(PATTERN)
def profile_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """base-table-read: each user's version is a register, written by the client's puts and read back by key.
    gsi-read: each email is an object, there from the put that set it until the client's next put moves the
    user to a new email; a query of the index reads whether it is there. A linearizable index would never
    miss a write acknowledged before the query was sent."""
    ops: list[Op | None] = []
    initial: dict[str, Any] = {}
    for seq, call in calls:
        op = call.detail.get(DETAIL_OP)
        if op is None:
            continue
        if call.action == WRITE:
            email = email_key(call.client, int(op))
            initial[call.key] = initial[email] = ABSENT
            ops.append(op_of(calls, seq, Kind.WRITE, value=int(op) + 1))
            ops.append(op_of(calls, seq, Kind.WRITE, obj=email, value="there"))
            if int(op) > 0:
                ops.append(op_of(calls, seq, Kind.REMOVE, obj=email_key(call.client, int(op) - 1)))
        elif call.action == READ_BACK and call.outcome is Outcome.OK and DETAIL_STALE in call.detail:
            stale = bool(call.detail[DETAIL_STALE])
            if call.op == "Query":
                ops.append(op_of(calls, seq, Kind.READ, value=ABSENT if stale else "there"))
            else:
                ops.append(op_of(calls, seq, Kind.READ_NOT if stale else Kind.READ, value=int(op) + 1))
    return Reading([op for op in ops if op is not None], initial)
