"""28 · GSI consistency: per acknowledged write, how long until a read saw it (the simulated lag drawn as a line
and labelled so), the stale reads before, and the writes no read ever saw."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import MAX_POINTS, Calls, agg, empty, figure, style
from dashboard.figures.palette import CCF, COLOURS, RACY_COLOUR, SAFE_COLOUR
from dashboard.figures.sampling import thin_index
from dashboard.state.aggregates import Aggregate, Grow, Rows
from dashboard.state.frames import detail_fields, detail_values, where
from dashboard.state.verdicts import Invariants
from dashboard.text.words import client_name, plural
from dashboard.views.base import Ask, View
from engine.patterns.gsi_consistency import DETAIL_OP, DETAIL_STALE, READ_BACK, WRITE, GsiConsistency


class GsiReads(Aggregate):
    """Acknowledged writes (arrival order) and, per (client, op), the reads of them: how many, how many stale,
    when the first fresh one was sent."""

    def __init__(self) -> None:
        self.writes = {
            name: Grow(dtype)
            for name, dtype in (
                ("client", np.int64),
                ("op", np.float64),
                ("t", np.float64),
                ("done_ns", np.int64),
                ("seq", np.int64),
            )
        }
        self.reads: dict[tuple[int, float], list[Any]] = {}  # (client, op) -> [reads, stale, first fresh sent_ns]

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        ok = where(frame["outcome"], ["ok"])
        writes = frame[where(frame["action"], [WRITE]) & ok]
        if len(writes):
            for name, values in (
                ("client", writes["client"].to_numpy()),
                ("op", detail_values(writes, DETAIL_OP)),
                ("t", writes["end_s"].to_numpy()),
                ("done_ns", writes["complete_ns"].to_numpy()),
                ("seq", writes["seq"].to_numpy()),
            ):
                self.writes[name].extend(values)
        reads = frame[where(frame["action"], [READ_BACK]) & ok]
        if len(reads):
            stale, op = detail_fields(reads, DETAIL_STALE, DETAIL_OP)
            for client, read_op, sent, s in zip(
                reads["client"].tolist(), op.tolist(), reads["invoke_ns"].tolist(), (stale > 0).tolist()
            ):
                if read_op != read_op:  # NaN: no group (pandas' groupby drops it too)
                    continue
                group = self.reads.setdefault((client, read_op), [0, 0, None])
                group[0] += 1
                group[1] += s
                if not s and (group[2] is None or sent < group[2]):
                    group[2] = sent

    def table(self, max_rows: int | None = None) -> pd.DataFrame:
        """One row per acknowledged write (at most `max_rows`, evenly spaced): client, op, t, seen_ms, reads,
        stale_reads, seq."""
        n = self.writes["seq"].n
        idx = thin_index(n, n if max_rows is None else max_rows)
        w = {name: col.v[idx] for name, col in self.writes.items()}
        groups = [self.reads.get((c, o), (0, 0, None)) for c, o in zip(w["client"].tolist(), w["op"].tolist())]
        first = np.array([np.nan if g[2] is None else g[2] for g in groups], dtype=float)
        return pd.DataFrame(
            {
                "client": w["client"],
                "op": w["op"],
                "t": w["t"],
                "seen_ms": np.clip((first - w["done_ns"]) / 1e6, 0, None),
                "reads": np.array([g[0] for g in groups], dtype=np.int64),
                "stale_reads": np.array([g[1] for g in groups], dtype=np.int64),
                "seq": w["seq"],
            }
        )


def gsi_staleness(
    calls: Calls,
    invariants: Invariants = (),
    options: Mapping[str, Any] | None = None,
    *,
    x_range: Sequence[float] | None = None,
    title: str = "GSI staleness: write → first visible",
) -> go.Figure:
    """Per write: ms from its acknowledgement to the first read that saw it; never-seen writes on top."""
    data = agg(calls, GsiReads).table(MAX_POINTS)  # evenly thinned
    if data.empty:
        return empty(title, "No acknowledged writes yet")
    lag = (options or {}).get("gsi_lag_ms")
    seen = data["seen_ms"].notna()
    top = float(max(data.loc[seen, "seen_ms"].max() if seen.any() else 0, lag or 0, 1.0)) * 1.15
    fig = figure()
    groups = (
        ("seen on the first read", seen & (data["stale_reads"] == 0), SAFE_COLOUR, "circle"),
        ("seen after stale reads (retried)", seen & (data["stale_reads"] > 0), COLOURS[CCF], "diamond"),
        ("never seen", ~seen, RACY_COLOUR, "x"),
    )
    for name, mask, colour, symbol in groups:
        rows = data[mask]
        if rows.empty:
            continue
        y = rows["seen_ms"].fillna(top)
        # "write ?": an imported file's write that lacks its op number still gets its point
        text = [
            f"#{s} {client_name(c)} write {'?' if np.isnan(o) else int(o) + 1}: {plural(r, 'read')}, {st} stale"
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
        f"{plural(len(data), 'write')} · {plural(stale, 'stale read')} · "
        + (
            f"visible after p50 {ms.median():.0f} ms, p95 {ms.quantile(0.95):.0f} ms, max {ms.max():.0f} ms"
            if len(ms)
            else "none seen yet"
        )
        + (f" · {int((~seen).sum())} never seen" if (~seen).any() else "")
    )
    return style(
        fig,
        title,
        subtitle=sub,
        x_title="write acknowledged at (s)",
        y_title="ms until visible",
        height=400,
        meta={"writes": len(data), "stale_reads": stale, "never_seen": int((~seen).sum()), "y_max": top},
    )


def draw(ask: Ask) -> list[go.Figure]:
    return [gsi_staleness(ask.calls, ask.invariants, ask.options, x_range=ask.x_range)]


VIEW = View(pattern=GsiConsistency.name, aggregates=(GsiReads,), draw=draw, detail_fields=(DETAIL_OP, DETAIL_STALE))
