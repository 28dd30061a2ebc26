"""Run: pick a pattern and its knobs, start N clients, watch the race live, read the verdicts."""

import streamlit as st

from dashboard.state.run_settings import build_config
from dashboard.widgets import controls, links, live, presenter, sidebar, ui
from dashboard.widgets.registry import get_registry
from engine.run.config import ValidRun

registry = get_registry()
presenting = presenter.enabled()
presenter.page_title(presenting, "Run a pattern")

problems = links.restore(
    "run",
    lambda p: links.parse(
        p, "run", max_threads=registry.max_threads_per_run, on_cluster=sidebar.current_cluster() is not None
    ),
)
links.show_problems(problems)
with presenter.tucked(presenting):
    pattern = controls.pattern_picker("run")
    controls.pattern_texts(pattern)
    settings = controls.run_controls(pattern, "run", max_threads=registry.max_threads_per_run)
    autostart = links.autostart("run", problems)
    links.copy_link(links.remember("run", {**links.encode(settings), **sidebar.profile_params()}), "run")

spent = ui.budget_notice(registry, sidebar.current_spec())  # the call budget shared by every session


def config() -> ValidRun:
    # the sidebar's profile and knobs, read at Start: a knob out of range refuses it with the knob's range
    return build_config(settings, max_threads=registry.max_threads_per_run, profile=sidebar.current_profile())


if autostart and not spent:
    links.start_now(lambda: registry.start(config(), sidebar.current_spec()).id, "run_id", "run", ui.show_error)
record = registry.get(st.session_state.get("run_id") or st.query_params.get("run"))
start_col, stop_col, beside = st.columns([1, 1, 4], vertical_alignment="center")
if start_col.button(
    "Start", icon=":material/play_arrow:", type="primary", key="run-start", width="stretch", disabled=spent
):
    ui.start_and_remember(lambda: registry.start(config(), sidebar.current_spec()).id, "run_id", "run")
running = record is not None and record.running
stop = stop_col.button("Stop", icon=":material/stop:", key="run-stop", disabled=not running, width="stretch")
if stop and record is not None and record.run is not None:
    record.run.stop()

if record is None:
    wanted = st.query_params.get("run")
    if wanted:
        st.info(
            f"Run {ui.plain(wanted)} is no longer in this dashboard (it was restarted, or the run was deleted). "
            "Earlier runs are on the History page."
        )
    else:
        st.info("Pick a pattern and a variant, then Start. Every call is recorded; the charts follow it live.")
else:
    st.query_params["run"] = record.id  # a refresh (or a bookmark) brings this run back
    presenter.divider(presenting)
    if presenting:
        presenter.run_view(record, f"run-{record.id}", toggle_at=beside)  # the Replay toggle: no row of its own
    else:
        live.run_view(record, f"run-{record.id}")
