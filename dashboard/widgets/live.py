"""The live part of the pages: an `st.fragment(run_every=...)` that polls running Runs and redraws their charts.

Worker threads never touch Streamlit: they append to a History; this fragment, on the script thread, brings the
run's aggregates up to date with the calls recorded since the last refresh (RunRecord.view) and redraws, every
LIVE_REFRESH_S seconds while a run is going, and stops polling (one full rerun) when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.figures import charts, figure
from dashboard.figures import sweep as sweep_charts
from dashboard.figures.palette import variant_title
from dashboard.state.records import RunRecord
from dashboard.state.sweep_jobs import SweepJob
from dashboard.state.verdicts import flagged_calls
from dashboard.text.words import plural
from dashboard.widgets import explainer, panels, replay, ui

LIVE_REFRESH_S = 0.75  # every chart updates at least once a second while a run goes


def poll(active: Callable[[], bool], body: Callable[[], None], *, every: float = LIVE_REFRESH_S) -> None:
    """Run `body` now, and again every `every` seconds while `active()`; one app rerun once it turns false."""
    was_active = active()

    def _body() -> None:
        body()
        if was_active and not active():
            st.rerun()  # the run ended: redraw the page once, without a timer

    st.fragment(_body, run_every=every if was_active else None)()


# -- one run --------------------------------------------------------------------------------------------------------


def run_header(record: RunRecord) -> None:
    """The run's title with its state badge; drawn inside the polled fragment, so the badge follows the run."""
    st.markdown(f"## {panels.state_trail(record)} {ui.plain(record.title)}")
    where = record.backend_label
    st.caption(ui.plain(f"run {record.id} · {where}" + (f" · file {record.file_name}" if record.file_name else "")))
    profile_caption(record)


def profile_caption(record: RunRecord) -> None:
    """Under aws-like, say SIMULATED: a live run's config names its profile, an imported run's summary too."""
    profile = record.profile
    if profile is not None and profile.simulated:
        st.caption(  # an imported run's profile says where its knobs came from, in the file's own words
            ui.plain(f"Server profile {profile.describe()}: conflict rates and latencies here come from the model")
        )


HALF_COLUMN_CHARS = 36  # characters of subtitle a half-column chart shows at 1024 px with the sidebar open


def run_figures(
    record: RunRecord, *, x_range: tuple[float, float] | None = None, whole: RunRecord | None = None
) -> dict[str, Any]:
    """Every chart of the Run page: timeline, outcomes, latency, the pattern's views, and the final state once
    there are verdicts (None before). Drawn from the run's aggregates, brought up to date first. `x_range` fixes
    the time axis (a replay keeps the whole run's); `whole`: the run a replay's cut `record` comes from."""
    invariants = record.invariants()
    verdicts = [inv for inv in invariants if not inv.get("as_of")]
    flagged = flagged_calls(invariants)
    max_bars = charts.MAX_BARS if record.running else charts.MAX_BARS_FINAL
    with record.view() as view:
        with figure.narrow(HALF_COLUMN_CHARS):  # side by side: half the page's column each
            outcomes = charts.outcomes_over_time(view, x_range=x_range)
            latency = charts.latency(view, x_range=x_range)
        return {
            "timeline": charts.timeline(
                view,
                flagged=flagged,
                lanes=record.threads,
                max_bars=max_bars,
                x_range=x_range,
                evidence=charts.evidence_note(verdicts),
                witnesses=explainer.marks(record, whole),
            ),
            "outcomes": outcomes,
            "latency": latency,
            "views": charts.pattern_views(
                record.pattern, view, invariants, record.options(), lanes=record.threads, x_range=x_range
            ),
            "final": charts.final_state(verdicts) if verdicts else None,
        }


def figures_of(figures: dict[str, Any]) -> list[go.Figure]:
    """The figures of run_figures, in page order."""
    return [
        f
        for name in ("timeline", "outcomes", "latency", "views", "final")
        for f in (figures[name] if isinstance(figures[name], list) else [figures[name]])
        if f is not None
    ]


def run_body(
    record: RunRecord,
    key: str,
    *,
    x_range: tuple[float, float] | None = None,
    export: bool = True,
    whole: RunRecord | None = None,
) -> None:
    """The header, counters, charts, invariant cards and call log of one run, as they stand now (`whole`: the
    run a replay's cut comes from)."""
    run_header(record)
    panels.run_messages(record)
    panels.progress_and_counters(record)
    figs = run_figures(record, x_range=x_range, whole=whole)
    explainer.timeline(figs["timeline"], whole or record, f"{key}-timeline")
    left, right = st.columns(2)
    with left:
        ui.chart(figs["outcomes"], f"{key}-outcomes")
    with right:
        ui.chart(figs["latency"], f"{key}-latency")
    st.markdown("### What the history shows")
    for i, fig in enumerate(figs["views"]):
        ui.chart(fig, f"{key}-view-{i}")
    panels.invariant_cards(record, key)
    if figs["final"] is not None:
        ui.chart(figs["final"], f"{key}-final")
    panels.call_log_panel(record, key)
    if export:
        st.markdown("### Export")
        panels.export_buttons(record, key)


def run_view(record: RunRecord, key: str) -> None:
    """Everything about one run, redrawn live while it goes; once it has ended, replayable in place."""
    if not record.running and len(record.history) and replay.replay_toggle(key):
        replay.replay_view(record, key, lambda r, k, x: run_body(r, k, x_range=x, export=False, whole=record))
        return
    poll(lambda: record.running, lambda: run_body(record, key))


# -- two runs side by side ------------------------------------------------------------------------------------------


def headline(record: RunRecord) -> str:
    """One line a room can read: what broke, or that nothing did."""
    invariants = record.invariants()
    if record.running:
        return "running…"
    if any(inv.get("as_of") for inv in invariants):
        return "replaying: the verdicts come at the end"
    if not invariants:
        return "no verdicts" if record.error is None else f"failed: {record.error.problem}"
    said = verdicts_said(invariants)
    if record.state == "stopped":  # the verdicts judge what was done before the stop, not the run planned
        return f"stopped, so judged only on the {plural(len(record.history), 'call')} made: {said}"
    return said


def verdicts_said(invariants: Sequence[Mapping[str, Any]]) -> str:
    broken = [inv for inv in invariants if inv.get("holds") is False]
    undecided = sum(1 for inv in invariants if inv.get("holds") is None)  # cannot judge: neither PASS nor FAIL
    n = plural(len(invariants), "invariant")
    if not broken:
        return (
            f"{len(invariants) - undecided} of {n} hold; {undecided} cannot be judged" if undecided else f"all {n} hold"
        )
    return f"{len(broken)} of {n} broken: {broken[0]['explanation']}"


def verdict_box(record: RunRecord) -> Callable[..., Any]:
    """The box the headline goes in: red when an invariant broke, amber when one cannot be judged (never green:
    "0 of 5 hold; 5 cannot be judged" is not a pass), green when all hold, neutral with no verdicts yet."""
    invariants = [inv for inv in record.invariants() if not inv.get("as_of")]  # a replay's cut is not a verdict
    if any(inv.get("holds") is False for inv in invariants):
        return st.error
    if any(inv.get("holds") is None for inv in invariants):
        return st.warning
    return st.success if invariants else st.info


PAIR_COLUMN_CHARS = 32  # characters of subtitle a Compare side's column shows at 1024 px with the sidebar open


def compare_view(records: Sequence[RunRecord], key: str, titles: Mapping[str, str] | None = None) -> None:
    """The safe and racy runs side by side, with shared axes: timeline, outcomes, final state, invariants; once
    both have ended, replayable together on one clock. `titles` (by run id) names each side, in the order given:
    two workloads compared, rather than two forms of one."""
    if titles is None:
        records = sorted(records, key=lambda r: (r.safe is False, r.id))
    if not any(r.running for r in records) and replay.replay_toggle(key):
        replay.replay_pair(records, key, lambda rs, k, x: compare_body(rs, k, x, wholes=records, titles=titles))
        return
    poll(lambda: any(r.running for r in records), lambda: compare_body(records, key, titles=titles))


def compare_body(
    records: Sequence[RunRecord],
    key: str,
    x_range: tuple[float, float] | None = None,
    wholes: Sequence[RunRecord] | None = None,
    titles: Mapping[str, str] | None = None,
) -> None:
    """The pair as it stands now; `x_range` fixes the time axis (a replay keeps the whole runs'); `wholes`: the
    runs a replay's cuts come from; `titles`: each side's name, by run id."""
    wholes = wholes or records
    if x_range is None:
        spans = []
        for r in records:
            with r.view() as view:
                spans.append(view.span if view.n else 0.0)
        span = max(spans + [r.progress()["elapsed_s"] for r in records] + [0.1])
        x_range = (0.0, span * 1.02)
    lanes = max(r.threads for r in records)
    # Each side gets a column of about 360 px beside the sidebar on a 1280-px screen: subtitles and legends wrap.
    with figure.narrow(PAIR_COLUMN_CHARS):
        timeline_figs, outcome_figs, view_figs = [], [], []
        for r, whole in zip(records, wholes):
            invariants = r.invariants()
            with r.view() as view:
                timeline_figs.append(
                    charts.timeline(
                        view,
                        flagged=flagged_calls(invariants),
                        x_range=x_range,
                        lanes=lanes,
                        max_bars=(charts.MAX_BARS if r.running else charts.MAX_BARS_FINAL) // 2,
                        evidence=charts.evidence_note(invariants),
                        witnesses=explainer.marks(r, whole),
                    )
                )
                outcome_figs.append(charts.outcomes_over_time(view, x_range=x_range))
                view_figs.append(
                    charts.pattern_views(r.pattern, view, invariants, r.options(), x_range=x_range, lanes=lanes)[0]
                )
        final_figs = [charts.final_state(r.invariants()) for r in records]
    for figs in (timeline_figs, outcome_figs, view_figs, final_figs):
        charts.align(figs)
    charts.share_y(outcome_figs)
    charts.share_y(view_figs)
    cols = st.columns(len(records), gap="large")
    for i, (col, record) in enumerate(zip(cols, records)):
        with col:
            kind = record.kind  # a workload's as-written form is not proven safe: "as written", in blue
            colour = {"safe": "green", "racy": "red"}.get(kind, "blue")
            title = f"{titles[record.id]}: {record.variant}" if titles and record.id in titles else record.variant
            said = "" if variant_title(record.variant, kind) == record.variant else f" ({kind})"
            st.markdown(f"## :{colour}[{ui.plain(title)}]{said}")
            profile_caption(record)
            with st.container(height=130, border=False):
                verdict_box(record)(f"**{ui.plain(headline(record))}**")
            panels.run_messages(record)
            panels.progress_and_counters(record, compact=True, pair=True)
            explainer.timeline(timeline_figs[i], wholes[i], f"{key}-{i}-timeline")
            ui.chart(outcome_figs[i], f"{key}-{i}-outcomes")
            ui.chart(view_figs[i], f"{key}-{i}-view")
            if record.invariants():
                ui.chart(final_figs[i], f"{key}-{i}-final")
            panels.invariant_cards(record, f"{key}-{i}", columns=1)


# -- a sweep --------------------------------------------------------------------------------------------------------

SWEEP_COLUMNS = {
    "variant": "variant",
    "threads": "threads",
    "runs": "runs",
    "harm": "harm",
    "harm_per_1k_ops": "harm / 1k ops",
    "harm_per_1k_ops_min": "harm min",
    "harm_per_1k_ops_max": "harm max",
    "conflict_rate": "conflict rate",
    "retries_per_success": "retries / success",
    "calls": "calls",
    "calls_per_s": "calls/s",
    "p95_ms": "p95 ms",
    "client_cpu": "client CPU",
    "invariants_broken": "invariants broken",
    "invariants_undecided": "cannot judge",
    "state": "state",
}


def sweep_table(points: pd.DataFrame) -> pd.DataFrame:
    """One row per variant and thread count (engine.run.sweep.summarize): the means, and harm's min and max."""
    if points.empty:
        return points
    shown = [c for c in SWEEP_COLUMNS if c in points and not _says_nothing(points, c)]
    table = points[shown].rename(columns=SWEEP_COLUMNS)
    return table.sort_values(["threads", "variant"]).reset_index(drop=True)


def _says_nothing(points: pd.DataFrame, column: str) -> bool:
    """A column left out of the Sweep table, whose last columns were cut at 1280 px: the harm's name (the same
    long words on every row: the caption says it once), harm's min and max and the runs with one run per
    point (the mean itself), the calls (the CSV has them), "cannot judge" at zero and a state of done on every row."""
    values = points[column]
    if column == "harm":
        return True
    if column in ("harm_per_1k_ops_min", "harm_per_1k_ops_max"):
        return "runs" in points and bool((points["runs"] <= 1).all())
    if column == "runs":  # one run per point: the chart's title says so
        return bool(pd.to_numeric(values, errors="coerce").fillna(1).le(1).all())
    if column == "calls":  # how many calls a point made is in the CSV of every run; calls/s stays
        return True
    if column == "invariants_undecided":
        return bool(pd.to_numeric(values, errors="coerce").fillna(0).eq(0).all())
    if column == "state":
        return bool(values.eq("done").all())
    return False


def sweep_view(job: SweepJob, key: str) -> None:
    from engine.run.sweep import summarize

    def body() -> None:
        rows = job.frame()
        points = summarize(rows) if not rows.empty else pd.DataFrame()
        done = len(rows)
        text = f"{job.state.value} · {done} of {plural(job.total, 'run')}" + (
            f" · now {job.current}" if job.current else ""
        )
        if job.profile.simulated:  # every figure below comes from the model's contention and network time
            st.caption(
                ui.plain(
                    f"Server profile {job.profile.describe()}: conflicts, throughput and latencies come from the model"
                )
            )
        st.progress(done / job.total if job.total else 1.0, text=text)
        if job.error is not None:
            ui.show_error(job.error)
        harm = str(rows["harm"].iloc[0]) if "harm" in rows and len(rows) else ""
        spread = f", {job.repeats} runs per point (band: min to max)" if job.repeats > 1 else ", one run per point"
        ui.chart(
            sweep_charts.sweep_spread(points, harm=harm, title=f"Sweep: {job.pattern}{spread}"),
            f"{key}-spread",
        )
        ui.chart(sweep_charts.sweep_shares(points, title=f"Sweep: {job.pattern}, conflicts by cause"), f"{key}-shares")
        ui.chart(
            sweep_charts.sweep_lines(points, title=f"Sweep: {job.pattern}, {job.ops_per_client} ops per client"),
            f"{key}-lines",
        )
        if not points.empty:
            if harm:
                st.caption(ui.plain(f"Harm: {harm}, per 1,000 ops"))
            st.dataframe(
                sweep_table(points),
                hide_index=True,
                column_config={  # "small" numbers: the table's every column in view at 1280 px
                    "threads": st.column_config.NumberColumn(width="small"),
                    "runs": st.column_config.NumberColumn(width="small"),
                    "harm / 1k ops": st.column_config.NumberColumn(
                        format="%.1f", help=f"{harm} per 1,000 ops", width="small"
                    ),
                    "harm min": st.column_config.NumberColumn(format="%.1f", width="small"),
                    "harm max": st.column_config.NumberColumn(format="%.1f", width="small"),
                    "conflict rate": st.column_config.NumberColumn(format="percent", width="small"),
                    "retries / success": st.column_config.NumberColumn(format="%.2f", width="small"),
                    "calls": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "calls/s": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "p95 ms": st.column_config.NumberColumn(format="%.1f", width="small"),
                    "client CPU": st.column_config.NumberColumn(
                        format="%.2f", help=panels.CLIENT_CPU_HELP, width="small"
                    ),
                    "invariants broken": st.column_config.NumberColumn(width="small"),
                },
            )
            st.download_button(
                "Sweep table, every run (.csv)",
                data=rows.to_csv(index=False).encode(),
                file_name=f"sweep-{job.pattern}-{job.id}.csv",
                mime="text/csv",
                key=f"{key}-csv",
            )

    poll(lambda: job.running, body)
