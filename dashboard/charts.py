"""Pure chart functions: a run's calls (and its invariants) in, a Plotly Figure out.

The calls come as a History snapshot DataFrame, or as a `RunView`: the run's aggregates (dashboard.aggregates),
kept up to date from the new calls only, which is what the live pages draw from. Either way a chart draws from
the same aggregates (a frame is read into them in one go), so the two look the same.

No Streamlit here, so every chart is unit-tested on recorded histories (tests/data/*.jsonl). Rules:
- readable on a projector: large fonts, thick marks, one fixed colour per outcome/error code (analysis.COLOURS);
- cheap on a million-call run: a refresh works on the calls that arrived since the last one, plus what is drawn,
  and never ships more than a few thousand marks to the browser; a sampled chart says so in its subtitle and in
  `fig.layout.meta["sampled"]`;
- `x_range` (seconds) lets the Compare page share axes between two runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard import aggregates as ag
from dashboard import analysis as an
from dashboard.aggregates import RunView

FONT = dict(family="Inter, 'Segoe UI', Helvetica, Arial, sans-serif", size=17, color="#111111")
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
MAX_BARS = 2000  # while a run goes (redrawn every refresh)
MAX_BARS_FINAL = 5000  # once it has ended (drawn once)
MAX_POINTS = 4000

Invariants = Sequence[Mapping[str, Any]]
Calls = pd.DataFrame | RunView  # a snapshot frame, or a run's aggregates
A = ag.A

# Our own small template, given explicitly: plotly's default one is deep-copied into every new figure (about
# 0.1 s each), and validation of every property costs more than the data; figures here are built unvalidated
# (tests/dashboard validate each chart once with plotly's validators instead).
_TEMPLATE = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(an.COLOURS.values()),
        "xaxis": {"gridcolor": "#E6E6E6", "linecolor": "#888888", "ticks": "", "zeroline": False, "automargin": True},
        "yaxis": {"gridcolor": "#E6E6E6", "linecolor": "#888888", "ticks": "", "zeroline": False, "automargin": True},
        "hovermode": "closest",
    }
}


class Spec:
    """A figure being drawn, as plain dicts (the few Figure methods the charts use), turned into one unvalidated
    go.Figure at the end: plotly's object model costs more per property than our data does."""

    def __init__(self) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {"template": _TEMPLATE}

    def add_trace(self, trace: dict[str, Any]) -> Spec:
        self.data.append(trace)
        return self

    def update_layout(self, **props: Any) -> Spec:
        _merge(self.layout, props)
        return self

    def update_xaxes(self, **props: Any) -> Spec:
        _merge(self.layout.setdefault("xaxis", {}), props)
        return self

    def update_yaxes(self, **props: Any) -> Spec:
        _merge(self.layout.setdefault("yaxis", {}), props)
        return self

    def add_annotation(self, **props: Any) -> Spec:
        self.layout.setdefault("annotations", []).append(props)
        return self

    def add_shape(self, **props: Any) -> Spec:
        self.layout.setdefault("shapes", []).append(props)
        return self

    def figure(self) -> go.Figure:
        return go.Figure({"data": self.data, "layout": self.layout}, _validate=False)


def _merge(into: dict[str, Any], props: Mapping[str, Any]) -> None:
    for key, value in props.items():
        if key.startswith("title_"):  # plotly's magic underscore, for the one family we use
            into.setdefault("title", {})
            if not isinstance(into["title"], dict):
                into["title"] = {"text": into["title"]}
            _merge(into["title"], {key.removeprefix("title_"): value})
        elif isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value


def figure() -> Spec:
    return Spec()


def _style(
    fig: Spec,
    title: str,
    *,
    subtitle: str = "",
    height: int = 380,
    x_title: str | None = None,
    y_title: str | None = None,
    legend: bool = True,
    meta: Mapping[str, Any] | None = None,
    legend_y: float = 1.01,
) -> go.Figure:
    """Title, subtitle, legend and fonts, the same on every chart; returns the finished Figure.

    Up to five legend entries sit in one row under the subtitle; more go under the plot, so they never run
    into the subtitle.
    """
    shown = [str(t["name"]) for t in fig.data if t.get("name") and t.get("showlegend", True)]
    entries = len(shown)
    below = legend and (entries > 5 or sum(len(n) + 6 for n in shown) > 95)
    rows = -(-entries // 3) if below else 0
    top = 64 + (24 if subtitle else 0) + (34 if legend and not below else 0) + (30 if legend_y > 1.02 else 0)
    bottom = 56 + (26 * rows + 16 if below else 0)
    legend_box = (
        dict(orientation="h", yref="container", yanchor="bottom", y=0.005, xanchor="left", x=0)
        if below
        else dict(orientation="h", yanchor="bottom", y=legend_y, xanchor="left", x=0)
    )
    fig.update_layout(
        font=FONT,
        height=height + top - 64 + bottom - 56,
        title=dict(
            text=f"<b>{title}</b>",
            x=0,
            xanchor="left",
            font=dict(size=22),
            yref="container",
            y=1,
            yanchor="top",
            pad=dict(t=14),
            subtitle=dict(text=subtitle, font=dict(size=15, color="#444444")),
        ),
        margin=dict(l=70, r=24, t=top, b=bottom),
        legend=dict(**legend_box, font=dict(size=15), bgcolor="rgba(255,255,255,0)", traceorder="normal"),
        showlegend=legend,
        hoverlabel=dict(font=dict(family=MONO, size=13), align="left", bgcolor="white"),
        meta=dict(meta or {}),
    )
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    fig.update_xaxes(title_font=dict(size=16))
    fig.update_yaxes(title_font=dict(size=16))
    return fig.figure()


def empty(title: str, message: str, height: int = 260) -> go.Figure:
    """A titled placeholder with a message in the middle (no data yet, nothing to show)."""
    fig = figure()
    fig.add_annotation(
        text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=18, color="#555555")
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _style(fig, title, height=height, legend=False, meta={"empty": True})


def _count(calls: Calls) -> int:
    return calls.n if isinstance(calls, RunView) else len(calls)


def _lanes(calls: Calls) -> int:
    if isinstance(calls, RunView):
        return calls.lanes
    return int(calls["client"].max()) + 1 if len(calls) else 1


def _agg(calls: Calls, kind: type[A], **kwargs: Any) -> A:
    """The run's aggregate of this kind, or the frame's (read in one go)."""
    return calls.get(kind) if isinstance(calls, RunView) else kind.of(calls, **kwargs)


def _span(calls: Calls, x_range: Sequence[float] | None) -> float:
    if x_range is not None:
        return float(x_range[1])
    if isinstance(calls, RunView):
        return calls.span
    return float(calls["end_s"].max()) if len(calls) else 1.0


# -- per-call timeline --------------------------------------------------------------------------------------------


def timeline(
    calls: Calls,
    *,
    flagged: Iterable[int] = (),
    max_bars: int = MAX_BARS,
    x_range: Sequence[float] | None = None,
    title: str = "Per-call timeline",
    lanes: int | None = None,
) -> go.Figure:
    """One lane per client, one bar per call from invoke to complete, coloured by outcome and error code.

    Hover shows the call in the seed's log format. Calls named by a failed invariant get a red ✕. Above
    `max_bars` calls the bars are sampled (flagged calls and failures kept first) and the subtitle says so.
    """
    total = _count(calls)
    if not total:
        return empty(title, "No calls yet")
    flagged = set(flagged)
    if isinstance(calls, RunView):
        rows = calls.rows_at(flagged) if flagged else None
        shown, sampling = calls.get(ag.TimelineSample).sample(max_bars, rows)
    else:
        rows = calls[calls["seq"].isin(flagged).to_numpy()] if flagged else None
        shown, sampling = ag.TimelineSample.of(calls, k=max_bars).sample(max_bars, rows)
    order = an.ordered(shown["label"])
    codes = pd.Categorical(shown["label"], categories=order).codes
    labels = np.asarray(order, dtype=object)[codes]
    hover = np.asarray(an.hover_texts(shown, list(labels)), dtype=object)
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
                marker=dict(color=an.colour(label), line=dict(width=0)),
                customdata=hover[m],
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    if flagged:
        m = shown["seq"].isin(flagged).to_numpy()
        if m.any():
            fig.add_trace(
                dict(
                    type="scatter",
                    name="broke an invariant",
                    mode="markers",
                    y=client[m],
                    x=start[m] + width[m] / 2,
                    customdata=hover[m],
                    marker=dict(symbol="x-thin", size=16, line=dict(width=3, color=an.FLAG_COLOUR)),
                    hovertemplate="%{customdata}<extra></extra>",
                )
            )
    n_flagged = int(shown["seq"].isin(flagged).sum()) if flagged else 0
    n_lanes = lanes or _lanes(calls)
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
    subtitle = sampling.note() or f"{total:,} calls · hover a bar for the call as the seed logs it"
    return _style(
        fig,
        title,
        subtitle=subtitle,
        height=height,
        x_title="seconds since the clients were released",
        meta={"sampled": sampling.sampled, "shown": sampling.shown, "total": sampling.total, "flagged": n_flagged},
    )


# -- outcomes and latency over time ------------------------------------------------------------------------------


def outcomes_over_time(
    calls: Calls, *, x_range: Sequence[float] | None = None, title: str = "Outcomes over time"
) -> go.Figure:
    """Stacked rate (calls/s) of ok / ConditionalCheckFailed / TransactionCanceled / info / other errors."""
    total = _count(calls)
    if not total:
        return empty(title, "No calls yet")
    counts, order, width = _agg(calls, ag.TimeBins).rates(_span(calls, x_range), target=60)
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
                line=dict(width=1.5, color=an.colour(label)),
                fillcolor=an.colour(label),
                hovertemplate=f"{label}: %{{y:.0f}} calls/s at %{{x:.2f}} s<extra></extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    return _style(
        fig,
        title,
        subtitle=f"calls per second by outcome, {width:g} s bins · {total:,} calls",
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


def _exact_latency(frame: pd.DataFrame, span: float, target: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Per-bin and overall percentiles from every call (the bins of aggregates.TimeBins)."""
    width = ag.bin_width(span, target)
    bins = np.clip(ag.done_ns(frame), 0, None) // round(width * 1e9)
    lat = frame["latency_ms"].to_numpy()
    ids, q = binned_percentiles(bins, lat, _QS)
    return ids, q, width, np.percentile(lat, [50, 95, 99])


def latency(
    calls: Calls, *, x_range: Sequence[float] | None = None, title: str = "Latency p50 / p95 / p99"
) -> go.Figure:
    """Latency percentiles per time bin, and over the whole run in the subtitle.

    Exact from a frame and once a run has ended; while it goes, from per-bin histograms (within 1 %).
    """
    if not _count(calls):
        return empty(title, "No calls yet")
    span = _span(calls, x_range)
    if not isinstance(calls, RunView):
        exact = True
        ids, q, width, overall = _exact_latency(calls, span, 50)
    elif (columns := calls.latency_columns()) is not None:  # the run has ended: exact, computed once
        exact = True
        ids, q, width, overall = calls.cached(("latency", span), lambda: _exact_latency(columns, span, 50))
    else:
        exact = False
        ids, q, width, overall = calls.get(ag.TimeBins).latency(span, 50, _QS)
    x = (ids + 0.5) * width
    fig = figure()
    for i, (name, dash, colour) in enumerate(
        (("p50", "solid", "#1B5E20"), ("p95", "dash", "#E65100"), ("p99", "dot", "#B71C1C"))
    ):
        fig.add_trace(
            dict(
                type="scatter",
                name=name,
                x=x,
                y=q[:, i],
                mode="lines+markers",
                line=dict(width=3, dash=dash, color=colour),
                marker=dict(size=5),
                hovertemplate=f"{name} %{{y:.1f}} ms at %{{x:.2f}} s<extra></extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    fig.update_yaxes(rangemode="tozero")
    return _style(
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
    rows = [
        (inv["name"], an.as_number(inv.get("expected")), an.as_number(inv.get("observed")), inv.get("holds"))
        for inv in invariants
    ]
    rows = [r for r in rows if r[1] is not None and r[2] is not None]
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
            marker=dict(color=[an.SAFE_COLOUR if r[3] else an.RACY_COLOUR for r in rows]),
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
    return _style(
        fig, title, height=int(150 + 70 * len(rows)), subtitle="green: holds · red: broken", meta={"rows": len(rows)}
    )


# -- optimistic locking --------------------------------------------------------------------------------------------

_STATUS_STYLE = {
    "written": dict(color=an.COLOURS[an.OK], symbol="circle", size=10, name="written"),
    "lost": dict(color=an.FLAG_COLOUR, symbol="x", size=11, name="lost: overwritten by the same version"),
    "refused": dict(color=an.COLOURS[an.CCF], symbol="triangle-down", size=9, name="refused: version moved (conflict)"),
    "unknown": dict(color=an.COLOURS[an.INFO], symbol="diamond", size=10, name="unknown (response lost)"),
}


def version_history(
    calls: Calls,
    *,
    max_points: int = MAX_POINTS,
    x_range: Sequence[float] | None = None,
    title: str = "Version history of the contested item",
) -> go.Figure:
    """Which client wrote each version when; refused writes (conflicts) between; lost updates in red."""
    writes = _agg(calls, ag.VersionWrites, k=max_points)
    key = writes.contested()
    if key is None:
        return empty(title, "No versioned writes yet")
    item = writes.items[key]
    lost, refused = item.n_lost, item.n_refused
    shown, sampling = writes.sample(key, max_points)
    note = " · " + sampling.note("writes") if sampling.sampled else ""
    acked = writes.acknowledged(key, max_points)  # in completion order, thinned evenly
    fig = figure()
    if lost:  # where the version would be had no acknowledged write been erased
        fig.add_trace(
            dict(
                type="scatter",
                name="version if none were lost",
                x=acked["t"],
                y=acked["ideal"],
                mode="lines",
                line=dict(color="#424242", width=2, dash="dash"),
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        dict(
            type="scatter",
            name="current version",
            x=acked["t"],
            y=acked["version"],
            mode="lines",
            line=dict(color="#90A4AE", width=2, shape="hv"),
            hoverinfo="skip",
        )
    )
    # A lost write and the write that erased it, joined: the two clients that raced for one version.
    pairs = shown[shown["status"] == "lost"]
    if len(pairs):
        t0 = pairs["t"].to_numpy()
        t1 = np.where(np.isnan(pairs["winner_t"].to_numpy()), t0, pairs["winner_t"].to_numpy())
        v = pairs["version"].to_numpy(dtype=float)
        xs = np.column_stack([t0, t1, np.full(len(t0), np.nan)]).ravel()  # NaN breaks the line between pairs
        ys = np.column_stack([v, v, np.full(len(v), np.nan)]).ravel()
        fig.add_trace(
            dict(
                type="scatter",
                name="same version written twice",
                x=xs,
                y=ys,
                mode="lines",
                line=dict(color=an.FLAG_COLOUR, width=2),
                hoverinfo="skip",
            )
        )
    for name, style in _STATUS_STYLE.items():
        rows = shown[shown["status"] == name]
        if rows.empty:
            continue
        text = np.array(
            [
                f"#{s} client {c} {a}<br>read v{r} → wrote v{v}" + (f"<br>erased by #{w}" if name == "lost" else "")
                for s, c, a, r, v, w in zip(
                    rows["seq"].tolist(),
                    rows["client"].tolist(),
                    rows["action"].tolist(),
                    rows["read_version"].tolist(),
                    rows["version"].tolist(),
                    rows["winner"].tolist(),
                )
            ],
            dtype=object,
        )
        line = dict(width=2, color=style["color"]) if name == "lost" else dict(width=1, color="white")
        fig.add_trace(
            dict(
                type="scatter",
                name=style["name"],
                x=rows["t"],
                y=rows["version"],
                mode="markers",
                marker=dict(color=style["color"], symbol=style["symbol"], size=style["size"], line=line),
                text=text,
                hovertemplate="%{text}<br>at %{x:.3f} s<extra>" + name + "</extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    headline = (
        f"{lost:,} lost updates: two clients wrote the same version, the later erased the earlier"
        if lost
        else "no lost update: every version was written once"
    )
    return _style(
        fig,
        f"{title} ({key})",
        subtitle=f"{headline} · {refused:,} conflicts refused{note}",
        x_title="seconds",
        y_title="version",
        height=420,
        meta={
            "key": key,
            "lost": lost,
            "refused": refused,
            "sampled": sampling.sampled,
            "y_max": float(max(item.vmax, item.vmin + item.n_ok)),
        },
    )


# -- atomic counters ----------------------------------------------------------------------------------------------


def counter(
    calls: Calls,
    invariants: Invariants = (),
    *,
    x_range: Sequence[float] | None = None,
    title: str = "Counter: acknowledged increments vs the count",
) -> go.Figure:
    """The acknowledged increments climbing, the value clients actually wrote, and the final count read back."""
    facts = _agg(calls, ag.CounterSeries).facts(invariants, MAX_POINTS)  # a cumulative line, thinned evenly
    if facts.acknowledged == 0:
        return empty(title, "No acknowledged increment yet")
    s = facts.series
    fig = figure()
    fig.add_trace(
        dict(
            type="scatter",
            name="acknowledged increments (what the count should be)",
            x=s["t"],
            y=s["acknowledged"],
            mode="lines",
            line=dict(color="#424242", width=3, dash="dash"),
        )
    )
    if s["written"].notna().any():
        fig.add_trace(
            dict(
                type="scatter",
                name="value a client wrote (read + 1)",
                x=s["t"],
                y=s["written"],
                mode="markers",
                marker=dict(color=an.COLOURS[an.OK], size=7),
                hovertemplate="#%{customdata} wrote %{y} at %{x:.3f} s<extra></extra>",
                customdata=s["seq"],
            )
        )
    end = float(s["t"].max())
    if facts.final is not None:
        colour = an.SAFE_COLOUR if not facts.lost else an.RACY_COLOUR
        fig.add_trace(
            dict(
                type="scatter",
                name="final count read back",
                x=[end],
                y=[facts.final],
                mode="markers+text",
                marker=dict(color=colour, size=18, symbol="star"),
                text=[f"final {facts.final:,}  "],
                textposition="bottom left",
                textfont=dict(size=18, color=colour),
            )
        )
        if facts.lost:
            fig.add_annotation(
                x=end,
                y=(facts.final + facts.acknowledged) / 2,
                text=f"<b>{facts.lost:,} lost</b>",
                showarrow=False,
                xanchor="right",
                font=dict(size=22, color=an.RACY_COLOUR),
            )
            fig.add_shape(
                type="line",
                x0=end,
                x1=end,
                y0=facts.final,
                y1=facts.acknowledged,
                line=dict(color=an.RACY_COLOUR, width=4),
            )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    fig.update_yaxes(rangemode="tozero")
    if facts.final is None:
        sub = f"{facts.acknowledged:,} increments acknowledged so far; the count is read back when the run ends"
    elif facts.lost:
        sub = (
            f"final count {facts.final:,} vs {facts.acknowledged:,} acknowledged increments: "
            f"{facts.lost:,} lost updates"
        )
    else:
        sub = f"final count {facts.final:,} = {facts.acknowledged:,} acknowledged increments: none lost"
    if facts.unknown:
        sub += f" · {facts.unknown} with unknown outcome"
    y_max = max(
        facts.acknowledged, facts.final or 0, float(np.nanmax(s["written"])) if s["written"].notna().any() else 0
    )
    return _style(
        fig,
        title,
        subtitle=sub,
        x_title="seconds",
        y_title="count",
        height=420,
        meta={"acknowledged": facts.acknowledged, "final": facts.final, "lost": facts.lost, "y_max": float(y_max)},
    )


# -- transactions ---------------------------------------------------------------------------------------------------


def cancellation_heatmap(calls: Calls, *, title: str = "Cancellation reasons per action") -> go.Figure:
    """Action × reason heatmap over cancelled transactions: which item of which transaction failed, and why."""
    counts = _agg(calls, ag.Cancellations).table()
    if counts.empty:
        return empty(title, "No transaction was cancelled", height=220)
    counts["row"] = counts["action"] + " · " + counts["item"]
    table = counts.pivot_table(index="row", columns="reason", values="count", aggfunc="sum", fill_value=0)
    z = table.to_numpy()
    fig = figure()
    fig.add_trace(
        dict(
            type="heatmap",
            z=z,
            x=list(table.columns),
            y=list(table.index),
            colorscale="Oranges",
            text=z,
            texttemplate="%{text}",
            textfont=dict(size=18),
            zmin=0,
            hovertemplate="%{y}<br>%{x}: %{z}<extra></extra>",
            colorbar=dict(title="calls"),
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False, side="top")
    total = int(counts["count"].sum())
    return _style(
        fig,
        title,
        subtitle=f"{total:,} failing items in cancelled transactions (reasons 'None' left out)",
        height=int(200 + 55 * len(table.index)),
        legend=False,
        meta={"cells": int((z > 0).sum())},
    )


# -- every pattern: actions × outcomes ------------------------------------------------------------------------------


def action_outcomes(calls: Calls, *, title: str = "Calls per action and outcome") -> go.Figure:
    table = _agg(calls, ag.ActionOutcomes).table()
    if table.empty:
        return empty(title, "No calls yet")
    fig = figure()
    for label in table.columns:
        fig.add_trace(
            dict(
                type="bar",
                name=label,
                y=list(table.index),
                x=table[label],
                orientation="h",
                marker=dict(color=an.colour(label)),
                text=table[label].where(table[label] > 0),
                textposition="inside",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed", showgrid=False)
    return _style(fig, title, x_title="calls", height=int(160 + 48 * len(table.index)))


# -- unique constraints ------------------------------------------------------------------------------------------


def unique_view(
    calls: Calls, invariants: Invariants = (), *, title: str = "Email claims: sentinels and duplicates"
) -> go.Figure:
    facts = _agg(calls, ag.Claims).facts(invariants)
    shown = {
        k: v
        for k, v in facts.items()
        if v is not None and (v or k in ("users sharing an email", "claims acknowledged"))
    }
    if not any(shown.values()) and not _count(calls):
        return empty(title, "No claims yet")
    bad = {"users sharing an email", "orphan sentinels"}
    colours = [
        an.RACY_COLOUR
        if k in bad and v
        else an.COLOURS[an.CCF]
        if k.startswith("refused") or k.startswith("GSI")
        else an.COLOURS[an.INFO]
        if k.startswith("unknown")
        else an.SAFE_COLOUR
        for k, v in shown.items()
    ]
    fig = figure()
    fig.add_trace(
        dict(
            type="bar",
            x=list(shown.values()),
            y=list(shown.keys()),
            orientation="h",
            marker=dict(color=colours),
            text=[f"{v:,}" for v in shown.values()],
            textposition="auto",
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    dup = facts.get("users sharing an email")
    sub = (
        "duplicates are read back when the run ends"
        if dup is None
        else f"{dup} users ended up sharing an email"
        if dup
        else "no two users share an email"
    )
    return _style(
        fig,
        title,
        subtitle=sub,
        x_title="count",
        legend=False,
        height=int(150 + 50 * len(shown)),
        meta={k: v for k, v in facts.items()},
    )


# -- idempotency keys ----------------------------------------------------------------------------------------------

_IDEMPOTENCY_COLOURS = {
    "logical requests": "#455A64",
    "sends (retries and duplicates included)": "#78909C",
    "charges made": an.SAFE_COLOUR,
    "extra charges": an.RACY_COLOUR,
}


def idempotency_view(
    calls: Calls, invariants: Invariants = (), *, title: str = "Charges requested vs made"
) -> go.Figure:
    """Logical requests and sends against charges made; extra charges called out; replays and refusals."""
    facts = _agg(calls, ag.Charges).facts()
    if not facts["logical requests"]:
        return empty(title, "No requests yet")
    names = list(facts)
    values = [facts[n] for n in names]
    colours = [_IDEMPOTENCY_COLOURS.get(n, an.COLOURS[an.INFO]) for n in names]
    if not facts["extra charges"]:
        colours[names.index("extra charges")] = an.SAFE_COLOUR
    fig = figure()
    fig.add_trace(
        dict(
            type="bar",
            x=values,
            y=names,
            orientation="h",
            marker=dict(color=colours),
            text=[f"{v:,}" for v in values],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(range=[0, max(values) * 1.2 or 1])
    extra = facts["extra charges"]
    sub = (
        f"{extra:,} extra charges: retries and duplicate deliveries charged the card again"
        if extra
        else f"{facts['charges made']:,} charges for {facts['logical requests']:,} requests sent "
        f"{facts['sends (retries and duplicates included)']:,} times: each charged once"
    )
    return _style(fig, title, subtitle=sub, legend=False, height=int(120 + 46 * len(names)), meta=facts)


# -- GSI consistency ---------------------------------------------------------------------------------------------


def gsi_staleness(
    calls: Calls,
    invariants: Invariants = (),
    options: Mapping[str, Any] | None = None,
    *,
    x_range: Sequence[float] | None = None,
    title: str = "GSI staleness: write → first visible",
) -> go.Figure:
    """Per write: ms from its acknowledgement to the first read that saw it; never-seen writes on top."""
    data = _agg(calls, ag.GsiReads).table(MAX_POINTS)  # evenly thinned
    if data.empty:
        return empty(title, "No acknowledged writes yet")
    lag = (options or {}).get("gsi_lag_ms")
    seen = data["seen_ms"].notna()
    top = float(max(data.loc[seen, "seen_ms"].max() if seen.any() else 0, lag or 0, 1.0)) * 1.15
    fig = figure()
    groups = (
        ("seen on the first read", seen & (data["stale_reads"] == 0), an.SAFE_COLOUR, "circle"),
        ("seen after stale reads (retried)", seen & (data["stale_reads"] > 0), an.COLOURS[an.CCF], "diamond"),
        ("never seen", ~seen, an.RACY_COLOUR, "x"),
    )
    for name, mask, colour, symbol in groups:
        rows = data[mask]
        if rows.empty:
            continue
        y = rows["seen_ms"].fillna(top)
        text = [
            f"#{s} client {c} write {int(o) + 1}: {r} reads, {st} stale"
            for s, c, o, r, st in zip(rows["seq"], rows["client"], rows["op"], rows["reads"], rows["stale_reads"])
        ]
        fig.add_trace(
            dict(
                type="scatter",
                name=name,
                x=rows["t"],
                y=y,
                mode="markers",
                text=text,
                marker=dict(color=colour, symbol=symbol, size=10, line=dict(width=1, color="white")),
                hovertemplate="%{text}<br>visible after %{y:.0f} ms<extra></extra>",
            )
        )
    if lag:
        fig.add_shape(
            type="line", xref="paper", x0=0, x1=1, y0=lag, y1=lag, line=dict(color="#424242", width=2, dash="dash")
        )
        fig.add_annotation(
            xref="paper",
            x=1,
            y=lag,
            text=f"lag {lag:g} ms (simulated)",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font=dict(size=15, color="#424242"),
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    fig.update_yaxes(range=[0, top * 1.05])
    ms = data.loc[seen, "seen_ms"]
    stale = int(data["stale_reads"].sum())
    sub = (
        f"{len(data):,} writes · {stale:,} stale reads · "
        + (
            f"visible after p50 {ms.median():.0f} ms, p95 {ms.quantile(0.95):.0f} ms, max {ms.max():.0f} ms"
            if len(ms)
            else "none seen yet"
        )
        + (f" · {int((~seen).sum())} never seen" if (~seen).any() else "")
    )
    return _style(
        fig,
        title,
        subtitle=sub,
        x_title="write acknowledged at (s)",
        y_title="ms until visible",
        height=400,
        meta={"writes": len(data), "stale_reads": stale, "never_seen": int((~seen).sum()), "y_max": top},
    )


# -- distributed locking -----------------------------------------------------------------------------------------

_LEASE_EVENTS = {
    "heartbeat": ("line-ns-open", "#0D47A1", 16),
    "heartbeat refused": ("line-ns-open", an.COLOURS[an.CCF], 16),
    "lease expired": ("x-thin-open", "#424242", 16),
    "zombie release refused": ("square-x-open", "#4E342E", 15),
    "write": ("circle", an.SAFE_COLOUR, 9),
    "write after pause": ("circle-open", an.SAFE_COLOUR, 12),
    "write (unknown)": ("circle", an.COLOURS[an.INFO], 9),
    "stale write refused (fencing token)": ("triangle-down", an.COLOURS[an.CCF], 15),
    "stale write landed": ("x", an.FLAG_COLOUR, 16),
}


def lease_gantt(
    calls: Calls,
    invariants: Invariants = (),
    *,
    x_range: Sequence[float] | None = None,
    title: str = "Lease Gantt: who held the lock when",
    lanes: int | None = None,
) -> go.Figure:
    """Holder bars per worker (fencing token inside), heartbeats, expiries, takeovers, refused zombie releases,
    and the protected writes: landed, refused by the token, or stale and landed."""
    leases = _agg(calls, ag.LeaseEvents).timeline(an.flagged_calls(invariants))
    if leases.holds.empty:
        if leases.events.empty:
            return empty(title, "No lease acquired yet" if _count(calls) else "No calls yet")
    holds, events = leases.holds, leases.events
    fig = figure()
    for ended, colour, pattern, label in (
        ("released", "#1565C0", "", "held, then released"),
        ("expired", "#90A4AE", "/", "held until the lease expired"),
        ("open", "#1565C0", ".", "held (no end recorded)"),
    ):
        rows = holds[holds["ended"] == ended]
        if rows.empty:
            continue
        hover = [
            f"worker-{c + 1} hold {int(h) + 1}"
            + ("" if np.isnan(t) else f", fencing token {int(t)}")
            + f"<br>{a:.3f} → {b:.3f} s ({ended})"
            + ("<br><b>takeover of an expired lease</b>" if tk else "")
            for c, h, t, a, b, tk in zip(
                rows["client"], rows["hold"], rows["token"], rows["start"], rows["end"], rows["takeover"]
            )
        ]
        fig.add_trace(
            dict(
                type="bar",
                name=label,
                orientation="h",
                y=rows["client"],
                base=rows["start"],
                x=(rows["end"] - rows["start"]).clip(lower=0),
                width=0.6,
                marker=dict(color=colour, pattern=dict(shape=pattern, fgcolor="#546E7A"), line=dict(width=0)),
                customdata=hover,
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    tokens = holds[holds["token"].notna()]
    if len(tokens):  # the fencing token over the start of each lease
        fig.add_trace(
            dict(
                type="scatter",
                name="fencing token",
                mode="text",
                showlegend=False,
                x=tokens["start"],
                y=tokens["client"] - 0.42,
                text=[f"t{int(t)}" for t in tokens["token"]],
                textposition="middle right",
                textfont=dict(size=13, color="#0D47A1"),
                hoverinfo="skip",
            )
        )
    takeovers = holds[holds["takeover"]]
    if len(takeovers):
        fig.add_trace(
            dict(
                type="scatter",
                name="takeover after expiry",
                mode="markers",
                x=takeovers["start"],
                y=takeovers["client"],
                marker=dict(symbol="star", size=16, color="#6A1B9A"),
                hovertemplate="takeover at %{x:.3f} s<extra></extra>",
            )
        )
    for kind, (symbol, colour, size) in _LEASE_EVENTS.items():
        rows = events[events["kind"] == kind]
        if rows.empty:
            continue
        fig.add_trace(
            dict(
                type="scatter",
                name=kind,
                mode="markers",
                x=rows["t"],
                y=rows["client"],
                marker=dict(symbol=symbol, size=size, color=colour, line=dict(width=2, color=colour)),
                customdata=[
                    f"#{s} worker-{c + 1} {kind}" + ("" if np.isnan(t) else f" (token {int(t)})")
                    for s, c, t in zip(rows["seq"], rows["client"], rows["token"])
                ],
                hovertemplate="%{customdata}<br>at %{x:.3f} s<extra></extra>",
            )
        )
    n_lanes = lanes or _lanes(calls)
    fig.update_layout(barmode="overlay")
    fig.update_yaxes(
        autorange=False,
        range=[n_lanes - 0.5, -0.5],
        title_text="worker",
        showgrid=False,
        tickmode="array",
        tickvals=list(range(n_lanes)) if n_lanes <= 24 else None,
        ticktext=[f"worker-{i + 1}" for i in range(n_lanes)] if n_lanes <= 24 else None,
    )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    count = events["kind"].value_counts()
    sub = (
        f"{len(holds)} leases · {int((holds['ended'] == 'expired').sum())} expired · "
        f"{len(takeovers)} takeovers · {int(count.get('zombie release refused', 0))} zombie releases refused · "
        f"stale writes: {int(count.get('stale write refused (fencing token)', 0))} refused, "
        f"{int(count.get('stale write landed', 0))} landed"
    )
    return _style(
        fig,
        title,
        subtitle=sub,
        x_title="seconds",
        height=int(min(900, max(340, 170 + 30 * n_lanes))),
        meta={
            "leases": len(holds),
            "expired": int((holds["ended"] == "expired").sum()),
            "takeovers": len(takeovers),
            "stale_landed": int(count.get("stale write landed", 0)),
            "stale_refused": int(count.get("stale write refused (fencing token)", 0)),
            "zombie_refused": int(count.get("zombie release refused", 0)),
        },
    )


# -- sweep -------------------------------------------------------------------------------------------------------

_SWEEP_METRICS = (
    ("conflict_rate", "conflict rate", ".0%"),
    ("retries_per_success", "retries per success", ".2f"),
    ("calls_per_s", "throughput (calls/s)", ",.0f"),
    ("p95_ms", "p95 latency (ms)", ",.1f"),
)


def sweep_lines(rows: pd.DataFrame, *, title: str = "Sweep: both variants against thread count") -> go.Figure:
    """Four panels (conflict rate, retries per success, throughput, p95 latency), one line per variant."""
    if rows is None or rows.empty:
        return empty(title, "No sweep results yet")
    fig = figure()
    grid = make_subplots(
        rows=2, cols=2, subplot_titles=[m[1] for m in _SWEEP_METRICS], horizontal_spacing=0.09, vertical_spacing=0.18
    ).layout.to_plotly_json()
    for name in ("xaxis", "xaxis2", "xaxis3", "xaxis4"):
        fig.layout[name] = {
            **grid[name],
            "type": "log",
            "dtick": float(np.log10(2)),
            "tickformat": "d",
            "title": {"text": "threads", "font": {"size": 15}},
        }
    for name in ("yaxis", "yaxis2", "yaxis3", "yaxis4"):
        fig.layout[name] = {**grid[name], "rangemode": "tozero"}
    fig.layout["yaxis"]["tickformat"] = ".0%"
    fig.layout["annotations"] = [{**a, "font": {"size": 17}} for a in grid["annotations"]]
    palette = ["#2E7D32", "#C62828", "#1565C0", "#6A1B9A"]
    variants = list(dict.fromkeys(rows["variant"]))
    for vi, variant in enumerate(variants):
        sub = rows[rows["variant"] == variant].sort_values("threads")
        safe = bool(sub["safe"].iloc[0]) if "safe" in sub else vi == 0
        colour = (an.SAFE_COLOUR if safe else an.RACY_COLOUR) if len(variants) <= 2 else palette[vi % len(palette)]
        name = f"{variant} ({'safe' if safe else 'racy'})"
        for i, (col, label, fmt) in enumerate(_SWEEP_METRICS):
            axis = "" if i == 0 else str(i + 1)
            fig.add_trace(
                dict(
                    type="scatter",
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    x=sub["threads"],
                    y=sub[col],
                    mode="lines+markers",
                    xaxis=f"x{axis}",
                    yaxis=f"y{axis}",
                    line=dict(color=colour, width=3, dash="solid" if safe else "dash"),
                    marker=dict(size=9),
                    hovertemplate=f"{name}<br>%{{x}} threads: %{{y:{fmt}}}<extra>{label}</extra>",
                )
            )
    return _style(fig, title, height=640, meta={"variants": variants}, legend_y=1.07)


# -- which views a pattern gets ------------------------------------------------------------------------------------


def _transactional(calls: Calls) -> bool:
    if isinstance(calls, RunView):
        return calls.get(ag.Cancellations).transactional
    return len(calls) > 0 and bool(an.where(calls["op"], ["TransactWriteItems"]).any())


def pattern_views(
    pattern: str,
    calls: Calls,
    invariants: Invariants = (),
    options: Mapping[str, Any] | None = None,
    *,
    x_range: Sequence[float] | None = None,
    lanes: int | None = None,
) -> list[go.Figure]:
    """The per-pattern views of the Run and Compare pages, most telling first."""
    if pattern == "optimistic-locking":
        return [version_history(calls, x_range=x_range)]
    if pattern == "atomic-counters":
        return [counter(calls, invariants, x_range=x_range)]
    transactional = _transactional(calls)
    if pattern == "transactions":
        return [cancellation_heatmap(calls), action_outcomes(calls)] if transactional else [action_outcomes(calls)]
    if pattern == "unique-constraints":
        return [unique_view(calls, invariants)] + ([cancellation_heatmap(calls)] if transactional else [])
    if pattern == "idempotency-keys":
        return [idempotency_view(calls, invariants)]
    if pattern == "gsi-consistency":
        return [gsi_staleness(calls, invariants, options, x_range=x_range)]
    if pattern == "distributed-locking":
        return [lease_gantt(calls, invariants, x_range=x_range, lanes=lanes)]
    return [action_outcomes(calls)]
