"""The toolkit every chart is drawn with: one house style (fonts, title and subtitle, legend), figures built as
plain dicts and turned into one unvalidated Plotly Figure, and what a chart asks of its calls (a snapshot frame or
a run's aggregates).

Rules for every chart: readable on a projector (large fonts, thick marks, one fixed colour per outcome/error code:
dashboard.figures.palette); cheap on a million-call run (a refresh works on the calls that arrived since the last one, and
never ships more than a few thousand marks to the browser; a sampled chart says so in its subtitle and in
`fig.layout.meta["sampled"]`); `x_range` (seconds) lets the Compare page share axes between two runs.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.palette import COLOURS
from dashboard.state.aggregates import A

if TYPE_CHECKING:  # a RunView is told apart from a frame by not being one: no import of the run's aggregates here
    from dashboard.state.runview import RunView

FONT = dict(family="Inter, 'Segoe UI', Helvetica, Arial, sans-serif", size=17, color="#111111")
MONO = "'DejaVu Sans Mono', Menlo, Consolas, monospace"
MAX_BARS = 2000  # while a run goes (redrawn every refresh)
MAX_BARS_FINAL = 5000  # once it has ended (drawn once)
MAX_POINTS = 4000

Calls: TypeAlias = "pd.DataFrame | RunView"  # a snapshot frame, or a run's aggregates

# Our own small template, given explicitly: plotly's default one is deep-copied into every new figure (about
# 0.1 s each), and validation of every property costs more than the data; figures here are built unvalidated
# (tests/dashboard validate each chart once with plotly's validators instead).
_TEMPLATE = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(COLOURS.values()),
        "xaxis": {"gridcolor": "#E6E6E6", "linecolor": "#888888", "ticks": "", "zeroline": False, "automargin": True},
        "yaxis": {"gridcolor": "#E6E6E6", "linecolor": "#888888", "ticks": "", "zeroline": False, "automargin": True},
        "hovermode": "closest",
    }
}


class Texts(tuple[str, ...]):
    """Per-mark texts (hover, labels) plotly may share instead of copying: it deep-copies every trace when a Figure
    is made and again when it is sent, string by string (thousands per timeline); strings are immutable."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Texts:
        return self


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


def style(
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
    extra_top: int = 0,
) -> go.Figure:
    """Title, subtitle, legend and fonts, the same on every chart; returns the finished Figure. `extra_top`: px
    more above the plot, for panel titles of more than one line.

    Up to five legend entries sit in one row under the subtitle; more go under the plot, so they never run
    into the subtitle. In a narrow column (`narrow`) every legend goes under the plot, its long names broken
    into lines: plotly wraps a row above the plot upwards over the subtitle, and let a long name run past the
    chart's edge.
    """
    chars = _LINE_CHARS.get()
    shown = [str(t["name"]) for t in fig.data if t.get("name") and t.get("showlegend", True)]
    entries = len(shown)
    slim = chars < SUBTITLE_CHARS
    below = legend and (
        slim or entries > 5 or sum(len(n) + 6 for n in shown) > chars * LEGEND_ROW_CHARS // SUBTITLE_CHARS
    )
    rows = -(-entries // max(1, chars // 28)) if below else 0
    if below and slim and entries:
        rows = _legend_rows(fig, chars)
    subtitle, sub_lines = wrapped(subtitle, chars)
    title_lines = textwrap.wrap(title, max(TITLE_CHARS_MIN, int(chars * TITLE_PER_SUBTITLE_CHAR))) if title else []
    title = "<br>".join(title_lines) if chars < SUBTITLE_CHARS else title  # a full-width chart's title fits
    extra_top += TITLE_LINE_PX * (len(title_lines) - 1) if chars < SUBTITLE_CHARS and title_lines else 0
    top = 64 + 24 * sub_lines + (34 if legend and not below else 0) + (30 if legend_y > 1.02 else 0) + extra_top
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
            pad=dict(t=14 + TITLE_PAD_PX * (title.count("<br>"))),  # plotly lifts a title of more lines
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
    if chars < SUBTITLE_CHARS:
        _wrap_bar_labels(fig, max(24, chars * 11 // 20))  # 24: two lines hold a 40-character label
    return fig.figure()


LEGEND_ENTRY_CHARS = 6  # a legend entry's symbol and gap, in characters of its name
# A legend row's characters (names and LEGEND_ENTRY_CHARS each) in a chart SUBTITLE_CHARS wide: at 95, a 1024-px
# screen's full-width chart wrapped a row of 83 upwards over the subtitle.
LEGEND_ROW_CHARS = 80


def _legend_rows(fig: Spec, chars: int) -> int:
    """A narrow chart's legend under the plot: names longer than the column broken between words (the trace's
    name, so its hover keeps it whole in one line's worth), and the rows of lines they take."""
    width = max(TITLE_CHARS_MIN, chars - LEGEND_ENTRY_CHARS)
    lines: list[int] = []
    longest = 0
    for trace in fig.data:
        if not trace.get("name") or not trace.get("showlegend", True):
            continue
        parts = textwrap.wrap(str(trace["name"]), width) or [str(trace["name"])]
        if len(parts) > 1:
            trace["name"] = "<br>".join(parts)
        lines.append(len(parts))
        longest = max(longest, *map(len, parts))
    per_row = max(1, chars // (longest + LEGEND_ENTRY_CHARS))
    return sum(max(lines[i : i + per_row]) for i in range(0, len(lines), per_row))


def _wrap_bar_labels(fig: Spec, width: int) -> None:
    """Horizontal bars' category labels broken between words into lines of about `width` characters: in a narrow
    column plotly cut a long one off at the chart's left edge ("…retries and duplicates included)")."""
    if "tickvals" in fig.layout.get("yaxis", {}):
        return
    names: dict[str, None] = {}
    for trace in fig.data:
        if trace.get("type") == "bar" and trace.get("orientation") == "h":
            ys = trace.get("y")
            for y in () if ys is None else ys:
                if not isinstance(y, str):
                    return  # a numeric axis: its ticks are plotly's
                names[y] = None
    if any(len(name) > width for name in names):
        labels = ["<br>".join(textwrap.wrap(name, width)) or name for name in names]
        # A size smaller: two lines of it fit the room a bar has (46 px), three of the default did not.
        fig.update_yaxes(tickmode="array", tickvals=list(names), ticktext=labels, tickfont=dict(size=13))


# A title's characters are about 1.6 times a subtitle's wide (22 px bold against 15 px): a narrow column's title
# is wrapped between words to the same width, each further line TITLE_LINE_PX more above the plot.
TITLE_PER_SUBTITLE_CHAR = 0.6
TITLE_CHARS_MIN = 12
TITLE_LINE_PX = 28
TITLE_PAD_PX = 12
SUBTITLE_CHARS = 88  # what a half-width chart on a 1280-px projector shows of a line; a longer one is cut off
_LINE_CHARS: ContextVar[int] = ContextVar("line_chars", default=SUBTITLE_CHARS)


@contextmanager
def narrow(chars: int) -> Iterator[None]:
    """Charts styled inside are laid out for a column that shows about `chars` characters of subtitle (a Compare
    pair's halves beside the sidebar): plotly wraps neither a subtitle nor, above the plot, a legend's row, so
    they ran off the chart's edge or over each other."""
    token = _LINE_CHARS.set(chars)
    try:
        yield
    finally:
        _LINE_CHARS.reset(token)


def wrapped(subtitle: str, width: int = SUBTITLE_CHARS) -> tuple[str, int]:
    """The subtitle broken into lines of about `width` characters, and how many: between its " · " parts, so that
    each part (a count and what it counts) stays whole and readable as one phrase; in a narrow column (`width`
    under SUBTITLE_CHARS) a part longer than a line is also cut between words, or it would run off the edge."""
    if not subtitle:
        return "", 0
    text = ""
    lines = 0
    line = -1  # characters on the current line; -1 before the first
    for part in subtitle.split(" · "):
        pieces = textwrap.wrap(part, width) if width < SUBTITLE_CHARS and len(part) > width else [part]
        for i, piece in enumerate(pieces):
            if i == 0 and line >= 0 and line + 3 + len(piece) <= width:
                text += " · " + piece
                line += 3 + len(piece)
                continue
            text += ("" if line < 0 else "<br>" if i else " ·<br>") + piece
            line = len(piece)
            lines += 1
    return text, lines


def empty(title: str, message: str, height: int = 260) -> go.Figure:
    """A titled placeholder with a message in the middle (no data yet, nothing to show)."""
    fig = figure()
    # Broken between words to the column (18-px type: about 0.58 of a subtitle's characters a line).
    message = "<br>".join(textwrap.wrap(message, max(16, int(_LINE_CHARS.get() * 0.58)))) or message
    fig.add_annotation(
        text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=18, color="#555555")
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return style(fig, title, height=height, legend=False, meta={"empty": True})


def count(calls: Calls) -> int:
    """How many calls."""
    return calls.n if not isinstance(calls, pd.DataFrame) else len(calls)


def lanes(calls: Calls) -> int:
    """One lane per client."""
    if not isinstance(calls, pd.DataFrame):
        return calls.lanes
    return int(calls["client"].max()) + 1 if len(calls) else 1


def agg(calls: Calls, kind: type[A], **kwargs: Any) -> A:
    """The run's aggregate of this kind, or the frame's (read in one go)."""
    return calls.get(kind) if not isinstance(calls, pd.DataFrame) else kind.of(calls, **kwargs)


def span(calls: Calls, x_range: Sequence[float] | None) -> float:
    """Seconds the x axis covers: the shared range, else up to the latest completion."""
    if x_range is not None:
        return float(x_range[1])
    if not isinstance(calls, pd.DataFrame):
        return calls.span
    return float(calls["end_s"].max()) if len(calls) else 1.0


def scatter(name: str, x: Any, y: Any, mode: str, **props: Any) -> dict[str, Any]:
    """One named scatter trace ("lines", "markers", "markers+text"...) as a view adds it; props are Plotly's."""
    return dict(type="scatter", name=name, x=x, y=y, mode=mode, **props)
