"""Streamlit panels that show one run: its state badge, progress and counters, messages, invariant cards, the call
log and the export buttons, and the table of runs on the History page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.figures.palette import ordered
from dashboard.state.frames import outcome_labels
from dashboard.state.pair_counters import pair_counters
from dashboard.state.records import RunRecord, known_pattern
from dashboard.state.verdicts import flagged_calls
from dashboard.text.calls import call_log, last_calls
from dashboard.text.words import plural
from dashboard.widgets import explain_panel
from dashboard.widgets.ui import plain, show_error
from engine.patterns.base import evidence_caption
from engine.run.summary import SATURATED, client_cpu_text, gave_up_text, live_causes
from engine.server.profile import ProfileSpec, knobs_note, simulated_label

# -- counters -------------------------------------------------------------------------------------------------------

STATE_BADGE = {
    "pending": "gray",
    "preparing": "blue",
    "running": "blue",
    "stopping": "orange",
    "verifying": "violet",
    "done": "green",
    "stopped": "orange",
    "failed": "red",
    "imported": "gray",
    "replay": "violet",
}


def state_badge(state: str) -> str:
    return f":{STATE_BADGE.get(state, 'gray')}-badge[{state.upper()}]"


# The states a run's trail shows once it has ended: from its clients' release to its end (preparing is setup).
TRAIL_FROM = "running"


def state_trail(record: RunRecord) -> str:
    """The header's badges: the state now while the run goes; once it has ended, every state it passed from
    RUNNING on, each with its time ("RUNNING 1.2 s → VERIFYING 0.03 s → DONE"), so a verification shorter than
    the page's poll is still seen to have happened."""
    run = record.run
    if run is None or record.running or not run.passed:
        return state_badge(live_state(record))
    passed = [(state.value, t) for state, t in run.passed]
    start = next((i for i, (state, _) in enumerate(passed) if state == TRAIL_FROM), len(passed) - 1)
    shown = passed[start:]
    badges = []
    for (state, t), (_, t_next) in zip(shown, shown[1:]):
        badges.append(f":{STATE_BADGE.get(state, 'gray')}-badge[{state.upper()} {t_next - t:.2f} s]")
    badges.append(state_badge(shown[-1][0]))
    return " → ".join(badges)


def stopped_note(record: RunRecord) -> str:
    """After a verdict: a stopped run was judged on the calls it made before the stop, not on the run planned."""
    if record.state != "stopped":
        return ""
    return f" · stopped, so judged only on the {plural(len(record.history), 'call')} made"


def live_state(record: RunRecord) -> str:
    """The run's state as a room should read it now: "stopping" between a Stop and the clients' last calls."""
    run = record.run
    state = record.state
    if run is not None and state == "running" and run.stop_requested:
        return "stopping"
    return state


def progress_and_counters(record: RunRecord, *, compact: bool = False, pair: bool = False) -> dict[str, Any]:
    """The progress bar and the counters; one side of a Compare `pair` shows its guard's refusals apart from the
    harm the invariants found (pair_counters), in rows of three."""
    p = record.progress()
    fraction = p.get("fraction")
    state = live_state(record)
    text = f"{state} · {p['elapsed_s']:.1f} s"
    if fraction is None:
        fraction = 1.0 if not record.running else 0.0
    st.progress(min(1.0, max(0.0, float(fraction))), text=text)
    if pair:
        counters = pair_counters(p, record.invariants(), record.safe)
        for start in range(0, len(counters), 3):
            for col, c in zip(st.columns(3), counters[start : start + 3]):
                col.metric(c.label, c.value, border=True, help=c.help)
        return p
    metrics = [
        ("calls", f"{p['calls']:,}"),
        ("ok", f"{p['ok']:,}"),
        ("fail", f"{p['fail']:,}"),
        ("info", f"{p['info']:,}"),
        ("conflicts", f"{p['conflicts']:,}"),
        ("calls/s", f"{p['calls_per_s']:,.0f}"),
    ]
    cores = p.get("client_cpu") or []
    if not compact:
        metrics.append(("retries", f"{p['retries']:,}"))
        if cores:
            metrics.append(("client CPU", " · ".join(f"{c:.2f}" for c in cores)))
    per_row = 3 if compact else 4  # rows of a few, so the numbers are never cut (half a page wide: of three)
    for start in range(0, len(metrics), per_row):
        for col, (label, value) in zip(st.columns(per_row), metrics[start : start + per_row]):
            col.metric(label, value, border=True, help=CLIENT_CPU_HELP if label == "client CPU" else None)
    if not compact:
        causes = cause_caption(record, p)
        if causes:
            st.caption(causes)
    if cores and max(cores) >= SATURATED and p["calls"] >= 100:
        more = (
            " Client processes spread the threads over more cores, where the server and the machine have room."
            if getattr(known_pattern(record.pattern), "process_pool", False)
            else ""
        )
        st.caption(f"Client CPU: {client_cpu_text(cores)}.{more}")
    return p


CAUSE_LABELS = {
    "condition_refused": "condition refused",
    "transaction_conflict": "transaction conflict",
    "throttled": "throttled",
    "cancelled": "transactions cancelled (their cause is read at the end)",
}


def cause_caption(record: RunRecord, progress: Mapping[str, Any]) -> str | None:
    """The conflicts by cause: exact once the run has a summary, from the live error counts before."""
    summary = None if record.running else record.summary()
    causes = (summary or {}).get("conflicts_by_cause")
    if not isinstance(causes, dict):
        pattern = known_pattern(record.pattern)
        causes = live_causes(progress, dict(pattern.business_refusals) if pattern else None)
    parts = [f"{label} {int(causes.get(name) or 0):,}" for name, label in CAUSE_LABELS.items() if name in causes]
    if not parts or not any(int(causes.get(name) or 0) for name in CAUSE_LABELS):
        return None
    if record.run is not None:
        spec: ProfileSpec | None = record.run.config.profile
    else:  # an imported run: its summary says which profile it ran under
        spec = ProfileSpec.from_summary((summary or {}).get("profile"))
    note = plain(knobs_note(spec)) if spec is not None else ""  # "calibrated from" an imported file's own text
    said = f" (server profile aws-like: SIMULATED{'; ' + note if note else ''})" if spec and spec.simulated else ""
    return "Conflicts by cause: " + " · ".join(parts) + said


CLIENT_CPU_HELP = (
    "Cores the run's client threads used (per client process, with several). Python runs one thread "
    "at a time per process, so near 1.00 the clients are CPU-bound (botocore's work, mostly) and more "
    "threads add few calls. It can pass 1.00 a little (system calls run outside that lock); in the "
    "dashboard, the page and other runs share the process, so it may be busy before this reaches 1.00."
)


def run_messages(record: RunRecord) -> None:
    if record.error is not None:
        show_error(record.error)
    note = record.budget_note()
    if note:
        st.warning(note, icon=":material/block:")
    run = record.run
    if run is not None and run.worker_errors:
        crashes = [e for e in run.worker_errors if e["kind"] == "crash"]
        errors = [e for e in run.worker_errors if e["kind"] != "crash"]
        if crashes:
            st.info(
                f"{plural(len(crashes), 'client')} crashed mid-operation (injected by the pattern)",
                icon=":material/bolt:",
            )
        if errors:
            first = "; ".join(f"client {e['client']}: {e['message']}" for e in errors[:3])
            st.warning(
                f"{plural(len(errors), 'client')} stopped on an unexpected error: {plain(first)}",
                icon=":material/error:",
            )


# -- invariants -----------------------------------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    return text if len(text) <= 80 else text[:77] + "…"


def invariant_cards(record: RunRecord, key: str, *, columns: int = 2) -> None:
    """One card per invariant: PASS/FAIL, expected vs observed, why, and the calls that broke it."""
    invariants = record.invariants()
    st.markdown("### Invariants")
    if not invariants:
        if record.running:
            st.info(
                "Checked when the run ends: the table is read back and the history replayed.",
                icon=":material/hourglass_top:",
            )
        elif record.state == "failed":
            st.warning(
                "Not checked: the run failed before verification."
                if record.run is not None
                else "No verdicts: this history is not a whole run (see above)."
            )
        else:
            st.info("This history carries no invariant verdicts.")
        return
    if any(inv.get("as_of") for inv in invariants):
        return _invariants_so_far(invariants, key, columns)
    holds = sum(1 for inv in invariants if inv.get("holds") is True)
    st.markdown(f"**{holds} of {len(invariants)} hold**" + stopped_note(record))
    explain_panel.second_opinion(record)
    given_up = gave_up_text((record.summary() or {}).get("gave_up"))
    if given_up:  # a PASS judges the work done: say what the clients abandoned, next to it
        st.warning(plain(given_up), icon=":material/block:")
    cols = st.columns(columns)
    for i, inv in enumerate(invariants):
        with cols[i % columns].container(border=True, key=f"{key}-inv-{i}"):
            verdict = inv.get("holds")  # None: the history cannot decide, which is not a PASS
            badge = (
                ":green-badge[PASS]"
                if verdict is True
                else ":red-badge[FAIL]"
                if verdict is False
                else ":gray-badge[CANNOT JUDGE]"
            )
            st.markdown(f"#### {badge} {plain(inv.get('name', ''))}")
            extra = f" · **{plural(inv['violations'], 'violation')}**" if inv.get("violations") else ""
            expected, observed = plain(_short(inv.get("expected"))), plain(_short(inv.get("observed")))
            st.markdown(f"expected **{expected}** · observed **{observed}**{extra}")
            st.caption(plain(inv.get("explanation", "")))
            explain_panel.why(record, inv, f"{key}-inv-{i}")  # the witness: the few calls that prove it
            calls = [int(s) for s in inv.get("calls") or ()]
            if calls:
                what = "The calls that broke it" if inv.get("holds") is False else "The calls it names"
                label = f"{what}: {evidence_caption(inv)}"  # all of them, or n of N sampled evenly over the run
                with st.expander(label):
                    with record.view() as view:
                        rows = view.rows_at(calls)
                    st.code(call_log(rows) or "(calls not in this history)", language=None)
    explain_panel.diagrams(record, invariants, key)


def _invariants_so_far(invariants: Sequence[dict[str, Any]], key: str, columns: int) -> None:
    """A replay before its end: what the history so far says of each invariant (the calls that broke it by
    now); the verdict itself needs the table read back at the end, so it shows when the replay reaches it."""
    st.markdown("**As of this instant** · the verdicts show at the end of the replay")
    cols = st.columns(columns)
    for i, inv in enumerate(invariants):
        with cols[i % columns].container(border=True, key=f"{key}-inv-{i}"):
            seen = int(inv.get("calls_so_far") or 0)
            badge = ":orange-badge[BROKEN SO FAR]" if seen else ":gray-badge[NOT BROKEN YET]"
            st.markdown(f"#### {badge} {plain(inv['name'])}")
            if seen:
                st.markdown(f"**{seen:,}** of the calls that break it have happened")
            else:
                st.markdown("no call that breaks it has happened yet")
            st.caption(plain(inv.get("explanation", "")))


# -- call log -------------------------------------------------------------------------------------------------------

CALL_LOG_LIMIT = 150


def call_log_panel(record: RunRecord, key: str) -> None:
    """The seed-format log, filterable by client and outcome; the last calls shown, the whole log downloadable.

    Behind a toggle, so a live refresh does not read every call (record.frame) for a log nobody is reading; the
    calls are filtered on their columns, and only the ones printed have their details parsed.
    """
    st.markdown("### Call log")
    if not st.toggle("Show the call log (the seed's format)", key=f"{key}-log-on"):
        return
    frame = record.frame(details=False)
    invariants = record.invariants()
    with st.container(border=True):
        if frame.empty:
            st.caption("No calls yet.")
            return
        labels = outcome_labels(frame)
        c1, c2, c3 = st.columns([2, 2, 1])
        clients = c1.multiselect(
            "Clients",
            sorted(int(c) for c in pd.unique(frame["client"])),
            key=f"{key}-log-clients",
            placeholder="all clients",
        )
        outcomes = c2.multiselect("Outcomes", ordered(labels), key=f"{key}-log-outcomes", placeholder="all outcomes")
        flagged_only = c3.checkbox("only calls that broke an invariant", key=f"{key}-log-flagged")
        mask = np.ones(len(frame), dtype=bool)
        if clients:
            mask &= frame["client"].isin(clients).to_numpy()
        if outcomes:
            mask &= np.isin(labels, outcomes)
        if flagged_only:
            mask &= frame["seq"].isin(list(flagged_calls(invariants))).to_numpy()
        rows = frame[mask]
        shown = min(len(rows), CALL_LOG_LIMIT)
        st.caption(
            f"{plural(len(rows), 'matching call')}"
            + (f"; the last {shown} shown, download for all" if len(rows) > shown else "")
        )
        last = last_calls(rows, CALL_LOG_LIMIT)
        st.code(call_log(record.with_details(last)) or "(no matching calls)", language=None, height=420)
        st.download_button(
            "Download this log (.txt)",
            data=lambda: call_log(record.with_details(rows)).encode(),
            file_name="calls.log",
            mime="text/plain",
            key=f"{key}-log-dl",
        )


# -- export ---------------------------------------------------------------------------------------------------------


def export_buttons(record: RunRecord, key: str) -> None:
    if record.running:
        st.caption("Export is ready when the run ends.")
        return
    stem = record.file_stem()
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "History (.jsonl)",
        data=record.export_jsonl,
        file_name=f"{stem}.jsonl",
        mime="application/x-ndjson",
        key=f"{key}-dl-jsonl",
        icon=":material/download:",
        help="every call, replayable: import it on the History page",
    )
    c2.download_button(
        "Summary (.json)",
        data=record.export_summary_json,
        file_name=f"{stem}-summary.json",
        mime="application/json",
        key=f"{key}-dl-summary",
        icon=":material/download:",
    )
    c3.download_button(
        "Calls (.csv)",
        data=record.export_csv,
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}-dl-csv",
        icon=":material/download:",
        help="for spreadsheets",
    )


# -- the runs table -------------------------------------------------------------------------------------------------


def runs_table(records: Sequence[RunRecord]) -> pd.DataFrame:
    import time

    rows = []
    for r in records:
        invariants = r.invariants()
        holds = sum(1 for inv in invariants if inv.get("holds") is True)
        rows.append(
            {
                "run": r.id,
                "started": time.strftime("%H:%M:%S", time.localtime(r.created)),
                "pattern": r.pattern,
                "variant": r.variant,
                "kind": r.kind,
                "threads": r.threads,
                # aws-like rates come from the server's model: the table says so beside every such run
                "profile": "" if r.profile is None else simulated_label(r.profile),  # with the knobs it changed
                "calls": len(r.history),
                "state": r.state,
                "invariants": f"{holds}/{len(invariants)} hold" if invariants else "",
                "source": r.file_name or r.backend_label,
                "compare": r.group or "",
            }
        )
    return pd.DataFrame(rows)
