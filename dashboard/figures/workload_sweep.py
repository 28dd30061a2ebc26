"""The "Your workload" page's sweep figure: both forms of a workload against client count (closed loop) or target
rate (open loop), a panel per measure. Pure: the rows of engine.workloads.sweep.sweep_row in, a Plotly Figure out,
drawn like the Sweep page's (dashboard.figures.sweep): the safe form solid, the racy one dashed, a measure at zero
everywhere left out and named in the subtitle."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.figure import empty, figure, style
from dashboard.figures.palette import RACY_COLOUR, SAFE_COLOUR
from dashboard.figures.sweep import flat_zero, panel_titles, title_room

# column, panel title, tick and hover format
METRICS = (
    ("goodput_per_s", "goodput (ok/s)", ",.0f"),
    ("conflict_share", "refused by a conflict (share of ops)", ".0%"),
    ("throttled_share", "throttled (share of ops)", ".0%"),
    ("retries_per_success", "retries per success", ",.2f"),
    ("p99_ms", "p99 latency (ms)", ",.1f"),
    ("violations", "invariant violations", ",d"),
)
AXIS_TITLES = {"clients": "clients", "rate": "target rate (ops/s)"}


def sweep_frame(rows: Sequence[Mapping[str, Any]], axis: str) -> pd.DataFrame:
    """The rows as one flat table: the axis value, the form, and each measure the figure draws."""
    out = []
    for r in rows:
        share = r.get("refused_share") or {}
        out.append(
            {
                axis: r[axis],
                "variant": r["variant"],
                "safe": r["variant"] != "racy",
                "ops": r["ops"],
                "goodput_per_s": r["goodput_per_s"],
                "conflict_share": share.get("condition_refused", 0.0) + share.get("transaction_conflict", 0.0),
                "throttled_share": share.get("throttled", 0.0),
                "retries_per_success": r["retries_per_success"],
                "p99_ms": r["p99_ms"],
                "violations": r["violations"],
                "state": r.get("state", "done"),
            }
        )
    return pd.DataFrame(out)


def workload_sweep_lines(rows: pd.DataFrame, axis: str, *, title: str) -> go.Figure:
    """A panel per measure that is not zero everywhere, one line per form, `axis` ("clients" or "rate") on a log x
    axis; the rows of `sweep_frame`."""
    if rows is None or rows.empty:
        return empty(title, "No sweep results yet")
    metrics = [m for m in METRICS if not flat_zero(rows, m[0])]
    left_out = [m[1] for m in METRICS if m not in metrics]
    note = f"none: {', '.join(left_out)}" if left_out else ""
    if not metrics:
        return empty(title, note)
    grid_rows = 2 if len(metrics) > 3 else 1
    cols = math.ceil(len(metrics) / grid_rows)
    spacing = {"horizontal_spacing": 0.09, **({"vertical_spacing": 0.2} if grid_rows == 2 else {})}
    titles, lines = panel_titles([m[1] for m in metrics], cols=cols, size=16, spacing=spacing["horizontal_spacing"])
    grid = make_subplots(rows=grid_rows, cols=cols, subplot_titles=titles, **spacing).layout.to_plotly_json()
    fig = figure()
    axes = ["" if i == 0 else str(i + 1) for i in range(len(metrics))]
    for (_, _, fmt), a in zip(metrics, axes):
        fig.layout[f"xaxis{a}"] = {
            **grid[f"xaxis{a}"],
            "type": "log",
            **({"dtick": float(np.log10(2)), "tickformat": "d"} if axis == "clients" else {}),
            "title": {"text": AXIS_TITLES[axis], "font": {"size": 15}},
            "tickangle": 0,
        }
        fig.layout[f"yaxis{a}"] = {
            **grid[f"yaxis{a}"],
            "rangemode": "tozero",
            **({"tickformat": fmt} if fmt.endswith("%") else {}),
        }
    fig.layout["annotations"] = [{**a, "font": {"size": 16}} for a in grid["annotations"]]
    variants = list(dict.fromkeys(rows["variant"]))
    for variant in variants:
        sub = rows[rows["variant"] == variant].sort_values(axis)
        safe = bool(sub["safe"].iloc[0])
        name = variant if safe else f"{variant} (RACY)"  # as written: the user's file, not proven safe
        for i, ((column, label, fmt), a) in enumerate(zip(metrics, axes)):
            fig.add_trace(
                dict(
                    type="scatter",
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    x=sub[axis],
                    y=sub[column],
                    mode="lines+markers",
                    xaxis=f"x{a}",
                    yaxis=f"y{a}",
                    line=dict(color=SAFE_COLOUR if safe else RACY_COLOUR, width=3, dash="solid" if safe else "dash"),
                    marker=dict(size=9),
                    hovertemplate=f"{name}<br>{AXIS_TITLES[axis]} %{{x}}: %{{y:{fmt}}}<extra>{label}</extra>",
                )
            )
    room = title_room(lines, 16)
    height = 640 if grid_rows == 2 else 400
    return style(
        fig,
        title,
        subtitle=note,
        height=height,
        meta={"variants": variants, "panels": [m[0] for m in metrics], "axis": axis},
        legend_y=(1.07 if grid_rows == 2 else 1.12) + room / (height - 120),
        extra_top=room,
    )
