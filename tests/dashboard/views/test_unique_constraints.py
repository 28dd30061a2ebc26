"""26 · Unique constraints' view: sentinels and duplicates as the invariants read them back, and claims counted as
the whole-history oracle below counts them."""

from __future__ import annotations

from typing import Any

from dashboard.frames import details, strings, where
from dashboard.verdicts import Invariants, invariant, observed
from dashboard.views.unique_constraints import SHARED, Claims, shared_caption, unique_view
from engine.patterns.unique_constraints import (
    NO_ORPHAN_SENTINEL,
    NO_SHARED_EMAIL,
    ONE_SENTINEL_PER_EMAIL,
    _no_shared_email,
)
from tests.dashboard.helpers import call, frame, history_of, valid

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
        SHARED: int(dup.get("violations", 0)) if dup else None,
        "sentinels": observed(invariants, ONE_SENTINEL_PER_EMAIL),
        "orphan sentinels": observed(invariants, NO_ORPHAN_SENTINEL),
    }


# -- the view -----------------------------------------------------------------------------------------------------------


def test_unique_view_counts_sentinels_and_duplicates() -> None:
    f, summary = frame("unique-constraints-safe")
    facts = Claims.of(f).facts(summary["invariants"])
    assert facts[SHARED] == 0 and facts["sentinels"] == 5
    assert facts["refused: email taken"] == 20
    fig = valid(unique_view(f, summary["invariants"]))
    assert "belongs to that user alone" in fig.layout.title.subtitle.text


def test_claims_match_the_oracle() -> None:
    f, summary = frame("unique-constraints-safe")
    assert Claims.of(f).facts(summary["invariants"]) == unique_facts(f, summary["invariants"])


def test_a_take_during_the_run_is_not_called_sharing_at_the_end() -> None:
    # Ann holds a@x; Bob's write takes a@x while Ann still holds it, then Bob moves on to b@x: at the end nobody
    # shares, yet the verdict counts Bob's take, and the caption must say it was a take during the run.
    history = history_of(
        [
            call(0, "sign-up", "TransactWriteItems", 0.0, 0.1, detail={"user": "ann", "email": "a@x"}),
            call(1, "sign-up", "TransactWriteItems", 0.2, 0.3, detail={"user": "bob", "email": "a@x"}),
            call(1, "change-email", "TransactWriteItems", 0.5, 0.6, detail={"user": "bob", "email": "b@x"}),
        ]
    )
    writes = history.snapshot(detail=True)
    verdict = _no_shared_email({"ann": "a@x", "bob": "b@x"}, writes).as_dict()
    assert verdict["violations"] == 1 and not verdict["holds"]
    f = history.snapshot(detail=True, requests=True)
    fig = valid(unique_view(f, [verdict]))
    caption = fig.layout.title.subtitle.text
    assert "ended up sharing" not in caption
    assert "1 takes of a held email during the run" in caption and "none at the end" in caption
    assert Claims.of(f).facts([verdict])[SHARED] == 1


def test_the_caption_leaves_the_emails_to_the_headline_so_it_fits_a_half_width_chart() -> None:
    observed = "18 takes of a held email during the run; 3 extra users on 3 emails at the end (u0@x.com: user4, user6)"
    caption = shared_caption({"violations": 18, "observed": observed})
    assert caption == "shared email: 18 takes of a held email during the run; 3 extra users on 3 emails at the end"


def test_a_passing_verdict_is_captioned_in_its_own_words() -> None:
    f, summary = frame("unique-constraints-safe")
    fig = valid(unique_view(f, summary["invariants"]))
    assert fig.layout.title.subtitle.text == invariant(summary["invariants"], NO_SHARED_EMAIL)["explanation"]  # type: ignore[index]
