"""The generic charts every run gets, whatever its pattern: the per-call timeline, outcomes and latency over time,
and the final state (expected vs observed). A pattern's own figures live in dashboard/views, the Sweep page's in
dashboard/figures/sweep.py.

Pure: a run's calls (a History snapshot frame, or a `RunView`: the run's aggregates, kept up to date from the new
calls only, which is what the live pages draw from) and its invariants in, a Plotly Figure out. Either way a chart
draws from the same aggregates (a frame is read into them in one go), so the two look the same. No Streamlit here,
so every chart is unit-tested on recorded histories (tests/data/*.jsonl); the house rules are in dashboard.figures.figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import (
    MAX_BARS,
    MAX_BARS_FINAL,
    MAX_POINTS,
    Calls,
    Texts,
    agg,
    count,
    empty,
    figure,
    span,
    style,
)
from dashboard.figures.figure import lanes as count_lanes
from dashboard.figures.flag_marks import Witnessed, add_marks, witness_seqs
from dashboard.figures.palette import RACY_COLOUR, SAFE_COLOUR, colour, ordered
from dashboard.figures.timebins import TimeBins, bin_width
from dashboard.figures.timeline_sample import TimelineSample
from dashboard.state.aggregates import done_ns
from dashboard.state.runview import RunView
from dashboard.state.verdicts import Invariants, as_number
from dashboard.text.words import plural
from dashboard.views import pattern_views
from engine.patterns.base import evidence_caption

__all__ = [
    "MAX_BARS",
    "MAX_BARS_FINAL",
    "MAX_POINTS",
    "align",
    "evidence_note",
    "final_state",
    "latency",
    "outcomes_over_time",
    "pattern_views",
    "share_y",
    "timeline",
]


def timeline(
    calls: Calls,
    *,
    flagged: Iterable[int] = (),
    max_bars: int = MAX_BARS,
    x_range: Sequence[float] | None = None,
    title: str = "Per-call timeline",
    lanes: int | None = None,
    evidence: str = "",
    witnesses: Sequence[Witnessed] = (),
) -> go.Figure:
    """One lane per client, one bar per call from invoke to complete, coloured by outcome and error code.

    Hover shows the call in the seed's log format. Calls named by a failed invariant get a red ✕, and
    `evidence` (evidence_note) says which they are: all of them, or a sample spread evenly over the run. Given
    the `witnesses` of the broken invariants, only their calls get a ✕ and the others are one legend click away
    (flag_marks). Above `max_bars` calls the bars are sampled (witnesses, flagged calls and failures kept first)
    and the subtitle says so.
    """
    total = count(calls)
    if not total:
        return empty(title, "No calls yet")
    named = set(flagged)
    flagged = named | witness_seqs(witnesses)  # the drawn sample keeps a witness's reads too
    if isinstance(calls, RunView):
        rows = calls.rows_at(flagged) if flagged else None
        sample = calls.get(TimelineSample)
    else:
        rows = calls[calls["seq"].isin(flagged).to_numpy()] if flagged else None
        sample = TimelineSample.of(calls, k=max_bars)
    shown, sampling = sample.sample(max_bars, rows)
    order = ordered(shown["label"])
    codes = pd.Categorical(shown["label"], categories=order).codes
    labels = np.asarray(order, dtype=object)[codes]
    hover = np.asarray(sample.hovers(shown, list(labels)), dtype=object)
    client = shown["client"].to_numpy()
    start = shown["start_s"].to_numpy()
    width = np.clip(shown["end_s"].to_numpy() - start, 0, None)
    fig = figure()
    for k, label in enumerate(order):
        m = codes == k
        if not m.any():
            continue
        fig.add_trace(
            dict(
                type="bar",
                name=label,
                orientation="h",
                y=client[m],
                base=start[m],
                x=width[m],
                width=0.72,
                marker=dict(color=colour(label), line=dict(width=0)),
                customdata=Texts(hover[m]),
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    n_flagged, marks_said = add_marks(fig, shown["seq"].to_numpy(), client, start + width / 2, hover, named, witnesses)
    n_lanes = lanes or count_lanes(calls)
    height = int(min(900, max(320, 150 + 26 * n_lanes)))
    fig.update_layout(barmode="overlay", bargap=0.1)
    fig.update_yaxes(
        autorange=False,
        range=[n_lanes - 0.5, -0.5],
        title_text="client",
        tickmode="auto" if n_lanes > 24 else "linear",
        dtick=1,
        showgrid=False,
    )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    subtitle = sampling.note() or f"{plural(total, 'call')} · hover a bar for the call as the seed logs it"
    if marks_said:
        subtitle += f" · {marks_said}"
    elif evidence and n_flagged:
        subtitle += f" · ✕ {evidence}"
    return style(
        fig,
        title,
        subtitle=subtitle,
        height=height,
        x_title="seconds since the clients were released",
        meta={"sampled": sampling.sampled, "shown": sampling.shown, "total": sampling.total, "flagged": n_flagged},
    )


def evidence_note(invariants: Invariants) -> str:
    """What the timeline's crosses are: every call that broke an invariant, or an even sample over the whole run
    (the engine keeps at most 200 per invariant), with how many there were in all."""
    broken = [inv for inv in invariants if not inv.get("holds", True) and inv.get("calls")]
    if not broken:
        return ""
    if any(inv.get("calls_total") is None for inv in broken):  # recorded before calls_total: the first 40 at most
        return "; ".join(f"{inv.get('name', '')}: {evidence_caption(inv)}" for inv in broken)
    shown = sum(len(inv["calls"]) for inv in broken)
    total = sum(int(inv["calls_total"]) for inv in broken)
    what = "calls that broke an invariant"
    if shown < total:
        return f"{shown:,} of {total:,} {what}, sampled evenly over the run"
    return f"all {total:,} {what}"


# -- outcomes and latency over time ------------------------------------------------------------------------------


def outcomes_over_time(
    calls: Calls, *, x_range: Sequence[float] | None = None, title: str = "Outcomes over time"
) -> go.Figure:
    """Stacked rate (calls/s) of ok / ConditionalCheckFailed / TransactionCanceled / info / other errors."""
    total = count(calls)
    if not total:
        return empty(title, "No calls yet")
    counts, order, width = agg(calls, TimeBins).rates(span(calls, x_range), target=60)
    x = (np.arange(len(counts)) + 0.5) * width
    fig = figure()
    for i, label in enumerate(order):
        fig.add_trace(
            dict(
                type="scatter",
                name=label,
                x=x,
                y=counts[:, i] / width,
                mode="lines",
                stackgroup="one",
                line=dict(width=1.5, color=colour(label)),
                fillcolor=colour(label),
                hovertemplate=f"{label}: %{{y:.0f}} calls/s at %{{x:.2f}} s<extra></extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    return style(
        fig,
        title,
        subtitle=f"calls per second by outcome, {width:g} s bins · {plural(total, 'call')}",
        x_title="seconds",
        y_title="calls / s",
        meta={"bin_s": width, "labels": order, "y_max": float(counts.sum(axis=1).max() / width)},
    )


def binned_percentiles(bins: np.ndarray, values: np.ndarray, qs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin percentiles (linear interpolation, as numpy's default) with one sort: (bin ids, [bin, q])."""
    order = np.lexsort((values, bins))
    b, v = bins[order], values[order]
    ids, starts, counts = np.unique(b, return_index=True, return_counts=True)
    pos = starts[:, None] + np.asarray(qs)[None, :] * (counts[:, None] - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, (starts + counts - 1)[:, None])
    frac = pos - lo
    return ids, v[lo] * (1 - frac) + v[hi] * frac


_QS = (0.5, 0.95, 0.99)


def _exact_latency(frame: pd.DataFrame, span_s: float, target: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Per-bin and overall percentiles from every call (the bins of timebins.TimeBins)."""
    width = bin_width(span_s, target)
    bins = np.clip(done_ns(frame), 0, None) // round(width * 1e9)
    lat = frame["latency_ms"].to_numpy()
    ids, q = binned_percentiles(bins, lat, _QS)
    return ids, q, width, np.percentile(lat, [50, 95, 99])


def latency(
    calls: Calls, *, x_range: Sequence[float] | None = None, title: str = "Latency p50 / p95 / p99"
) -> go.Figure:
    """Latency percentiles per time bin, and over the whole run in the subtitle.

    Exact from a frame and once a run has ended; while it goes, from per-bin histograms (within 1 %).
    """
    if not count(calls):
        return empty(title, "No calls yet")
    span_s = span(calls, x_range)
    if not isinstance(calls, RunView):
        exact = True
        ids, q, width, overall = _exact_latency(calls, span_s, 50)
    elif (columns := calls.latency_columns()) is not None:  # the run has ended: exact, computed once
        exact = True
        ids, q, width, overall = calls.cached(("latency", span_s), lambda: _exact_latency(columns, span_s, 50))
    else:
        exact = False
        ids, q, width, overall = calls.get(TimeBins).latency(span_s, 50, _QS)
    x = (ids + 0.5) * width
    fig = figure()
    for i, (name, dash, line_colour) in enumerate(
        (("p50", "solid", "#1B5E20"), ("p95", "dash", "#E65100"), ("p99", "dot", "#B71C1C"))
    ):
        fig.add_trace(
            dict(
                type="scatter",
                name=name,
                x=x,
                y=q[:, i],
                mode="lines+markers",
                line=dict(width=3, dash=dash, color=line_colour),
                marker=dict(size=5),
                hovertemplate=f"{name} %{{y:.1f}} ms at %{{x:.2f}} s<extra></extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    fig.update_yaxes(rangemode="tozero")
    return style(
        fig,
        title,
        subtitle=(f"whole run: p50 {overall[0]:.1f} ms · p95 {overall[1]:.1f} ms · p99 {overall[2]:.1f} ms"),
        x_title="seconds",
        y_title="ms",
        meta={"p50": float(overall[0]), "p95": float(overall[1]), "p99": float(overall[2]), "exact": exact},
    )


def align(figs: Sequence[go.Figure]) -> None:
    """Side-by-side figures: one height and one set of margins, so their plot areas line up."""
    if len(figs) < 2:
        return
    height = max(fig.layout.height or 0 for fig in figs)
    top = max(fig.layout.margin.t or 0 for fig in figs)
    bottom = max(fig.layout.margin.b or 0 for fig in figs)
    for fig in figs:
        fig.update_layout(height=height, margin=dict(t=top, b=bottom))


def share_y(figs: Sequence[go.Figure]) -> None:
    """Give side-by-side figures one y range (the Compare page), from each one's meta["y_max"]."""
    tops = [(fig.layout.meta or {}).get("y_max") for fig in figs]
    known = [t for t in tops if t is not None]
    if len(known) < 2:
        return
    top = max(known) * 1.08 or 1.0
    for fig, t in zip(figs, tops):
        if t is not None:
            fig.update_yaxes(range=[0, top], autorange=False)


# -- final state: expected vs observed ---------------------------------------------------------------------------


def final_state(invariants: Invariants, *, title: str = "Final state: expected vs observed") -> go.Figure:
    """Grouped bars for every invariant with numbers on both sides; the gap of a failing one is called out."""
    rows: list[tuple[str, float, float, bool]] = []
    for inv in invariants:
        expected, observed = as_number(inv.get("expected")), as_number(inv.get("observed"))
        if expected is not None and observed is not None:
            rows.append((str(inv["name"]), expected, observed, bool(inv.get("holds"))))
    if not rows:
        return empty(title, "Checked when the run ends" if not invariants else "No numeric invariants to compare")
    names = [r[0] for r in rows]
    fig = figure()
    fig.add_trace(
        dict(
            type="bar",
            name="expected",
            y=names,
            x=[r[1] for r in rows],
            orientation="h",
            marker=dict(color="#9E9E9E"),
            text=[f"{r[1]:,.0f}" for r in rows],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.add_trace(
        dict(
            type="bar",
            name="observed",
            y=names,
            x=[r[2] for r in rows],
            orientation="h",
            marker=dict(color=[SAFE_COLOUR if r[3] else RACY_COLOUR for r in rows]),
            text=[f"{r[2]:,.0f}" + ("" if r[3] else f"  (off by {abs(r[1] - r[2]):,.0f})") for r in rows],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", showgrid=False)
    lo = min(0.0, *(min(r[1], r[2]) for r in rows))
    hi = max(0.0, *(max(r[1], r[2]) for r in rows))
    fig.update_xaxes(range=[lo * 1.35, hi * 1.35 or 1.0])
    return style(
        fig, title, height=int(150 + 70 * len(rows)), subtitle="green: holds · red: broken", meta={"rows": len(rows)}
    )
