"""The invariants of idempotency keys: one charge per logical request, one reply per key, a reused key refused;
one function each, reading the table and the history once."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pandas as pd

from engine.backends.tables import Table
from engine.patterns.base import Invariant, rows
from engine.patterns.idempotency_keys.shared import CHARGE, IN_PROGRESS, RECORD, REFUSED
from engine.record.history import History
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_CHARGE = "exactly-one-charge-per-logical-request"
SAME_REPLY = "every-reply-to-a-key-is-the-same"
REUSE_REFUSED = "a-key-reused-with-another-payload-is-refused"


def verdicts(table: Table, history: History, *, keyed: bool = True) -> list[Invariant]:
    """Every invariant of the run, read from the table after it and from its history."""
    items = table.scan_all()
    charges = [i for i in items if i["SK"] == CHARGE]
    stuck = sum(1 for i in items if i["SK"] == RECORD and i["status"] == IN_PROGRESS)
    frame = history.snapshot(detail=True)
    detail = frame["detail"]
    mine = [bool(d.get("request")) for d in detail]
    calls = frame[mine]
    reuse = pd.Series([bool(d.get("reuse")) for d in calls["detail"]], index=calls.index, dtype=bool)
    original = {d["request"]: d["amount"] for d in calls.loc[~reuse, "detail"]}
    replied = pd.Series(["reply" in d for d in calls["detail"]], index=calls.index, dtype=bool)
    replies = calls[replied]
    return [
        _one_charge_each(original, charges, replies, reuse[replied], calls, stuck),
        _same_reply(replies, reuse[replied]),
        _reuse_refused(original, charges, replies, reuse[replied], keyed=keyed),
    ]


def _one_charge_each(
    original: dict[str, int],
    charges: list[dict[str, Any]],
    replies: pd.DataFrame,
    reuse: pd.Series,
    calls: pd.DataFrame,
    stuck: int,
) -> Invariant:
    # Charges of another amount under a key belong to its reuse: the third invariant counts those.
    per_request = Counter(str(c["requestId"]) for c in charges if original.get(str(c["requestId"])) == c["amount"])
    answered = {d["request"] for d in replies.loc[~reuse, "detail"] if d["reply"] != REFUSED}
    doubled = {r for r, n in per_request.items() if n > 1}
    extra = sum(per_request[r] - 1 for r in doubled)
    uncharged = sorted(r for r in answered if per_request[r] == 0)
    unanswered = sum(1 for r in original if r not in answered and per_request[r] == 0)
    reclaimed = int(((calls["action"] == "reclaim") & (calls["outcome"] == "ok")).sum())
    n = len(original)
    notes = [
        f"{plural(len(doubled), 'request')} {agree(len(doubled), 'was', 'were')} charged more than once "
        f"({plural(extra, 'extra charge')}): a retry or a duplicate "
        "delivery ran the charge again"
        if extra
        else f"every one of {plural(n, 'request')} was charged once, however often it was sent"
    ]
    if uncharged:
        notes.append(
            f"{plural(len(uncharged), 'answered request')} {agree(len(uncharged), 'has', 'have')} no charge "
            f"({', '.join(uncharged[:3])})"
        )
    if reclaimed:
        notes.append(
            f"{plural(reclaimed, 'claim')} past {agree(reclaimed, 'its', 'their')} in-progress expiry "
            f"{agree(reclaimed, 'was', 'were')} taken over under {agree(reclaimed, 'its', 'their')} charge id"
        )
    if unanswered:
        notes.append(
            f"{plural(unanswered, 'request')} {agree(unanswered, 'was', 'were')} still unanswered and uncharged "
            "when the run ended"
        )
    if stuck:
        notes.append(f"{plural(stuck, 'record')} {agree(stuck, 'was', 'were')} left IN_PROGRESS")
    evidence = rows(
        calls, [a == "charge" and d["request"] in doubled for a, d in zip(calls["action"], calls["detail"])]
    )
    return Invariant(
        name="exactly one charge per logical request",
        key=ONE_CHARGE,
        holds=extra == 0 and not uncharged,
        expected=f"{plural(n, 'request')}, {plural(n, 'charge')}",
        observed=f"{len(per_request)} charged, {plural(extra, 'extra charge')}"
        + (f", {len(uncharged)} answered but uncharged" if uncharged else ""),
        violations=extra + len(uncharged),
        calls=evidence,
        explanation="; ".join(notes),
    )


def _same_reply(replies: pd.DataFrame, reuse: pd.Series) -> Invariant:
    originals = replies[~reuse]
    seen: dict[str, set[str]] = defaultdict(set)
    for d in originals["detail"]:
        seen[d["request"]].add(d["reply"])
    differing = {r for r, answers in seen.items() if len(answers) > 1}
    extra = sum(len(seen[r]) - 1 for r in differing)
    evidence = rows(originals, [d["request"] in differing for d in originals["detail"]])
    sample = next(iter(sorted(differing)), None)
    answers: Counter[str] = Counter(d["request"] for d in originals["detail"])
    repeated = sum(1 for n in answers.values() if n > 1)
    return Invariant(
        name="every reply to a key is the same",
        key=SAME_REPLY,
        # Only a key answered twice or more can show differing replies: with none, nothing to judge.
        holds=False if differing else True if repeated else None,
        expected=0,
        observed=f"{plural(len(differing), 'key')} got differing replies" if differing else 0,
        violations=extra,
        calls=evidence,
        explanation=(
            f"{plural(len(differing), 'request')} {agree(len(differing), 'was', 'were')} answered with different "
            f"charges (e.g. {sample}: "
            f"{', '.join(sorted(seen[sample]))})"
            if sample is not None
            else f"{plural(len(originals), 'reply', 'replies')} to {plural(len(seen), 'key')}: each key always got "
            "its first reply back"
            if repeated
            else f"nothing to judge: {agree(len(seen), 'the one key', f'each of the {len(seen):,} keys')} was answered "
            "once, so no reply could differ"
        ),
    )


def _reuse_refused(
    original: dict[str, int], charges: list[dict[str, Any]], replies: pd.DataFrame, reuse: pd.Series, *, keyed: bool
) -> Invariant:
    wrong = [c for c in charges if original.get(str(c["requestId"])) != c["amount"]]
    reused = replies[reuse]
    attempts = len(reused)
    evidence = rows(reused, [d["reply"] != REFUSED for d in reused["detail"]])
    return Invariant(
        name="a key reused with another payload is refused",
        key=REUSE_REFUSED,
        # No send reused a key: nothing to judge, which is not a PASS.
        holds=False if wrong else True if attempts else None,
        expected=0,
        observed=len(wrong),
        violations=len(wrong),
        calls=evidence,
        explanation=(
            f"{plural(len(wrong), 'charge')} {agree(len(wrong), 'was', 'were')} made for a reused key with another "
            "amount"
            if wrong
            else "nothing to judge: no send reused a key for another amount in this run"
            if not attempts
            else f"{agree(attempts, 'the one send', f'all {attempts:,} sends')} that reused a key for another amount "
            f"{agree(attempts, 'was', 'were')} refused (payload hash)"
            if keyed
            else f"{agree(attempts, 'the one send', f'none of the {attempts:,} sends')} that reused a request id for "
            f"another amount {agree(attempts, 'made no charge', 'made a charge')} in this run: without a key nothing "
            "compares payloads, so nothing would have refused one"
        ),
    )
