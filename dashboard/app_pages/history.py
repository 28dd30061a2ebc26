"""History: every run of this dashboard (kept across refreshes and tabs), export, and import to view again."""

import streamlit as st

from dashboard.state.links.run import profile_of, settings_of
from dashboard.widgets import links, live, panels, ui
from dashboard.widgets.demo_picker import demo_picker
from dashboard.widgets.registry import get_registry
from engine.errors import LabError

registry = get_registry()
st.title("History")

with st.container(border=True):
    st.markdown("#### Recorded demos")
    st.caption("Every pattern, safe and racy, recorded by the lab: replayable with no DynamoDB at all.")
    demo = demo_picker(registry, "history")
    if demo is not None:
        st.session_state["history-pick"] = demo.id

with st.container(border=True):
    st.markdown("#### Import a history")
    upload = st.file_uploader(
        "A .jsonl history exported by the lab (or `python -m engine run … --history FILE.jsonl`)",
        type=["jsonl"],
        key="history-upload",
    )
    if upload is not None and st.session_state.get("history-imported") != upload.file_id:
        try:
            imported = registry.import_history(upload.name, upload.getvalue())
            st.session_state["history-imported"] = upload.file_id
            st.session_state["history-pick"] = imported.id
            st.success(ui.plain(f"Imported {upload.name}: {len(imported.history):,} calls, as run {imported.id}."))
        except LabError as e:
            st.session_state["history-imported"] = upload.file_id
            ui.show_error(e)

records = registry.records()
if not records:
    st.info("No runs yet: start one on the Run page, or import a history file.")
    st.stop()

st.dataframe(panels.runs_table(records), hide_index=True)
# One snapshot of the records for the whole page: another session may delete one meanwhile.
by_id = {r.id: r for r in records}
ids: list[str] = list(by_id)
if st.session_state.get("history-pick") not in by_id:
    st.session_state["history-pick"] = ids[0]
pick = st.selectbox("Run", ids, key="history-pick", format_func=lambda i: f"{i} · {by_id[str(i)].title}")
record = by_id[str(pick)]

c1, c2, _ = st.columns([1, 1, 3])
if c1.button("Open on the Run page", key="history-open"):
    st.session_state["run_id"] = record.id
    # The run's own controls as the Run page's link, so its Start and Copy link repeat this run, not the defaults.
    summary = record.export_summary()
    made = settings_of(summary)
    params = {} if made is None else links.encode(made, profile=profile_of(summary))
    st.switch_page("app_pages/run.py", query_params={**params, "run": record.id})
if c2.button("Delete this run", key="history-delete"):
    registry.remove(record.id)
    st.rerun()

st.divider()
live.run_view(record, key=f"history-{record.id}")
