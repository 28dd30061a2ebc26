"""Every pattern at 64 threads under the aws-like profile (SIMULATED contention, default knobs): each safe
variant keeps all its invariants (retrying transaction conflicts and throttling with backoff), each racy one
still breaks at least one. Few ops per thread, so the whole file takes well under a minute."""

from __future__ import annotations

import pytest

from engine.backends.backend import Backend
from engine.patterns import all_patterns
from engine.run.runner import RunConfig, run_pattern
from engine.server.profile import AWS_LIKE
from tests.index_hold import IndexHold
from tests.lockstep import Lockstep

# Shorter leases and work, and more accounts to share: the same races in seconds, not a minute.
OPTIONS = {
    "distributed-locking": {"lease_ms": 300, "work_ms": 2},
    "optimistic-locking": {"accounts": 4},
    "gsi-consistency": {"gsi_lag_ms": 300},
}
# The racy variants whose race is a read then a write: their first two calls go in lockstep (see below).
LOCKSTEP = {"atomic-counters", "optimistic-locking", "distributed-locking", "unique-constraints"}
CASES = [
    (name, variant.name, variant.safe) for name, cls in all_patterns().items() for variant in cls.variants.values()
]


@pytest.mark.parametrize(("pattern", "variant", "safe"), CASES, ids=[f"{p}-{v}" for p, v, _ in CASES])
def test_64_threads_under_aws_like(embedded: Backend, pattern: str, variant: str, safe: bool) -> None:
    # What makes each racy variant break in every run: its first two calls in lockstep (all 64 read before any
    # writes: a lost increment, lost blind write, overlapping no-lock workers, two sign-ups on one of 40 emails);
    # every unguarded create overwrites; without a key, 128 requests each duplicated at 0.2 and each answer resent
    # at 0.2 charge twice (none: 0.8**128 < 1e-12); separate writes resend 0.2 of at least 66 placed orders (none:
    # 0.8**66 < 1e-6) and crash 0.05 of 128 (none as well: under 1e-9); gsi-read, an index held until every
    # client's first read-back is answered (tests/index_hold.py), so all 64 miss their write.
    forced: Lockstep | IndexHold = Lockstep(embedded, rounds=2 if pattern in LOCKSTEP and not safe else 0)
    if variant == "gsi-read":
        forced = IndexHold(embedded, parties=64)
    run = run_pattern(
        RunConfig(
            pattern=pattern,
            variant=variant,
            threads=64,
            ops_per_client=1 if pattern == "distributed-locking" else 2,  # 64 waiters back off up to 1 s
            options=OPTIONS.get(pattern, {}),
            profile=AWS_LIKE,
            seed=11,
        ),
        forced,
    )
    forced.check()
    assert run.state.value == "done", run.error
    # holds is None for a rule the run gave nothing to judge (at 2 ops per client a with-key run may reuse no key
    # for another payload): CANNOT JUDGE, neither broken nor kept.
    broken = [inv.name for inv in run.invariants if inv.holds is False]
    if safe:
        assert broken == [], broken
        assert any(inv.holds for inv in run.invariants), [inv.as_dict() for inv in run.invariants]
        assert [e for e in run.worker_errors if e["kind"] != "crash"] == []  # no client gave up
    else:
        assert broken, f"{pattern} {variant} kept every invariant at 64 threads"
