"""The sidebar: where this session's new runs go (the embedded DynamoDB, an endpoint URL, or AWS after an explicit
confirmation), the embedded server's profile, the Dask cluster that runs their clients, and the client threads and
call budgets in use. The pages read its choices through current_spec, current_profile and current_cluster."""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from dashboard.settings.endpoint import ENDPOINT_ENV, check_endpoint_setting
from dashboard.widgets import links, profile_knobs
from dashboard.widgets.cluster_choice import CLUSTER_KEY, current_cluster
from dashboard.widgets.registry import Registry
from dashboard.widgets.ui import plain, show_error
from engine.backends.backend import BackendKind, BackendSpec
from engine.errors import BadInput, LabError
from engine.run.config import AWS_DEFAULT_MAX_CALLS
from engine.server.profile import AWS_LIKE, ProfileSpec, ServerProfile

BACKEND_KEY = "backend_spec"


def default_spec() -> BackendSpec:
    """The embedded DynamoDB, unless DDBLAB_ENDPOINT_URL names another (docker-compose: DynamoDB Local); a bad
    one raises BadInput (streamlit_app shows it and stops) rather than silently meaning the embedded server."""
    return check_endpoint_setting(os.environ.get(ENDPOINT_ENV)) or BackendSpec()


def current_spec() -> BackendSpec:
    return st.session_state.get(BACKEND_KEY) or default_spec()


# What each backend cannot show, said where the user chooses it.
BACKEND_LIMITS = {
    BackendKind.EMBEDDED: "Under the exact profile every request is atomic and instant, so concurrent transactions "
    "never get TransactionConflict; the aws-like profile below simulates it. GSI lag is simulated; injected "
    "throttling is available.",
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
                f"**AWS** · region {plain(info['region'])}  \naccount {plain(info.get('account', 'unknown'))}",
                icon=":material/cloud:",
            )
        elif spec.kind is BackendKind.ENDPOINT:
            sb.success(f"**Endpoint** {plain(where)}", icon=":material/lan:")  # as typed
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
    if st.session_state.get(PROFILE_KEY) == ServerProfile.AWS_LIKE.value:
        sb.text_input(
            "Calibrated profile file (optional)",
            key=PROFILE_FILE_KEY,
            placeholder="my-account.json",
            help="a file `python -m engine calibrate` wrote on this machine: its measured knobs replace the model's "
            "defaults, and runs say “calibrated from FILE (REGION, DATE)”",
        )
        try:
            calibrated = calibrated_profile()
        except BadInput as e:
            calibrated = None  # new runs start from the model's defaults
            with sb:  # under the field it concerns
                show_error(e)
        profile_knobs.knob_controls(sb, calibrated or AWS_LIKE)
    try:
        if current_profile().simulated:
            sb.caption(plain(current_profile().describe()))  # "aws-like (SIMULATED: ...", a file's label in it
    except BadInput:
        pass  # said under the knobs


PROFILE_FILE_KEY = "server_profile_file"


def calibrated_profile() -> ProfileSpec | None:
    """The calibrated profile the sidebar names, or None; BadInput naming the problem for a file that is not one."""
    path = str(st.session_state.get(PROFILE_FILE_KEY) or "").strip()
    if not path or st.session_state.get(PROFILE_KEY) != ServerProfile.AWS_LIKE.value:
        return None
    from engine.run.calibrate import load_profile

    return load_profile(path)


def current_profile() -> ProfileSpec:
    """The profile new runs of this session use: exact, or aws-like with the sidebar's knobs (over a calibrated
    file's values when one is loaded). BadInput naming the knob and its range while one is out of it: a page calls
    this when it starts something, so Start refuses rather than run other values than the ones shown."""
    if st.session_state.get(PROFILE_KEY) != ServerProfile.AWS_LIKE.value:
        return ProfileSpec.parse(str(st.session_state.get(PROFILE_KEY) or ServerProfile.EXACT.value))
    try:
        calibrated = calibrated_profile()
    except BadInput:
        calibrated = None  # said under the field; new runs start from the model's defaults
    return profile_knobs.session_profile(calibrated or AWS_LIKE)


def profile_params() -> dict[str, str]:
    """The sidebar's part of a page's link: `profile=aws-like` and the knobs off the model's defaults, as the
    controls hold them (never raises: a link of values out of range says so when opened, as the page does)."""
    if st.session_state.get(PROFILE_KEY) != ServerProfile.AWS_LIKE.value:
        return {}
    return {links.PROFILE: ServerProfile.AWS_LIKE.value, **profile_knobs.profile_link_params()}


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
    from dashboard.state.run_settings import in_dashboard_words
    from engine.clients.cluster import home as cluster

    try:
        if not typed.strip():
            raise BadInput("no cluster address was given", "type a Dask scheduler's address like tcp://127.0.0.1:8786")
        address = cluster.normalize_address(typed)
        with st.spinner(f"Asking the Dask scheduler at {plain(address)}…"):
            workers = cluster.check_cluster(address, registry.backend(current_spec()))
    except LabError as e:
        show_error(LabError(in_dashboard_words(e.problem), in_dashboard_words(e.fix)))
        return
    st.session_state[CLUSTER_KEY] = address
    st.session_state[CLUSTER_WORKERS_KEY] = workers
    st.rerun()


def budget_caption(registry: Registry, spec: BackendSpec) -> str:
    """The call budgets a run on `spec` draws from: used and left, counting every session's runs."""
    parts = []
    for budget in registry.budgets(spec):
        used = budget.used()
        parts.append(f"{budget.what} used: {used:,} of {budget.limit:,} ({max(0, budget.limit - used):,} left)")
    return " · ".join(parts) + " · by every browser session since the dashboard started"


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _switch(registry: Registry, make: Any, empty: bool = False) -> None:
    try:
        if empty:
            raise BadInput("no endpoint URL was given", "type one like http://127.0.0.1:8000")
        spec = make()
        with st.spinner("Connecting…"):
            registry.backend(spec)
    except LabError as e:
        show_error(e)
        return
    st.session_state[BACKEND_KEY] = spec
    st.rerun()
