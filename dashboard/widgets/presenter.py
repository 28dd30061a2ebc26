"""Presenter view: a run, or a Compare pair, laid out for a projector (1280x720 and up): the verdict, the
counters, the timeline and the pattern's own chart on one screen without scrolling, in large type, with the
controls tucked away in a collapsed expander. A toggle at the top of the page, and `presenter=1` in the URL."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard.figures import charts, figure
from dashboard.figures.palette import variant_title
from dashboard.figures.text_scale import scaled
from dashboard.state.pair_counters import pair_counters
from dashboard.state.records import RunRecord
from dashboard.state.verdicts import flagged_calls
from dashboard.widgets import explainer, panels, replay, ui
from dashboard.widgets.live import headline, poll, verdict_box
from dashboard.widgets.viewport import probe
from engine.server.profile import knobs_note

KEY = "presenter"
CHART_HEIGHT = 300  # a run's charts at the least: under a replay's controls too they fit 720 px
PAIR_CHART_HEIGHT = 260  # a pair's timelines at the least

# Large type, less padding, no sidebar: the page is for the room, not for the operator.
CSS_TEMPLATE = """<style>
/* Type grows with the screen: Streamlit sizes its text and spacing in rem, so one root size scales them all,
   16 px up to a 1600-px screen, 19.2 px at 1920. The heights below leave room in rem for what grows with it. */
html { font-size: clamp(16px, 1vw, 19.2px) !important; }
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { padding: 0.6rem 1.2rem 0 1.2rem !important; max-width: 100% !important; }
header[data-testid="stHeader"] { display: none !important; }
div[data-testid="stMainBlockContainer"] div[data-testid="stVerticalBlock"] { gap: 0.5rem !important; }
div[data-testid="stMetric"] > div { padding: 0.2rem 0.5rem !important; }
div[data-testid="stMetricValue"] { font-size: clamp(1.8rem, 2.6vw, 3rem) !important; }
div[data-testid="stMetricLabel"] p { font-size: clamp(1rem, 1.2vw, 1.4rem) !important; }
HEIGHTS
.ddblab-verdict p { font-size: VERDICT_FONT !important; font-weight: 700; margin: 0; }
/* The run's state, read from the back of the room: the verdict's own size, not a caption's 14 px. */
div[class*="st-key-verdict-"] .stMarkdownBadge { font-size: clamp(1.25rem, 1.6vw, 1.9rem) !important; }
</style>"""
# What sits above and around a run's charts: the toggle, the controls' expander, Start, a verdict of up to two
# lines, the counters, the gaps and a little room below (and a replay's controls, 3.25 rem).
RUN_LESS_REM = 23.0
RUN_REPLAY_LESS_REM = RUN_LESS_REM + 3.25
# Above a pair's timelines, besides its verdicts' lines: the toggle, the controls' expander, Start, the counters,
# the gaps and a little room below (and a replay's controls, 4.75 rem).
PAIR_LESS_REM = 17.3
PAIR_REPLAY_LESS_REM = PAIR_LESS_REM + 4.75
VERDICT_FONT = "clamp(1.1rem, 1.5vw, 1.8rem)"  # a verdict's type: 19.2 px at 1280, 28.8 px at 1920
VERDICT_LINES = 4.05  # a pair's verdict box: three lines of its type at a line height of 1.35
_HEIGHTS = f"""
/* A run's two charts take the height the verdict and counters leave: {CHART_HEIGHT} px at 720 px, more on a taller screen. */
.st-key-presenter-charts div[data-testid="stPlotlyChart"],
.st-key-presenter-charts div[data-testid="stPlotlyChart"] .js-plotly-plot {{
  height: max({CHART_HEIGHT}px, calc(100vh - {RUN_LESS_REM}rem)) !important; }}
.st-key-presenter-charts-replay div[data-testid="stPlotlyChart"],
.st-key-presenter-charts-replay div[data-testid="stPlotlyChart"] .js-plotly-plot {{
  height: max({CHART_HEIGHT}px, calc(100vh - {RUN_REPLAY_LESS_REM}rem)) !important; }}
/* A pair's verdicts: three lines of their type and a slim padding, each side the same. */
div[class*="st-key-presenter-pair"] div:has(> div[class*="st-key-verdict-"]),
div[class*="st-key-presenter-pair"] div[class*="st-key-verdict-"] {{
  flex: 0 0 auto !important; height: calc({VERDICT_LINES} * {VERDICT_FONT} + 1rem) !important; }}
div[class*="st-key-presenter-pair"] div[class*="st-key-verdict-"] div[data-testid="stAlertContainer"] {{ padding: 0.45rem 0.75rem !important; }}
div[class*="st-key-presenter-pair"] .ddblab-verdict p {{ line-height: 1.35; }}
/* A pair's timelines: the same height side by side, as tall as the screen leaves under the verdicts (and a
   replay's controls: another container key, since Python knows which is drawn). */
.st-key-presenter-pair div[data-testid="stPlotlyChart"],
.st-key-presenter-pair div[data-testid="stPlotlyChart"] .js-plotly-plot {{
  height: max({PAIR_CHART_HEIGHT}px, calc(100vh - {PAIR_LESS_REM}rem - {VERDICT_LINES} * {VERDICT_FONT})) !important; }}
.st-key-presenter-pair-replay div[data-testid="stPlotlyChart"],
.st-key-presenter-pair-replay div[data-testid="stPlotlyChart"] .js-plotly-plot {{
  height: max({PAIR_CHART_HEIGHT}px, calc(100vh - {PAIR_REPLAY_LESS_REM}rem - {VERDICT_LINES} * {VERDICT_FONT})) !important; }}
"""
CSS = CSS_TEMPLATE.replace("HEIGHTS", _HEIGHTS + probe.CSS).replace("VERDICT_FONT", VERDICT_FONT)


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


# The root font of CSS above, 16 px up to a 1600-px screen and 1 % of its width up to 19.2 px at 1920: what a
# chart's px-sized text is multiplied by, so that it grows with the page's.
ROOT_PX, ROOT_MAX_PX = 16.0, 19.2


def type_scale(view: probe.Viewport | None) -> float:
    """How much larger than on a laptop the page's text is on this screen (1 before the browser has said)."""
    if view is None:
        return 1.0
    return min(max(view.width / 100, ROOT_PX), ROOT_MAX_PX) / ROOT_PX


def screen_height(least: int, less_rem: float, view: probe.Viewport | None, verdicts: bool = False) -> int:
    """A chart's height as CSS above gives it, max(least, 100vh - less_rem), less a pair's verdict lines
    (`verdicts`): what its ticks are spaced for."""
    if view is None:
        return least
    root = ROOT_PX * type_scale(view)
    verdict = min(max(view.width * 0.015, 1.1 * root), 1.8 * root) * VERDICT_LINES if verdicts else 0.0  # its clamp
    return max(least, round(view.height - less_rem * root - verdict))


@contextmanager
def tucked(on: bool, label: str = "Controls") -> Iterator[None]:
    """The page's controls: as they are, or in a collapsed expander in presenter view."""
    if on:
        with st.expander(label, expanded=False, icon=":material/tune:"):
            yield
    else:
        yield


LEGEND_BESIDE_EXTRA = 42  # px a chart grows by when its legend moves beside the plot: still inside 720 px


def _sized(
    fig: go.Figure,
    height: int = CHART_HEIGHT,
    *,
    screen: probe.Viewport | None = None,
    less_rem: float = RUN_LESS_REM,
    verdicts: bool = False,
) -> go.Figure:
    """The chart for this screen (`screen`, the browser's viewport): its text as much larger as the page's
    (type_scale; the margins with it), spaced for the height the page's CSS gives it, `height` at the least.

    A legend that figure.style put under the plot (more than five entries, or long names: a lease Gantt's eight)
    moves to the plot's right, one entry a line, and the chart grows a little so that they all show: under the
    plot, its rows would squeeze the plot to a strip or push the page past the screen's bottom."""
    scale = type_scale(screen)
    fig = scaled(fig, scale)
    height = screen_height(height, less_rem, screen, verdicts)
    if (fig.layout.margin.b or 56) > round(56 * scale):
        height += LEGEND_BESIDE_EXTRA
        fig.update_layout(
            margin=dict(b=round(56 * scale)),
            legend=dict(
                orientation="v",
                yref="paper",
                y=1,
                yanchor="top",
                x=1.02,
                xanchor="left",
                font=dict(size=round(13 * scale, 1)),
                tracegroupgap=0,
            ),
        )
    _fit_title(fig, line_chars(screen), scale)
    fig.update_layout(height=height)
    _spaced_ticks(fig, LABEL_PX * scale)
    _every_category(fig, LABEL_PX * scale)
    return fig


LABEL_PX = 16  # a tick label's height: closer labels print over each other (a projector's 8 clients in 60 px)


def _every_category(fig: go.Figure, label_px: float = LABEL_PX) -> None:
    """Horizontal bars on a category axis: plotly leaves out every other label once the bars are close (a
    projector's calls per action showed "close", "pay", "read-order", "spend" and not the four between); every
    label is shown when the plot has `label_px` for each."""
    bars = [t for t in fig.data if t.type == "bar" and t.orientation == "h" and t.y is not None]
    if not bars or fig.layout.yaxis.tickmode not in (None, "auto"):
        return
    names = list(dict.fromkeys(str(y) for t in bars for y in t.y))
    plot_px = (fig.layout.height or 0) - (fig.layout.margin.t or 0) - (fig.layout.margin.b or 0)
    if names and len(names) * label_px <= plot_px:
        fig.update_yaxes(tickmode="array", tickvals=names, ticktext=names)


def _spaced_ticks(fig: go.Figure, label_px: float = LABEL_PX) -> None:
    """A y axis with a label at every step (a timeline's clients) labels every 2nd, 5th, ... step instead when
    the plot is too short for all of them."""
    axis = fig.layout.yaxis
    if axis.tickmode != "linear" or not axis.dtick or not axis.range:
        return
    plot_px = (fig.layout.height or 0) - (fig.layout.margin.t or 0) - (fig.layout.margin.b or 0)
    steps = abs(axis.range[1] - axis.range[0]) / axis.dtick
    if plot_px <= 0 or steps * label_px <= plot_px:
        return
    every = next(n for n in (2, 5, 10, 20, 50, 100, 1_000) if steps / n * label_px <= plot_px or n == 1_000)
    fig.update_yaxes(dtick=axis.dtick * every)


def _simulated(record: RunRecord) -> bool:
    """Whether the run's server was the aws-like profile (a live run's config, or an imported run's summary)."""
    return record.profile is not None and record.profile.simulated


def _knobs_note(record: RunRecord) -> str:
    """ " (knobs changed: commit window 40 ms)" after SIMULATED when the run's knobs were not the model's defaults."""
    note = knobs_note(record.profile) if record.profile is not None else ""
    return f" ({note})" if note else ""


PAIR_VERDICT_CHARS = 140  # what a pair's 110-px verdict box shows in its type (about 55 characters a line, 3
# lines), less its state badge


def _verdict(record: RunRecord, key: str, height: int | None = None) -> None:
    """The headline; with a height (a pair's two sides), a box of that height, so both sides line up, and a
    headline cut to what it shows."""
    box = verdict_box(record)
    simulated = (
        " · " + ui.plain("server profile aws-like: SIMULATED" + _knobs_note(record)) if _simulated(record) else ""
    )
    lead = f"{variant_title(record.variant, record.kind)} ·"
    said = headline(record)
    if height is not None:
        said = shortened(said, PAIR_VERDICT_CHARS - len(lead) - len(simulated))
    lead, said = ui.plain(lead), ui.plain(said)  # an imported file's variant and error: cut first, then escaped
    # The header's badge, which presenter view has no header for: a run's whole trail (RUNNING 1.2 s → VERIFYING
    # 0.03 s → DONE), a pair side's state now (its box holds three lines).
    state = panels.state_trail(record) if height is None else panels.state_badge(panels.live_state(record))
    with st.container(key=f"verdict-{key}", height=height or "content", border=False):  # a replay's cut too
        st.html('<div class="ddblab-verdict"></div>')
        box(f"{state} **{lead} {said}{simulated}**")  # the space after the escaping, which trims the ends


def shortened(text: str, limit: int) -> str:
    """`text` cut at a word to at most `limit` characters, with an ellipsis: a fixed box clipped a long verdict
    in the middle of a line. Whatever follows it (SIMULATED) is the caller's and is never cut."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)].rsplit(" ", 1)[0].rstrip(" ,:;·")
    return f"{cut}…"


def _counters(record: RunRecord, *, pair: bool = False) -> None:
    """The run's counters; a Compare side's keep its guard's refusals apart from harm (pair_counters)."""
    p = record.progress()
    if pair:
        counters = pair_counters(p, record.invariants(), record.safe, short=True)
        for col, c in zip(st.columns(len(counters)), counters):
            col.metric(c.label, c.value, border=True)  # no help icon: the label keeps its room
        return
    metrics = [("calls", p["calls"]), ("ok", p["ok"]), ("fail", p["fail"]), ("conflicts", p["conflicts"])]
    for col, (label, value) in zip(st.columns(len(metrics)), metrics):
        col.metric(label, f"{value:,}", border=True)


def _fit_title(fig: go.Figure, chars: int, scale: float) -> None:
    """A title longer than its column shows (`chars` of subtitle), broken between words as figure.style breaks
    a narrow column's, the room above the plot growing by its further lines."""
    text = str(fig.layout.title.text or "")
    inner = text.removeprefix("<b>").removesuffix("</b>")
    width = max(figure.TITLE_CHARS_MIN, int(chars * figure.TITLE_PER_SUBTITLE_CHAR))
    if "<br>" in inner or len(inner) <= width:
        return
    lines = textwrap.wrap(inner, width)
    more = len(lines) - 1
    fig.update_layout(
        title_text=f"<b>{'<br>'.join(lines)}</b>",
        title_pad_t=(fig.layout.title.pad.t or 0) + round(figure.TITLE_PAD_PX * scale) * more,
        margin_t=(fig.layout.margin.t or 0) + round(figure.TITLE_LINE_PX * scale) * more,
    )


COLUMNS_REM = 3.4  # a half-width chart's column is half the screen less this: the page's padding and the gap


def line_chars(view: probe.Viewport | None) -> int:
    """Characters of subtitle a half-width chart shows on this screen, in its type: figure.SUBTITLE_CHARS at
    1280 px, fewer on a narrower screen (at 1024, a pattern chart's title ran past its chart's edge)."""
    if view is None:
        return figure.SUBTITLE_CHARS
    column = view.width - COLUMNS_REM * ROOT_PX * type_scale(view)
    reference = 1280 - COLUMNS_REM * ROOT_PX
    return min(figure.SUBTITLE_CHARS, int(figure.SUBTITLE_CHARS * column / reference / type_scale(view)))


def _figures(
    record: RunRecord, x_range: Sequence[float] | None, lanes: int, whole: RunRecord | None = None
) -> tuple[go.Figure, go.Figure]:
    invariants = record.invariants()
    verdicts = [inv for inv in invariants if not inv.get("as_of")]
    with record.view() as view:
        timeline = charts.timeline(
            view,
            flagged=flagged_calls(invariants),
            lanes=lanes,
            x_range=x_range,
            max_bars=charts.MAX_BARS,
            evidence=charts.evidence_note(verdicts),
            witnesses=explainer.marks(record, whole),  # a replay's cut: the whole run's witnesses, as far as shown
        )
        own = charts.pattern_views(record.pattern, view, invariants, record.options(), lanes=lanes, x_range=x_range)
    return timeline, own[0]


def run_view(record: RunRecord, key: str, toggle_at: Any = None) -> None:
    """One run on one screen: verdict, counters, then the timeline beside the pattern's own chart; once it has
    ended, replayable in place (the replay's controls on one row above; its toggle in `toggle_at`, e.g. beside
    the page's Start and Stop)."""

    screen = probe.viewport()  # the screen's size, for the charts' type and heights (not in a fragment: once)

    def body(shown: RunRecord, key: str, x_range: Sequence[float] | None = None) -> None:
        _verdict(shown, record.id)
        _counters(shown)
        replaying = x_range is not None  # a replay's cut, given the whole run's axis
        less_rem = RUN_REPLAY_LESS_REM if replaying else RUN_LESS_REM
        figs = _figures(shown, x_range, record.threads, record)
        timeline, own = (_sized(f, screen=screen, less_rem=less_rem) for f in figs)
        # As tall as the screen leaves (CSS), under a replay's controls too when it is one.
        with st.container(key="presenter-charts" if not replaying else "presenter-charts-replay"):
            left, right = st.columns(2)
            with left:
                explainer.timeline(
                    timeline, record, f"{key}-p-timeline", screen_tall=True, text_scale=type_scale(screen)
                )  # a ✕ opens why
            with right:
                ui.chart(own, f"{key}-p-view", screen_tall=True)

    if not record.running and len(record.history) and replay.replay_toggle(key, toggle_at):
        replay.replay_view(record, key, body, compact=True)
        return
    poll(lambda: record.running, lambda: body(record, key))


def compare_view(records: Sequence[RunRecord], key: str, toggle_at: Any = None) -> None:
    """A Compare pair on one screen: each side's verdict, counters and timeline, on shared axes; once both have
    ended, replayable together on one clock (its toggle in `toggle_at`)."""
    records = sorted(records, key=lambda r: (r.safe is False, r.id))
    lanes = max(r.threads for r in records)
    screen = probe.viewport()  # the screen's size, for the charts' type and heights (not in a fragment: once)

    def body(shown: Sequence[RunRecord], key: str, x_range: Sequence[float] | None = None) -> None:
        replaying = x_range is not None
        if x_range is None:
            spans: list[float] = [0.1]
            for r in shown:
                with r.view() as view:
                    spans.append(float(view.span) if view.n else 0.0)
                spans.append(float(r.progress()["elapsed_s"]))
            x_range = (0.0, max(spans) * 1.02)
        timelines = [
            _sized(
                _figures(side, x_range, lanes, whole)[0],
                PAIR_CHART_HEIGHT,
                screen=screen,
                less_rem=PAIR_REPLAY_LESS_REM if replaying else PAIR_LESS_REM,
                verdicts=True,
            )
            for side, whole in zip(shown, records)
        ]
        _same_plot_area(timelines, type_scale(screen))
        # As tall as the screen leaves (CSS), under a replay's controls too when it is one (given its x_range).
        with st.container(key="presenter-pair" if not replaying else "presenter-pair-replay"):
            for col, side, whole, timeline in zip(st.columns(len(shown), gap="medium"), shown, records, timelines):
                with col:
                    _verdict(side, whole.id, height=110)
                    _counters(side, pair=True)
                    explainer.timeline(
                        timeline, whole, f"{key}-{whole.id}-p-timeline", screen_tall=True, text_scale=type_scale(screen)
                    )

    if not any(r.running for r in records) and replay.replay_toggle(key, toggle_at):
        replay.replay_pair(records, key, body, compact=True)
        return
    poll(lambda: any(r.running for r in records), lambda: body(records, key))


PAIR_AXIS_PX = 34  # under a pair's plot: the time axis's numbers, "s" after each instead of a title line


def _same_plot_area(figs: Sequence[go.Figure], scale: float = 1.0) -> None:
    """Side by side, the plots start at the same height: the room above each is the larger of the two (a
    subtitle of two lines on one side made its plot shorter than the other's). The time axis says "s" on its
    numbers instead of a title line: at 720 px a pair's plot had some 55 px for eight clients."""
    top = max((f.layout.margin.t or 0) for f in figs)
    for f in figs:
        f.update_xaxes(title_text=None, ticksuffix=" s")
        f.update_layout(margin=dict(t=top, b=round(PAIR_AXIS_PX * scale)))


def page_title(on: bool, title: str, **kwargs: Any) -> None:
    """The page's title; none in presenter view, so the run gets the screen."""
    if not on:
        st.title(title, **kwargs)


def divider(on: bool) -> None:
    if not on:
        st.divider()
