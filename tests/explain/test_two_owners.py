"""Two owners of one lease: a live run cannot make the lease variant's acquisitions overlap for certain (the
server refuses an acquire until the lease has run out), so the finder is shown on calls written out here."""

from __future__ import annotations

from engine.explain import explain
from engine.patterns.distributed_locking.invariants import ONE_HOLDER
from engine.record.history import Call, History, Outcome
from tests.explain.proofs import PROOFS

MS = 1_000_000
BROKEN = [{"key": ONE_HOLDER, "name": "at most one lock holder at a time", "holds": False}]


def _lease(client: int, at_ms: int, action: str = "acquire", lease_ms: int = 1000) -> Call:
    invoke = at_ms * MS
    detail = {"hold": 1, "now": 5_000, "mono_ns": invoke - 1000, "expiresAt": 5_000 + lease_ms}
    return Call(
        client=client,
        action=action,
        op="PutItem",
        key="lock",
        invoke_ns=invoke,
        complete_ns=invoke + 5 * MS,
        outcome=Outcome.OK,
        detail=detail,
    )


def _history(*calls: Call) -> History:
    history = History(t0_ns=0)
    history.extend(calls)
    return history


def test_an_acquire_answered_inside_another_workers_lease_is_two_owners() -> None:
    history = _history(_lease(0, 100), _lease(1, 600))
    witness = explain("distributed-locking", history, BROKEN)[ONE_HOLDER]
    assert witness is not None and witness.anomaly.value == "two owners of one lease"
    assert witness.story.startswith("client 0 acquired the lease; client 1 acquired it 500 ms later")
    PROOFS[ONE_HOLDER](witness)


def test_a_renewal_that_kept_the_lease_is_part_of_the_proof() -> None:
    history = _history(_lease(0, 100), _lease(0, 900, "heartbeat"), _lease(1, 1300))
    witness = explain("distributed-locking", history, BROKEN)[ONE_HOLDER]
    assert witness is not None and [s.call.action for s in witness.steps] == ["acquire", "heartbeat", "acquire"]
    PROOFS[ONE_HOLDER](witness)


def test_a_lease_released_or_run_out_before_the_next_acquire_is_no_witness() -> None:
    release = Call(
        client=0,
        action="release",
        op="DeleteItem",
        key="lock",
        invoke_ns=300 * MS,
        complete_ns=305 * MS,
        outcome=Outcome.OK,
        detail={"hold": 1},
    )
    assert explain("distributed-locking", _history(_lease(0, 100), release, _lease(1, 600)), BROKEN)[ONE_HOLDER] is None
    assert explain("distributed-locking", _history(_lease(0, 100), _lease(1, 1200)), BROKEN)[ONE_HOLDER] is None
