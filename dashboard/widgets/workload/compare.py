"""Compare two workloads: the editor's workload beside a second one (another shipped preset, or a second text
checked exactly like the first editor), started together on their own tables, so a team sees the conflict rates
of two designs side by side (e.g. its workload with transactions and without)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

from dashboard.text.plain import plain
from engine.workloads.schema.parsing import WorkloadInvalid, parse
from engine.workloads.schema.workload import Workload

SECOND_TEXT = "a second text…"


def checked(text: str, cap: int, source: str = "the workload") -> tuple[Workload | None, list[str]]:
    """The workload in `text` and one line per problem, each starting with its field: the schema's problems, then
    the dashboard's cap on clients."""
    try:
        workload = parse(text, source)
    except WorkloadInvalid as e:
        return None, e.lines()
    if workload.load.clients > cap:
        return workload, [f"load.clients: {workload.load.clients} is above this dashboard's cap: use at most {cap}"]
    return workload, []


def second_workload(presets: Sequence[str], folder: Path, first_text: str, cap: int) -> Workload | None:
    """The "Compare with…" control: a preset, or a second text area (first filled with the editor's text, to edit
    into the other design). Its problems are listed under it, shown plain; None while there are any."""
    pick = st.selectbox("Compare with…", [*presets, SECOND_TEXT], key="wl-other")
    if pick == SECOND_TEXT:
        if "wl-other-text" not in st.session_state:
            st.session_state["wl-other-text"] = first_text
        text = st.text_area(
            "Second workload (YAML)",
            key="wl-other-text",
            height=300,
            help="A copy of the editor's text at first: change the design, and its name: to tell the sides apart.",
        )
    else:
        text = (folder / f"{pick}.yaml").read_text(encoding="utf-8")
    workload, problems = checked(text, cap, "the second workload")
    for problem in problems:  # the second text may have come from anywhere: plain, never Markdown
        st.error(plain(problem), icon=":material/error:")
    return None if problems else workload


def compare_section(
    presets: Sequence[str],
    folder: Path,
    first: Workload | None,
    first_text: str,
    cap: int,
    total_cap: int,
    blocked: bool,
    start_two: Callable[[Workload, Workload], None],
) -> None:
    """The control and its button "Compare two workloads": `start_two(first, second)` starts both (the page keeps
    the pair in the session and the URL, as for Compare both forms). `total_cap`: the client threads the
    dashboard runs at once, which the two together must fit (busy threads are the registry's to refuse)."""
    with st.expander("Compare two workloads", icon=":material/difference:"):
        st.caption(
            "Run the workload above beside a second one, each on its own tables and in the form picked above: "
            "the same live pair view and per-operation tables show which design conflicts less."
        )
        second = second_workload(presets, folder, first_text, cap)
        both = (first.load.clients + second.load.clients) if first is not None and second is not None else 0
        if both > total_cap:
            st.error(
                f"load.clients: the two workloads' {both} clients together pass this dashboard's limit of "
                f"{total_cap} client threads at once: use fewer clients in one of them",
                icon=":material/error:",
            )
            second = None
        if st.button(
            "Compare two workloads",
            icon=":material/compare_arrows:",
            key="wl-two",
            disabled=blocked or first is None or second is None,
        ):
            if first is not None and second is not None:
                start_two(first, second)
