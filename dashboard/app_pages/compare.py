"""Compare: the safe and the racy variant of one pattern, same clients and ops, at the same time, side by side."""

from dataclasses import replace

import streamlit as st

from dashboard import links, live, presenter, ui
from dashboard.registry import get_registry
from dashboard.settings import build_config

registry = get_registry()
presenting = presenter.enabled()
presenter.page_title(presenting, "Compare safe vs racy")
if not presenting:
    st.caption(
        "The same pattern, threads and ops: both variants start together on separate tables; the charts share their "
        "axes."
    )

problems = links.restore(
    "compare", lambda p: links.parse(p, "compare", max_threads=registry.max_threads_per_run, pick_variant=False)
)
links.show_problems(problems)
with presenter.tucked(presenting):
    pattern = ui.pattern_picker("compare")
    ui.pattern_texts(pattern)
    settings = ui.run_controls(pattern, "compare", max_threads=registry.max_threads_per_run, pick_variant=False)
    autostart = links.autostart("compare", problems)
    links.copy_link(links.remember("compare", links.encode(settings, pick_variant=False)), "compare")

spent = ui.budget_notice(registry, ui.current_spec())  # the call budget shared by every session
if autostart and not spent:
    links.start_now(
        lambda: (
            registry.start_pair(build_config(settings, max_threads=registry.max_threads_per_run), ui.current_spec())[
                0
            ].group
            or ""
        ),
        "compare_group",
        "group",
    )
group = st.session_state.get("compare_group") or st.query_params.get("group")
records = registry.group(group)
if st.button("Start both", icon=":material/play_arrow:", type="primary", key="compare-start", disabled=spent):
    ui.start_and_remember(
        lambda: (
            registry.start_pair(
                replace(build_config(settings, max_threads=registry.max_threads_per_run), profile=ui.current_profile()),
                ui.current_spec(),
            )[0].group
            or ""
        ),
        "compare_group",
        "group",
    )
if records and any(r.running for r in records) and st.button("Stop both", icon=":material/stop:", key="compare-stop"):
    for r in records:
        if r.run is not None:
            r.run.stop()

if records:
    presenter.divider(presenting)
    if not presenting:  # where the pair runs: the backend, and "on cluster ADDRESS, N workers" when spread
        st.caption(ui.plain(f"pair {group} · {records[0].backend_label}"))
    (presenter.compare_view if presenting else live.compare_view)(records, f"compare-{group}")
else:
    st.info("Start both variants to see them race side by side.")
