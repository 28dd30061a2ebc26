"""29 · Distributed locking: a lease item, heartbeats, owner-checked release, takeover, and fencing tokens.

A lease alone is not mutual exclusion: a worker paused past its lease (GC, swap, a slow disk) wakes up still
believing it holds the lock and writes over the next holder's work. A fencing token fixes that: every
acquisition increments a counter on the lock item, and the protected resource refuses any access carrying a
token older than the newest it has seen. The run's expiresAt is epoch milliseconds (short leases); the
walkthrough keeps the seed's epoch seconds.
"""

from __future__ import annotations

import bisect
import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.calls import Ambiguous, CallError, ClientContext, ConditionFailed
from engine.history import History
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant, rows
from engine.tables import Table

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_HOLDER = "at-most-one-holder-at-a-time"
NO_STALE_WRITE = "no-stale-write-lands"
COUNTER_MATCHES_WRITES = "protected-counter-acknowledged-writes"

# What the dashboard's view reads: the lock calls and the protected writes, with the lease in their details.
ACQUIRE = "acquire"
HEARTBEAT = "heartbeat"
RELEASE = "release"
WRITE = "write"
DETAIL_HOLD = "hold"
DETAIL_TOKEN = "token"
DETAIL_NOW = "now"
DETAIL_EXPIRES_AT = "expiresAt"
DETAIL_PAUSED = "paused"

LOCK = {"PK": "LOCK#job", "SK": "LOCK"}
RESOURCE = {"PK": "RESOURCE#job", "SK": "STATE"}
OWNER = {"#owner": "owner"}  # OWNER is a DynamoDB reserved word
ACQUIRE_CONDITION = "attribute_not_exists(PK) OR expiresAt < :now"
PAUSE_PAST_LEASE_S = 1.0  # a paused worker sleeps its lease plus this: time for another to take over and start


@dataclass(frozen=True, slots=True)
class Lease:
    """A lock this worker acquired; the lease variant's has no fencing token."""

    token: int | None


def worker(client: int) -> str:
    return f"worker-{client + 1}"


def _clock() -> tuple[int, int]:
    """(wall epoch ms for expiresAt, monotonic ns to place that expiry in the history).

    The monotonic reading comes first: if the thread is preempted between the two, the expiry only looks
    earlier than it was, so verify can never see an overlap the lock did not allow.
    """
    mono = time.monotonic_ns()
    return time.time_ns() // 1_000_000, mono


def _every(share: float, n: int) -> bool:
    """True for an evenly spread `share` of n = 1, 2, 3..., starting with the first: 0.03 picks 1, 35, 68..."""
    before, now = (math.floor(round(k * share, 9)) for k in (n - 2, n - 1))
    return share > 0 and now > before


class DistributedLocking(Pattern):
    name = "distributed-locking"
    seed = 29
    harm = Harm(
        "overlapping holders and stale writes", (ONE_HOLDER, NO_STALE_WRITE)
    )  # the sweep counts these per 1,000 ops
    title = "Distributed locking"
    problem = (
        "Several workers must not run the same job at once, and every machine has to see the lock. "
        "A lock with a lease survives a crashed holder, but a holder paused past its lease wakes up "
        "believing it still holds the lock and writes over its successor's work."
    )
    solution = (
        "The lock is an item: acquire with a conditional write (attribute_not_exists(PK) OR "
        "expiresAt < :now), heartbeat while owner = :me, release with an owner-checked write. Add a "
        "fencing token (ADD on every acquisition) that the protected resource checks on every access."
    )
    process_pool = False  # the hold counter that spreads pauses, and the waiters' count, are in memory
    variants = {
        "lease-fenced": Variant(
            "lease-fenced",
            True,
            "lease + fencing token: acquire with UpdateItem ADD fence (UPDATED_NEW); the "
            "resource accepts only lastToken <= :t; a paused worker's write is refused",
        ),
        "lease": Variant(
            "lease",
            False,
            "the seed's lease (put / heartbeat / owner-checked delete), no token: a worker paused "
            "past its lease still writes",
        ),
        "no-lock": Variant("no-lock", False, "read-modify-write of the resource with no lock at all"),
    }
    options = {
        "lease_ms": Option("lease_ms", 1000, "lease length; expiresAt = now + lease (epoch ms)", 100, 60_000),
        "work_ms": Option("work_ms", 10, "protected work per hold (a heartbeat halfway)", 0, 10_000),
        "pause_share": Option(
            "pause_share",
            0.03,
            "share of holds paused mid-work for the lease + 1 s (a GC pause): the lease expires under the worker",
            0.0,
            1.0,
        ),
        "crash_share": Option(
            "crash_share",
            0.0,
            "share of holds whose worker crashes holding the lock (never releases; the lease expires)",
            0.0,
            1.0,
        ),
    }
    default_ops = 2

    def setup(self, table: Table, options: RunOptions) -> None:
        table.put({**RESOURCE, "jobs": 0, "lastToken": 0})

    # -- the clients -------------------------------------------------------------------------------------------

    def client(self, ctx: ClientContext) -> None:
        holds = ctx.shared.setdefault("holds", itertools.count(1))
        guard = ctx.shared.setdefault("guard", threading.Lock())
        locked = ctx.variant != "no-lock"
        for op in ctx.ops():
            lease = self._acquire(ctx, op) if locked else None
            if locked and lease is None:
                return  # stopped while waiting for the lock
            with guard:
                n = next(holds)
            pause = _every(ctx.options["pause_share"], n)
            crash = ctx.rng.random() < ctx.options["crash_share"]
            self._work(ctx, op, lease, pause, crash)
            if lease is not None:
                self._release(ctx, op, lease)

    def _acquire(self, ctx: ClientContext, op: int) -> Lease | None:
        fenced = ctx.variant == "lease-fenced"
        me = worker(ctx.client_id)
        attempt = 0
        with ctx.shared["guard"]:
            ctx.shared["waiting"] = ctx.shared.get("waiting", 0) + 1
        try:
            while not ctx.stopped:
                lease = self._try_acquire(ctx, op, fenced, me)
                if lease is not None:
                    return lease
                # The cap grows with the crowd: all waiters together poll about 50 times a second, so the
                # holder's own calls are not stuck behind theirs, and a freed lock waits ~20 ms for a taker.
                ctx.backoff(attempt, base_s=0.002, cap_s=min(1.0, max(0.02, ctx.shared["waiting"] / 25)))
                attempt += 1
            return None
        finally:
            with ctx.shared["guard"]:
                ctx.shared["waiting"] -= 1

    @staticmethod
    def _try_acquire(ctx: ClientContext, op: int, fenced: bool, me: str) -> Lease | None:
        now, mono = _clock()
        expires = now + ctx.options["lease_ms"]
        detail = {"hold": op, "now": now, "mono_ns": mono, "expiresAt": expires}
        try:
            if fenced:
                # The token comes from the same conditional write that takes the lock, so tokens are in the
                # order of acquisitions, which a separate counter call could not promise.
                response = ctx.call(
                    ACQUIRE,
                    "UpdateItem",
                    key="lock",
                    detail=detail,
                    observe=lambda r: {"token": int(r["Attributes"]["fence"])},
                    TableName=ctx.table.name,
                    Key=LOCK,
                    UpdateExpression="SET #owner = :me, expiresAt = :exp ADD fence :one",
                    ConditionExpression=ACQUIRE_CONDITION,
                    ExpressionAttributeNames=OWNER,
                    ExpressionAttributeValues={":me": me, ":exp": expires, ":now": now, ":one": 1},
                    ReturnValues="UPDATED_NEW",
                )
                return Lease(int(response["Attributes"]["fence"]))
            ctx.call(
                ACQUIRE,
                "PutItem",
                key="lock",
                detail=detail,
                TableName=ctx.table.name,
                Item={**LOCK, "owner": me, "expiresAt": expires},
                ConditionExpression=ACQUIRE_CONDITION,
                ExpressionAttributeValues={":now": now},
            )
            return Lease(None)
        except (ConditionFailed, Ambiguous):
            return None  # held by someone else (or unknown: if it did apply, the lease simply runs out)

    def _work(self, ctx: ClientContext, op: int, lease: Lease | None, pause: bool, crash: bool) -> None:
        """Read the resource, work (heartbeat halfway), maybe pause or crash, write the result."""
        name, me = ctx.table.name, worker(ctx.client_id)
        token = lease.token if lease else None
        base = {"hold": op, "token": token} if token is not None else {"hold": op}
        try:
            if token is not None:
                # The read carries the token too: once the resource has seen a newer holder, an older one can
                # no longer slip a write in between that holder's read and write.
                jobs = int(
                    ctx.call(
                        "read",
                        "UpdateItem",
                        key="resource",
                        detail=base,
                        TableName=name,
                        Key=RESOURCE,
                        UpdateExpression="SET lastToken = :t",
                        ConditionExpression="lastToken <= :t",
                        ExpressionAttributeValues={":t": token},
                        ReturnValues="ALL_NEW",
                    )["Attributes"]["jobs"]
                )
            else:
                jobs = int(
                    ctx.call(
                        "read",
                        "GetItem",
                        key="resource",
                        detail=base,
                        TableName=name,
                        Key=RESOURCE,
                        ConsistentRead=True,
                    )["Item"]["jobs"]
                )
            ctx.sleep(ctx.options["work_ms"] / 2000)
            if lease is not None:
                self._heartbeat(ctx, op)
            ctx.sleep(ctx.options["work_ms"] / 2000)
            if crash:
                ctx.crash("crashed holding the lock" if lease else "crashed mid-work")
            if pause:
                ctx.sleep(ctx.options["lease_ms"] / 1000 + PAUSE_PAST_LEASE_S)
            detail = {**base, "read": jobs, "paused": pause}
            values: dict[str, Any] = {":n": jobs + 1, ":me": me}
            if token is None:
                ctx.call(
                    WRITE,
                    "UpdateItem",
                    key="resource",
                    detail=detail,
                    TableName=name,
                    Key=RESOURCE,
                    UpdateExpression="SET jobs = :n, lastWriter = :me",
                    ExpressionAttributeValues=values,
                )
            else:
                ctx.call(
                    WRITE,
                    "UpdateItem",
                    key="resource",
                    detail=detail,
                    TableName=name,
                    Key=RESOURCE,
                    UpdateExpression="SET jobs = :n, lastWriter = :me, lastToken = :t",
                    ConditionExpression="lastToken <= :t",
                    ExpressionAttributeValues={**values, ":t": token},
                )
        except (ConditionFailed, Ambiguous):
            pass  # fenced off (a newer holder exists), or unknown: verify counts both from the history

    @staticmethod
    def _heartbeat(ctx: ClientContext, op: int) -> None:
        now, mono = _clock()
        expires = now + ctx.options["lease_ms"]
        try:
            ctx.call(
                HEARTBEAT,
                "UpdateItem",
                key="lock",
                detail={"hold": op, "now": now, "mono_ns": mono, "expiresAt": expires},
                TableName=ctx.table.name,
                Key=LOCK,
                UpdateExpression="SET expiresAt = :later",
                ConditionExpression="#owner = :me",
                ExpressionAttributeNames=OWNER,
                ExpressionAttributeValues={":later": expires, ":me": worker(ctx.client_id)},
            )
        except (ConditionFailed, Ambiguous):
            pass  # the lease is gone; the write will find out (fenced) or not (lease)

    @staticmethod
    def _release(ctx: ClientContext, op: int, lease: Lease) -> None:
        me = {":me": worker(ctx.client_id)}
        try:
            if lease.token is None:
                ctx.call(
                    RELEASE,
                    "DeleteItem",
                    key="lock",
                    detail={"hold": op},
                    TableName=ctx.table.name,
                    Key=LOCK,
                    ConditionExpression="#owner = :me",
                    ExpressionAttributeNames=OWNER,
                    ExpressionAttributeValues=me,
                )
            else:
                # The lock item keeps its fence counter, so release clears the lease instead of deleting it.
                ctx.call(
                    RELEASE,
                    "UpdateItem",
                    key="lock",
                    detail={"hold": op, "token": lease.token},
                    TableName=ctx.table.name,
                    Key=LOCK,
                    UpdateExpression="SET expiresAt = :zero REMOVE #owner",
                    ConditionExpression="#owner = :me",
                    ExpressionAttributeNames=OWNER,
                    ExpressionAttributeValues={**me, ":zero": 0},
                )
        except (ConditionFailed, Ambiguous):
            pass  # a zombie's release: someone else holds the lock now, and the owner check keeps it theirs

    # -- the verdict -------------------------------------------------------------------------------------------

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        calls = _LockCalls.of(history, locked=options.variant != "no-lock")
        stale = _stale_writes(calls.reads, calls.writes, calls.holds)
        resource = table.get(RESOURCE["PK"], RESOURCE["SK"])
        if resource is None:  # setup wrote it and no variant deletes it: a missing item is a broken table
            raise RuntimeError("the protected resource item is gone from the table")
        jobs = int(resource["jobs"])
        return [_one_holder(calls, history.t0_ns), _no_stale_write(calls, stale), _counter_matches(calls, jobs, stale)]

    # -- the seed's scenes -------------------------------------------------------------------------------------

    def walkthrough(self, walk: Any) -> None:
        key = {"PK": "LOCK#invoice-run", "SK": "LOCK"}
        lease_s = 2

        def acquire(who: str) -> bool:
            now = int(time.time())
            return not isinstance(
                walk.call(
                    "PutItem",
                    Item={**key, "owner": who, "expiresAt": now + lease_s},
                    ConditionExpression=ACQUIRE_CONDITION,
                    ExpressionAttributeValues={":now": now},
                ),
                CallError,
            )

        def owner_checked(op: str, who: str, **params: Any) -> bool:
            return not isinstance(
                walk.call(
                    op,
                    Key=key,
                    ConditionExpression="#owner = :me",
                    ExpressionAttributeNames=OWNER,
                    ExpressionAttributeValues={":me": who, **params.pop("values", {})},
                    **params,
                ),
                CallError,
            )

        walk.result("worker-A acquires", acquire("worker-A"))
        walk.result("worker-B tries while A holds it", acquire("worker-B"))
        owner_checked(
            "UpdateItem",
            "worker-A",
            UpdateExpression="SET expiresAt = :later",
            values={":later": int(time.time()) + lease_s},
        )
        walk.note("...")
        walk.result("worker-A releases", owner_checked("DeleteItem", "worker-A"))
        walk.result("worker-B acquires after release", acquire("worker-B"))
        walk.note("... worker-B crashes, waiting 3s for the lease to expire ...")
        time.sleep(lease_s + 1)
        walk.result("worker-C takes over the expired lock", acquire("worker-C"))
        walk.result("zombie worker-B tries to release C's lock", owner_checked("DeleteItem", "worker-B"))
        walk.result("lock still held by", walk.call("GetItem", Key=key)["Item"]["owner"])


# -- the invariants, one function each ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _LockCalls:
    """The calls the invariants read, picked out of the history once."""

    frame: pd.DataFrame
    ok: pd.Series
    holds: pd.Series  # (client, hold) per call
    reads: pd.DataFrame  # acknowledged reads of the resource
    writes: pd.DataFrame  # acknowledged writes to it
    refused: pd.DataFrame  # writes the fencing token refused
    unknown: int  # writes with an unknown outcome
    acquired: int
    zombie_releases: int  # releases refused: the lease had passed to another worker
    locked: bool  # False for the no-lock variant

    @classmethod
    def of(cls, history: History, *, locked: bool) -> _LockCalls:
        frame = history.snapshot(detail=True)
        ok = frame["outcome"] == "ok"
        write = frame["action"] == WRITE
        return cls(
            frame=frame,
            ok=ok,
            holds=pd.Series(
                list(zip(frame["client"], [d.get(DETAIL_HOLD) for d in frame["detail"]])), index=frame.index
            ),
            reads=frame[(frame["action"] == "read") & ok],
            writes=frame[write & ok],
            refused=frame[write & (frame["error"] == "ConditionalCheckFailedException")],
            unknown=int((write & (frame["outcome"] == "info")).sum()),
            acquired=int(((frame["action"] == ACQUIRE) & ok).sum()),
            zombie_releases=int(((frame["action"] == RELEASE) & (frame["outcome"] == "fail")).sum()),
            locked=locked,
        )


def _one_holder(calls: _LockCalls, t0_ns: int) -> Invariant:
    locked = calls.locked
    intervals = (
        _lease_intervals(calls.frame, calls.ok, calls.holds, t0_ns)
        if locked
        else _critical_sections(calls.reads, calls.writes, calls.holds)
    )
    held, late = held_and_late(intervals)
    overlaps = _overlaps(held)
    who = "lock holder" if locked else "worker in the critical section"
    return Invariant(
        name=f"at most one {who} at a time",
        key=ONE_HOLDER,
        holds=not overlaps,
        expected="0 overlaps",
        observed=f"{len(overlaps)} overlaps in {len(intervals)} {'leases' if locked else 'critical sections'}",
        violations=len(overlaps),
        calls=tuple(s for pair in overlaps for s in pair),
        explanation=_holder_story(len(overlaps), len(intervals), calls.zombie_releases, locked)
        + (
            f"; {len(late)} leases had run out before their acquirer heard it had them (a slow answer): "
            "the worker then believes it holds a lock nobody holds, which is what the fencing token is for"
            if late and locked
            else ""
        ),
    )


def _no_stale_write(calls: _LockCalls, stale: list[int]) -> Invariant:
    refused = len(calls.refused)
    if stale:
        why = (
            "workers paused past their lease wrote over the next holder's work"
            if calls.locked
            else "nothing kept the workers apart"
        )
        story = (
            f"at least {len(stale)} writes landed after another worker had accessed the resource "
            f"since the writer's own read: {why}"
        )
    else:
        story = "no write landed on top of a newer holder's read" + (
            f"; {refused} writes by workers whose lease had expired were refused by the fencing token"
            if refused
            else ""
        )
    return Invariant(
        name="no stale write lands",
        key=NO_STALE_WRITE,
        holds=not stale,
        expected=0,
        observed=f"{len(stale)} landed, {refused} refused",
        violations=len(stale),
        calls=tuple(stale),
        explanation=story,
    )


def _counter_matches(calls: _LockCalls, jobs: int, stale: list[int]) -> Invariant:
    writes, unknown = calls.writes, calls.unknown
    acked = len(writes)
    lost = max(0, acked - jobs)
    return Invariant(
        name="protected counter = acknowledged writes",
        key=COUNTER_MATCHES_WRITES,
        holds=acked <= jobs <= acked + unknown,
        expected=acked,
        observed=jobs,
        violations=lost,
        calls=rows(writes, writes["seq"].isin(stale)),
        explanation=(
            f"{lost} of {acked} acknowledged jobs are missing from the counter: stale writes overwrote them"
            if lost
            else "every acknowledged job is counted exactly once"
        )
        + (f" ({calls.acquired} acquisitions, {len(calls.refused)} writes refused)" if calls.locked else "")
        + (f"; {unknown} writes had an unknown outcome" if unknown else ""),
    )


def _holder_story(overlaps: int, intervals: int, zombie_releases: int, locked: bool) -> str:
    if overlaps:
        return f"{overlaps} times a worker started while another was still inside" + (
            "" if locked else ": with no lock nothing keeps them apart"
        )
    if not locked:
        return f"the {intervals} critical sections happened not to overlap"
    return f"each of {intervals} leases (acquire → release, or expiry from expiresAt) ended before the next began" + (
        f"; {zombie_releases} releases by workers whose lease had expired were refused by the owner check"
        if zombie_releases
        else ""
    )


def _lease_intervals(frame: pd.DataFrame, ok: pd.Series, holds: pd.Series, t0_ns: int) -> list[tuple[int, int, int]]:
    """(start, end, acquire seq) per lease: from the acquire's answer to the release's sending or the expiry,
    whichever came first; the expiry is expiresAt placed on the monotonic clock, moved by each heartbeat."""
    leases: dict[Any, list[int]] = {}
    for seq, action, hold, good, outcome, invoke, complete, detail in zip(
        frame["seq"],
        frame["action"],
        holds,
        ok,
        frame["outcome"],
        frame["invoke_ns"],
        frame["complete_ns"],
        frame["detail"],
    ):
        # A release whose answer was lost may have freed the lock at any moment after it was sent.
        unknown_release = action == "release" and outcome == "info"
        if not (good or unknown_release) or action not in ("acquire", "heartbeat", "release"):
            continue
        if action != "acquire" and hold not in leases:
            continue
        if action == "release":
            leases[hold][1] = min(leases[hold][1], int(invoke))
            continue
        expiry = int(detail["mono_ns"]) - t0_ns + (int(detail["expiresAt"]) - int(detail["now"])) * 1_000_000
        if action == "acquire":
            leases[hold] = [int(complete), expiry, int(seq)]
        else:
            leases[hold][1] = max(leases[hold][1], expiry)
    return [(start, end, seq) for start, end, seq in leases.values()]


def held_and_late(intervals: list[tuple[int, int, int]]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Split (start, end, seq) intervals into those that held something and the seqs of the empty ones.

    A lease whose expiry came before its acquire's answer (the answer was slow: the server, or this client
    starved of CPU) never had a holder that knew it held the lock; by the time the next worker took over,
    it had expired. It is not an overlap, but it is the lease's real hazard, so it is counted apart.
    """
    return [iv for iv in intervals if iv[1] > iv[0]], [iv[2] for iv in intervals if iv[1] <= iv[0]]


def _critical_sections(reads: pd.DataFrame, writes: pd.DataFrame, holds: pd.Series) -> list[tuple[int, int, int]]:
    """no-lock: from the read's answer to the write's sending, per job."""
    sent = {holds[i]: int(t) for i, t in zip(writes.index, writes["invoke_ns"])}
    return [
        (int(t), sent[holds[i]], int(s))
        for i, t, s in zip(reads.index, reads["complete_ns"], reads["seq"])
        if holds[i] in sent
    ]


def _overlaps(intervals: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """(earlier, later) seq pairs where the later interval began before the earlier one had ended."""
    found = []
    latest: tuple[int, int] | None = None  # (end, seq) of the open interval reaching furthest
    for start, end, seq in sorted(intervals):
        if latest is not None and start < latest[0]:
            found.append((latest[1], seq))
        if latest is None or end > latest[0]:
            latest = (end, seq)
    return found


def _stale_writes(reads: pd.DataFrame, writes: pd.DataFrame, holds: pd.Series) -> list[int]:
    """Acknowledged writes sent after another worker's access (read or write) that began after the writer's
    own read had ended: the writer's value came from state someone else had since read or changed."""
    read_at = {holds[i]: int(t) for i, t in zip(reads.index, reads["complete_ns"])}
    accesses = sorted(
        (int(a), int(b), holds[i])
        for frame in (reads, writes)
        for i, a, b in zip(frame.index, frame["invoke_ns"], frame["complete_ns"])
    )
    starts = [a[0] for a in accesses]
    stale = []
    for i, sent, seq in zip(writes.index, writes["invoke_ns"], writes["seq"]):
        mine = read_at.get(holds[i])
        if mine is None:
            continue
        lo, hi = bisect.bisect_right(starts, mine), bisect.bisect_left(starts, int(sent))
        if any(accesses[k][1] < int(sent) and accesses[k][2] != holds[i] for k in range(lo, hi)):
            stale.append(int(seq))
    return stale
