"""Compare's counters: the safe side's guard refusing the losers (and the sold-out buyers) is shown as "refused by
the guard", apart from "harm", the invariants' violations; a refusal is never counted as harm."""

from __future__ import annotations

from dashboard.state.pair_counters import harm, pair_counters
from tests.dashboard.test_pages import app, until, verdicts


def test_a_safe_sides_refusals_are_the_guard_working_not_harm() -> None:
    at = app("app_pages/compare.py")
    at.number_input(key="compare-atomic-counters-threads").set_value(2)
    at.number_input(key="compare-atomic-counters-ops").set_value(3)
    at.number_input(key="compare-atomic-counters-opt-tickets").set_value(0)  # sold out: every purchase refused
    at.button(key="compare-start").click().run()
    until(at, lambda a: len(verdicts(a)) == 2)
    at.run()
    labels = [m.label for m in at.metric]
    assert "fail" not in labels and "conflicts" not in labels, labels
    shown = {m.label: m.value for m in at.metric}
    # Each of the safe side's 6 purchases was refused (remaining > 0 did not hold): its guard, not harm.
    assert shown["refused by the guard"] == "6"
    assert "refused (no harm)" in shown  # the racy side, which has no guard, names its refusals plainly
    harms = [m.value for m in at.metric if m.label == "harm"]
    assert len(harms) == 2 and harms[0] == "0", harms  # the safe side, drawn first, broke nothing


def test_harm_is_the_broken_invariants_violations_and_pending_before_the_verdicts() -> None:
    progress = {"calls": 10, "ok": 4, "fail": 6, "errors": {"ConditionalCheckFailedException": 5, "Throttling": 1}}
    before = {c.label: c.value for c in pair_counters(progress, [], safe=True)}
    assert before == {
        "calls": "10",
        "ok": "4",
        "refused by the guard": "5",
        "failed otherwise": "1",
        "harm": "pending",
    }
    invariants: list[dict[str, object]] = [
        {"holds": True, "violations": 0},
        {"holds": False, "violations": 88},
        {"holds": False, "violations": 0},  # broken, however it counts: at least once
        {"holds": None, "violations": 0},  # cannot judge: not harm
        {"holds": False, "violations": 9, "as_of": 1.0},  # a live reading, not a verdict
    ]
    assert harm(invariants) == 89


def test_a_presenter_sides_counters_are_four_short_labels() -> None:
    progress = {"calls": 10, "ok": 4, "fail": 6, "errors": {"TransactionCanceledException": 6}}
    safe = [(c.label, c.value) for c in pair_counters(progress, [], safe=True, short=True)]
    assert safe == [("calls", "10"), ("guard refused", "6"), ("failed", "0"), ("harm", "pending")]
    assert [c.label for c in pair_counters(progress, [], safe=False, short=True)][1] == "refused"
