"""29 · Distributed locking: a lease item, heartbeats, owner-checked release, takeover, and fencing tokens.

A lease alone is not mutual exclusion: a worker paused past its lease (GC, swap, a slow disk) wakes up still
believing it holds the lock and writes over the next holder's work. A fencing token fixes that: every
acquisition increments a counter on the lock item, and the protected resource refuses any access carrying a
token older than the newest it has seen. The run's expiresAt is epoch milliseconds (short leases); the
walkthrough keeps the seed's epoch seconds.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.distributed_locking.invariants import COUNTER_MATCHES_WRITES, NO_STALE_WRITE, ONE_HOLDER, verdicts
from engine.patterns.distributed_locking.shared import (
    ACQUIRE,
    ACQUIRE_CONDITION,
    DETAIL_EXPIRES_AT,
    DETAIL_HOLD,
    DETAIL_NOW,
    DETAIL_PAUSED,
    DETAIL_TOKEN,
    HEARTBEAT,
    LOCK,
    OWNER,
    RELEASE,
    RESOURCE,
    WRITE,
)
from engine.patterns.distributed_locking.walkthrough import in_practice
from engine.record.calls import Ambiguous, ClientContext, ConditionFailed
from engine.record.history import History

# What the dashboard's view reads: the invariant keys, the lock's calls and their details.
__all__ = [
    "ACQUIRE",
    "COUNTER_MATCHES_WRITES",
    "DETAIL_EXPIRES_AT",
    "DETAIL_HOLD",
    "DETAIL_NOW",
    "DETAIL_PAUSED",
    "DETAIL_TOKEN",
    "HEARTBEAT",
    "NO_STALE_WRITE",
    "ONE_HOLDER",
    "RELEASE",
    "WRITE",
    "DistributedLocking",
]

PAUSE_PAST_LEASE_S = 1.0  # a paused worker sleeps its lease plus this: time for another to take over and start


@dataclass(frozen=True, slots=True)
class Lease:
    """A lock this worker acquired; the lease variant's has no fencing token."""

    token: int | None


def worker(client: int) -> str:
    """The lock's owner as the item records it: the client's own name, as the timeline and the Gantt show it."""
    return f"client-{client}"


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
        return verdicts(table, history, options)

    def walkthrough(self, walk: Any) -> None:
        in_practice(walk)
