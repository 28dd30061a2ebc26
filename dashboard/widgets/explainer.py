"""The explainer opened from a timeline: the witnesses of a run's broken invariants marked with a ✕ (the other
flagged calls one legend click away: dashboard.figures.flag_marks), and one click on a ✕ opens a dialog with that
invariant's anomaly, its one-sentence story and its happens-before diagram, sized to fit the screen (a projector's
1280x720 too), whose camera button saves an SVG for a slide (drawn by plotly.js in the browser: no internet)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard.figures.flag_marks import Witnessed
from dashboard.figures.happens_before import happens_before
from dashboard.figures.text_scale import scaled
from dashboard.state.records import RunRecord
from dashboard.state.verdicts import key_of
from dashboard.widgets import explain_panel, ui
from engine.explain.registry import has_finder
from engine.explain.witness import Witness

# A run's witnesses by run id and length: asked for on every redraw of its timeline, found once. Shared by every
# session's script thread: read and trimmed under the lock (two evicting the same oldest entry at once raised).
_FOUND: dict[tuple[str, int], dict[str, Witness]] = {}
_FOUND_LOCK = threading.Lock()
_KEEP = 4
# Past this many calls the timeline marks every flagged call, as before, rather than make the first page after the
# run wait for the witness search (about 5 s for 100,000 calls here); the invariant cards still open each witness.
MARK_MAX_CALLS = 50_000


def _verdicts(record: RunRecord) -> list[Mapping[str, Any]]:
    """The broken invariants with a witness finder, once the verdicts are given (none while a run goes)."""
    invariants = record.invariants()
    if record.running or len(record.history) > MARK_MAX_CALLS or any(inv.get("as_of") for inv in invariants):
        return []
    return [inv for inv in invariants if inv.get("holds") is False and has_finder(record.pattern, key_of(inv))]


def witnesses(record: RunRecord) -> dict[str, Witness]:
    """Invariant key -> its witness, for each broken invariant whose witness was found."""
    broken = _verdicts(record)
    if not broken:
        return {}
    key = (record.id, len(record.history))
    with _FOUND_LOCK:
        kept = _FOUND.get(key)
    if kept is not None:
        return kept
    # Searched outside the lock (seconds for a long run): another session's page is not held up meanwhile.
    found = {key_of(inv): explain_panel.witness(record, inv) for inv in broken}
    kept = {k: w for k, w in found.items() if w is not None}
    with _FOUND_LOCK:
        _FOUND[key] = kept
        while len(_FOUND) > _KEEP:
            del _FOUND[next(iter(_FOUND))]
    return kept


def marks(record: RunRecord, whole: RunRecord | None = None) -> list[Witnessed]:
    """The witnesses a timeline of `record` marks: its own, or for a replay's cut (whose verdicts are not given
    yet), those of the `whole` run it was cut from, as far as the calls it shows."""
    source = whole if whole is not None else record
    shown = len(record.history)
    out: list[Witnessed] = []
    seen: set[tuple[int, ...]] = set()
    for key, w in witnesses(source).items():
        if w.seqs in seen:  # two invariants proven broken by the same calls: one mark, which a click can reach
            continue
        seen.add(w.seqs)
        seqs = tuple(s for s in w.seqs if s < shown)
        if seqs:
            out.append(Witnessed(key, w.anomaly.value, seqs))
    return out


def _open_key(key: str) -> str:
    return f"{key}-explain"


def _picks_key(key: str) -> str:
    return f"{key}-picks"


def timeline(
    fig: go.Figure, record: RunRecord, key: str, *, screen_tall: bool = False, text_scale: float = 1.0
) -> None:
    """The timeline chart; when it marks witnesses, a click on one of their ✕ opens its explainer (its diagram's
    text `text_scale` times as large: presenter view's, grown with the screen)."""
    picks = {
        i: t.meta["witness"] for i, t in enumerate(fig.data) if isinstance(t.meta, Mapping) and t.meta.get("witness")
    }
    if not picks:
        ui.chart(fig, key, screen_tall=screen_tall)
        return
    # A click selects the ✕; plotly would fade every call not selected, which is the whole timeline.
    fig.update_traces(unselected={"marker": {"opacity": 1}})
    # Each pick draws the chart afresh under a new key, with nothing selected: a second click on the same ✕ (the
    # dialog closed) would otherwise unselect it and open nothing.
    n = int(st.session_state.get(_picks_key(key), 0))
    chart_key = f"{key}-{n}" if n else key

    def picked() -> None:
        state = st.session_state.get(chart_key)
        points = state.selection.points if state is not None else []
        chosen = [picks[p["curve_number"]] for p in points if p.get("curve_number") in picks]
        if chosen:
            st.session_state[_open_key(key)] = chosen[0]
            st.session_state[_picks_key(key)] = n + 1

    ui.chart(fig, chart_key, screen_tall=screen_tall, on_select=picked)
    opened = st.session_state.pop(_open_key(key), None)
    if opened is not None:
        found = witnesses(record).get(str(opened))
        if found is not None:
            _dialog(record, found, _invariant_name(record, found.invariant), text_scale)


def _invariant_name(record: RunRecord, key: str) -> str:
    return next((str(inv.get("name", "")) for inv in record.invariants() if key_of(inv) == key), key)


# The dialog's chart: no taller than the screen leaves under its title and story (CSS, so it follows the screen).
DIALOG_CSS = """<style>
[role="dialog"] .st-key-explainer-diagram div[data-testid="stPlotlyChart"],
[role="dialog"] .st-key-explainer-diagram .js-plotly-plot { height: min(calc(100vh - 300px), 620px) !important; }
[role="dialog"] .st-key-explainer-story p { font-size: clamp(1.15rem, 1.5vw, 1.7rem) !important; line-height: 1.3; }
</style>"""


@st.dialog("Why it broke", width="large")
def _dialog(record: RunRecord, found: Witness, invariant: str, text_scale: float = 1.0) -> None:
    st.html(DIALOG_CSS)
    with st.container(key="explainer-story"):
        st.markdown(f"**{ui.plain(found.anomaly.value.capitalize())}** · {ui.plain(found.story)}")
    fig = scaled(happens_before(record.history, found), text_scale)
    name = f"{record.pattern}-{found.anomaly.value.replace(' ', '-')}"
    config = {**ui.PLOTLY_CONFIG, "toImageButtonOptions": {"format": "svg", "filename": name}}
    fig.update_layout(height=None, autosize=True)
    with st.container(key="explainer-diagram"):
        st.plotly_chart(fig, key="explainer-diagram-chart", theme=None, config=config, height="stretch")
    st.caption(ui.plain(f"Broke: {invariant} · the camera button above the diagram saves it as an SVG for a slide"))
