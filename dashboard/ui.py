"""Streamlit building blocks the pages start from: errors shown in the page, a chart, the backend sidebar with its
call budgets, and the pattern and run controls. What shows one run (counters, invariant cards, the call log,
export) is in dashboard.panels; charts come from dashboard.charts."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import links
from dashboard.registry import Registry
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
from engine.run_config import AWS_DEFAULT_MAX_CALLS
from engine.server.profile import ProfileSpec, ServerProfile

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
    profile_control(sb, current_spec())
    cluster_control(sb, registry)
    busy = registry.threads_in_use()
    sb.caption(
        f"client threads busy: {busy} of {registry.max_total_threads} · at most {registry.max_threads_per_run} per run"
    )
    sb.caption(budget_caption(registry, current_spec()))
    return current_spec()


PROFILE_KEY = "server_profile"


def profile_control(sb: Any, spec: BackendSpec) -> None:
    """The embedded server's profile for new runs: exact, or aws-like (simulated contention)."""
    if spec.kind is BackendKind.AWS:
        st.session_state[PROFILE_KEY] = ServerProfile.EXACT.value
        return  # on AWS the contention is real
    links.restore_profile(PROFILE_KEY)
    profiles = [ServerProfile.EXACT.value, ServerProfile.AWS_LIKE.value]
    sb.radio(
        "Server profile",
        profiles,
        index=profiles.index(links.initial(PROFILE_KEY, ServerProfile.EXACT.value)),
        key=PROFILE_KEY,
        horizontal=True,
        help="exact: every request atomic and instant. aws-like: the same atomicity plus SIMULATED transaction "
        "conflicts, stale reads without ConsistentRead, per-key throttling and network time (README: the "
        "knobs and what differs from AWS). The lab's own server only.",
    )
    if current_profile().simulated:
        sb.caption(f"SIMULATED: {current_profile().describe()}")


def current_profile() -> ProfileSpec:
    return ProfileSpec.parse(str(st.session_state.get(PROFILE_KEY) or ServerProfile.EXACT.value))


CLUSTER_KEY = "cluster_address"
CLUSTER_WORKERS_KEY = "cluster_workers"


def cluster_control(sb: Any, registry: Registry) -> None:
    """Where new runs' clients run: in this dashboard's process (default), or on the workers of a Dask cluster.
    An address is checked when it is set (the scheduler answers, has workers, and they reach the backend), as
    `--cluster` is in the CLI; on AWS the backend's confirmation and the call budgets apply as to any run."""
    address = current_cluster()
    with sb.expander("Cluster", expanded=address is not None):
        if address is not None:
            workers = st.session_state.get(CLUSTER_WORKERS_KEY)
            st.success(f"**Cluster** {plain(address)}  \n{workers} workers run the clients", icon=":material/hub:")
            st.caption(
                "Run, Compare and Sweep run their clients on the cluster's workers (“Client processes” is "
                "off); patterns whose clients meet in memory are refused, with the reason."
            )
            if current_spec().kind is BackendKind.AWS:
                st.caption(
                    "On AWS each worker uses its own credentials; the run's call budget is shared by its workers."
                )
            if st.button("Run here", key="cluster_clear", help="run the clients in this dashboard's process again"):
                st.session_state.pop(CLUSTER_KEY, None)
                st.session_state.pop(CLUSTER_WORKERS_KEY, None)
                st.rerun()
        typed = st.text_input(
            "Dask scheduler address",
            placeholder="tcp://127.0.0.1:8786",
            key="cluster_input",
            help="a Dask scheduler whose workers have the lab installed (README: When one machine is not enough)",
        )
        if st.button("Use this cluster", key="cluster_use"):
            _use_cluster(registry, typed or "")


def _use_cluster(registry: Registry, typed: str) -> None:
    from dashboard.settings import in_dashboard_words
    from engine import cluster

    try:
        if not typed.strip():
            raise BadInput("no cluster address was given", "type a Dask scheduler's address like tcp://127.0.0.1:8786")
        address = cluster.normalize_address(typed)
        with st.spinner(f"Asking the Dask scheduler at {address}…"):
            workers = cluster.check_cluster(address, registry.backend(current_spec()))
    except LabError as e:
        show_error(LabError(in_dashboard_words(e.problem), in_dashboard_words(e.fix)))
        return
    st.session_state[CLUSTER_KEY] = address
    st.session_state[CLUSTER_WORKERS_KEY] = workers
    st.rerun()


def current_cluster() -> str | None:
    """The cluster address new runs of this session spread their clients over, or None (this process)."""
    return st.session_state.get(CLUSTER_KEY) or None


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
    first = links.initial(f"{key}-pattern", names[default])
    name = st.selectbox(
        label, names, index=names.index(first), key=f"{key}-pattern", format_func=lambda n: pattern_label(patterns[n])
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
            "Variant",
            names,
            index=names.index(links.initial(f"{k}-variant", names[0])),
            key=f"{k}-variant",
            horizontal=True,
            format_func=lambda n: variant_label(cls, n),
        )
        cols[0].caption(cls.variants[variant].description)
        cols = cols[1:]
    # No min/max on these inputs: Streamlit keeps the previous value of one typed out of range (the field only
    # turns red), so Start would run what the user no longer sees. The typed value goes to build_config, which
    # refuses it by the control's name.
    threads = cols[0].number_input(
        "Threads (clients)",
        value=links.initial(f"{k}-threads", DEFAULT_THREADS),
        step=1,
        key=f"{k}-threads",
        help=f"1 to {max_threads} client threads",
    )
    limits = [LIMIT_OPS, LIMIT_DURATION]
    limit = cols[1].radio(
        "Stop after", limits, index=limits.index(links.initial(f"{k}-limit", LIMIT_OPS)), key=f"{k}-limit"
    )
    ops = duration = None
    if limit == LIMIT_OPS:
        ops = cols[2].number_input(
            "Ops per client", value=links.initial(f"{k}-ops", int(cls.default_ops)), step=5, key=f"{k}-ops"
        )
    else:
        duration = cols[2].number_input(
            "Seconds", value=links.initial(f"{k}-duration", 10.0), step=5.0, key=f"{k}-duration"
        )
    options: dict[str, Any] = {}
    if cls.options:
        with st.expander("Contention knobs", expanded=True):
            knob_cols = st.columns(min(4, len(cls.options)))
            for i, (name, opt) in enumerate(cls.options.items()):
                default = links.initial(f"{k}-opt-{name}", cls.variant_default(variant or cls.safe_variant(), name))
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
            float(links.initial(f"{k}-lost", cls.lost_response_default)),
            0.01,
            key=f"{k}-lost",
            help="share of writes whose response is lost after the server applied "
            "them (real: the request is sent, the answer thrown away)",
        )
        latency_ms = c2.number_input(
            "Added latency (ms)", value=links.initial(f"{k}-latency", 0.0), step=5.0, key=f"{k}-latency"
        )
        modes = list(RETRY_MODES)
        mode = c3.selectbox(
            "Retry mode (botocore)",
            modes,
            index=modes.index(links.initial(f"{k}-retry", "standard")),
            key=f"{k}-retry",
        )
        attempts = c4.number_input(
            "Max attempts",
            value=links.initial(f"{k}-attempts", 3),
            key=f"{k}-attempts",
            help="1 means no retries; botocore never retries ConditionalCheckFailed",
        )
        c5, c6 = st.columns(2)
        seed = c5.number_input(
            "Random seed (0: a new one each run)", value=links.initial(f"{k}-seed", 0), key=f"{k}-seed"
        )
        on_cluster = current_cluster()
        processes = c6.number_input(
            "Client processes",
            value=links.initial(f"{k}-processes", 1),
            key=f"{k}-processes",
            disabled=not cls.process_pool or on_cluster is not None,
            help=(
                f"off: the clients run on the workers of the cluster {on_cluster} (sidebar)"
                if on_cluster is not None
                else "the threads spread over this many processes, each with its own CPU core: one process makes "
                "about 500 calls/s, so against AWS (~10 ms a call) many threads need several"
                if cls.process_pool
                else "this pattern's clients share memory, so they run in one process"
            ),
        )
        if on_cluster is not None:
            c6.caption("Off while a cluster is set in the sidebar: its workers run the clients.")
    cluster_notice(cls)
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
        processes=int(processes) if cls.process_pool and on_cluster is None else 1,
        cluster=on_cluster,
    )


def cluster_notice(cls: type[Pattern]) -> None:
    """With a cluster set, a pattern whose clients meet in memory says why it will not start (before Start)."""
    if current_cluster() is not None and not cls.process_pool:
        st.warning(
            f"**{cls.name}'s clients meet in memory (shared state), so they cannot be spread over the cluster's "
            "workers.** Start is refused; click “Run here” under Cluster in the sidebar to run it in this "
            "process.",
            icon=":material/block:",
        )
