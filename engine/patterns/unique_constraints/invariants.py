"""26 · Unique constraints' invariants: no two users share an email (during the run and at the end), one sentinel
per user's email, no orphan sentinel, and a refused change deletes nothing; and the shared-email verdict's two
counts read back for the dashboard."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.patterns.base import Invariant, rows
from engine.words import agree, plural

NO_SHARED_EMAIL = "no-two-users-share-an-email"
ONE_SENTINEL_PER_EMAIL = "one-sentinel-per-user-email"
NO_ORPHAN_SENTINEL = "no-orphan-sentinel"
REFUSED_CHANGE_DELETES_NOTHING = "a-refused-change-deletes-nothing"


def _no_shared_email(profiles: dict[str, str], writes: pd.DataFrame) -> Invariant:
    owners: dict[str, list[str]] = defaultdict(list)
    for user, email in profiles.items():
        owners[email.lower()].append(user)
    shared = {email: users for email, users in owners.items() if len(users) > 1}
    extra = sum(len(users) - 1 for users in shared.values())
    # Users move on to other emails, so two that shared one mid-run may not share it at the end: the history shows
    # every time a user took an email another user held at that moment.
    taken = _took_a_held_email(writes)
    violations = max(extra, len(taken))
    # Evidence: the acknowledged writes that put a user on an email another user held.
    calls = rows(
        writes,
        [
            s in taken or (o == "ok" and d["user"] in shared.get(d["email"].lower(), ()))
            for s, o, d in zip(writes["seq"], writes["outcome"], writes["detail"])
        ],
    )
    sample = "; ".join(f"{e}: {', '.join(sorted(u))}" for e, u in sorted(shared.items())[:3])
    now = (
        f"{plural(extra, 'extra user')} on {plural(len(shared), 'email')} at the end ({sample})"
        if extra
        else "none at the end"
    )
    return Invariant(
        name="no two users share an email",
        key=NO_SHARED_EMAIL,
        holds=violations == 0,
        expected=0,
        observed=f"{plural(len(taken), 'take')} of a held email during the run; {now}" if violations else 0,
        violations=violations,
        calls=calls,
        explanation=(
            f"{plural(violations, 'user')} took an email someone already had: "
            f"{agree(len(taken), 'once', f'{len(taken):,} times')} during the run a write was acknowledged while "
            f"another user held the email, {now}; the index check and the write are two "
            "requests, so two clients both saw the email free"
            if violations
            else (
                f"each of the {len(profiles)} users' emails (lower-cased) belonged to that user alone"
                if len(profiles) != 1
                else "the one user's email (lower-cased) was that user's alone"
            )
            + ", during the run and at the end"
        ),
    )


# How the shared-email verdict's observed text names its two counts; shared_counts reads them back (files written
# before the singular was used say "1 takes", "1 emails": both are read; a count past 999 is grouped, "1,024").
_TAKES = re.compile(r"^([\d,]+) takes? of a held email during the run\b")
_EXTRA = re.compile(r"(?:^|; )([\d,]+) extra users? on [\d,]+ emails?\b")
_NONE_AT_END = re.compile(r"(?:^|; )none at the end$")


def shared_counts(verdict: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The shared-email verdict's two counts: (takes of a held email during the run, extra users sharing an email
    at the end). None for one the verdict does not give: a file recorded before takes were judged has only the
    end's ("M extra users on K emails"), and an observed text in no known wording gives neither."""
    if not verdict.get("violations") and verdict.get("holds"):
        return 0, 0
    text = str(verdict.get("observed") or "").split(" (", 1)[0]  # the emails and users in parentheses may be any
    takes = _TAKES.search(text)
    extra = _EXTRA.search(text)
    end = _count(extra.group(1)) if extra else 0 if _NONE_AT_END.search(text) else None
    return (_count(takes.group(1)) if takes else None), end


def _count(digits: str) -> int:
    return int(digits.replace(",", ""))


def _took_a_held_email(writes: pd.DataFrame) -> set[int]:
    """The acknowledged writes (seq) that put a user on an email another user certainly held at that moment.

    A user certainly holds an email from the end of its acknowledged write until the start of that user's next
    write of any outcome (only the user's own client writes its profile; an unknown outcome may have moved it
    already). A write is counted when, at its end, another user's such span on the same email was open: both held
    it at once. Spans are cut short, never stretched, so a write counted here did share the email."""
    spans: dict[str, list[tuple[int, int, str, int]]] = defaultdict(list)  # email -> (from, until, user, seq)
    ordered = writes.sort_values("invoke_ns")
    by_user: dict[str, list[tuple[int, int, str, str, int]]] = defaultdict(list)
    for seq, invoke, complete, outcome, d in zip(
        ordered["seq"], ordered["invoke_ns"], ordered["complete_ns"], ordered["outcome"], ordered["detail"]
    ):
        by_user[d["user"]].append((int(invoke), int(complete), str(outcome), d["email"].lower(), int(seq)))
    for user, calls in by_user.items():
        for i, (_, complete, outcome, email, seq) in enumerate(calls):
            if outcome == "ok":
                until = calls[i + 1][0] if i + 1 < len(calls) else 2**63 - 1
                spans[email].append((complete, until, user, seq))
    taken: set[int] = set()
    for held in spans.values():
        for start, _, user, seq in held:
            if any(other != user and begun < start < until for begun, until, other, _ in held):
                taken.add(seq)
    return taken


def _every_email_has_sentinel(profiles: dict[str, str], sentinels: dict[str, str]) -> Invariant:
    missing = sorted(u for u, e in profiles.items() if sentinels.get(e.lower()) != u)
    return Invariant(
        name="one sentinel per user email",
        key=ONE_SENTINEL_PER_EMAIL,
        holds=not missing,
        expected=len(profiles),
        observed=len(profiles) - len(missing),
        violations=len(missing),
        explanation=(
            f"users without their EMAIL#<lower-cased email> sentinel: {', '.join(missing[:5])}"
            if missing
            else "every user's lower-cased email has a sentinel pointing back at that user"
        ),
    )


def _no_orphan_sentinel(profiles: dict[str, str], sentinels: dict[str, str]) -> Invariant:
    orphans = sorted(e for e, u in sentinels.items() if profiles.get(u, "").lower() != e)
    return Invariant(
        name="no orphan sentinel",
        key=NO_ORPHAN_SENTINEL,
        holds=not orphans,
        expected=0,
        observed=len(orphans),
        violations=len(orphans),
        explanation=(
            f"sentinels whose user does not have that email: {', '.join(orphans[:5])}"
            if orphans
            else f"each of the {plural(len(sentinels), 'sentinel')} belongs to a user who has that email"
        ),
    )


def _refused_change_changes_nothing(
    profiles: dict[str, str], sentinels: dict[str, str], writes: pd.DataFrame
) -> Invariant:
    """Each user ends on the email of its last acknowledged write (or a later unknown one), sentinel intact."""
    expected: dict[str, set[str]] = {}
    refused: dict[str, list[int]] = defaultdict(list)
    for seq, outcome, d in zip(writes["seq"], writes["outcome"], writes["detail"]):
        user = d["user"]
        if outcome == "ok":
            expected[user] = {d["email"]}
        elif outcome == "info":
            expected.setdefault(user, set()).add(d["email"])
        else:
            refused[user].append(int(seq))
    broken = sorted(
        u
        for u in refused
        if u in profiles and (profiles[u] not in expected.get(u, set()) or sentinels.get(profiles[u].lower()) != u)
    )
    n_refused = sum(len(s) for s in refused.values())
    return Invariant(
        name="a refused change deletes nothing",
        key=REFUSED_CHANGE_DELETES_NOTHING,
        holds=False if broken else True if n_refused else None,  # no refusal: nothing to judge, not a PASS
        expected=0,
        observed=len(broken),
        violations=len(broken),
        calls=tuple(s for u in broken for s in refused[u]),
        explanation=(
            f"users whose refused change left them without their last acknowledged email and its "
            f"sentinel: {', '.join(broken[:5])}"
            if broken
            else "nothing to judge: no sign-up or change was refused in this run"
            if not n_refused
            else f"{n_refused} refused sign-ups and changes left every profile on its last acknowledged "
            "email, with its sentinel: a cancelled transaction writes and deletes nothing"
        ),
    )
