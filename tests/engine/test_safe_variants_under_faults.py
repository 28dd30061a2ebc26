"""Every safe variant under faults: 32 threads, 10 % of write responses lost and 10 % of requests throttled.

Faults are for the clients, not for the judge: the run must end done, and each invariant must hold or say it
cannot judge; never FAIL because a verification read was throttled or a throttled read was taken as evidence.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.backends.backend import Backend, BackendSpec, RetryPolicy
from engine.patterns import all_patterns
from engine.run.runner import RunConfig, RunState, run_pattern
from tests.conftest import ENDPOINT


@pytest.fixture(scope="module")
def throttling() -> Iterator[Backend]:
    if ENDPOINT:
        pytest.skip("needs the embedded server's injected throttling (set no DDBLAB_TEST_ENDPOINT)")
    with Backend(BackendSpec(), ttl_interval_s=0.2) as backend:
        assert backend.server is not None
        backend.server.configure(throttle_share=0.1)  # every request, the judge's too
        yield backend


@pytest.mark.parametrize("pattern", list(all_patterns()))
def test_the_safe_variant_holds_under_lost_responses_and_throttling(throttling: Backend, pattern: str) -> None:
    run = run_pattern(
        RunConfig(
            pattern=pattern,
            threads=32,
            # One lock: 32 holds in turn, each of 4 calls or more (and the waiters' polls): 128 or more calls.
            ops_per_client=1 if pattern == "distributed-locking" else 6,
            lost_response_share=0.1,
            retry=RetryPolicy("standard", 3),
            seed=7,
        ),
        throttling,
    )
    assert run.state is RunState.DONE, run.error
    counts = run.history.counts()
    # The faults were there: each call is throttled at 0.1, so a run of 128 calls or more met none with chance
    # 0.9**128 < 2e-6 (at 3 ops, a pattern of one call an op had 96 calls: 0.9**96, about 4e-5).
    assert counts["errors"].get("ThrottlingException", 0) + counts["retries"] > 0
    broken = [inv.as_dict() for inv in run.invariants if inv.holds is False]
    assert run.invariants and not broken, broken
    # ... and judged: a run whose every rule said CANNOT JUDGE would pass the line above having tested nothing.
    assert any(inv.holds for inv in run.invariants), [inv.as_dict() for inv in run.invariants]
