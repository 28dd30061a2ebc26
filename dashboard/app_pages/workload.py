"""Your workload: a preset or your own YAML in an editor, each problem listed under it by field, Start/Stop, the
Run page's live charts, and the workload's own report (per operation, hottest keys, capacity) when it ends; under
the buttons, a Compare of two workloads (dashboard.widgets.workload.compare); below, a sweep of it over client
counts or rates (dashboard.widgets.workload_sweep).

The editor's text lives in this session only (st.session_state), and is parsed with the file's size and alias
limits, so nothing typed here reaches another session's page. A link fills it with a preset (?preset=NAME) or
with the workload it carries (?wl=..., dashboard.state.links.workload): once, in the opener's session only, and
every text a link may bring (the problems quoting it, the description) is shown plain, never as Markdown."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.state.links import workload as workload_link
from dashboard.text.plain import plain
from dashboard.widgets import links, live, sidebar, ui
from dashboard.widgets.links import link_to, remember
from dashboard.widgets.registry import get_registry
from dashboard.widgets.workload.compare import checked, compare_section
from dashboard.widgets.workload_sweep import sweep_section
from engine.run.runner import RunConfig
from engine.workloads.pattern import AS_WRITTEN, NAME, RACY, workload_of
from engine.workloads.report import CAUSES, load_line, report
from engine.workloads.schema.workload import Workload

PRESETS = Path(__file__).resolve().parents[2] / "workloads"


def copy_link(text: str) -> None:
    """A "Copy link" for the editor's text as it is now, with the sidebar's aws-like knobs: whoever opens it gets a
    copy in their own editor."""
    value = workload_link.encode(text)
    with st.popover("Copy link", icon=":material/link:"):
        if len(value) > workload_link.MAX_LINK_CHARS:
            st.caption(
                f"This workload is {len(value):,} characters as a link, above the {workload_link.MAX_LINK_CHARS:,} "
                "a link may carry: share the YAML instead."
            )
            return
        st.caption("This workload as a link: opening it puts a copy of this text in the opener's editor.")
        st.code(link_to({workload_link.PARAM: value, **sidebar.profile_params()}), language=None, wrap_lines=True)


def parse_link(params: Mapping[str, str]) -> links.Restored:
    """A link's server profile and aws-like knobs checked as the Run page checks them (the sidebar has taken the
    good ones already), and any parameter this page has no control for, one refusal each."""
    problems = links.profile_problems(params)
    for name in params:
        if name not in links.OTHER and not links.is_profile_param(name):
            why = "is not a control of this page: use preset, wl, profile or aws.KNOB"
            problems.append(links.refusal("parameter", name, why))
    return links.Restored({}, problems)


registry = get_registry()
# Before remember() rewrites the URL: a link's refused profile or knob is said once, not dropped without a word.
link_problems: list[str] = links.restore("workload", parse_link)
# The URL keeps the sidebar's profile and knobs (a link that carried them has been applied by now, and is marked
# as seen, so a later change in the sidebar is not undone by the same link on the next rerun).
remember("workload", sidebar.profile_params())
st.title("Your workload")
st.caption(
    "Describe your table and traffic (field by field in docs/workloads.md), or start from a preset. "
    "As written runs your operations as the file says; racy runs each read-modify-write as read-then-put, "
    "with no version or check."
)

presets = sorted(p.stem for p in PRESETS.glob("*.yaml"))
left, right = st.columns([2, 1])
linked = st.query_params.get("preset")  # a scenario link names a shipped preset: ?preset=hot-customer
carried = st.query_params.get(workload_link.PARAM)  # ... or carries a whole workload: ?wl=<zlib+base64url>
if linked is not None and carried is not None:
    link_problems.append("The link gives both a preset and a workload: the workload is used; give one of them.")
elif linked is not None and "wl-preset" not in st.session_state:
    if linked in presets:
        st.session_state["wl-preset"] = linked
    else:
        link_problems.append(f"The link's preset {linked[:60]!r} is not one of {', '.join(presets)}: pick one below.")
choice = right.selectbox("Preset", presets, key="wl-preset")
text_from_link = None
if carried is not None:  # read on every rerun, so a refusal stays in view while the URL holds the link
    try:
        decoded = workload_link.decode(carried)
    except workload_link.LinkRefused as e:
        link_problems.append(str(e))
    else:
        if st.session_state.get("wl-link-applied") != carried:  # once per link: later edits are the user's own
            st.session_state["wl-link-applied"] = carried
            text_from_link = decoded
if text_from_link is not None:  # into this session's editor only, checked there like a typed workload
    st.session_state["wl-text"] = text_from_link
    st.session_state["wl-loaded"] = choice
elif st.session_state.get("wl-loaded") != choice:
    st.session_state["wl-text"] = (PRESETS / f"{choice}.yaml").read_text(encoding="utf-8")
    st.session_state["wl-loaded"] = choice
for problem in link_problems:  # a link's values are someone else's text: shown plain, never as Markdown
    st.error(plain(problem), icon=":material/link_off:")
text = left.text_area("Workload (YAML)", key="wl-text", height=460)
variant = right.radio("Form", [AS_WRITTEN, RACY], horizontal=True, key="wl-variant")

cap = registry.max_threads_per_run
workload, problems = checked(text, cap)
with left:
    for problem in problems:  # one per problem, under the editor, each starting with its field; it may quote
        st.error(plain(problem), icon=":material/error:")  # the text, which may have come from a link
    copy_link(text)
if workload is not None and not problems:
    right.success(
        f"{len(workload.operations)} operations, {workload.table.items} items of {workload.table.item_size} bytes, "
        f"{workload.load.mode} loop, {workload.load.clients} clients; invariants: "
        f"{', '.join(workload.declared_invariants()) or 'none'}",
        icon=":material/check_circle:",
    )
    if workload.description:
        right.caption(plain(workload.description))


def config(w: Workload, form: str | None = None) -> RunConfig:
    ops = w.load.ops if w.load.ops is not None or w.load.duration_s is not None else None
    return RunConfig(
        pattern=NAME,
        variant=form or variant,
        threads=w.load.clients,
        ops_per_client=ops,
        duration_s=w.load.duration_s,
        options={"spec": w.to_json()},
        lost_response_share=w.lost_responses,
        max_threads=cap,
        profile=sidebar.current_profile(),
    )


spent = ui.budget_notice(registry, sidebar.current_spec())
# What the page shows: one run (Start), or both forms started together on two tables (Compare both forms).
# Only this page's runs: a link naming another page's run or pair shows nothing here.
pair = [
    r
    for r in registry.group(st.session_state.get("wl_group") or st.query_params.get("workload_pair"))
    if r.pattern == NAME
]
record = None if pair else registry.get(st.session_state.get("wl_run_id") or st.query_params.get("workload"))
if record is not None and record.pattern != NAME:
    record = None
start_col, pair_col, stop_col, _ = st.columns([1, 1.6, 1, 2.4], vertical_alignment="center")
blocked = spent or workload is None or bool(problems)


def start_one(w: Workload) -> str:
    st.session_state.pop("wl_group", None)
    st.query_params.pop("workload_pair", None)
    return registry.start(config(w), sidebar.current_spec()).id


def start_both(w: Workload) -> str:
    st.session_state.pop("wl_run_id", None)
    st.query_params.pop("workload", None)
    return registry.start_pair(config(w), sidebar.current_spec())[0].group or ""


if start_col.button(
    "Start", icon=":material/play_arrow:", type="primary", key="wl-start", width="stretch", disabled=blocked
):
    if workload is not None:
        one = workload
        ui.start_and_remember(lambda: start_one(one), "wl_run_id", "workload")
if pair_col.button("Compare both forms", icon=":material/compare:", key="wl-pair", width="stretch", disabled=blocked):
    if workload is not None:
        both = workload
        ui.start_and_remember(lambda: start_both(both), "wl_group", "workload_pair")


def start_two(a: Workload, b: Workload) -> None:
    def start() -> str:
        st.session_state.pop("wl_run_id", None)
        st.query_params.pop("workload", None)
        return registry.start_group((config(a), config(b)), sidebar.current_spec())[0].group or ""

    ui.start_and_remember(start, "wl_group", "workload_pair")


compare_section(presets, PRESETS, workload, text, cap, registry.max_total_threads, blocked, start_two)
shown_runs = list(pair) if pair else [record] if record is not None else []
running = any(r.running for r in shown_runs)
if stop_col.button("Stop", icon=":material/stop:", key="wl-stop", disabled=not running, width="stretch"):
    for r in shown_runs:
        if r.run is not None:
            r.run.stop()

LIVE_REPORT_CALLS = 50_000  # past this, the per-operation table waits for the end: it reads every call's detail


def report_section(record: Any) -> None:
    """The workload's per-operation table, hottest keys and capacity: live while the run goes, final at its end."""
    if record.run is None or not len(record.history):
        return
    if record.running and len(record.history) > LIVE_REPORT_CALLS:
        st.caption(f"The per-operation table is drawn when the run ends (past {LIVE_REPORT_CALLS:,} calls).")
        return
    ran = workload_of(record.options()["spec"])
    figures = report(ran, record.history, record.run.elapsed_s())
    st.markdown(f"### {plain(ran.name)}: per operation" + (" (so far)" if record.running else ""))
    rows = [
        {
            "operation": name,
            "ops": op["attempts"],
            "ok": op["successes"],
            **{cause.replace("_", " "): op["refusals"][cause] for cause in CAUSES},
            "retries per success": op["retries_per_success"],
            "ok/s": op["goodput_per_s"],
            **{f"{p} ms": op["latency_ms"][p] for p in ("p50", "p95", "p99")},
        }
        for name, op in figures["operations"].items()
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    for warning in figures["warnings"]:
        st.warning(plain(warning), icon=":material/warning:")
    hot = ", ".join(f"{k['key']} ({k['conflicts']})" for k in figures["hot_keys"]) or "none"
    st.caption(plain(f"Hottest keys by conflicts: {hot}"))
    busiest = figures["capacity"]["write_partitions"][:1]
    if busiest:
        b = busiest[0]
        st.caption(
            plain(
                f"Busiest partition {b['partition']}: {b['peak_per_s']:g} write units in its busiest second, "
                f"of the {b['ceiling_per_s']:,}/s ceiling"
            )
        )
    line = load_line(figures["load"])
    if line and not record.running:
        st.caption(line)


def live_report(shown: Any) -> None:
    live.poll(lambda: shown.running, lambda: report_section(shown), every=2.0)


if pair:
    st.query_params["workload_pair"] = pair[0].group or ""
    names = [workload_of(r.options()["spec"]).name for r in pair]
    two_forms = len({r.variant for r in pair}) > 1 and len(set(names)) == 1  # else: two workloads, titled by name
    if not two_forms and len(set(names)) < len(names):  # a second text not renamed: first and second apart
        names = [f"{name} #{i}" for i, name in enumerate(names, 1)]
    for column, member, name in zip(st.columns(len(pair)), pair, names):
        with column:
            st.markdown(f"#### {member.variant}" if two_forms else f"#### {plain(name)} ({member.variant})")
            live_report(member)
    titles = None if two_forms else {r.id: name for r, name in zip(pair, names)}
    live.compare_view(pair, f"wl-pair-{pair[0].group}", titles)
elif record is not None:
    st.query_params["workload"] = record.id
    live_report(record)
    live.run_view(record, f"wl-{record.id}")
else:
    st.info(
        "Pick a preset or write your own, then Start, or Compare both forms side by side. Every call is recorded; "
        "the charts follow it live."
    )

st.divider()
sweep_section(
    registry,
    workload if not problems else None,
    blocked,
    lambda point: config(point.workload, point.variant),
    sidebar.current_spec(),
    sidebar.current_profile,  # read at Start: a knob out of range refuses it there, with the knob's range
)
