"""A Compare side's counters: what the guard refused kept apart from the harm the invariants found.

Counting every failed call alike made the safe side look worse: its guard refusing the losers of a race (a
condition refused, a transaction cancelled) and the business saying no (sold out) are the guard working, while
the racy side, with no guard, fails little and loses data. So a side shows the refusals as "refused by the
guard" and the invariants' violations as "harm"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The codes of a call refused because another client got there first (engine.record.codes.conflicts counts these).
GUARD_CODES = ("ConditionalCheckFailedException", "TransactionCanceledException", "TransactionConflictException")

REFUSED_HELP = (
    "Calls the variant's own check refused: a condition that did not hold, a transaction cancelled or in "
    "conflict, a business refusal (sold out, out of stock). Refusing the loser of a race is how a safe variant "
    "keeps its invariants: no harm."
)
HARM_HELP = "Times the pattern's invariants broke, judged once the run has ended (a refusal is never harm)."
OTHER_HELP = "Failed calls that no condition refused: throttled, or an unexpected error."


@dataclass(frozen=True)
class Counter:
    label: str
    value: str
    help: str | None = None


def refused_label(safe: bool | None) -> str:
    """Only a safe variant has a guard; a racy variant's refusals (a transaction conflict, say) are just refused."""
    return "refused by the guard" if safe else "refused (no harm)"


def guard_refusals(errors: Mapping[str, int]) -> int:
    """Every refused condition and cancelled transaction, business refusals (sold out) included."""
    return sum(int(n) for code, n in errors.items() if code in GUARD_CODES)


def harm(invariants: Sequence[Mapping[str, Any]]) -> int | None:
    """The invariants' violations (each broken one at least once); None before the verdicts."""
    verdicts = [inv for inv in invariants if not inv.get("as_of")]
    if not verdicts:
        return None
    return sum(max(int(inv.get("violations") or 0), 1) for inv in verdicts if inv.get("holds") is False)


def pair_counters(
    progress: Mapping[str, Any], invariants: Sequence[Mapping[str, Any]], safe: bool | None, *, short: bool = False
) -> list[Counter]:
    """calls · ok · refused by the guard · failed otherwise · harm, for one side of a pair; `short` (a presenter
    view's half screen, where five boxes cut their labels at 1280 px): calls · guard refused · failed · harm."""
    refused = guard_refusals(progress.get("errors") or {})
    other = max(int(progress.get("fail") or 0) - refused, 0)
    found = harm(invariants)
    if short:
        return [
            Counter("calls", f"{int(progress['calls']):,}"),
            Counter("guard refused" if safe else "refused", f"{refused:,}", REFUSED_HELP),
            Counter("failed", f"{other:,}", OTHER_HELP),
            Counter("harm", "pending" if found is None else f"{found:,}", HARM_HELP),
        ]
    return [
        Counter("calls", f"{int(progress['calls']):,}"),
        Counter("ok", f"{int(progress['ok']):,}"),
        Counter(refused_label(safe), f"{refused:,}", REFUSED_HELP),
        Counter("failed otherwise", f"{other:,}", OTHER_HELP),
        Counter("harm", "pending" if found is None else f"{found:,}", HARM_HELP),
    ]
