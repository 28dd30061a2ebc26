"""Sweep: the racy variant's harm against thread count beside the safe one's conflict rate and retries per success,
with throughput and p95 latency; several runs per point, their spread drawn."""

import streamlit as st

from dashboard.widgets import controls, links, live, sidebar, ui
from dashboard.widgets.registry import get_registry

THREAD_CHOICES = [1, 2, 4, 8, 16, 32, 64, 128, 256]

registry = get_registry()
st.title("Sweep thread counts")
st.caption("One run per variant and thread count, one after another, on the current backend.")

choices = [t for t in THREAD_CHOICES if t <= registry.max_threads_per_run]
# The defaults within the cap: Streamlit refuses a default that is not among the options (a page with no Start).
default_counts = [t for t in links.initial("sweep-threads", [1, 2, 4, 8, 16, 32]) if t in choices] or choices[:1]
problems = links.restore("sweep", lambda p: links.parse_sweep(p, thread_choices=choices))
links.show_problems(problems)
autostart = links.autostart("sweep", problems)  # before remember(), which writes the URL without autostart
pattern = controls.pattern_picker("sweep")
controls.cluster_notice(pattern)
c1, c2, c3 = st.columns([3, 1, 1])
counts = c1.multiselect(
    "Thread counts",
    choices,
    default=default_counts,
    key="sweep-threads",
)
ops = c2.number_input(
    "Ops per client", value=links.initial("sweep-ops", 10), step=5, key="sweep-ops"
)  # no bounds: see controls.run_controls
repeats = c3.number_input(
    "Runs per point", value=links.initial("sweep-repeats", 3), step=1, key="sweep-repeats", help="their spread is drawn"
)
sweep_link = {"pattern": pattern.name, "threads": ",".join(map(str, counts)), "ops": str(ops), "repeats": str(repeats)}
links.copy_link(links.remember("sweep", {**sweep_link, **sidebar.profile_params()}), "sweep")

spent = ui.budget_notice(registry, sidebar.current_spec())  # the call budget shared by every session


def start_sweep() -> str:
    return registry.start_sweep(
        pattern.name,
        counts,
        int(ops),
        sidebar.current_spec(),
        int(repeats),
        sidebar.current_profile(),
        cluster=sidebar.current_cluster(),
    ).id


if autostart and not spent:  # a slide's link to a sweep starts it on open, as the Run and Compare pages' do
    links.start_now(start_sweep, "sweep_id", "sweep", ui.show_error)
job = registry.sweep(st.session_state.get("sweep_id") or st.query_params.get("sweep"))
b1, b2, _ = st.columns([1.5, 1, 3.5])  # "Start sweep" and its icon in full at 1280 px
if b1.button(
    "Start sweep", icon=":material/play_arrow:", type="primary", key="sweep-start", width="stretch", disabled=spent
):
    ui.start_and_remember(start_sweep, "sweep_id", "sweep")
stop = b2.button("Stop", icon=":material/stop:", key="sweep-stop", disabled=not (job and job.running), width="stretch")
if stop and job is not None:
    job.stop()

if job is not None:
    st.divider()
    live.sweep_view(job, key=f"sweep-{job.id}")
elif wanted := st.query_params.get("sweep"):  # a link or bookmark to a sweep this dashboard no longer holds
    st.info(
        f"Sweep {ui.plain(wanted)} is no longer in this dashboard (it was restarted since; sweeps live as long as the "
        "dashboard). Start sweep runs it again with the settings above."
    )
else:
    st.info("Pick thread counts, then Start sweep: each point is a full run of both variants.")
