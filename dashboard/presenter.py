"""Presenter view: a run, or a Compare pair, laid out for a projector (1280x720 and up): the verdict, the
counters, the timeline and the pattern's own chart on one screen without scrolling, in large type, with the
controls tucked away in a collapsed expander. A toggle at the top of the page, and `presenter=1` in the URL."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import charts, ui
from dashboard.live import headline, poll
from dashboard.palette import safety
from dashboard.records import RunRecord
from dashboard.verdicts import flagged_calls

KEY = "presenter"
CHART_HEIGHT = 300  # two charts side by side under the verdict and counters fit 720 px

# Large type, less padding, no sidebar: the page is for the room, not for the operator.
CSS = """<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { padding: 0.6rem 1.2rem 0 1.2rem !important; max-width: 100% !important; }
header[data-testid="stHeader"] { display: none !important; }
div[data-testid="stMetricValue"] { font-size: 2.1rem !important; }
div[data-testid="stMetricLabel"] p { font-size: 1.05rem !important; }
.ddblab-verdict p { font-size: 1.6rem !important; font-weight: 700; margin: 0; }
</style>"""


def enabled() -> bool:
    """The toggle (its state starts from the URL's presenter=1 and is written back to it)."""
    on = st.toggle(
        "Presenter view",
        value=st.query_params.get(KEY) == "1",  # the first value only: then the widget's own
        key=KEY,
        help="the run laid out for a projector; also presenter=1 in the URL",
    )
    if on and st.query_params.get(KEY) != "1":
        st.query_params[KEY] = "1"
    elif not on and KEY in st.query_params:
        del st.query_params[KEY]
    if on:
        st.html(CSS)
    return bool(on)


@contextmanager
def tucked(on: bool, label: str = "Controls") -> Iterator[None]:
    """The page's controls: as they are, or in a collapsed expander in presenter view."""
    if on:
        with st.expander(label, expanded=False, icon=":material/tune:"):
            yield
    else:
        yield


def _sized(fig: go.Figure, height: int = CHART_HEIGHT) -> go.Figure:
    fig.update_layout(height=height)
    return fig


def _verdict(record: RunRecord, height: int | None = None) -> None:
    """The headline; with a height (a pair's two sides), a box of that height, so both sides line up."""
    invariants = record.invariants()
    broken = any(not inv["holds"] for inv in invariants)
    box = st.error if broken else st.success if invariants else st.info
    with st.container(key=f"verdict-{record.id}", height=height or "content", border=False):
        st.html('<div class="ddblab-verdict"></div>')
        box(f"**{record.variant} ({safety(record.safe)}) · {headline(record)}**")


def _counters(record: RunRecord) -> None:
    p = record.progress()
    metrics = [("calls", p["calls"]), ("ok", p["ok"]), ("fail", p["fail"]), ("conflicts", p["conflicts"])]
    for col, (label, value) in zip(st.columns(len(metrics)), metrics):
        col.metric(label, f"{value:,}", border=True)


def _figures(record: RunRecord, x_range: Sequence[float] | None, lanes: int) -> tuple[go.Figure, go.Figure]:
    invariants = record.invariants()
    with record.view() as view:
        timeline = charts.timeline(
            view,
            flagged=flagged_calls(invariants),
            lanes=lanes,
            x_range=x_range,
            max_bars=charts.MAX_BARS,
            evidence=charts.evidence_note(invariants),
        )
        own = charts.pattern_views(record.pattern, view, invariants, record.options(), lanes=lanes, x_range=x_range)
    return _sized(timeline), _sized(own[0])


def run_view(record: RunRecord, key: str) -> None:
    """One run on one screen: verdict, counters, then the timeline beside the pattern's own chart."""

    def body() -> None:
        _verdict(record)
        _counters(record)
        timeline, own = _figures(record, None, record.threads)
        left, right = st.columns(2)
        with left:
            ui.chart(timeline, f"{key}-p-timeline")
        with right:
            ui.chart(own, f"{key}-p-view")

    poll(lambda: record.running, body)


def compare_view(records: Sequence[RunRecord], key: str) -> None:
    """A Compare pair on one screen: each side's verdict, counters and timeline, on shared axes."""
    records = sorted(records, key=lambda r: (r.safe is False, r.id))

    def body() -> None:
        spans: list[float] = [0.1]
        for r in records:
            with r.view() as view:
                spans.append(float(view.span) if view.n else 0.0)
            spans.append(float(r.progress()["elapsed_s"]))
        x_range = (0.0, max(spans) * 1.02)
        lanes = max(r.threads for r in records)
        for col, record in zip(st.columns(len(records), gap="medium"), records):
            with col:
                _verdict(record, height=110)
                _counters(record)
                timeline, _ = _figures(record, x_range, lanes)
                ui.chart(_sized(timeline, 240), f"{key}-{record.id}-p-timeline")

    poll(lambda: any(r.running for r in records), body)


def page_title(on: bool, title: str, **kwargs: Any) -> None:
    """The page's title; none in presenter view, so the run gets the screen."""
    if not on:
        st.title(title, **kwargs)


def divider(on: bool) -> None:
    if not on:
        st.divider()
