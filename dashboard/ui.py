"""Streamlit building blocks the pages are made of: the backend sidebar, the run controls, counters, invariant
cards, the call log and the export buttons. The pages compose these; charts come from dashboard.charts."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import analysis as an
from dashboard.registry import Registry, RunRecord, known_pattern
from dashboard.settings import (
    DEFAULT_THREADS,
    LIMIT_DURATION,
    LIMIT_OPS,
    RunSettings,
    option_kind,
    pattern_label,
    variant_label,
)
from engine.backend import RETRY_MODES, BackendKind, BackendSpec
from engine.errors import BadInput, LabError
from engine.patterns import Pattern, all_patterns
from engine.runner import AWS_DEFAULT_MAX_CALLS
from engine.summary import SATURATED, client_cpu_text

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"], "responsive": True}
BACKEND_KEY = "backend_spec"


_MARKDOWN = re.compile(r"([\\`*_\[\]<>!|~$])")  # what starts a link, an image, HTML, emphasis or maths


def plain(text: Any) -> str:
    """Text from a run or a file, made safe to put in Markdown: shown as typed, never as a link, an image (a
    remote fetch), a colour directive or a heading; on one line."""
    return _MARKDOWN.sub(r"\\\1", " ".join(str(text).split()))


def show_error(error: BaseException, where: Any = None) -> None:
    """A LabError as 'problem' in bold and its fix; anything else as one line (never a traceback)."""
    where = where or st
    if isinstance(error, LabError):
        where.error(
            f"**{plain(error.problem)}**" + (f"  \n{plain(error.fix)}" if error.fix else ""), icon=":material/error:"
        )
    else:
        where.error(f"**{plain(f'{type(error).__name__}: {error}')}**", icon=":material/error:")


def chart(fig: go.Figure, key: str) -> None:
    st.plotly_chart(fig, key=key, theme=None, config=PLOTLY_CONFIG)


# -- backend --------------------------------------------------------------------------------------------------------


def default_spec() -> BackendSpec:
    """The embedded DynamoDB, unless DDBLAB_ENDPOINT_URL names another (docker-compose: DynamoDB Local)."""
    url = os.environ.get("DDBLAB_ENDPOINT_URL", "").strip()
    if url:
        try:
            return BackendSpec.parse(url)
        except LabError:
            pass  # refused (malformed, or an AWS host without confirmation): the sidebar starts embedded
    return BackendSpec()


def current_spec() -> BackendSpec:
    return st.session_state.get(BACKEND_KEY) or default_spec()


# What each backend cannot show, said where the user chooses it.
BACKEND_LIMITS = {
    BackendKind.EMBEDDED: "Requests are serialized, so concurrent transactions never get TransactionConflict; "
    "GSI lag is simulated; injected throttling is available.",
    BackendKind.ENDPOINT: "GSI lag cannot be simulated here (DynamoDB Local's indexes are instant); no injected "
    "throttling; TTL expiry follows the server.",
    BackendKind.AWS: "Everything is real: GSI lag, TransactionConflict, throttling. TTL deletes within days. "
    f"Runs are capped at {AWS_DEFAULT_MAX_CALLS:,} calls each.",
}


def backend_sidebar(registry: Registry) -> BackendSpec:
    """Where runs go: the embedded DynamoDB (default), an endpoint URL, or AWS after an explicit confirmation."""
    sb = st.sidebar
    sb.markdown("### Backend")
    spec = current_spec()
    try:
        with st.spinner("Starting the embedded DynamoDB…") if spec.kind is BackendKind.EMBEDDED else _nothing():
            info = registry.describe(spec)
        where = info.get("endpoint_url") or ""
        if spec.kind is BackendKind.AWS:
            sb.success(
                f"**AWS** · region {info['region']}  \naccount {info.get('account', 'unknown')}",
                icon=":material/cloud:",
            )
        elif spec.kind is BackendKind.ENDPOINT:
            sb.success(f"**Endpoint** {where}", icon=":material/lan:")
        else:
            sb.success(f"**Embedded DynamoDB**  \n{where}", icon=":material/science:")
        sb.caption(BACKEND_LIMITS[spec.kind])
    except LabError as e:
        show_error(e, sb)
        if spec != BackendSpec() and st.session_state.get(BACKEND_KEY) is not None:
            st.session_state[BACKEND_KEY] = BackendSpec()  # a backend that went away: back to the embedded one
    with sb.expander("Switch backend", expanded=False):
        choice = st.radio(
            "Run against",
            ["embedded", "endpoint URL", "AWS"],
            key="backend_choice",
            help="embedded: a faithful DynamoDB started for this dashboard; endpoint: DynamoDB Local "
            "or LocalStack; AWS: real tables, real cost",
        )
        if choice == "endpoint URL":
            url = st.text_input("Endpoint URL", placeholder="http://127.0.0.1:8000", key="backend_url")
            if st.button("Use this endpoint", key="backend_use_url"):
                _switch(registry, lambda: BackendSpec.parse(url or ""), empty=not url)
        elif choice == "AWS":
            region = st.text_input("Region", value="us-east-1", key="backend_region")
            confirm = st.checkbox(
                "I understand: this creates tables and makes calls on real AWS, which costs money",
                key="backend_confirm",
            )
            if st.button("Use AWS", key="backend_use_aws", disabled=not confirm):
                _switch(registry, lambda: BackendSpec.parse(None, aws=True, confirm_aws=confirm, region=region))
            st.caption("Credentials come from the usual AWS chain and are never shown; the account is masked.")
        elif st.button("Use the embedded DynamoDB", key="backend_use_embedded"):
            st.session_state[BACKEND_KEY] = BackendSpec()
            st.rerun()
    busy = registry.threads_in_use()
    sb.caption(
        f"client threads busy: {busy} of {registry.max_total_threads} · at most {registry.max_threads_per_run} per run"
    )
    sb.caption(budget_caption(registry, current_spec()))
    return current_spec()


def budget_caption(registry: Registry, spec: BackendSpec) -> str:
    """The call budgets a run on `spec` draws from: used and left, counting every session's runs."""
    parts = []
    for budget in registry.budgets(spec):
        used = budget.used()
        parts.append(f"{budget.what} used: {used:,} of {budget.limit:,} ({max(0, budget.limit - used):,} left)")
    return " · ".join(parts) + " · by every browser session since the dashboard started"


def budget_notice(registry: Registry, spec: BackendSpec) -> bool:
    """Above a Start button: a spent call budget (new runs are refused; how to get more) or a low one.
    True when spent, so the page can disable Start."""
    for budget in registry.budgets(spec):
        try:
            budget.check()
        except BadInput as e:
            st.warning(f"**{e.problem}**. New runs are refused.  \nTo run more, {e.fix}.", icon=":material/block:")
            return True
        left = budget.left()
        if left < budget.limit // 10:  # low: say so before a run comes out shorter than asked
            st.caption(
                f"{left:,} {budget.what} left of the dashboard's budget of {budget.limit:,} (shared by every "
                "browser session): a run stops when it is spent."
            )
    return False


def start_and_remember(start: Callable[[], str], state_key: str, param: str) -> None:
    """A Start click: start() what the page starts, keep its id in the session and the URL (so a refresh or a
    bookmark brings it back) and redraw; a refusal shows its problem and fix instead."""
    try:
        started = start()
    except LabError as e:
        show_error(e)
        return
    st.session_state[state_key] = started
    st.query_params[param] = started
    st.rerun()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _switch(registry: Registry, make: Any, empty: bool = False) -> None:
    try:
        if empty:
            from engine.errors import BadInput

            raise BadInput("no endpoint URL was given", "type one like http://127.0.0.1:8000")
        spec = make()
        with st.spinner("Connecting…"):
            registry.backend(spec)
    except LabError as e:
        show_error(e)
        return
    st.session_state[BACKEND_KEY] = spec
    st.rerun()


# -- pattern and run controls ---------------------------------------------------------------------------------------


def pattern_picker(key: str, label: str = "Pattern") -> type[Pattern]:
    patterns = all_patterns()
    names = list(patterns)
    default = names.index("atomic-counters") if "atomic-counters" in names else 0
    name = st.selectbox(
        label, names, index=default, key=f"{key}-pattern", format_func=lambda n: pattern_label(patterns[n])
    )
    return patterns[name]


def pattern_texts(cls: type[Pattern]) -> None:
    left, right = st.columns(2)
    with left.container(border=True):
        st.markdown(f"#### Problem\n{cls.problem}")
    with right.container(border=True):
        st.markdown(f"#### Pattern\n{cls.solution}")


def run_controls(cls: type[Pattern], key: str, *, max_threads: int, pick_variant: bool = True) -> RunSettings:
    """Variant, threads, ops or duration, the pattern's knobs, faults and retry policy."""
    k = f"{key}-{cls.name}"
    variant = None
    cols = st.columns([2, 1, 1, 1] if pick_variant else [1, 1, 1])
    if pick_variant:
        names = list(cls.variants)
        variant = cols[0].radio(
            "Variant", names, key=f"{k}-variant", horizontal=True, format_func=lambda n: variant_label(cls, n)
        )
        cols[0].caption(cls.variants[variant].description)
        cols = cols[1:]
    # No min/max on these inputs: Streamlit keeps the previous value of one typed out of range (the field only
    # turns red), so Start would run what the user no longer sees. The typed value goes to build_config, which
    # refuses it by the control's name.
    threads = cols[0].number_input(
        "Threads (clients)",
        value=DEFAULT_THREADS,
        step=1,
        key=f"{k}-threads",
        help=f"1 to {max_threads} client threads",
    )
    limit = cols[1].radio("Stop after", [LIMIT_OPS, LIMIT_DURATION], key=f"{k}-limit")
    ops = duration = None
    if limit == LIMIT_OPS:
        ops = cols[2].number_input("Ops per client", value=int(cls.default_ops), step=5, key=f"{k}-ops")
    else:
        duration = cols[2].number_input("Seconds", value=10.0, step=5.0, key=f"{k}-duration")
    options: dict[str, Any] = {}
    if cls.options:
        with st.expander("Contention knobs", expanded=True):
            knob_cols = st.columns(min(4, len(cls.options)))
            for i, (name, opt) in enumerate(cls.options.items()):
                default = cls.variant_default(variant or cls.safe_variant(), name)
                col = knob_cols[i % len(knob_cols)]
                label = name.replace("_", " ")
                kind = option_kind(opt)
                if kind == "choice":
                    options[name] = col.selectbox(
                        label,
                        list(opt.choices),
                        index=list(opt.choices).index(str(default)),
                        key=f"{k}-opt-{name}",
                        help=opt.help,
                    )
                elif kind == "int":
                    options[name] = col.number_input(
                        label, value=int(default), step=1, key=f"{k}-opt-{name}", help=opt.help
                    )
                else:
                    options[name] = col.number_input(label, value=float(default), key=f"{k}-opt-{name}", help=opt.help)
    with st.expander("Faults and retries", expanded=False):
        c1, c2, c3, c4 = st.columns(4)
        lost = c1.slider(
            "Lost-response share",
            0.0,
            1.0,
            float(cls.lost_response_default),
            0.01,
            key=f"{k}-lost",
            help="share of writes whose response is lost after the server applied "
            "them (real: the request is sent, the answer thrown away)",
        )
        latency_ms = c2.number_input("Added latency (ms)", value=0.0, step=5.0, key=f"{k}-latency")
        mode = c3.selectbox(
            "Retry mode (botocore)", list(RETRY_MODES), index=list(RETRY_MODES).index("standard"), key=f"{k}-retry"
        )
        attempts = c4.number_input(
            "Max attempts",
            value=3,
            key=f"{k}-attempts",
            help="1 means no retries; botocore never retries ConditionalCheckFailed",
        )
        c5, c6 = st.columns(2)
        seed = c5.number_input("Random seed (0: a new one each run)", value=0, key=f"{k}-seed")
        processes = c6.number_input(
            "Client processes",
            value=1,
            key=f"{k}-processes",
            disabled=not cls.process_pool,
            help=(
                "the threads spread over this many processes, each with its own CPU core: one process makes "
                "about 500 calls/s, so against AWS (~10 ms a call) many threads need several"
                if cls.process_pool
                else "this pattern's clients share memory, so they run in one process"
            ),
        )
    return RunSettings(
        pattern=cls.name,
        variant=variant,
        threads=int(threads),
        limit=limit,
        ops_per_client=int(ops) if ops is not None else None,
        duration_s=float(duration) if duration is not None else None,
        options=options,
        lost_response_share=float(lost),
        latency_ms=float(latency_ms),
        retry_mode=mode,
        max_attempts=int(attempts),
        seed=int(seed) or None,
        processes=int(processes) if cls.process_pool else 1,
    )


# -- counters -------------------------------------------------------------------------------------------------------

STATE_BADGE = {
    "pending": "gray",
    "preparing": "blue",
    "running": "blue",
    "verifying": "violet",
    "done": "green",
    "stopped": "orange",
    "failed": "red",
    "imported": "gray",
}


def state_badge(state: str) -> str:
    return f":{STATE_BADGE.get(state, 'gray')}-badge[{state.upper()}]"


def progress_and_counters(record: RunRecord, *, compact: bool = False) -> dict[str, Any]:
    p = record.progress()
    fraction = p.get("fraction")
    state = p["state"]
    text = f"{state} · {p['elapsed_s']:.1f} s"
    if fraction is None:
        fraction = 1.0 if not record.running else 0.0
    st.progress(min(1.0, max(0.0, float(fraction))), text=text)
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
    if cores and max(cores) >= SATURATED and p["calls"] >= 100:
        more = (
            " Client processes spread the threads over more cores, where the server and the machine have room."
            if getattr(known_pattern(record.pattern), "process_pool", False)
            else ""
        )
        st.caption(f"Client CPU: {client_cpu_text(cores)}.{more}")
    return p


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
            st.info(f"{len(crashes)} client(s) crashed mid-operation (injected by the pattern)", icon=":material/bolt:")
        if errors:
            first = "; ".join(f"client {e['client']}: {e['message']}" for e in errors[:3])
            st.warning(
                f"{len(errors)} client(s) stopped on an unexpected error: {plain(first)}", icon=":material/error:"
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
        elif record.run is not None and record.run.state.value == "failed":
            st.warning("Not checked: the run failed before verification.")
        else:
            st.info("This history carries no invariant verdicts.")
        return
    holds = sum(1 for inv in invariants if inv.get("holds") is True)
    st.markdown(f"**{holds} of {len(invariants)} hold**")
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
            extra = f" · **{inv['violations']:,} violations**" if inv.get("violations") else ""
            expected, observed = plain(_short(inv.get("expected"))), plain(_short(inv.get("observed")))
            st.markdown(f"expected **{expected}** · observed **{observed}**{extra}")
            st.caption(plain(inv.get("explanation", "")))
            calls = [int(s) for s in inv.get("calls") or ()]
            if calls:
                label = (
                    f"The {len(calls)} calls that broke it"
                    if inv.get("holds") is False
                    else f"The {len(calls)} calls it names"
                )
                with st.expander(label):
                    with record.view() as view:
                        rows = view.rows_at(calls)
                    st.code(an.call_log(rows) or "(calls not in this history)", language=None)


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
        labels = an.outcome_labels(frame)
        c1, c2, c3 = st.columns([2, 2, 1])
        clients = c1.multiselect(
            "Clients",
            sorted(int(c) for c in pd.unique(frame["client"])),
            key=f"{key}-log-clients",
            placeholder="all clients",
        )
        outcomes = c2.multiselect("Outcomes", an.ordered(labels), key=f"{key}-log-outcomes", placeholder="all outcomes")
        flagged_only = c3.checkbox("only calls that broke an invariant", key=f"{key}-log-flagged")
        mask = np.ones(len(frame), dtype=bool)
        if clients:
            mask &= frame["client"].isin(clients).to_numpy()
        if outcomes:
            mask &= np.isin(labels, outcomes)
        if flagged_only:
            mask &= frame["seq"].isin(list(an.flagged_calls(invariants))).to_numpy()
        rows = frame[mask]
        shown = min(len(rows), CALL_LOG_LIMIT)
        st.caption(
            f"{len(rows):,} matching calls"
            + (f"; the last {shown} shown, download for all" if len(rows) > shown else "")
        )
        last = an.last_calls(rows, CALL_LOG_LIMIT)
        st.code(an.call_log(record.with_details(last)) or "(no matching calls)", language=None, height=420)
        st.download_button(
            "Download this log (.txt)",
            data=lambda: an.call_log(record.with_details(rows)).encode(),
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
                "kind": {True: "safe", False: "racy", None: "?"}[r.safe],
                "threads": r.threads,
                "calls": len(r.history),
                "state": r.state,
                "invariants": f"{holds}/{len(invariants)} hold" if invariants else "",
                "source": r.file_name or r.backend_label,
                "compare": r.group or "",
            }
        )
    return pd.DataFrame(rows)
