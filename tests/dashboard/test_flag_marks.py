"""A racy run's timeline shows why, not a red blob: only the witnesses of the broken invariants get a ✕ (one
trace each, naming its invariant, which a click opens), the other flagged calls wait behind one legend entry, and
a replay's cut marks the whole run's witnesses only as far as the calls it shows."""

from __future__ import annotations

from dashboard.figures import charts
from dashboard.figures.flag_marks import Witnessed
from dashboard.state.verdicts import flagged_calls
from dashboard.widgets import explainer
from dashboard.widgets.replay import replay_record
from engine.explain import explain
from tests.dashboard.helpers import frame, load, valid
from tests.dashboard.test_replay import record


def _witnessed(name: str) -> list[Witnessed]:
    history, summary = load(name)
    found = explain(summary["pattern"], history, summary["invariants"])
    return [Witnessed(key, w.anomaly.value, w.seqs) for key, w in found.items() if w is not None]


def test_only_the_witnesses_get_a_cross_and_the_other_flagged_calls_wait_in_the_legend() -> None:
    calls, summary = frame("atomic-counters-racy")
    flagged = flagged_calls(summary["invariants"])
    witnessed = _witnessed("atomic-counters-racy")
    assert len(flagged) > 100 and witnessed  # the blob: a ✕ on every flagged call

    fig = valid(charts.timeline(calls, flagged=flagged, witnesses=witnessed, lanes=8))
    marks = [t for t in fig.data if t.type == "scatter"]
    shown = [t for t in marks if t.visible is not False and t.visible != "legendonly"]
    assert [t.meta["witness"] for t in shown] == [w.key for w in witnessed]
    for trace, w in zip(shown, witnessed):
        assert len(trace.x) == len(w.seqs)
    assert [t.showlegend for t in shown] == [True] + [False] * (len(shown) - 1)  # one entry, "why it broke"
    assert shown[0].name == "why it broke" and {t.legendgroup for t in shown} == {"why"}
    (rest,) = [t for t in marks if t.visible == "legendonly"]  # the control that shows them all
    proof = {s for w in witnessed for s in w.seqs}
    assert len(rest.x) == len(flagged - proof)
    assert f"{len(flagged - proof):,} more in the legend" in fig.layout.title.subtitle.text
    assert fig.layout.meta["flagged"] == len(flagged)

    before = valid(charts.timeline(calls, flagged=flagged, lanes=8))  # no witnesses: every flagged call, as ever
    (every,) = [t for t in before.data if t.type == "scatter"]
    assert every.name == "broke an invariant" and len(every.x) == len(flagged)


def test_a_sampled_timeline_still_draws_every_witness_call() -> None:
    calls, summary = frame("atomic-counters-racy")
    witnessed = _witnessed("atomic-counters-racy")
    fig = valid(charts.timeline(calls, witnesses=witnessed, max_bars=50))  # reads among them, flagged or not
    assert fig.layout.meta["sampled"]
    drawn = sum(len(t.x) for t in fig.data if t.type == "scatter" and (t.meta or {}).get("witness"))
    assert drawn == sum(len(w.seqs) for w in witnessed)


def test_a_replay_marks_the_whole_runs_witnesses_as_far_as_its_calls_go() -> None:
    whole = record("atomic-counters-racy")
    everything = explainer.marks(whole)
    assert everything and len({m.seqs for m in everything}) == len(everything)  # one mark per set of calls
    last = max(s for m in everything for s in m.seqs)
    cut = replay_record(whole, last, 0.0)  # the last witness call not yet completed
    assert explainer.marks(cut) == []  # its own verdicts are not given yet
    marked = explainer.marks(cut, whole)
    assert marked and all(s < last for m in marked for s in m.seqs)
    assert sum(len(m.seqs) for m in marked) < sum(len(m.seqs) for m in everything)
