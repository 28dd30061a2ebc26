"""26 · Unique constraints' view: sentinels and duplicates as the invariants read them back, and claims counted as
the whole-history oracle below counts them."""

from __future__ import annotations

from typing import Any

from dashboard.frames import details, strings, where
from dashboard.verdicts import Invariants, invariant, observed
from dashboard.views.unique_constraints import Claims, unique_view
from engine.patterns.unique_constraints import NO_ORPHAN_SENTINEL, NO_SHARED_EMAIL, ONE_SENTINEL_PER_EMAIL
from tests.dashboard.helpers import frame, valid

# -- the oracle -----------------------------------------------------------------------------------------------------


def unique_facts(frame: Any, invariants: Invariants = ()) -> dict[str, int | None]:
    """Claims made, refused because the email was taken, refused by a GSI check, duplicates and sentinels."""
    actions = strings(frame["action"])
    outcome = strings(frame["outcome"])
    writes = where(frame["action"], ["sign-up", "change-email"])
    failed = frame[writes & (outcome == "fail")]
    # The sentinel Put is item 2 of both transactions (sign-up and change-email): its reason says "taken".
    refused_taken = sum(
        1
        for d in details(failed)
        if len(d.get("reasons") or []) > 1 and str(d["reasons"][1]).startswith("ConditionalCheck")
    )
    checks = frame[actions == "check-email"]
    seen_taken = sum(1 for d in details(checks) if d.get("taken"))
    dup = invariant(invariants, NO_SHARED_EMAIL)
    return {
        "claims acknowledged": int((writes & (outcome == "ok")).sum()),
        "refused: email taken": refused_taken,
        "refused: other": len(failed) - refused_taken,
        "GSI check said taken": seen_taken,
        "unknown outcome": int((writes & (outcome == "info")).sum()),
        "users sharing an email": int(dup.get("violations", 0)) if dup else None,
        "sentinels": observed(invariants, ONE_SENTINEL_PER_EMAIL),
        "orphan sentinels": observed(invariants, NO_ORPHAN_SENTINEL),
    }


# -- the view -----------------------------------------------------------------------------------------------------------


def test_unique_view_counts_sentinels_and_duplicates() -> None:
    f, summary = frame("unique-constraints-safe")
    facts = Claims.of(f).facts(summary["invariants"])
    assert facts["users sharing an email"] == 0 and facts["sentinels"] == 5
    assert facts["refused: email taken"] == 20
    fig = valid(unique_view(f, summary["invariants"]))
    assert "every email belongs to one user" in fig.layout.title.subtitle.text


def test_claims_match_the_oracle() -> None:
    f, summary = frame("unique-constraints-safe")
    assert Claims.of(f).facts(summary["invariants"]) == unique_facts(f, summary["invariants"])
