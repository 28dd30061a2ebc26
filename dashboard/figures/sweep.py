"""The Sweep page's figures, against thread count: the racy variant's harm beside the safe variant's price (with
the spread of each point's runs), conflicts by cause and stale reads, and the four classic lines. Pure: the points
of engine.run.sweep.summarize in, a Plotly Figure out."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.figure import empty, figure, style
from dashboard.figures.palette import RACY_COLOUR, SAFE_COLOUR, safety
from engine.errors import BadInput
from engine.server.profile import ProfileSpec, knobs_note

# -- sweep -------------------------------------------------------------------------------------------------------


def flat_zero(points: pd.DataFrame, column: str) -> bool:
    """Whether a measure is zero (or missing) at every point: a panel of it is a flat line that says nothing."""
    values = pd.to_numeric(points[column], errors="coerce") if column in points else pd.Series(dtype=float)
    return bool(values.fillna(0).eq(0).all())


def none_note(points: pd.DataFrame, labels: Sequence[str]) -> str:
    """The subtitle's word for the panels left out as all zero: under which profile none was seen."""
    if not labels:
        return ""
    profiles = sorted(set(points["profile"])) if "profile" in points else []
    under = f" under the {profiles[0]} profile" if len(profiles) == 1 else ""
    return f"none{under}: {', '.join(labels)}"


# The narrowest a chart is drawn: the page's column on a 1024-px screen with the sidebar open.
NARROWEST_CHART_PX = 520
CHAR_EM = 0.58  # a character's mean width, in ems, of the charts' font


def panel_titles(titles: Sequence[str], *, cols: int, size: int, spacing: float) -> tuple[list[str], int]:
    """The panels' titles broken between words into lines that fit their panel at the narrowest chart (a long
    one ran over its neighbours' and off the chart), and the most lines any title takes."""
    panel_px = NARROWEST_CHART_PX * (1 - spacing * (cols - 1)) / cols
    chars = max(8, int(panel_px / (CHAR_EM * size)))
    lines = [textwrap.wrap(t, chars, break_long_words=False) or [""] for t in titles]
    return ["<br>".join(line) for line in lines], max(len(line) for line in lines)


def title_room(lines: int, size: int) -> int:
    """The px that panel titles of `lines` lines need above the plot beyond their first line."""
    return int((lines - 1) * size * 1.3)


def _thread_panels(
    fig: go.Figure,
    titles: Sequence[str],
    *,
    title_size: int,
    rows: int = 1,
    y_formats: Mapping[int, str] | None = None,
    **spacing: float,
) -> tuple[list[str], int]:
    """One panel per title, threads on a log-2 x axis and the y axis from zero (tick format by panel index where
    given); returns the panels' axis suffixes ("", "2", ...) in order, and the px their titles' extra lines take."""
    cols = len(titles) // rows
    fitted, lines = panel_titles(
        titles, cols=cols, size=title_size, spacing=spacing.get("horizontal_spacing", 0.2 / cols)
    )
    grid = make_subplots(rows=rows, cols=cols, subplot_titles=fitted, **spacing).layout.to_plotly_json()
    axes = ["" if i == 0 else str(i + 1) for i in range(len(titles))]
    for i, axis in enumerate(axes):
        fig.layout[f"xaxis{axis}"] = {
            **grid[f"xaxis{axis}"],
            "type": "log",
            "dtick": float(np.log10(2)),
            "tickformat": "d",
            "title": {"text": "threads", "font": {"size": 15}},
            "tickangle": 0,  # 1 2 4 8 16 32 fit level in a narrow panel; plotly turned them on their side
        }
        y_format = (y_formats or {}).get(i)
        fig.layout[f"yaxis{axis}"] = {
            **grid[f"yaxis{axis}"],
            "rangemode": "tozero",
            **({"tickformat": y_format} if y_format else {}),
        }
    fig.layout["annotations"] = [{**a, "font": {"size": title_size}} for a in grid["annotations"]]
    return axes, title_room(lines, title_size)


def _variant_line(
    name: str, sub: pd.DataFrame, column: str, axis: str, *, colour: str, safe: bool, showlegend: bool, **extra: Any
) -> dict[str, Any]:
    """One variant's line in one panel: solid for the safe variant, dashed for a racy one."""
    return dict(
        type="scatter",
        name=name,
        legendgroup=name,
        showlegend=showlegend,
        x=sub["threads"],
        y=sub[column],
        mode="lines+markers",
        xaxis=f"x{axis}",
        yaxis=f"y{axis}",
        line=dict(color=colour, width=3, dash="solid" if safe else "dash"),
        marker=dict(size=9),
        **extra,
    )


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
    metrics = [m for m in _SWEEP_METRICS if not flat_zero(rows, m[0])]
    left_out = [m[1] for m in _SWEEP_METRICS if m not in metrics]
    if not metrics:
        return empty(title, none_note(rows, left_out))
    fig = figure()
    axes, room = _thread_panels(
        fig,
        [m[1] for m in metrics],
        title_size=17,
        rows=2 if len(metrics) % 2 == 0 else 1,
        y_formats={i: m[2] for i, m in enumerate(metrics) if m[2].endswith("%")},
        horizontal_spacing=0.09,
        **({"vertical_spacing": 0.18} if len(metrics) % 2 == 0 else {}),
    )
    palette = ["#2E7D32", "#C62828", "#1565C0", "#6A1B9A"]
    variants = list(dict.fromkeys(rows["variant"]))
    for vi, variant in enumerate(variants):
        sub = rows[rows["variant"] == variant].sort_values("threads")
        safe = bool(sub["safe"].iloc[0]) if "safe" in sub else vi == 0
        colour = (SAFE_COLOUR if safe else RACY_COLOUR) if len(variants) <= 2 else palette[vi % len(palette)]
        name = f"{variant} ({safety(safe)})"
        for i, ((col, label, fmt), axis) in enumerate(zip(metrics, axes)):
            fig.add_trace(
                _variant_line(
                    name,
                    sub,
                    col,
                    axis,
                    colour=colour,
                    safe=safe,
                    showlegend=i == 0,
                    hovertemplate=f"{name}<br>%{{x}} threads: %{{y:{fmt}}}<extra>{label}</extra>",
                )
            )
    height = 640 if len(metrics) % 2 == 0 else 400
    legend_y = (1.07 if height == 640 else 1.12) + room / (height - 120)  # above the panel titles, however tall
    return style(
        fig,
        title,
        subtitle=none_note(rows, left_out),
        height=height,
        meta={"variants": variants, "panels": [m[0] for m in metrics]},
        legend_y=legend_y,
        extra_top=room,
    )


# What each kind of variant is judged by on the Sweep page: the damage a racy one does, the price a safe one pays.
_SPREAD_PANELS = (
    ("harm_per_1k_ops", False, "racy: harm per 1,000 ops", ",.1f"),
    ("conflict_rate", True, "safe: conflict rate", ".0%"),
    ("retries_per_success", True, "safe: retries per success", ",.2f"),
)


def sweep_spread(
    points: pd.DataFrame, *, harm: str = "", title: str = "Harm and its price against threads"
) -> go.Figure:
    """Three panels against thread count: the racy variant's harm per 1,000 ops (what its pattern names as
    damage: lost updates, duplicate numbers, double charges...), beside the safe variant's conflict rate and
    retries per success; each point the mean of its runs, the band their min to max (engine.run.sweep.summarize)."""
    if points is None or points.empty:
        return empty(title, "No sweep results yet")
    # The racy variant's harm is the point even at zero; a safe measure at zero everywhere is a flat line.
    panels = [p for p in _SPREAD_PANELS if not p[1] or not flat_zero(points[points["safe"]], p[0])]
    left_out = [p[2] for p in _SPREAD_PANELS if p not in panels]
    fig = figure()
    axes, room = _thread_panels(
        fig,
        [label for _, _, label, _ in panels],  # the pattern's name for its harm is the subtitle's
        title_size=16,
        y_formats={i: p[3] for i, p in enumerate(panels) if p[3].endswith("%")},
        horizontal_spacing=0.07,
    )
    for i, ((measure, safe, label, fmt), axis) in enumerate(zip(panels, axes)):
        mine = points[points["safe"] == safe]
        colour = SAFE_COLOUR if safe else RACY_COLOUR
        for variant in dict.fromkeys(mine["variant"]):
            sub = mine[mine["variant"] == variant].sort_values("threads")
            name = f"{variant} ({safety(safe)})"
            low, high = sub.get(f"{measure}_min"), sub.get(f"{measure}_max")
            if low is not None and high is not None and (sub["runs"] > 1).any():
                fig.add_trace(  # the band: min to max over the point's runs
                    dict(
                        type="scatter",
                        x=list(sub["threads"]) + list(sub["threads"])[::-1],
                        y=list(high) + list(low)[::-1],
                        fill="toself",
                        fillcolor=colour,
                        opacity=0.18,
                        line=dict(width=0),
                        hoverinfo="skip",
                        showlegend=False,
                        xaxis=f"x{axis}",
                        yaxis=f"y{axis}",
                    )
                )
            fig.add_trace(
                _variant_line(
                    name,
                    sub,
                    measure,
                    axis,
                    colour=colour,
                    safe=safe,
                    showlegend=i in (0, 1),
                    customdata=np.stack([sub["runs"], low if low is not None else sub[measure]], axis=-1),
                    hovertemplate=f"{name}<br>%{{x}} threads: %{{y:{fmt}}} (mean of %{{customdata[0]}} runs)"
                    f"<extra>{label}</extra>",
                )
            )
    return style(
        fig,
        title,
        subtitle=" · ".join(filter(None, [f"racy harm: {harm}" if harm else "", none_note(points, left_out)])),
        height=420,
        meta={"panels": [p[0] for p in panels]},
        legend_y=1.12 + room / (420 - 120),
        extra_top=room,
    )


# Shares of all calls by why they were refused, and of eventually consistent reads that were stale. Under the
# aws-like profile transaction conflicts and stale reads are SIMULATED, and the title says so.
_SHARES = (
    ("condition_refused_share", "condition refused"),
    ("transaction_conflict_share", "transaction conflict"),  # words: a panel title is wrapped between them
    ("throttled_share", "throttled"),
    ("stale_read_share", "stale reads"),  # a panel is ~18 characters wide: what it is a share of is the subtitle's
)


def _knobs_note(points: pd.DataFrame) -> str:
    """ " (knobs changed: commit window 40 ms)" when the sweep's aws-like runs had knobs off the model's defaults."""
    tags = points["profile_tag"] if "profile_tag" in points else []
    for tag in tags:
        try:
            note = knobs_note(ProfileSpec.from_tag(str(tag)))
        except BadInput:
            continue
        return f" ({note})" if note else ""
    return ""


def sweep_shares(
    points: pd.DataFrame, *, title: str = "Conflicts by cause and stale reads against threads"
) -> go.Figure:
    """One panel per cause (share of all calls) and one for stale reads, one line per variant (the mean of the
    point's runs)."""
    if points is None or points.empty:
        return empty(title, "No sweep results yet")
    present = [(col, label) for col, label in _SHARES if col in points and not flat_zero(points, col)]
    left_out = [label for col, label in _SHARES if (col, label) not in present]
    if not present:
        return empty(title, none_note(points, left_out))
    simulated = "profile" in points and (points["profile"] == "aws-like").any()
    if simulated:
        title = f"{title} (SIMULATED)"  # the whole "server profile aws-like: SIMULATED" ran off a 800-px title
    fig = figure()
    axes, room = _thread_panels(
        fig,
        [label for _, label in present],
        title_size=15,
        y_formats=dict.fromkeys(range(len(present)), ".2~%"),  # 0.4 % of calls throttled is not "0%"
        horizontal_spacing=0.09,  # room for a panel's "100%" beside the previous panel
    )
    for variant in dict.fromkeys(points["variant"]):
        sub = points[points["variant"] == variant].sort_values("threads")
        safe = bool(sub["safe"].iloc[0])
        name = f"{variant} ({safety(safe)})"
        for i, ((col, label), axis) in enumerate(zip(present, axes)):
            fig.add_trace(
                _variant_line(
                    name,
                    sub,
                    col,
                    axis,
                    colour=SAFE_COLOUR if safe else RACY_COLOUR,
                    safe=safe,
                    showlegend=i == 0,
                    hovertemplate=f"{name}<br>%{{x}} threads: %{{y:.1%}}<extra>{label}</extra>",
                )
            )
    return style(
        fig,
        title,
        subtitle=(f"server profile aws-like: SIMULATED{_knobs_note(points)} · " if simulated else "")
        + "each cause as a share of all calls · stale reads as a share of the reads without ConsistentRead"
        + (f" · {none_note(points, left_out)}" if left_out else ""),
        height=380,
        meta={"panels": [c for c, _ in present], "simulated": simulated},
        legend_y=1.14 + room / (380 - 120),
        extra_top=room,
    )
