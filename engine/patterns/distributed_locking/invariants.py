"""The invariants of distributed locking: at most one holder at a time, no stale write lands, the protected
counter matches the acknowledged writes; one function each, over the calls picked out of the history once."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.backends.tables import Table
from engine.patterns.base import Invariant, RunOptions, rows
from engine.patterns.distributed_locking.shared import ACQUIRE, DETAIL_HOLD, RELEASE, RESOURCE, WRITE
from engine.record.history import History
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_HOLDER = "at-most-one-holder-at-a-time"
NO_STALE_WRITE = "no-stale-write-lands"
COUNTER_MATCHES_WRITES = "protected-counter-acknowledged-writes"


def verdicts(table: Table, history: History, options: RunOptions) -> list[Invariant]:
    """Every invariant of the run, read from the table after it and from its history."""
    calls = _LockCalls.of(history, locked=options.variant != "no-lock")
    stale = _stale_writes(calls.reads, calls.writes, calls.holds)
    resource = table.get(RESOURCE["PK"], RESOURCE["SK"])
    if resource is None:  # setup wrote it and no variant deletes it: a missing item is a broken table
        raise RuntimeError("the protected resource item is gone from the table")
    jobs = int(resource["jobs"])
    return [_one_holder(calls, history.t0_ns), _no_stale_write(calls, stale), _counter_matches(calls, jobs, stale)]


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
    what = "lease" if locked else "critical section"
    return Invariant(
        name=f"at most one {who} at a time",
        key=ONE_HOLDER,
        holds=not overlaps,
        expected="0 overlaps",
        observed=f"{plural(len(overlaps), 'overlap')} in {plural(len(intervals), what)}",
        violations=len(overlaps),
        calls=tuple(s for pair in overlaps for s in pair),
        explanation=_holder_story(len(overlaps), len(intervals), calls.zombie_releases, locked)
        + (
            f"; {plural(len(late), 'lease')} had run out before {agree(len(late), 'its', 'their')} acquirer heard "
            f"it had {agree(len(late), 'it', 'them')} (a slow answer): the worker then believes it holds a lock "
            "nobody holds, which is what the fencing token is for"
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
            f"at least {plural(len(stale), 'write')} landed after another worker had accessed the resource "
            f"since the writer's own read: {why}"
        )
    else:
        story = "no write landed on top of a newer holder's read" + (
            f"; {plural(refused, 'write')} by {agree(refused, 'a worker', 'workers')} whose lease had expired "
            f"{agree(refused, 'was', 'were')} refused by the fencing token"
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
            f"{lost} of {plural(acked, 'acknowledged job')} {agree(lost, 'is', 'are')} missing from the counter: "
            f"stale writes overwrote {agree(lost, 'it', 'them')}"
            if lost
            else "every acknowledged job is counted exactly once"
        )
        + (
            f" ({plural(calls.acquired, 'acquisition')}, {plural(len(calls.refused), 'write')} refused)"
            if calls.locked
            else ""
        )
        + (f"; {plural(unknown, 'write')} had an unknown outcome" if unknown else ""),
    )


def _holder_story(overlaps: int, intervals: int, zombie_releases: int, locked: bool) -> str:
    if overlaps:
        return f"{agree(overlaps, 'once', f'{overlaps:,} times')} a worker started while another was still inside" + (
            "" if locked else ": with no lock nothing keeps them apart"
        )
    if not locked:
        return agree(
            intervals,
            "the one critical section had none to overlap",
            f"the {intervals:,} critical sections happened not to overlap",
        )
    return (
        f"{agree(intervals, 'the one lease', f'each of {intervals:,} leases')} (acquire → release, or expiry from "
        "expiresAt) ended before the next began"
        + (
            f"; {plural(zombie_releases, 'release')} by {agree(zombie_releases, 'a worker', 'workers')} whose "
            f"lease had expired {agree(zombie_releases, 'was', 'were')} refused by the owner check"
            if zombie_releases
            else ""
        )
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
