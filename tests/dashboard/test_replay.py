"""Replay: a recorded run cut at an instant shows only the calls completed by then, keeps their seqs (so an
invariant's evidence still points at the right calls), and hides the verdicts until the end."""

from __future__ import annotations

import numpy as np

from dashboard.state.records import RunRecord, Source
from dashboard.widgets.replay import as_of, completion_front, prefix_history, prefix_length, replay_record
from tests.dashboard.helpers import load


def record(name: str) -> RunRecord:
    history, summary = load(name)
    return RunRecord(
        id="i1",
        source=Source.IMPORTED,
        pattern=summary["pattern"],
        variant=summary["variant"],
        threads=int(summary["threads"]),
        ops_per_client=summary.get("ops_per_client"),
        duration_s=None,
        history=history,
        imported_summary=summary,
        file_name=f"{name}.jsonl",
    )


def test_the_cut_holds_every_call_completed_by_then_and_no_later_one() -> None:
    history, _ = load("atomic-counters-racy")
    front = completion_front(history)
    ends = history.snapshot()["end_s"].to_numpy()
    middle = float(np.median(ends))
    n = prefix_length(front, middle)
    assert 0 < n < len(history)
    assert (ends[:n] <= middle).all()  # nothing in the cut completed after the instant
    assert prefix_length(front, float(front[-1])) == len(history)
    assert prefix_length(front, -1.0) == 0
    cut = prefix_history(history, n)
    assert len(cut) == n and cut.t0_ns == history.t0_ns
    assert cut.call(n - 1) == history.call(n - 1)


def test_before_the_end_the_verdicts_wait_and_only_the_evidence_so_far_shows() -> None:
    full = record("atomic-counters-racy")
    broken = [inv for inv in full.invariants() if not inv["holds"]]
    assert broken and broken[0]["calls"]  # the racy run lost increments, and names the calls
    total = len(full.history)
    n = total // 2
    mid = replay_record(full, n, 0.5)
    assert len(mid.history) == n and mid.state == "replay"
    assert mid.progress()["calls"] == n < full.progress()["calls"]
    for inv in mid.invariants():
        assert inv["as_of"] and all(s < n for s in inv["calls"])
    end = replay_record(full, total, 10.0)
    assert end.invariants() == full.invariants()  # at the end: the final verdicts
    assert [inv for inv in as_of(full.invariants(), total, total) if "as_of" in inv] == []


def test_a_cut_counts_its_calls_as_the_history_does() -> None:
    from dashboard.widgets.replay import HistoryPrefix

    for name in ("atomic-counters-racy", "optimistic-locking-racy"):
        history, _ = load(name)
        assert HistoryPrefix(history, len(history)).counts() == history.counts()
        grown = HistoryPrefix(history, 3)
        grown.grow(len(history) // 2)
        half = HistoryPrefix(history, len(history) // 2)
        assert grown.counts() == half.counts() and half.counts()["calls"] == len(history) // 2


def test_a_replay_grown_forward_or_moved_back_shows_what_a_fresh_cut_shows() -> None:
    from dashboard.widgets import live
    from dashboard.widgets.replay import Replayer

    full = record("optimistic-locking-racy")
    replayer = Replayer(full)
    for t in (0.25 * replayer.end, 0.6 * replayer.end, 0.3 * replayer.end, replayer.end):
        shown = replayer.at(t)
        fresh = replay_record(full, len(shown.history), t)
        assert shown.progress() == fresh.progress()
        grown = [f.to_json() for f in live.figures_of(live.run_figures(shown, x_range=(0.0, 1.0)))]
        built = [f.to_json() for f in live.figures_of(live.run_figures(fresh, x_range=(0.0, 1.0)))]
        assert grown == built, t
    assert replayer.at(replayer.end).invariants() == full.invariants()
