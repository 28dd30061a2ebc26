"""Every racy variant, run small and made certain to break: the explainer names a witness for each broken
invariant, and the witness's own calls prove the break (tests/explain/proofs.py says what proves what).

How each run is made certain to break, instead of hoping for a race: the read-then-write races are forced in
lockstep (tests/lockstep.py: every client's first read is answered before any client's first write leaves), the
lagging index is held for the whole read-back (tests/index_hold.py), a lock holder paused past its lease writes
only after its successor has read (tests/explain/paused_holder.py), and where the pattern allows, the knobs make
the harm a certainty outright (every client creates the same user, every order is resent, every request
delivered twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.explain import explain
from engine.explain.registry import has_finder
from engine.patterns import get_pattern
from engine.patterns.atomic_counters import FINAL_COUNT, NEVER_OVERSOLD, SEQUENCE_GAP_FREE
from engine.patterns.conditional_writes.invariants import ONE_WINNER
from engine.patterns.distributed_locking.invariants import COUNTER_MATCHES_WRITES, NO_STALE_WRITE
from engine.patterns.gsi_consistency import READ_YOUR_WRITES
from engine.patterns.idempotency_keys.invariants import ONE_CHARGE, REUSE_REFUSED
from engine.patterns.optimistic_locking.invariants import NO_LOST_UPDATE
from engine.patterns.transactions.invariants import COUNTS_AGREE, NO_ORPHAN_ORDER, RESEND_APPLIES_ONCE
from engine.patterns.unique_constraints.invariants import NO_SHARED_EMAIL
from engine.run.runner import RunConfig, RunState, run_pattern
from tests.explain.paused_holder import PausedHolder
from tests.explain.proofs import PROOFS
from tests.index_hold import IndexHold
from tests.lockstep import Lockstep

# Rules whose break no small set of calls proves on its own: an order left unfinished by a crashed client is
# proved by the calls it never made. The explainer says it has no witness rather than show a wrong one.
NO_WITNESS = {NO_ORPHAN_ORDER}

# (pattern, run knobs, the invariants the knobs make certain to break, the schedule that forces the race or None)
Force = Callable[[Backend], "Lockstep | IndexHold | PausedHolder"] | None
CASES: dict[str, tuple[dict[str, Any], set[str], Force]] = {
    # Six rounds, the first op's six calls: the 4 clients read views = 0 before any write leaves, and all write
    # 1; then the same for the next number; tickets = 1: all 4 read 1 left, and all of them sell it.
    "atomic-counters": (
        {"threads": 4, "ops_per_client": 2, "options": {"tickets": 1}},
        {FINAL_COUNT, SEQUENCE_GAP_FREE, NEVER_OVERSOLD},
        lambda backend: Lockstep(backend, clients=4, rounds=6),
    ),
    # One account: the 4 first reads all return version 1 (round 1), and the 4 puts all write version 2.
    "optimistic-locking": (
        {"threads": 4, "ops_per_client": 2, "options": {"accounts": 1}},
        {NO_LOST_UPDATE},
        lambda backend: Lockstep(backend, clients=4, rounds=2),
    ),
    # Every client signs up the same new user u0 with a plain put: 4 acknowledged creates of one user, the
    # last 3 of them get the old item back (overwrote), whatever the order.
    "conditional-writes": ({"threads": 4, "ops_per_client": 1}, {ONE_WINNER}, None),
    # Every hold pauses past a 100 ms lease, and the paused holder's write waits until the other worker (who takes
    # the lock once the lease has run out) has read jobs = 0: both write 1, the holder's write first.
    "distributed-locking": (
        {
            "threads": 2,
            "ops_per_client": 1,
            "options": {"lease_ms": 100, "pause_share": 1.0, "work_ms": 0, "crash_share": 0.0},
        },
        {NO_STALE_WRITE, COUNTER_MATCHES_WRITES},
        lambda backend: PausedHolder(backend, workers=2),
    ),
    # Each write is read back once, at once, while the index is held (it shows no write until both read-backs
    # are answered): every read-back misses its write.
    "gsi-consistency": (
        {"threads": 2, "ops_per_client": 1, "options": {"gsi_lag_ms": 300, "read_attempts": 1}},
        {READ_YOUR_WRITES},
        lambda backend: IndexHold(backend, parties=2),
    ),
    # Every request is also delivered to a second worker at the same time: both charge it, with no key to stop
    # the second.
    "idempotency-keys": (
        {
            "threads": 2,
            "ops_per_client": 2,
            "lost_response_share": 0.0,
            "options": {"duplicate_share": 1.0, "resend_share": 0.0, "reuse_share": 0.0, "crash_share": 0.0},
        },
        {ONE_CHARGE},
        None,
    ),
    # Every placed order is sent again: the resend's put is refused (the order is there), and the client goes on
    # to take the stock and count the order a second time.
    "transactions": (
        {"threads": 2, "ops_per_client": 2, "options": {"resend_share": 1.0, "crash_share": 0.0}},
        {COUNTS_AGREE, RESEND_APPLIES_ONCE},
        None,
    ),
    # Two emails for 4 clients: at least two sign up with the same one, and all 4 checks are answered before any
    # sign-up is written (round 1), so both find it free.
    "unique-constraints": (
        {"threads": 4, "ops_per_client": 1, "options": {"emails": 2}},
        {NO_SHARED_EMAIL},
        lambda backend: Lockstep(backend, clients=4, rounds=2),
    ),
}


def test_every_racy_variant_has_a_case() -> None:
    from engine.patterns import all_patterns

    assert set(CASES) == set(all_patterns())


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_racy_variant_breaks_and_each_witness_proves_it(backend: Backend, pattern: str) -> None:
    knobs, certain, force = CASES[pattern]
    variant = get_pattern(pattern).racy_variant()
    forced = force(backend) if force else None
    run = run_pattern(RunConfig(pattern=pattern, variant=variant, **knobs), forced or backend)
    if forced:
        forced.check()
    assert run.state is RunState.DONE, run.error
    broken = {inv.key for inv in run.invariants if inv.holds is False}
    assert certain <= broken, [inv.as_dict() for inv in run.invariants]

    witnesses = explain(pattern, run.history, run.invariants)
    assert set(witnesses) == broken
    for key, witness in witnesses.items():
        if key in NO_WITNESS:
            assert not has_finder(pattern, key) and witness is None
            continue
        assert witness is not None, f"{pattern}: no witness for broken {key}"
        assert witness.invariant == key and witness.story and len(witness.steps) <= 6
        PROOFS[key](witness)


def test_a_reused_request_id_charged_again_is_witnessed(backend: Backend) -> None:
    # Every request after a client's first reuses an answered id with another amount: the without-key handler
    # charges it, so the rule breaks at the second op whatever the timing.
    knobs = {"reuse_share": 1.0, "duplicate_share": 0.0, "resend_share": 0.0, "crash_share": 0.0}
    config = RunConfig(
        pattern="idempotency-keys",
        variant="without-key",
        threads=2,
        ops_per_client=3,
        lost_response_share=0.0,
        options=knobs,
    )
    run = run_pattern(config, backend)
    assert run.state is RunState.DONE, run.error
    assert {inv.key: inv.holds for inv in run.invariants}[REUSE_REFUSED] is False
    witness = explain("idempotency-keys", run.history, run.invariants)[REUSE_REFUSED]
    assert witness is not None
    PROOFS[REUSE_REFUSED](witness)
