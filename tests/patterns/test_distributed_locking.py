"""29 · Distributed locking: leases keep holders apart, fencing tokens keep paused ones from writing."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.patterns.distributed_locking import _every, walkthrough
from engine.patterns.distributed_locking.invariants import _overlaps, held_and_late
from engine.run.runner import RunConfig, RunState, run_pattern
from engine.run.walkthrough import run_walkthrough
from engine.words import agree, plural
from tests.explain.paused_holder import PausedHolder
from tests.lockstep import Lockstep

ONE_HOLDER = "at most one lock holder at a time"
NO_STALE = "no stale write lands"
COUNTER = "protected counter = acknowledged writes"
# Every hold pauses past a 100 ms lease, for the forced schedule of tests/explain/paused_holder.py.
FORCED = {"lease_ms": 100, "pause_share": 1.0, "work_ms": 0, "crash_share": 0.0}


def _calls(run, action: str, outcome: str | None = None):
    frame = run.history.snapshot(detail=True)
    mask = frame["action"] == action
    return frame[mask & (frame["outcome"] == outcome)] if outcome else frame[mask]


def test_fenced_leases_keep_every_invariant_at_64_threads(backend: Backend) -> None:
    # All 64 first acquires are answered before anyone's next call (lockstep): one wins, 63 meet a held lock.
    lockstep = Lockstep(backend, clients=64, rounds=2)
    run = run_pattern(
        RunConfig(
            pattern="distributed-locking",
            variant="lease-fenced",
            threads=64,
            ops_per_client=1,
            options={"lease_ms": 300},
        ),
        lockstep,
    )
    lockstep.check()
    assert run.state is RunState.DONE
    assert all(inv.holds for inv in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]
    assert len(_calls(run, "acquire", "ok")) == 64
    assert len(_calls(run, "acquire", "fail")) > 0  # they did wait for each other


def test_a_paused_workers_write_is_refused_by_the_fencing_token(backend: Backend) -> None:
    # Forced (a free run left it to the pause outlasting the next holder's acquire and read): the paused holder's
    # write waits until the other worker, who took the lock once the lease ran out, has read with its newer token.
    holder = PausedHolder(backend, workers=2)
    run = run_pattern(
        RunConfig(pattern="distributed-locking", variant="lease-fenced", threads=2, ops_per_client=1, options=FORCED),
        holder,
    )
    holder.check()
    inv = run.invariants_by_name()
    assert all(i.holds for i in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]
    refused = _calls(run, "write", "fail")
    paused = [d for d in refused["detail"] if d["paused"]]
    assert paused and inv[NO_STALE].observed == f"0 landed, {len(refused)} refused"
    n = len(refused)
    said = (
        f"{plural(n, 'write')} by {agree(n, 'a worker', 'workers')} whose lease had expired {agree(n, 'was', 'were')}"
    )
    assert f"{said} refused" in inv[NO_STALE].explanation
    # The counter counts exactly the writes that were let through.
    assert inv[COUNTER].observed == inv[COUNTER].expected == 2 - len(refused)
    # The zombie's release is refused too: the lock belongs to someone else by then.
    assert len(_calls(run, "release", "fail")) >= 1


def test_fencing_tokens_grow_by_one_with_every_acquisition(backend: Backend) -> None:
    run = run_pattern(
        RunConfig(
            pattern="distributed-locking",
            variant="lease-fenced",
            threads=4,
            ops_per_client=2,
            options={"pause_share": 0.0, "lease_ms": 5000},
        ),
        backend,
    )
    acquired = _calls(run, "acquire", "ok").sort_values("complete_ns")
    assert [d["token"] for d in acquired["detail"]] == list(range(1, 9))
    writes = _calls(run, "write", "ok").sort_values("complete_ns")
    assert [d["token"] for d in writes["detail"]] == list(range(1, 9))
    assert all(i.holds for i in run.invariants)


def test_a_plain_lease_lets_the_paused_workers_stale_write_land(backend: Backend) -> None:
    # Forced as above: the paused holder writes only after the next holder has read the count it had not written.
    holder = PausedHolder(backend, workers=2)
    run = run_pattern(
        RunConfig(pattern="distributed-locking", variant="lease", threads=2, ops_per_client=1, options=FORCED), holder
    )
    holder.check()
    inv = run.invariants_by_name()
    assert inv[ONE_HOLDER].holds  # the leases themselves never overlapped ...
    stale = inv[NO_STALE]  # ... but a worker paused past its lease did not know its lease was gone
    assert not stale.holds and stale.violations >= 1 and stale.calls
    frame = run.history.snapshot(detail=True)
    assert any(frame.loc[s, "detail"]["paused"] for s in stale.calls)
    assert "workers paused past their lease wrote over the next holder's work" in stale.explanation
    lost = inv[COUNTER]
    assert not lost.holds and lost.observed < lost.expected == 2 and lost.violations == 2 - lost.observed
    assert re.search(
        r"\d+ releases? by (a worker|workers) whose lease had expired (was|were) refused", inv[ONE_HOLDER].explanation
    )


def test_without_a_lock_workers_overlap_and_lose_updates(backend: Backend) -> None:
    # All 8 read the resource before any writes it (lockstep): all 8 are in the critical section at once.
    lockstep = Lockstep(backend, clients=8, rounds=2)
    run = run_pattern(
        RunConfig(
            pattern="distributed-locking",
            variant="no-lock",
            threads=8,
            ops_per_client=1,
            options={"work_ms": 200, "pause_share": 0.0},
        ),
        lockstep,
    )
    lockstep.check()
    inv = run.invariants_by_name()
    overlap = inv["at most one worker in the critical section at a time"]
    assert not overlap.holds and overlap.violations >= 1 and overlap.calls
    assert not inv[COUNTER].holds and inv[COUNTER].observed < 8
    assert len(_calls(run, "acquire")) == 0


def test_a_holder_that_crashes_is_taken_over_once_its_lease_expires(backend: Backend) -> None:
    run = run_pattern(
        RunConfig(
            pattern="distributed-locking",
            variant="lease-fenced",
            threads=3,
            ops_per_client=1,
            options={"lease_ms": 300, "crash_share": 1.0},
        ),
        backend,
    )
    assert [e["message"] for e in run.worker_errors] == ["crashed holding the lock"] * 3
    acquired = _calls(run, "acquire", "ok").sort_values("complete_ns")
    assert len(acquired) == 3 and len(_calls(run, "release")) == 0  # nobody ever released
    # Each takeover waited out the crashed holder's lease, which began before that holder's acquire was sent.
    waits_ms = (acquired["complete_ns"].to_numpy()[1:] - acquired["invoke_ns"].to_numpy()[:-1]) / 1e6
    assert (waits_ms >= 300).all()
    assert run.invariants_by_name()[ONE_HOLDER].holds


def test_a_lease_that_ran_out_before_its_answer_arrived_is_no_overlap() -> None:
    # Seen on DynamoDB Local under load: worker 56's acquire took 365 ms to answer, its 300 ms lease had
    # expired by then, and worker 44 rightly took over. Worker 56 never held a lease it knew of.
    ms = 1_000_000
    worker_44 = (1220 * ms, 1480 * ms, 234)  # (answer received, expiry, acquire seq)
    worker_56 = (1233 * ms, 1169 * ms, 241)  # answered after its own expiry
    held, late = held_and_late([worker_44, worker_56])
    assert held == [worker_44] and late == [241] and _overlaps(held) == []
    # Two real leases that overlap are still caught.
    assert _overlaps([worker_44, (1300 * ms, 1500 * ms, 250)]) == [(234, 250)]


def test_pauses_are_spread_evenly_starting_with_the_first_hold() -> None:
    assert [n for n in range(1, 101) if _every(0.03, n)] == [1, 35, 68]
    assert [n for n in range(1, 101) if _every(0.05, n)] == [1, 21, 41, 61, 81]
    assert [n for n in range(1, 8) if _every(0.3, n)] == [1, 5]
    assert not any(_every(0.0, n) for n in range(1, 100))
    assert all(_every(1.0, n) for n in range(1, 10))


class _SceneClock:
    """The scene's epoch seconds, moved only by its own sleeps: worker-B's try comes in worker-A's second (its
    2-second lease surely unexpired, however slow the machine), and the 3 s wait for the crash passes at once.
    The calls are real; only the clock the workers read their `now` from is the test's."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def walkthrough_text(backend: Backend) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(walkthrough, "time", _SceneClock())
        text, _ = run_walkthrough(29, backend)
    return text


def _block(text: str, title: str) -> str:
    return text.split(f"=== {title} ===\n")[1].split("\n")[0]


def test_walkthrough_a_acquires_and_b_is_refused(walkthrough_text: str) -> None:
    acquire = re.compile(
        r">>> PutItem ddblab-p29-distributed-locking\n"
        r"    item:       \{PK: 'LOCK#invoice-run', SK: 'LOCK', owner: 'worker-A', "
        r"expiresAt: (\d+)\}\n"
        r"    condition:  attribute_not_exists\(PK\) OR expiresAt < (\d+)\n\n"
        r"=== worker-A acquires ===\ntrue\n"
    )
    found = acquire.search(walkthrough_text)
    assert found and int(found.group(1)) == int(found.group(2)) + 2  # a 2-second lease
    assert _block(walkthrough_text, "worker-B tries while A holds it") == "false"


def test_walkthrough_a_heartbeats_releases_and_b_acquires(walkthrough_text: str) -> None:
    assert re.search(
        r">>> UpdateItem ddblab-p29-distributed-locking\n"
        r"    key:        \{PK: 'LOCK#invoice-run', SK: 'LOCK'\}\n"
        r"    condition:  owner = 'worker-A'\n    update:     SET expiresAt = \d+\n\n\.\.\.\n\n"
        r">>> DeleteItem ddblab-p29-distributed-locking\n"
        r"    key:        \{PK: 'LOCK#invoice-run', SK: 'LOCK'\}\n"
        r"    condition:  owner = 'worker-A'\n\n=== worker-A releases ===\ntrue\n",
        walkthrough_text,
    )
    assert _block(walkthrough_text, "worker-B acquires after release") == "true"


def test_walkthrough_c_takes_over_after_b_crashes_and_b_cannot_release_it(walkthrough_text: str) -> None:
    b_expires = int(re.findall(r"owner: 'worker-B', expiresAt: (\d+)", walkthrough_text)[-1])
    c_acquire = re.search(
        r"owner: 'worker-C', expiresAt: \d+\}\n    condition:  attribute_not_exists\(PK\) OR expiresAt < (\d+)",
        walkthrough_text,
    )
    assert c_acquire, "worker-C's acquire is not in the walkthrough"
    c_now = int(c_acquire.group(1))
    assert c_now > b_expires  # the expiresAt < :now half of the condition is what lets C in
    assert "\n... worker-B crashes, waiting 3s for the lease to expire ...\n" in walkthrough_text
    assert _block(walkthrough_text, "worker-C takes over the expired lock") == "true"
    assert (
        "    condition:  owner = 'worker-B'\n\n=== zombie worker-B tries to release C's lock ===\nfalse\n"
        in walkthrough_text
    )
    assert walkthrough_text.endswith('=== lock still held by ===\n"worker-C"\n\n')


def test_a_scene_reads_only_a_refused_condition_as_false_any_other_error_as_its_code(backend: Backend) -> None:
    from engine.backends.tables import TableSpec, drop_table, open_table
    from engine.patterns.base import succeeded
    from engine.record.calls import Caller, CallError
    from engine.record.history import History

    # The lock scene prints acquire/release as true/false: false must mean the owner check said no. A call that
    # failed otherwise (throttled on AWS, here a request DynamoDB rejects) is neither, and prints its code.
    client = backend.client(threads=1)
    table = open_table(client, "scene-succeeded", TableSpec())
    caller = Caller(client, History(), 0)

    def put(**params: Any) -> Any:
        try:
            return caller.call("acquire", "PutItem", key="LOCK", TableName=table.name, **params)
        except CallError as e:
            return e

    try:
        lock = {"PK": "LOCK#x", "SK": "LOCK", "owner": "worker-A"}
        assert succeeded(put(Item=lock, ConditionExpression="attribute_not_exists(PK)")) is True
        assert succeeded(put(Item=lock, ConditionExpression="attribute_not_exists(PK)")) is False
        assert succeeded(put(Item={"PK": "LOCK#x"}, ConditionExpression="attribute_not_exists(PK)")) == (
            "ValidationException"
        )
    finally:
        drop_table(table)
