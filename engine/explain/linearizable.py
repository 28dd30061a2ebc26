"""A second opinion that knows no pattern's rules: is each item's history linearizable?

Each pattern says how its calls read as operations on one object (an item, or one attribute of it): a read, a
write, an add, a compare-and-set, an insert-if-absent ... (`@operations`, in its witnesses module). The check
then asks, per object, whether some order of those operations, each placed at one instant inside its
[invoke, complete] interval, explains every value returned (Herlihy & Wing). The search is Wing & Gong's with
Lowe's memoization of (operations linearized, state), as Porcupine does it. Linearizability is local, so
objects are checked one by one.

- An operation whose outcome is unknown (INFO) may have taken effect at any instant after it was sent, or
  never; what it returned is not trusted (Knossos's treatment).
- A refusal (FAIL) counts only where the pattern says what it proves (the condition was false at some instant
  inside the call); otherwise it is left out, which can only make a violation harder to find, never invent one.
- Every object gets a time budget; past it the object's verdict is "unknown", never a guess.
- Objects whose calls do not record enough (no value read) are "unknown" with the reason.
- Where an object is not linearizable, the shortest prefix of its history (by completion) that already is not
  is found by bisection: operations still running at the cut count as unknown-outcome ones.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import ABSENT, Kind, Op, Reading, reader_for
from engine.record.history import History, Outcome
from engine.words import plural

LINEARIZABLE = "linearizable"
NOT_LINEARIZABLE = "not linearizable"
UNKNOWN = "unknown"

DEFAULT_BUDGET_S = 5.0


_UNSET: Any = None  # the state of an object whose initial value is not known: the first operation sets it
_NEVER = 2**63 - 1  # the return time of an operation that may still take effect


# -- the model -------------------------------------------------------------------------------------------------


def _apply(state: Any, op: Op, *, trust_return: bool) -> Any:
    """The state after `op` took effect in `state`, or _IMPOSSIBLE."""
    k = op.kind
    if k is Kind.WRITE:
        return op.value
    if k is Kind.REMOVE:
        return ABSENT
    if k is Kind.READ:
        if not trust_return:
            return state
        return op.value if state is _UNSET or state == op.value else _IMPOSSIBLE
    if k is Kind.READ_NOT:
        return state if not trust_return or state is _UNSET or state != op.value else _IMPOSSIBLE
    if k is Kind.ADD:
        if state is _UNSET:
            return op.ret if trust_return and op.ret is not None else _UNSET
        if state is ABSENT:
            return _IMPOSSIBLE
        after = state + op.delta
        if op.floor is not None and after < op.floor:
            return _IMPOSSIBLE
        if trust_return and op.ret is not None and after != op.ret:
            return _IMPOSSIBLE
        return after
    if k is Kind.CAS:
        return op.value if state is _UNSET or state == op.expect else _IMPOSSIBLE
    if k is Kind.INSERT:
        return op.value if state is _UNSET or state is ABSENT else _IMPOSSIBLE
    if k is Kind.SETNX:
        if state is _UNSET or state is ABSENT:
            return op.value
        return state if not trust_return or state == op.value else _IMPOSSIBLE
    raise ValueError(f"unknown operation kind {k}")


def _refused(state: Any, op: Op) -> bool:
    """A refusal is possible in `state`: the operation's condition was false."""
    if state is _UNSET:
        return True
    if op.kind is Kind.CAS:
        return bool(state != op.expect)
    if op.kind is Kind.INSERT:
        return state is not ABSENT
    if op.kind is Kind.READ_NOT:  # an update of an item that must exist (not `value`), refused
        return bool(state == op.value)
    if op.kind is Kind.ADD and op.floor is not None and state is not ABSENT:
        return bool(state + op.delta < op.floor)
    return True  # a refusal of an operation the model gives no condition tells nothing about the state


class _Impossible:
    pass


_IMPOSSIBLE: Any = _Impossible()


def _next_states(state: Any, op: Op) -> list[Any]:
    if op.outcome is Outcome.FAIL:
        return [state] if _refused(state, op) else []
    if op.outcome is Outcome.INFO:
        applied = _apply(state, op, trust_return=False)
        # Not applied at all first: most unknown writes in a run are ones whose request never got through.
        return [state] if applied is _IMPOSSIBLE or applied == state else [state, applied]
    after = _apply(state, op, trust_return=True)
    return [] if after is _IMPOSSIBLE else [after]


# -- the search (Wing & Gong with Lowe's memoization) ----------------------------------------------------------


_EMPTY: frozenset[int] = frozenset()


class _OutOfTime(Exception):
    pass


def _linearizable(ops: Sequence[Op], initial: Any, deadline: float) -> bool:
    """Whether some order of `ops` within their intervals explains them all; _OutOfTime past the deadline."""
    n = len(ops)
    if n == 0:
        return True
    order = sorted(range(n), key=lambda i: (ops[i].invoke_ns, i))
    rank = {op_index: r for r, op_index in enumerate(order)}  # ids in order of invocation
    events = []
    for i, op in enumerate(ops):
        ret = _NEVER if op.outcome is Outcome.INFO else op.complete_ns
        events.append((op.invoke_ns, 0, rank[i]))
        events.append((ret, 1, rank[i]))
    events.sort()  # at equal times a call comes before a return: the two operations count as concurrent
    by_rank = [ops[i] for i in order]
    size = len(events)
    head = size  # sentinel
    nxt = list(range(1, size + 1)) + [0]
    prv = [head] + list(range(size - 1)) + [0]
    nxt[head] = 0
    nxt[size - 1] = -1
    is_call = [e[1] == 0 for e in events]
    op_of = [e[2] for e in events]
    ret_event = [0] * n
    for idx, e in enumerate(events):
        if e[1] == 1:
            ret_event[e[2]] = idx

    def lift(e: int) -> None:
        r = ret_event[op_of[e]]
        for x in (e, r):
            p, q = prv[x], nxt[x]
            nxt[p] = q
            if q != -1:
                prv[q] = p

    def unlift(e: int) -> None:
        r = ret_event[op_of[e]]
        for x in (r, e):
            p, q = prv[x], nxt[x]
            nxt[p] = x
            if q != -1:
                prv[q] = x

    state = initial
    extras: frozenset[int] = frozenset()  # linearized ids at or above the lowest id not yet linearized
    cache: set[tuple[int, frozenset[int], Any]] = set()
    stack: list[tuple[int, Any, frozenset[int], int]] = []
    entry = nxt[head]
    start_alt = 0
    steps = 0
    while nxt[head] != -1:
        steps += 1
        if not steps & 0x3FF and time.monotonic() > deadline:
            raise _OutOfTime
        if entry != -1 and is_call[entry]:
            op_id = op_of[entry]
            alternatives = _next_states(state, by_rank[op_id])
            moved = False
            for a in range(start_alt, len(alternatives)):
                after = alternatives[a]
                lift(entry)
                low = op_of[nxt[head]] if nxt[head] != -1 else n
                if not extras:  # the usual case: nothing linearized out of order
                    new_extras = _EMPTY if op_id < low else frozenset((op_id,))
                else:
                    new_extras = frozenset(i for i in extras | {op_id} if i >= low)
                memo = (low, new_extras, after)
                if memo in cache:
                    unlift(entry)
                    continue
                cache.add(memo)
                stack.append((entry, state, extras, a + 1))
                state, extras = after, new_extras
                entry = nxt[head]
                moved = True
                break
            start_alt = 0
            if not moved:
                entry = nxt[entry]
        else:  # the return of an operation not linearized yet: nothing left to try here, go back
            if not stack:
                return False
            entry, state, extras, start_alt = stack.pop()
            unlift(entry)
    return True


# -- verdicts --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObjectVerdict:
    obj: str
    verdict: str  # LINEARIZABLE, NOT_LINEARIZABLE or UNKNOWN
    ops: int
    reason: str = ""
    prefix: tuple[int, ...] = ()  # the History rows of the shortest non-linearizable prefix

    def as_dict(self) -> dict[str, Any]:
        return {
            "object": self.obj,
            "verdict": self.verdict,
            "ops": self.ops,
            "reason": self.reason,
            "prefix": list(self.prefix),
        }


@dataclass(frozen=True, slots=True)
class Linearizability:
    verdict: str
    objects: tuple[ObjectVerdict, ...]
    seconds: float
    budget_s: float

    @property
    def broken(self) -> list[ObjectVerdict]:
        return [o for o in self.objects if o.verdict == NOT_LINEARIZABLE]

    def text(self) -> str:
        """One line for a run's summary."""
        counts: defaultdict[str, int] = defaultdict(int)
        for o in self.objects:
            counts[o.verdict] += 1
        checked = sum(o.ops for o in self.objects if o.verdict != UNKNOWN)
        parts = [f"{n} {v}" for v, n in sorted(counts.items())]
        if self.verdict == NOT_LINEARIZABLE:
            first = self.broken[0]
            return (
                f"not linearizable: {first.obj} has no order that explains its calls "
                f"(shortest such prefix: {plural(len(first.prefix), 'call')}); objects: {', '.join(parts)}"
            )
        if self.verdict == LINEARIZABLE:
            return f"linearizable: {plural(checked, 'operation')} on {plural(counts[LINEARIZABLE], 'object')}" + (
                f" ({plural(counts[UNKNOWN], 'object')} not modelled)" if counts[UNKNOWN] else ""
            )
        why = next((o.reason for o in self.objects if o.verdict == UNKNOWN and o.reason), "no object could be modelled")
        return f"unknown: {why}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "text": self.text(),
            "seconds": round(self.seconds, 3),
            "budget_s": self.budget_s,
            "objects": [o.as_dict() for o in self.objects],
        }


def check_ops(reading: Reading, budget_s: float = DEFAULT_BUDGET_S) -> Linearizability:
    """Check each object of `reading` within the budget (shared: objects checked late get what is left)."""
    started = time.monotonic()
    deadline = started + budget_s
    by_obj: dict[str, list[Op]] = defaultdict(list)
    for op in reading.ops:
        by_obj[op.obj].append(op)
    verdicts = [ObjectVerdict(obj, UNKNOWN, 0, why) for obj, why in sorted(reading.unknown.items())]
    for obj in sorted(by_obj):
        if obj in reading.unknown:
            continue
        ops = by_obj[obj]
        initial = reading.initial.get(obj, _UNSET)
        try:
            ok = _linearizable(ops, initial, deadline)
        except _OutOfTime:
            verdicts.append(ObjectVerdict(obj, UNKNOWN, len(ops), f"{obj}: out of time ({budget_s:g} s budget)"))
            continue
        if ok:
            verdicts.append(ObjectVerdict(obj, LINEARIZABLE, len(ops)))
            continue
        prefix = _shortest_prefix(ops, initial, deadline)
        verdicts.append(ObjectVerdict(obj, NOT_LINEARIZABLE, len(ops), prefix=prefix))
    if any(v.verdict == NOT_LINEARIZABLE for v in verdicts):
        verdict = NOT_LINEARIZABLE
    elif any(v.verdict == LINEARIZABLE for v in verdicts) and not any(v.verdict == UNKNOWN and v.ops for v in verdicts):
        verdict = LINEARIZABLE
    else:
        verdict = UNKNOWN
    return Linearizability(verdict, tuple(verdicts), time.monotonic() - started, budget_s)


def _prefix(ops: Sequence[Op], cut_ns: int) -> list[Op]:
    """The operations sent by `cut_ns`; those not returned by then count as unknown-outcome ones."""
    return [
        op if op.complete_ns <= cut_ns or op.outcome is Outcome.INFO else replace(op, outcome=Outcome.INFO)
        for op in ops
        if op.invoke_ns <= cut_ns
    ]


def _shortest_prefix(ops: Sequence[Op], initial: Any, deadline: float) -> tuple[int, ...]:
    """The History rows of the shortest prefix (cut at a completion) that is already not linearizable; the whole
    history's if the bisection runs out of time."""
    cuts = sorted({op.complete_ns for op in ops if op.outcome is not Outcome.INFO})
    lo, hi = 0, len(cuts) - 1  # cuts[hi] is known to fail: by then every operation that returns has returned
    try:
        while lo < hi:
            mid = (lo + hi) // 2
            if _linearizable(_prefix(ops, cuts[mid]), initial, deadline):
                lo = mid + 1
            else:
                hi = mid
    except _OutOfTime:
        pass
    chosen = _prefix(ops, cuts[hi]) if cuts else list(ops)
    return tuple(sorted(s for op in chosen for s in op.seqs))


def check(
    history: History | Calls, pattern: str, options: Mapping[str, Any] | None = None, budget_s: float = DEFAULT_BUDGET_S
) -> Linearizability:
    """The linearizability verdict on a run's history, read as its pattern says; "unknown" for a pattern that
    says nothing."""
    from engine.explain.registry import load

    load(pattern)
    reader = reader_for(pattern)
    if reader is None:
        return Linearizability(
            UNKNOWN,
            (ObjectVerdict("*", UNKNOWN, 0, f"{pattern} does not say how its calls read as operations"),),
            0.0,
            budget_s,
        )
    calls = history if isinstance(history, Calls) else Calls.of(history)
    return check_ops(reader(calls, options or {}), budget_s)
