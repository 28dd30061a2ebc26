"""The witnesses of distributed locking's broken rules (lease, no-lock): a worker whose lease ran out writes on
state another worker has read or written since; two workers read the same count and both wrote the next one;
two workers held the lease at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds
from engine.explain.shapes import same_read
from engine.explain.witness import Anomaly, Edge, Relation, Step, Witness, before
from engine.patterns.distributed_locking.invariants import COUNTER_MATCHES_WRITES, NO_STALE_WRITE, ONE_HOLDER
from engine.patterns.distributed_locking.shared import (
    ACQUIRE,
    DETAIL_EXPIRES_AT,
    DETAIL_HOLD,
    DETAIL_NOW,
    HEARTBEAT,
    RELEASE,
    WRITE,
)
from engine.record.history import Call, Outcome
from engine.words import client_name

PATTERN = "distributed-locking"


def _hold(call: Call) -> tuple[int, Any]:
    return call.client, call.detail.get(DETAIL_HOLD)


@finds(PATTERN, COUNTER_MATCHES_WRITES)
def lost_job(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return same_read(
        calls,
        COUNTER_MATCHES_WRITES,
        calls.where(WRITE),
        read_of=lambda c: c.detail.get("read"),
        read_action="read",
        said=lambda v: (f"read jobs = {v}", f"wrote jobs = {v + 1}"),
        story=lambda who, v, _: f"{who} both read jobs = {v}; both wrote {v + 1}; one job vanished from the count",
    )


@finds(PATTERN, NO_STALE_WRITE)
def stale_write(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A write sent after another worker's access that began after the writer's own read had ended."""
    accesses = [(s, c) for s, c in calls if c.action in ("read", WRITE) and c.outcome is Outcome.OK]
    writes_by_hold = {_hold(c): (s, c) for s, c in accesses if c.action == WRITE}
    for seq, write in sorted(writes_by_hold.values(), key=lambda w: w[1].invoke_ns):
        read = next(((s, c) for s, c in accesses if c.action == "read" and _hold(c) == _hold(write)), None)
        if read is None:
            continue
        between = [(s, c) for s, c in accesses if c.client != write.client and before(read[1], c) and before(c, write)]
        if not between:
            continue
        other_seq, other = between[0]
        value = write.detail.get("read")
        paused = " after a pause past its lease" if write.detail.get("paused") else ""
        if other.action == WRITE:
            other_says = f"wrote jobs = {other.detail.get('read', 0) + 1}"
        else:
            own = writes_by_hold.get(_hold(other))
            other_says = f"read jobs = {own[1].detail.get('read')}" if own else "read jobs"
        who, them = client_name(write.client), client_name(other.client)
        return Witness(
            anomaly=Anomaly.STALE_FENCED_WRITE,
            invariant=NO_STALE_WRITE,
            key=write.key,
            steps=(
                Step(read[0], read[1], f"read jobs = {value}"),
                Step(other_seq, other, other_says),
                Step(seq, write, f"wrote jobs = {value + 1 if value is not None else '?'}{paused}"),
            ),
            story=(
                f"{who} read jobs = {value}; then {them} {other_says}; "
                f"{who}'s write{paused} landed after, on state it had not seen"
            ),
            edges=(Edge(seq, Relation.OVERWROTE, other_seq),) if other.action == WRITE else (),
        )
    return None


@finds(PATTERN, ONE_HOLDER)
def two_owners(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    """A lease acquired while another worker's lease (acquire → release sent, or its expiry) was still running."""
    leases = []
    for seq, acquire in calls.where(ACQUIRE):
        if acquire.outcome is not Outcome.OK:
            continue
        hold = _hold(acquire)
        end, set_by = _expiry(acquire), (seq, acquire)
        for s, c in calls.where(HEARTBEAT):
            if _hold(c) == hold and c.outcome is Outcome.OK and _expiry(c) > end:
                end, set_by = _expiry(c), (s, c)
        for _, c in calls.where(RELEASE):
            if _hold(c) == hold:
                end = min(end, c.invoke_ns)  # a release sent may have freed the lock at once
        leases.append((acquire.complete_ns, end, seq, acquire, set_by))
    if not leases:
        return _two_inside(calls)
    leases.sort(key=lambda lease: lease[0])
    for i, (_, end, seq, first, set_by) in enumerate(leases):
        for start, _, later_seq, later, _ in leases[i + 1 :]:
            if start >= end:
                break
            if later.client != first.client:
                a, b = client_name(first.client), client_name(later.client)
                return Witness(
                    anomaly=Anomaly.TWO_OWNERS,
                    invariant=ONE_HOLDER,
                    key=first.key,
                    steps=(
                        Step(seq, first, "acquired the lease"),
                        *([Step(set_by[0], set_by[1], "renewed the lease")] if set_by[0] != seq else []),
                        Step(later_seq, later, "acquired the lease"),
                    ),
                    story=(
                        f"{a} acquired the lease; {b} acquired it {(start - first.complete_ns) / 1e6:.0f} ms later, "
                        f"while {a}'s lease still had {(end - start) / 1e6:.0f} ms to run; both believed they held it"
                    ),
                )
    return None


def _two_inside(calls: Calls) -> Witness | None:
    """No lock (no acquisitions): two workers inside the critical section at once, each section from the
    answer to its read to the sending of its write."""
    reads = {_hold(c): (s, c) for s, c in calls.where("read") if c.outcome is Outcome.OK}
    sections: list[tuple[int, int, tuple[int, Call], tuple[int, Call]]] = []
    for seq, sent in calls.where(WRITE):
        answered = reads.get(_hold(sent))
        if sent.outcome is Outcome.OK and answered is not None:
            sections.append((answered[1].complete_ns, sent.invoke_ns, answered, (seq, sent)))
    sections.sort(key=lambda section: section[0])
    for i, (_, end, read, write) in enumerate(sections):
        for start, _, other_read, other_write in sections[i + 1 :]:
            if start >= end:
                break
            if other_read[1].client == read[1].client:
                continue
            a, b = client_name(read[1].client), client_name(other_read[1].client)
            return Witness(
                anomaly=Anomaly.TWO_OWNERS,
                invariant=ONE_HOLDER,
                key=write[1].key,
                steps=(
                    Step(read[0], read[1], f"read jobs = {write[1].detail.get('read')}"),
                    Step(other_read[0], other_read[1], f"read jobs = {other_write[1].detail.get('read')}"),
                    Step(write[0], write[1], "wrote: left the critical section"),
                ),
                story=(
                    f"{a} read the resource and was inside the critical section; {b} read it too before {a} "
                    "wrote: with no lock, two workers were inside at once"
                ),
            )
    return None


# How far a call's own clock reading (detail mono_ns, taken just before it was sent) may sit from its recorded
# invoke time and still be the same clock; and what is taken off an expiry placed from the invoke time instead.
_SAME_CLOCK_NS = 1_000_000_000
_CLOCK_MARGIN_NS = 50_000_000


def _expiry(call: Call) -> int:
    """When the lease this acquire or heartbeat set runs out, on the clock the calls' times use. A live run's
    calls and mono_ns share one monotonic clock; a file's calls are on the run's clock from its start, so the
    expiry is placed from the call's own invoke time, a margin earlier (mono_ns came a moment before it)."""
    d = call.detail
    lease_ns = (int(d[DETAIL_EXPIRES_AT]) - int(d[DETAIL_NOW])) * 1_000_000
    mono = int(d["mono_ns"])
    if 0 <= call.invoke_ns - mono <= _SAME_CLOCK_NS:
        return mono + lease_ns
    return call.invoke_ns + lease_ns - _CLOCK_MARGIN_NS


@operations(PATTERN)
def resource_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each job is one add of 1 to the protected counter, from the holder's read to its write, returning the
    count it wrote. A write the fencing token refused did no job and says nothing of the count: left out. The
    lock item is not modelled (its calls record no state read)."""
    ops: list[Op] = []
    for seq, call in calls:
        if call.action != WRITE or call.outcome is Outcome.FAIL:
            continue
        read = call.detail.get("read")
        op = op_of(calls, seq, Kind.ADD, read_action="read", delta=1, ret=None if read is None else int(read) + 1)
        if op is not None:
            ops.append(op)
    keys = {c.key for _, c in calls}
    return Reading(
        ops,
        {"resource": 0},
        {k: f"{k}: the lock's calls record no state read" for k in keys if k != "resource"},
    )
