"""The linearizability check on histories small enough to judge by hand, and against brute force on random ones:
it says "not linearizable" only when no order explains the calls, "linearizable" only when one does."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.explain.linearizable import (
    LINEARIZABLE,
    NOT_LINEARIZABLE,
    UNKNOWN,
    _next_states,
    check_ops,
)
from engine.explain.operations import ABSENT, Kind, Op, Reading
from engine.record.history import Outcome

OK, FAIL, INFO = Outcome.OK, Outcome.FAIL, Outcome.INFO


def op(kind: Kind, start: int, end: int, outcome: Outcome = OK, seq: int = 0, **fields: Any) -> Op:
    return Op(obj="x", kind=kind, invoke_ns=start, complete_ns=end, outcome=outcome, seqs=(seq,), **fields)


def verdict(ops: list[Op], initial: Any = 0, budget_s: float = 5.0) -> str:
    return check_ops(Reading(ops, {"x": initial}), budget_s).verdict


def test_a_read_after_a_write_returned_must_see_it() -> None:
    write = op(Kind.WRITE, 0, 10, value=1)
    assert verdict([write, op(Kind.READ, 20, 30, value=1)]) == LINEARIZABLE
    assert verdict([write, op(Kind.READ, 20, 30, value=0)]) == NOT_LINEARIZABLE
    # Overlapping the write, the read may come before it.
    assert verdict([write, op(Kind.READ, 5, 30, value=0)]) == LINEARIZABLE


def test_two_increments_that_both_returned_one_are_a_lost_update() -> None:
    a = op(Kind.ADD, 0, 10, seq=1, delta=1, ret=1)
    b = op(Kind.ADD, 5, 15, seq=2, delta=1, ret=1)
    result = check_ops(Reading([a, b], {"x": 0}))
    assert result.verdict == NOT_LINEARIZABLE
    assert result.broken[0].prefix == (1, 2)


def test_an_unknown_outcome_may_or_may_not_have_taken_effect() -> None:
    maybe = op(Kind.ADD, 0, 10, INFO, delta=1, ret=99)  # what an unknown call returned is not trusted
    assert verdict([maybe, op(Kind.READ, 20, 30, value=0)]) == LINEARIZABLE
    assert verdict([maybe, op(Kind.READ, 20, 30, value=1)]) == LINEARIZABLE
    assert verdict([maybe, op(Kind.READ, 20, 30, value=2)]) == NOT_LINEARIZABLE
    # It may take effect long after it was sent: between two reads that come after its interval.
    later = [maybe, op(Kind.READ, 20, 30, value=0), op(Kind.READ, 40, 50, value=1)]
    assert verdict(later) == LINEARIZABLE


def test_a_refusal_says_the_condition_was_false_at_some_instant_of_the_call() -> None:
    insert = op(Kind.INSERT, 0, 10, value="u")
    assert verdict([insert, op(Kind.INSERT, 20, 30, FAIL, value="v")], ABSENT) == LINEARIZABLE
    assert verdict([insert, op(Kind.INSERT, 20, 30, value="v")], ABSENT) == NOT_LINEARIZABLE
    assert verdict([op(Kind.INSERT, 0, 10, FAIL, value="v")], ABSENT) == NOT_LINEARIZABLE
    cas = op(Kind.CAS, 0, 10, expect="PENDING", value="PAID")
    assert verdict([cas, op(Kind.CAS, 20, 30, FAIL, expect="PENDING", value="PAID")], "PENDING") == LINEARIZABLE
    assert verdict([cas, op(Kind.CAS, 20, 30, expect="PENDING", value="PAID")], "PENDING") == NOT_LINEARIZABLE


def test_past_its_budget_the_check_says_unknown() -> None:
    # Forty concurrent unknown adds and a read no subset of them explains: 2^40 subsets to rule out.
    ops = [op(Kind.ADD, i, 10_000, INFO, delta=2) for i in range(40)]
    ops.append(op(Kind.READ, 20_000, 20_001, value=1))
    assert verdict(ops, budget_s=0.2) == UNKNOWN


def test_an_object_nothing_recorded_enough_of_is_unknown() -> None:
    result = check_ops(Reading([], {}, {"lock": "lock: its calls record no state read"}))
    assert result.verdict == UNKNOWN and result.objects[0].reason


# -- against brute force ---------------------------------------------------------------------------------------


def _brute(ops: list[Op], initial: Any) -> bool:
    """Every order of the operations that respects real time, each unknown one applied or not."""
    n = len(ops)
    for order in itertools.permutations(range(n)):
        position = {i: p for p, i in enumerate(order)}
        if any(
            ops[a].complete_ns < ops[b].invoke_ns and ops[a].outcome is not INFO and position[a] > position[b]
            for a in range(n)
            for b in range(n)
        ):
            continue
        states = [initial]
        for i in order:
            states = [after for s in states for after in _next_states(s, ops[i])]
        if states:
            return True
    return False


_KINDS = st.sampled_from([Kind.READ, Kind.WRITE, Kind.ADD, Kind.CAS, Kind.INSERT, Kind.REMOVE, Kind.SETNX])


@st.composite
def _histories(draw: st.DrawFn) -> list[Op]:
    ops = []
    for seq in range(draw(st.integers(1, 5))):
        start = draw(st.integers(0, 20))
        ops.append(
            op(
                draw(_KINDS),
                start,
                start + draw(st.integers(0, 8)),
                draw(st.sampled_from([OK, OK, OK, FAIL, INFO])),
                seq,
                value=draw(st.integers(0, 2)),
                expect=draw(st.integers(0, 2)),
                delta=draw(st.integers(-1, 1)),
                ret=draw(st.none() | st.integers(0, 2)),
            )
        )
    return ops


@settings(max_examples=400, deadline=None)
@given(_histories(), st.sampled_from([0, 1, ABSENT]))
def test_the_verdict_is_the_brute_force_one(ops: list[Op], initial: Any) -> None:
    expected = LINEARIZABLE if _brute(ops, initial) else NOT_LINEARIZABLE
    assert verdict(ops, initial) == expected
