"""26 · Unique constraints' view: sentinels and duplicates as the invariants read them back, and claims counted as
the whole-history oracle below counts them."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.state.frames import details, strings, where
from dashboard.state.verdicts import Invariants, invariant, observed
from dashboard.views.unique_constraints import (
    SHARED,
    SHARING,
    TAKEN,
    Claims,
    shared_caption,
    shared_facts,
    unique_view,
)
from engine.patterns.unique_constraints import (
    NO_ORPHAN_SENTINEL,
    NO_SHARED_EMAIL,
    ONE_SENTINEL_PER_EMAIL,
    _no_shared_email,
    shared_counts,
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
        **shared_facts(dup),
        "sentinels": observed(invariants, ONE_SENTINEL_PER_EMAIL),
        "orphan sentinels": observed(invariants, NO_ORPHAN_SENTINEL),
    }


# -- the view -----------------------------------------------------------------------------------------------------------


def test_unique_view_counts_sentinels_and_duplicates() -> None:
    f, summary = frame("unique-constraints-safe")
    facts = Claims.of(f).facts(summary["invariants"])
    assert facts[TAKEN] == facts[SHARING] == 0 and facts[SHARED] is None and facts["sentinels"] == 5
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
    assert "1 take of a held email during the run" in caption and "none at the end" in caption
    facts = Claims.of(f).facts([verdict])
    assert (facts[TAKEN], facts[SHARING], facts[SHARED]) == (1, 0, None)


def bars(fig: Any) -> dict[str, int]:
    [trace] = fig.data
    return dict(zip(trace.y, trace.x, strict=True))


def sharing_history(takes_then_stay: bool) -> tuple[Any, dict[str, Any]]:
    """Ann holds a@x; Bob takes it while she holds it. Then Bob stays on it (shared at the end) or moves on."""
    calls = [
        call(0, "sign-up", "TransactWriteItems", 0.0, 0.1, detail={"user": "ann", "email": "a@x"}),
        call(1, "sign-up", "TransactWriteItems", 0.2, 0.3, detail={"user": "bob", "email": "a@x"}),
        call(2, "sign-up", "TransactWriteItems", 0.4, 0.5, detail={"user": "cy", "email": "a@x"}),
    ]
    if not takes_then_stay:
        calls.append(call(1, "change-email", "TransactWriteItems", 0.6, 0.7, detail={"user": "bob", "email": "b@x"}))
    history = history_of(calls)
    end = {"ann": "a@x", "bob": "a@x" if takes_then_stay else "b@x", "cy": "a@x"}
    verdict = _no_shared_email(end, history.snapshot(detail=True)).as_dict()
    return history.snapshot(detail=True, requests=True), verdict


@pytest.mark.parametrize(("stay", "takes", "sharing"), [(True, 2, 2), (False, 2, 1)])
def test_the_figure_shows_both_counts_of_the_shared_email_verdict(stay: bool, takes: int, sharing: int) -> None:
    # The verdict counts the larger of the two; a bar of that alone hid the other where the speaker looks.
    f, verdict = sharing_history(stay)
    assert shared_counts(verdict) == (takes, sharing)
    shown = bars(valid(unique_view(f, [verdict])))
    assert shown[TAKEN] == takes and shown[SHARING] == sharing and SHARED not in shown


def test_the_counts_read_back_in_singular_and_in_the_older_files_plural() -> None:
    # "1 extra users on 1 emails" read badly on a projector; files that say it must still read back.
    _, verdict = sharing_history(True)
    for text, counts in (
        ("1 take of a held email during the run; 1 extra user on 1 email at the end (a@x: ann, bob)", (1, 1)),
        ("1 takes of a held email during the run; 1 extra users on 1 emails at the end (a@x: ann, bob)", (1, 1)),
        ("3 takes of a held email during the run; none at the end", (3, 0)),
    ):
        assert shared_counts({**verdict, "observed": text}) == counts


def test_a_file_from_before_takes_were_judged_shows_the_end_count_and_says_takes_were_not_judged() -> None:
    f, verdict = sharing_history(True)
    old = {**verdict, "observed": "2 extra users on 1 emails"}  # as demos/unique-constraints--check-then-write
    fig = valid(unique_view(f, [old]))
    assert bars(fig)[SHARING] == 2 and TAKEN not in bars(fig)
    assert "takes during the run not judged" in fig.layout.title.subtitle.text


def test_a_verdict_in_no_known_wording_shows_its_violations_alone_never_a_guessed_split() -> None:
    f, verdict = sharing_history(True)
    shown = bars(valid(unique_view(f, [{**verdict, "observed": "something else"}])))
    assert shown[SHARED] == verdict["violations"] and TAKEN not in shown and SHARING not in shown


def test_while_the_run_goes_no_verdict_bar_is_drawn() -> None:
    f, _ = sharing_history(True)
    shown = bars(valid(unique_view(f, [])))
    assert not {TAKEN, SHARING, SHARED} & set(shown)


def test_the_caption_leaves_the_emails_to_the_headline_so_it_fits_a_half_width_chart() -> None:
    observed = "18 takes of a held email during the run; 3 extra users on 3 emails at the end (u0@x.com: user4, user6)"
    caption = shared_caption({"violations": 18, "observed": observed})
    assert caption == "shared email: 18 takes of a held email during the run; 3 extra users on 3 emails at the end"


def test_a_passing_verdict_is_captioned_in_its_own_words() -> None:
    f, summary = frame("unique-constraints-safe")
    fig = valid(unique_view(f, summary["invariants"]))
    assert fig.layout.title.subtitle.text == invariant(summary["invariants"], NO_SHARED_EMAIL)["explanation"]  # type: ignore[index]
