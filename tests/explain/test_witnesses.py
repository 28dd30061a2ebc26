"""Every racy variant, run small and made certain to break: the explainer names a witness for each broken
invariant, and the witness's own calls prove the break (tests/explain/proofs.py says what proves what).

How each run is made certain to break, instead of hoping for a race: the clients start together (the runner's
barrier) and 50 ms of simulated network time go before every request, so every client's first read reaches the
server before any client's first write can leave; where the pattern allows, the knobs make the harm a
certainty outright (every client creates the same user, every order is resent, every request delivered twice).
"""

from __future__ import annotations

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
from tests.explain.proofs import PROOFS

LOCKSTEP_MS = 50.0  # simulated network time before each request: the clients' first reads all land first

# Rules whose break no small set of calls proves on its own: an order left unfinished by a crashed client is
# proved by the calls it never made. The explainer says it has no witness rather than show a wrong one.
NO_WITNESS = {NO_ORPHAN_ORDER}

# (pattern, run knobs, the invariants the knobs make certain to break)
CASES: dict[str, tuple[dict[str, Any], set[str]]] = {
    # 4 clients read views = 0 before any write leaves, and all write 1; tickets = 1: all of them sell it.
    "atomic-counters": (
        {"threads": 4, "ops_per_client": 2, "options": {"tickets": 1}, "latency_ms": LOCKSTEP_MS},
        {FINAL_COUNT, SEQUENCE_GAP_FREE, NEVER_OVERSOLD},
    ),
    # One account: the 4 first reads all return version 1, and the 4 puts all write version 2.
    "optimistic-locking": (
        {"threads": 4, "ops_per_client": 2, "options": {"accounts": 1}, "latency_ms": LOCKSTEP_MS},
        {NO_LOST_UPDATE},
    ),
    # Every client signs up the same new user u0 with a plain put: 4 acknowledged creates of one user, the
    # last 3 of them get the old item back (overwrote), whatever the timing.
    "conditional-writes": ({"threads": 4, "ops_per_client": 1, "latency_ms": LOCKSTEP_MS}, {ONE_WINNER}),
    # Every hold pauses 100 ms + 1 s past a 100 ms lease: the second worker takes the lock once the first's
    # lease runs out (within the backoff's 20 ms cap), reads jobs = 0 a second before the paused worker writes.
    "distributed-locking": (
        {
            "threads": 2,
            "ops_per_client": 1,
            "options": {"lease_ms": 100, "pause_share": 1.0, "work_ms": 0, "crash_share": 0.0},
        },
        {NO_STALE_WRITE, COUNTER_MATCHES_WRITES},
    ),
    # The index lags 1 s and each write is read back once, at once: every read-back misses its write.
    "gsi-consistency": (
        {"threads": 2, "ops_per_client": 1, "options": {"gsi_lag_ms": 1000, "read_attempts": 1}},
        {READ_YOUR_WRITES},
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
    ),
    # Every placed order is sent again: the resend's put is refused (the order is there), and the client goes on
    # to take the stock and count the order a second time.
    "transactions": (
        {"threads": 2, "ops_per_client": 2, "options": {"resend_share": 1.0, "crash_share": 0.0}},
        {COUNTS_AGREE, RESEND_APPLIES_ONCE},
    ),
    # Two emails for 4 clients: at least two sign up with the same one, and the index they check lags 300 ms
    # behind the sign-ups, so both find it free.
    "unique-constraints": (
        {"threads": 4, "ops_per_client": 1, "options": {"emails": 2}, "latency_ms": LOCKSTEP_MS},
        {NO_SHARED_EMAIL},
    ),
}


def test_every_racy_variant_has_a_case() -> None:
    from engine.patterns import all_patterns

    assert set(CASES) == set(all_patterns())


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_racy_variant_breaks_and_each_witness_proves_it(backend: Backend, pattern: str) -> None:
    knobs, certain = CASES[pattern]
    variant = get_pattern(pattern).racy_variant()
    run = run_pattern(RunConfig(pattern=pattern, variant=variant, **knobs), backend)
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
