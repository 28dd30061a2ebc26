"""Compare: the safe and the racy variant of one pattern, same clients and ops, at the same time, side by side."""

import streamlit as st

from dashboard.state.run_settings import build_config
from dashboard.widgets import controls, links, live, presenter, sidebar, ui
from dashboard.widgets.registry import get_registry

registry = get_registry()
presenting = presenter.enabled()
presenter.page_title(presenting, "Compare safe vs racy")
if not presenting:
    st.caption(
        "The same pattern, threads and ops: both variants start together on separate tables; the charts share their "
        "axes."
    )

problems = links.restore(
    "compare",
    lambda p: links.parse(
        p,
        "compare",
        max_threads=registry.max_threads_per_run,
        pick_variant=False,
        on_cluster=sidebar.current_cluster() is not None,
    ),
)
links.show_problems(problems)
with presenter.tucked(presenting):
    pattern = controls.pattern_picker("compare")
    controls.pattern_texts(pattern)
    settings = controls.run_controls(pattern, "compare", max_threads=registry.max_threads_per_run, pick_variant=False)
    autostart = links.autostart("compare", problems)
    links.copy_link(
        links.remember("compare", {**links.encode(settings, pick_variant=False), **sidebar.profile_params()}),
        "compare",
    )

spent = ui.budget_notice(registry, sidebar.current_spec())  # the call budget shared by every session


def start_pair() -> str:
    config = build_config(settings, max_threads=registry.max_threads_per_run, profile=sidebar.current_profile())
    return registry.start_pair(config, sidebar.current_spec())[0].group or ""


if autostart and not spent:
    links.start_now(start_pair, "compare_group", "group", ui.show_error)
group = st.session_state.get("compare_group") or st.query_params.get("group")
records = registry.group(group)
start_col, stop_col, beside = st.columns([1, 1, 4], vertical_alignment="center")
if start_col.button("Start both", icon=":material/play_arrow:", type="primary", key="compare-start", disabled=spent):
    ui.start_and_remember(start_pair, "compare_group", "group")
running = bool(records) and any(r.running for r in records)
if running and stop_col.button("Stop both", icon=":material/stop:", key="compare-stop"):
    for r in records:
        if r.run is not None:
            r.run.stop()

if records:
    presenter.divider(presenting)
    if presenting:
        presenter.compare_view(records, f"compare-{group}", toggle_at=beside)  # the Replay toggle: no row of its own
    else:
        st.caption(ui.plain(f"pair {group} · {records[0].backend_label}"))  # the backend, "on cluster …" when spread
        live.compare_view(records, f"compare-{group}")
elif wanted := st.query_params.get("group"):  # a link or bookmark to a pair this dashboard no longer holds
    st.info(
        f"Pair {ui.plain(wanted)} is no longer in this dashboard (it was restarted, or the pair's runs were deleted). "
        "Earlier runs are on the History page; Start both runs the pair again."
    )
else:
    st.info("Start both variants to see them race side by side.")
