"""The controls a page starts from: the pattern picker with the seed's problem and pattern, and one run's
controls (variant, threads, ops or duration, the pattern's knobs, faults, retries, seed and client processes),
each restored from the page's link when it names one."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.state.run_settings import (
    DEFAULT_THREADS,
    LIMIT_DURATION,
    LIMIT_OPS,
    RunSettings,
    option_kind,
    pattern_label,
    variant_label,
)
from dashboard.text.plain import plain
from dashboard.widgets import links
from dashboard.widgets.cluster_choice import current_cluster
from engine.backends.backend import RETRY_MODES
from engine.patterns import Pattern, all_patterns


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
        value=links.initial(f"{k}-threads", min(DEFAULT_THREADS, max_threads)),  # a default Start would refuse
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
                f"off: the clients run on the workers of the cluster {plain(on_cluster)} (sidebar)"
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
