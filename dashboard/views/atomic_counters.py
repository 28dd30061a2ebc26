"""24 · Atomic counters: acknowledged increments climbing against the value clients actually wrote and the final
count read back; the gap is the lost increments of read-then-put."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import MAX_POINTS, Calls, agg, empty, figure, scatter, style
from dashboard.figures.palette import COLOURS, OK, RACY_COLOUR, SAFE_COLOUR
from dashboard.figures.sampling import thin_index
from dashboard.state.aggregates import Aggregate, Rows, SortedTail
from dashboard.state.frames import detail_values, where
from dashboard.state.verdicts import Invariants, observed
from dashboard.text.words import plural
from dashboard.views.base import Ask, View
from engine.patterns.atomic_counters import DETAIL_READ, FINAL_COUNT, INCREMENT, AtomicCounters


@dataclass(frozen=True)
class CounterFacts:
    action: str
    acknowledged: int
    unknown: int
    final: int | None  # the counter read back after the run (None while it runs)
    lost: int | None
    series: pd.DataFrame  # t, acknowledged (cumulative), written (value written by that call, or NaN), seq


class CounterSeries(Aggregate):
    """Acknowledged increments in completion order (t, the value each wrote), and the unknown ones."""

    def __init__(self, action: str = INCREMENT) -> None:
        self.action = action
        self.acked = SortedTail(key=np.float64, t=np.float64, written=np.float64)
        self.unknown = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        mine = where(frame["action"], [self.action])
        ok = frame[mine & where(frame["outcome"], ["ok"])]
        self.unknown += int((mine & where(frame["outcome"], ["info"])).sum())
        if len(ok):
            t = ok["end_s"].to_numpy()
            self.acked.add(key=t, seq=ok["seq"].to_numpy(), t=t, written=detail_values(ok, DETAIL_READ) + 1)

    @property
    def acknowledged(self) -> int:
        return len(self.acked)

    def series(self, max_rows: int) -> pd.DataFrame:
        """At most `max_rows` evenly spaced points: t, acknowledged (cumulative), written (NaN if unknown), seq."""
        idx = thin_index(len(self.acked), max_rows)
        return pd.DataFrame(
            {
                "t": self.acked["t"][idx],
                "acknowledged": idx + 1,
                "written": self.acked["written"][idx],
                "seq": self.acked["seq"][idx],
            }
        )

    def facts(self, invariants: Invariants = (), max_rows: int = MAX_POINTS) -> CounterFacts:
        """The increments against the final count read back (its invariant), the series thinned to `max_rows`
        points (its last point kept)."""
        final = observed(invariants, FINAL_COUNT)
        lost = max(0, self.acknowledged - final) if final is not None else None
        return CounterFacts(self.action, self.acknowledged, self.unknown, final, lost, self.series(max_rows))


def counter(
    calls: Calls,
    invariants: Invariants = (),
    *,
    x_range: Sequence[float] | None = None,
    title: str = "Counter: acknowledged increments vs the count",
) -> go.Figure:
    """The acknowledged increments climbing, the value clients actually wrote, and the final count read back."""
    facts = agg(calls, CounterSeries).facts(invariants, MAX_POINTS)  # a cumulative line, thinned evenly
    if facts.acknowledged == 0:
        return empty(title, "No acknowledged increment yet")
    s = facts.series
    fig = figure()
    fig.add_trace(
        scatter(
            "acknowledged increments (what the count should be)",
            s["t"],
            s["acknowledged"],
            "lines",
            line=dict(color="#424242", width=3, dash="dash"),
        )
    )
    if s["written"].notna().any():
        fig.add_trace(
            scatter(
                "value a client wrote (read + 1)",
                s["t"],
                s["written"],
                "markers",
                marker=dict(color=COLOURS[OK], size=7),
                hovertemplate="#%{customdata} wrote %{y} at %{x:.3f} s<extra></extra>",
                customdata=s["seq"],
            )
        )
    end = float(s["t"].max())
    if facts.final is not None:
        colour = SAFE_COLOUR if not facts.lost else RACY_COLOUR
        fig.add_trace(
            scatter(
                "final count read back",
                [end],
                [facts.final],
                "markers+text",
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
                font=dict(size=22, color=RACY_COLOUR),
            )
            fig.add_shape(
                type="line",
                x0=end,
                x1=end,
                y0=facts.final,
                y1=facts.acknowledged,
                line=dict(color=RACY_COLOUR, width=4),
            )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    fig.update_yaxes(rangemode="tozero")
    if facts.final is None:
        sub = f"{plural(facts.acknowledged, 'increment')} acknowledged so far; the count is read back when the run ends"
    elif facts.lost:
        sub = (
            f"final count {facts.final:,} vs {plural(facts.acknowledged, 'acknowledged increment')}: "
            f"{plural(facts.lost, 'lost update')}"
        )
    else:
        sub = f"final count {facts.final:,} = {plural(facts.acknowledged, 'acknowledged increment')}: none lost"
    if facts.unknown:
        sub += f" · {facts.unknown:,} with unknown outcome"
    y_max = max(
        facts.acknowledged, facts.final or 0, float(np.nanmax(s["written"])) if s["written"].notna().any() else 0
    )
    return style(
        fig,
        title,
        subtitle=sub,
        x_title="seconds",
        y_title="count",
        height=420,
        meta={"acknowledged": facts.acknowledged, "final": facts.final, "lost": facts.lost, "y_max": float(y_max)},
    )


def draw(ask: Ask) -> list[go.Figure]:
    return [counter(ask.calls, ask.invariants, x_range=ask.x_range)]


VIEW = View(pattern=AtomicCounters.name, aggregates=(CounterSeries,), draw=draw, detail_fields=(DETAIL_READ,))
