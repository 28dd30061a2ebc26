"""The "Your workload" page's Sweep: the workload in the editor, in both its forms, at several client counts
(closed loop) or target rates (open loop), by the code `python -m engine workload sweep` runs
(engine.workloads.sweep), drawn live by dashboard.figures.workload_sweep.

Its values are checked as the CLI checks them and as the editor checks the file (a value past a cap is refused
naming load.clients or load.rate, and a client count past this dashboard's cap in the editor's words), one
message each, before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from dashboard.figures.workload_sweep import sweep_frame, workload_sweep_lines
from dashboard.text.plain import plain
from dashboard.text.words import plural
from dashboard.widgets import live, ui
from engine.backends.backend import BackendSpec
from engine.errors import BadInput
from engine.run.runner import RunConfig
from engine.server.profile import ProfileSpec
from engine.workloads import sweep as engine_sweep
from engine.workloads.report import load_line
from engine.workloads.schema.parsing import WorkloadInvalid
from engine.workloads.schema.workload import Workload

if TYPE_CHECKING:
    from dashboard.widgets.registry import Registry

CLIENT_CHOICES = (1, 4, 16, 64)
RATES = "100,500,2000"
LABELS = {"clients": "Client counts", "rate": "Target rates (ops/s)"}
# The table's headings (dashboard.figures.workload_sweep.sweep_frame's columns); the CSV keeps the engine's names.
COLUMNS = {
    "rate": "target rate /s",
    "variant": "form",
    "goodput_per_s": "ok/s",
    "conflict_share": "refused by a conflict",
    "throttled_share": "throttled",
    "retries_per_success": "retries / success",
    "p99_ms": "p99 ms",
    "violations": "invariant violations",
}


def cap_problem(clients: int, cap: int) -> str | None:
    """The editor's message for a client count past the dashboard's cap (the same words for the sweep's values)."""
    return f"load.clients: {clients} is above this dashboard's cap: use at most {cap}" if clients > cap else None


def sweep_points(workload: Workload, axis: str, text: str, cap: int) -> tuple[list[engine_sweep.SweepPoint], list[str]]:
    """The sweep's runs, or the problems that refuse it, one line each (each naming the control or the field)."""
    try:
        values = engine_sweep.sweep_values(text, axis, LABELS[axis])
        points = engine_sweep.plan(workload, axis, values)
    except WorkloadInvalid as e:
        return [], e.lines()
    except BadInput as e:
        return [], [str(e)]
    over = {cap_problem(p.workload.load.clients, cap) for p in points} - {None}
    return ([], sorted(str(p) for p in over)) if over else (points, [])


def sweep_section(
    registry: Registry,
    workload: Workload | None,
    blocked: bool,
    config_of: Callable[[engine_sweep.SweepPoint], RunConfig],
    spec: BackendSpec,
    profile_of: Callable[[], ProfileSpec],
) -> None:
    """The controls (axis, values, Start sweep, Stop) and the sweep this session started, drawn live.
    `profile_of()` is the sidebar's profile, read at Start only: a knob out of range refuses Start with its range
    (said under the button), and never stops the page from drawing."""
    st.subheader("Sweep")
    cap = registry.max_threads_per_run
    axis_col, values_col, start_col, stop_col = st.columns([1.6, 2, 1.3, 1.3], vertical_alignment="bottom")
    axis = axis_col.radio(
        "Sweep over",
        ["clients", "rate"],
        format_func=lambda a: "clients (closed loop)" if a == "clients" else "rate (open loop)",
        horizontal=True,
        key="wl-sweep-axis",
    )
    default = ",".join(str(c) for c in CLIENT_CHOICES if c <= cap) if axis == "clients" else RATES
    text = values_col.text_input(LABELS[axis], value=default, key=f"wl-sweep-{axis}")
    points: list[engine_sweep.SweepPoint] = []
    problems: list[str] = []
    if workload is not None:
        points, problems = sweep_points(workload, axis, text, cap)
    for problem in problems:
        st.error(plain(problem), icon=":material/error:")
    job = registry.workload_sweep(st.session_state.get("wl_sweep_id") or st.query_params.get("workload_sweep"))
    if start_col.button(
        "Start sweep",
        icon=":material/play_arrow:",
        key="wl-sweep-start",
        width="stretch",
        disabled=blocked or not points or bool(job and job.running),
    ):

        def start() -> str:
            # Every run's config made now, in this script run: the sweep's thread cannot read this session's
            # controls. Made inside start_and_remember, so a knob out of range is shown as a refusal.
            configs = {(p.value, p.variant): config_of(p) for p in points}
            profile = profile_of()
            return registry.start_workload_sweep(
                points, axis, lambda p: configs[(p.value, p.variant)], spec, profile
            ).id

        ui.start_and_remember(start, "wl_sweep_id", "workload_sweep")
    if stop_col.button("Stop sweep", icon=":material/stop:", key="wl-sweep-stop", disabled=not (job and job.running)):
        if job is not None:
            job.stop()
    if job is not None:
        sweep_view(job, f"wl-sweep-{job.id}")
    else:
        st.caption(
            "Each value is a run of both forms, one after another, with the rest of the workload as the editor has "
            "it: a closed loop at each client count, or an open loop at each target rate."
        )


def sweep_csv(rows: list[dict[str, Any]]) -> bytes:
    """Every run's row, flat: its server_profile column says SIMULATED (and the knobs) for an aws-like run."""
    return pd.json_normalize(rows).to_csv(index=False).encode()


def sweep_view(job: Any, key: str) -> None:
    """A workload sweep's progress, its figure and its table, redrawn while it runs."""

    def body() -> None:
        rows = list(job.rows)  # appended to by the sweep's thread
        frame = sweep_frame(rows, job.axis)
        text = f"{job.state.value} · {len(rows)} of {plural(job.total, 'run')}" + (
            f" · now {job.current}" if job.current else ""
        )
        if job.profile.simulated:
            st.caption(
                plain(
                    f"Server profile {job.profile.describe()}: conflicts, throughput and latencies come from the model"
                )
            )
        st.progress(len(rows) / job.total if job.total else 1.0, text=plain(text))
        if job.error is not None:
            ui.show_error(job.error)
        title = f"Sweep: {job.name}, both forms against {'client count' if job.axis == 'clients' else 'target rate'}"
        title += " (SIMULATED)" if job.profile.simulated else ""  # a screenshot of the figure alone says so too
        ui.chart(workload_sweep_lines(frame, job.axis, title=title), f"{key}-lines")
        if not frame.empty:
            st.dataframe(
                frame.drop(columns=["safe"]).rename(columns=COLUMNS),
                hide_index=True,
                column_config={
                    "ok/s": st.column_config.NumberColumn(format="%.0f"),
                    "refused by a conflict": st.column_config.NumberColumn(format="percent"),
                    "throttled": st.column_config.NumberColumn(format="percent"),
                    "retries / success": st.column_config.NumberColumn(format="%.2f"),
                    "p99 ms": st.column_config.NumberColumn(format="%.1f"),
                },
            )
            unsustained = [r for r in rows if r["load"].get("mode") == "open" and not r["load"].get("sustained")]
            for r in unsustained:
                st.caption(plain(f"{r['variant']} at {r['rate']:g}/s: {load_line(r['load'])}"))
            st.download_button(
                "Sweep table, every run (.csv)",
                data=sweep_csv(rows),
                file_name=f"workload-sweep-{job.name}-{job.id}.csv",
                mime="text/csv",
                key=f"{key}-csv",
            )

    live.poll(lambda: job.running, body)
