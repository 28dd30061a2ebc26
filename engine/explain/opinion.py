"""The linearizability check as a second opinion on a run's invariants, in the shape a summary carries.

The two are independent: the invariants know the pattern's rules, the check knows only how its calls read as
operations on objects. "Not linearizable" is a proof (an order of the calls that explains them does not
exist), so if it comes with every invariant holding, one of the two is wrong about the run: a bug in the lab,
and the summary says so. The other way round is no contradiction by itself: an invariant can break where the
check models nothing (a crashed client's unfinished order, an index that never converged), so the summary
only notes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from engine.explain.linearizable import (
    DEFAULT_BUDGET_S,
    LINEARIZABLE,
    NOT_LINEARIZABLE,
    UNKNOWN,
    check,
)
from engine.record.history import History

# Past this many calls the check would not finish within its budget here (100,000 take about 2 s): say so.
MAX_CALLS = 200_000
PREFIX_SHOWN = 50  # History rows of the shortest non-linearizable prefix kept in a summary


def second_opinion(
    pattern: str,
    history: History,
    options: Mapping[str, Any],
    invariants: Iterable[Mapping[str, Any]],
    budget_s: float = DEFAULT_BUDGET_S,
) -> dict[str, Any]:
    """{verdict, text, seconds, objects (how many per verdict), object and prefix (the first object no order
    explains, and the History rows of its shortest such prefix), disagreement (None when they agree)}."""
    broken = [str(inv.get("name") or inv.get("key")) for inv in invariants if inv.get("holds") is False]
    if len(history) > MAX_CALLS:
        return {
            "verdict": UNKNOWN,
            "text": f"unknown: {len(history):,} calls are more than the check takes on ({MAX_CALLS:,})",
            "disagreement": None,
        }
    result = check(history, pattern, options, budget_s)
    first = result.broken[0] if result.broken else None
    disagreement = None
    if result.verdict == NOT_LINEARIZABLE and not broken:
        disagreement = (
            f"the linearizability check finds {first.obj if first else 'an object'} not linearizable, yet every "
            "invariant holds: one of the two is wrong about this run, which is a bug in the lab"
        )
    note = None
    if result.verdict == LINEARIZABLE and broken:
        note = (
            f"{len(broken)} invariant{'s' if len(broken) != 1 else ''} broke where the check found every object "
            "it models linearizable: what broke is outside what the calls record as operations"
        )
    return {
        "verdict": result.verdict,
        "text": result.text(),
        "seconds": round(result.seconds, 3),
        "objects": dict(Counter(o.verdict for o in result.objects)),
        "object": first.obj if first else None,
        "prefix": list(first.prefix[:PREFIX_SHOWN]) if first else [],
        "disagreement": disagreement,
        "note": note,
    }


def opinion_line(opinion: Mapping[str, Any] | None) -> str | None:
    """The summary's text line: the verdict, and a disagreement first when there is one."""
    if not opinion:
        return None
    if opinion.get("disagreement"):
        return f"DISAGREES: {opinion['disagreement']} ({opinion.get('text')})"
    return str(opinion.get("text")) + (f"; {opinion['note']}" if opinion.get("note") else "")
