"""The aggregates the live pages draw from (dashboard.state.aggregates and each view's): fed the new calls only, they draw what the whole
frame draws, whatever the batches the calls arrived in; a refresh reads only the calls that arrived since the last
one; the live latency percentiles are within a percent and exact once the run has ended."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest

from dashboard.figures import charts
from dashboard.figures.actions import action_outcomes
from dashboard.figures.sampling import Reservoir, choose, stable_hash
from dashboard.figures.timebins import TimeBins
from dashboard.figures.timeline_sample import TimelineSample
from dashboard.state.aggregates import Rows, SortedTail
from dashboard.state.records import RunRecord, Source, _Frames
from dashboard.state.runview import RunView
from dashboard.state.verdicts import flagged_calls
from dashboard.views import aggregates_for
from dashboard.widgets import live
from engine.record.history import History
from tests.dashboard.helpers import DATA, growing, load, scaled

RECORDED = sorted(p.stem for p in DATA.glob("*.jsonl"))


def plain(fig: Any) -> dict[str, Any]:
    return json.loads(fig.to_json())


def every_chart(calls: Any, summary: dict[str, Any], *, max_bars: int = charts.MAX_BARS) -> list[Any]:
    invariants = summary.get("invariants") or []
    return [
        charts.timeline(calls, flagged=flagged_calls(invariants), lanes=8, max_bars=max_bars),
        charts.outcomes_over_time(calls),
        charts.outcomes_over_time(calls, x_range=(0.0, 61.0)),
        charts.latency(calls),
        action_outcomes(calls),
        *charts.pattern_views(summary["pattern"], calls, invariants, summary.get("options")),
    ]


@pytest.mark.parametrize("name", RECORDED)
@pytest.mark.parametrize("max_batch", [1, 37, 1000])
def test_a_view_fed_in_batches_draws_what_the_whole_frame_draws(name: str, max_batch: int) -> None:
    history, summary = load(name)
    max_batch = max(max_batch, len(history) // 60)  # one call at a time on the small files only
    _, view = growing(history, summary["pattern"], np.random.default_rng(max_batch), max_batch)
    view.final = True  # exact latency, as a finished run draws it
    frame = history.snapshot(detail=True, requests=True)
    for from_frame, from_view in zip(every_chart(frame, summary), every_chart(view, summary), strict=True):
        assert plain(from_view) == plain(from_frame)


@pytest.mark.parametrize("name", ["optimistic-locking-racy", "optimistic-locking-safe", "atomic-counters-racy"])
def test_sampled_charts_of_a_big_run_do_not_depend_on_the_batches(name: str) -> None:
    history, summary = scaled(name, 15_000)
    _, view = growing(history, summary["pattern"], np.random.default_rng(3), 2500)
    view.final = True
    frame = history.snapshot(detail=True, requests=True)
    figs = every_chart(view, summary, max_bars=1000)
    assert figs[0].layout.meta["sampled"]
    for from_frame, from_view in zip(every_chart(frame, summary, max_bars=1000), figs, strict=True):
        assert plain(from_view) == plain(from_frame)


def test_a_timeline_redrawn_at_every_refresh_shows_what_one_drawing_shows() -> None:
    """The timeline keeps each call's hover text between refreshes (a live run, a replay's ticks): drawn after
    every batch, with the sample and its cache small enough to be thinned many times, it ends on the figure a
    single drawing of the whole run gives."""
    history, summary = scaled("optimistic-locking-racy", 6_000)
    k = 150
    drawn: list[Any] = []

    def small_sample(view: RunView) -> None:
        view.aggregates[TimelineSample] = TimelineSample(k=k)

    def draw(view: RunView) -> None:
        drawn.append(charts.timeline(view, lanes=8, max_bars=k))

    _, view = growing(history, summary["pattern"], np.random.default_rng(5), 400, draw, small_sample)
    assert len(drawn) > 20 and drawn[-1].layout.meta["sampled"]
    assert len(view.get(TimelineSample)._hovers) <= 2 * k  # a few hundred bytes each: it must not grow with the run
    frame = history.snapshot(detail=True, requests=True)
    assert plain(drawn[-1]) == plain(charts.timeline(frame, lanes=8, max_bars=k))


def row_of(rows: np.ndarray) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """The columns a reservoir keeps of the offered rows it picks: their row numbers."""
    return lambda pick: {"row": rows[pick]}


def test_reservoirs_give_the_sample_of_everything() -> None:
    rng = np.random.default_rng(11)
    n, k = 20_000, 600
    seq = rng.permutation(n)
    prefer_all = rng.random(n) < 0.1
    flagged = rng.choice(n, 50, replace=False)
    expected, _, _ = choose(seq, k, keep=np.isin(seq, flagged), prefer=prefer_all)
    preferred, others = Reservoir(k), Reservoir(k)
    start = 0
    while start < n:
        stop = min(n, start + int(rng.integers(1, 3000)))
        part = np.arange(start, stop)
        for reservoir, mask in ((preferred, prefer_all[part]), (others, ~prefer_all[part])):
            rows = part[mask]
            reservoir.offer(stable_hash(seq[rows]), row_of(rows))
        start = stop
    candidates = np.unique(
        np.concatenate([preferred.cols["row"], others.cols["row"], np.flatnonzero(np.isin(seq, flagged))])
    )
    chosen, _, _ = choose(seq[candidates], k, keep=np.isin(seq[candidates], flagged), prefer=prefer_all[candidates])
    assert sorted(candidates[chosen]) == sorted(np.flatnonzero(expected))


def test_sorted_tail_merges_late_arrivals() -> None:
    rng = np.random.default_rng(2)
    n = 5000
    key = np.arange(n) * 10 + rng.integers(-40, 40, n)  # completion times, a few out of arrival order
    key[::97] = key[::97] // 2  # and some very late
    table = SortedTail(value=np.int64)
    start = 0
    while start < n:
        stop = min(n, start + int(rng.integers(1, 200)))
        table.add(key=key[start:stop], seq=np.arange(start, stop), value=-np.arange(start, stop))
        start = stop
    order = np.lexsort((np.arange(n), key))
    assert table["seq"].tolist() == order.tolist() and table["value"].tolist() == (-order).tolist()


def test_time_bins_stay_few_over_a_long_run() -> None:
    rng = np.random.default_rng(4)
    n = 50_000
    done = np.sort(rng.uniform(0, 3 * 3600, n)) * 1e9  # three hours
    frame = pd.DataFrame(
        {
            "complete_ns": done.astype(np.int64),
            "end_s": done / 1e9,
            "latency_ms": rng.exponential(20, n),
            "outcome": pd.Categorical(["ok"] * n),
            "error": pd.Categorical([""] * n),
            "op": pd.Categorical(["PutItem"] * n),
        }
    )
    bins = TimeBins()
    for start in range(0, n, 3000):
        bins.add(Rows.of(frame.iloc[start : start + 3000]))
    assert bins.used_bins() <= 700 and bins.lat.shape[0] <= 1400
    whole = TimeBins.of(frame)
    for span in (None, 3 * 3600 * 1.3):
        assert np.array_equal(bins.rates(span)[0], whole.rates(span)[0])
    counts, _, width = bins.rates()
    assert width == 300 and counts.sum() == n


def test_live_latency_is_within_a_percent_then_exact() -> None:
    history, summary = scaled("atomic-counters-safe", 20_000)
    view = RunView(history, _Frames(history).rows, aggregates_for(summary["pattern"]))
    with view:
        sketch = charts.latency(view)
    view.final = True
    with view:
        exact = charts.latency(view)
    frame = history.snapshot()
    assert not sketch.layout.meta["exact"] and exact.layout.meta["exact"]
    assert exact.layout.meta["p95"] == pytest.approx(np.percentile(frame["latency_ms"], 95))
    for q in ("p50", "p95", "p99"):
        assert sketch.layout.meta[q] == pytest.approx(exact.layout.meta[q], rel=0.01)
    for a, b in zip(sketch.data, exact.data, strict=True):
        assert np.array_equal(a.x, b.x)
        assert np.allclose(a.y, b.y, rtol=0.01)


class Counting:
    """A History that counts the rows the dashboard reads from it."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.read: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.history)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.history, name)

    def snapshot(self, start: int = 0, stop: int | None = None, **kwargs: Any) -> pd.DataFrame:
        stop = len(self.history) if stop is None else stop
        self.read.append((start, stop))
        return self.history.snapshot(start, stop, **kwargs)

    def details(self, rows: range) -> list[Any]:
        self.read.append((rows.start, rows.stop))
        return self.history.details(rows)


def running(history: Any, summary: dict[str, Any]) -> tuple[RunRecord, SimpleNamespace]:
    """A record of a run still going (a stand-in Run the test ends by hand), and that stand-in."""
    run = SimpleNamespace(
        finished=False, invariants=[], options=SimpleNamespace(values={}), state=SimpleNamespace(value="running")
    )
    record = RunRecord(
        id="live",
        source=Source.LIVE,
        pattern=summary["pattern"],
        variant=summary["variant"],
        threads=8,
        ops_per_client=None,
        duration_s=None,
        history=history,
        run=cast(Any, run),
    )
    return record, run


def test_a_live_refresh_reads_only_the_new_calls() -> None:
    big, summary = scaled("optimistic-locking-racy", 12_000)
    calls = big.calls()
    history = Counting(History(t0_ns=0))
    history.history.extend(calls[:10_000])
    record, run = running(history, summary)
    first = live.run_figures(record)
    assert first["final"] is None and first["timeline"].layout.meta["sampled"]
    assert sum(b - a for a, b in history.read) <= 2 * 10_000  # every call read once (snapshot and details)
    for arrived in (10_500, 12_000):
        history.read.clear()
        history.history.extend(calls[len(history) : arrived])
        figures = live.run_figures(record)
        new = arrived - (10_000 if arrived == 10_500 else 10_500)
        assert max(b - a for a, b in history.read) <= new  # nothing but the new calls
        assert figures["timeline"].layout.meta["total"] == arrived
    # The run ends: the verdicts come, nothing is re-read but a columnar snapshot for exact latency and the calls
    # the witness finders search (the timeline marks the witnesses), each once.
    run.finished = True
    run.invariants = [SimpleNamespace(as_dict=lambda inv=inv: inv) for inv in summary["invariants"]]
    history.read.clear()
    final = live.run_figures(record)
    again = live.run_figures(record)
    assert [r for r in history.read if r[1] - r[0] > 1000] == [(0, 12_000)] * 2
    assert final["final"] is not None and final["latency"].layout.meta["exact"]
    assert final["timeline"].layout.meta["flagged"] > 0  # the calls the verdicts name, read by seq
    assert plain(again["timeline"]) == plain(final["timeline"])
