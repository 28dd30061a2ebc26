"""The calls shown as evidence of a broken invariant cover the whole run, and the captions say which: all of
them, or n of N sampled evenly over the run."""

from __future__ import annotations

from dashboard.figures import charts
from tests.dashboard.helpers import frame


def test_the_timeline_says_when_its_crosses_are_a_sample() -> None:
    calls, summary = frame("atomic-counters-racy")
    broken = [dict(inv) for inv in summary["invariants"] if not inv["holds"] and inv.get("calls")]
    assert broken
    sampled = [{**inv, "calls": inv["calls"][:2], "calls_total": 500} for inv in broken]
    note = charts.evidence_note(sampled)
    assert (
        note
        == f"{2 * len(broken):,} of {500 * len(broken):,} calls that broke an invariant, sampled evenly over the run"
    )
    every = [{**inv, "calls_total": len(inv["calls"])} for inv in broken]
    assert charts.evidence_note(every) == f"all {sum(len(i['calls']) for i in broken):,} calls that broke an invariant"
    flagged = {s for inv in sampled for s in inv["calls"]}
    fig = charts.timeline(calls, flagged=flagged, evidence=note, max_bars=100_000)
    assert f"✕ {note}" in fig.layout.title.subtitle.text
    assert charts.evidence_note([{**broken[0], "holds": True}]) == ""


def test_an_older_record_without_calls_total_says_so() -> None:
    old = {"name": "no lost increment", "holds": False, "calls": [1, 2, 3]}
    assert "an older record: at most the first 40 were kept" in charts.evidence_note([old])
