"""The generic invariants a workload may declare, judged from the final table and the History.

- no-lost-change: every item's `changes` (raised by 1 in the same request as each counted change) equals the
  counted changes the server acknowledged on it, plus at most one per attempt of a call whose answer was lost.
- all-or-nothing: transfers move balance between items and never create or destroy it, so the table's total
  balance is what the set-up wrote.
- one-winner: each create-only key was created by one acknowledged put at most."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import Invariant
from engine.record.history import History
from engine.words import agree, plural
from engine.workloads.operations.layout import DETAIL_COUNTED, DETAIL_CREATED, DETAIL_TOKEN, NEW_PREFIX
from engine.workloads.schema.workload import Workload

NO_LOST_CHANGE = "no-lost-change"
ALL_OR_NOTHING = "all-or-nothing"
ONE_WINNER = "one-winner"


def label_of(item: dict[str, Any]) -> str:
    return str(item["PK"]) if item.get("SK") in (None, "-") else f"{item['PK']}/{item['SK']}"


def judge(w: Workload, table: Table, history: History) -> list[Invariant]:
    items = table.scan_all()
    frame = history.snapshot(detail=True)
    calls = (
        list(
            zip(
                frame["seq"].astype(int),
                frame["outcome"].astype(str),
                frame["retries"].astype(int),
                frame["detail"],
            )
        )
        if not frame.empty
        else []
    )
    out = []
    declared = w.declared_invariants()
    if NO_LOST_CHANGE in declared:
        out.append(_no_lost_change(items, calls))
    if ALL_OR_NOTHING in declared:
        out.append(_all_or_nothing(w, items))
    if ONE_WINNER in declared:
        out.append(_one_winner(calls))
    return out


def _no_lost_change(items: list[dict[str, Any]], calls: list[tuple[int, str, int, Any]]) -> Invariant:
    acked: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    seqs: dict[str, list[int]] = {}
    # A call whose answer was lost, resent with its ClientRequestToken and acknowledged, was applied once in all:
    # the acknowledged resend counts it, so the lost one adds nothing to the bound (a second application fails).
    settled = {d.get(DETAIL_TOKEN) for _s, outcome, _r, d in calls if outcome == "ok" and d.get(DETAIL_TOKEN)}
    for seq, outcome, retries, detail in calls:
        for label in detail.get(DETAIL_COUNTED) or ():
            if outcome == "ok":
                acked[label] += 1
                seqs.setdefault(label, []).append(seq)
            elif outcome == "info" and detail.get(DETAIL_TOKEN) not in settled:
                unknown[label] += retries + 1
    final = {label_of(i): int(i.get("changes", 0)) for i in items if not str(i["PK"]).startswith(NEW_PREFIX)}
    lost = {k: acked[k] - final.get(k, 0) for k in acked if acked[k] > final.get(k, 0)}
    extra = {k: v - acked[k] - unknown[k] for k, v in final.items() if v > acked[k] + unknown[k]}
    n_acked, n_lost, n_extra, n_unknown = (
        sum(acked.values()),
        sum(lost.values()),
        sum(extra.values()),
        sum(unknown.values()),
    )
    hedge = f"; up to {n_unknown} more from calls whose answer was lost" if n_unknown else ""
    worst = max(lost, key=lambda k: lost[k]) if lost else None
    return Invariant(
        name="no acknowledged change lost",
        key=NO_LOST_CHANGE,
        holds=not lost and not extra,
        expected=f"{plural(n_acked, 'change')} applied",
        observed=f"{sum(min(final.get(k, 0), acked[k]) for k in acked)} of them in the items, {n_lost} lost"
        + (f", {n_extra} too many" if n_extra else ""),
        violations=n_lost + n_extra,
        calls=tuple(s for k in lost for s in seqs.get(k, ())),
        explanation=(
            f"{n_lost} of {plural(n_acked, 'acknowledged change')} {agree(n_lost, 'is', 'are')} not in the items "
            f"(most on {worst}: {lost[worst]}): clients read the same version and wrote over each other"
            if worst is not None
            else f"{plural(n_extra, 'change')} {agree(n_extra, 'was', 'were')} applied more often than acknowledged "
            "(a resend applied twice)"
            if extra
            else "every acknowledged change is counted in its item"
        )
        + hedge,
    )


def _all_or_nothing(w: Workload, items: list[dict[str, Any]]) -> Invariant:
    expected = w.table.items * w.table.balance
    observed = sum(int(i.get("balance", 0)) for i in items if not str(i["PK"]).startswith(NEW_PREFIX))
    diff = observed - expected
    return Invariant(
        name="transfers conserve the total",
        key=ALL_OR_NOTHING,
        holds=diff == 0,
        expected=expected,
        observed=observed,
        violations=0 if diff == 0 else abs(diff),
        explanation=(
            "every transfer moved its whole amount or none of it"
            if diff == 0
            else f"the total is {'up' if diff > 0 else 'down'} {abs(diff)}: part of a transfer was applied, or "
            "one was written over"
        ),
    )


def _one_winner(calls: list[tuple[int, str, int, Any]]) -> Invariant:
    winners: dict[str, list[int]] = {}
    for seq, outcome, _retries, detail in calls:
        created = detail.get(DETAIL_CREATED)
        if created and outcome == "ok":
            winners.setdefault(created, []).append(seq)
    doubles = {k: v for k, v in winners.items() if len(v) > 1}
    extra = sum(len(v) - 1 for v in doubles.values())
    return Invariant(
        name="one winner per created key",
        key=ONE_WINNER,
        holds=not doubles,
        expected=f"at most 1 acknowledged create per key ({plural(len(winners), 'key')} created)",
        observed=f"{plural(len(doubles), 'key')} with several winners" if doubles else "one each",
        violations=extra,
        calls=tuple(s for v in doubles.values() for s in v),
        explanation=(
            f"{plural(extra, 'create')} {agree(extra, 'was', 'were')} told {agree(extra, 'it', 'they')} won a key "
            "another client had also won: each checked in code, then put without a condition"
            if doubles
            else "attribute_not_exists let one put create each key; the others were refused"
        ),
    )
