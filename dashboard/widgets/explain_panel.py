"""Under a broken invariant's card: why it broke; above the cards, the linearizability check's second opinion. A toggle opens its witness (engine/explain): the anomaly's
name, the one-sentence story and the happens-before diagram of the few calls that prove it, which the chart's
camera button saves as an SVG for a slide."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from dashboard.figures.happens_before import happens_before
from dashboard.state.records import RunRecord
from dashboard.state.verdicts import key_of
from dashboard.widgets.ui import PLOTLY_CONFIG, plain
from engine.explain.calls import Calls
from engine.explain.opinion import opinion_line
from engine.explain.opinion import second_opinion as engine_opinion
from engine.explain.registry import has_finder, witness_for
from engine.explain.witness import Witness

# The calls of the runs whose witnesses were asked for, by run id and length: read out of the History once,
# not once per card or per rerun. Only finished runs have verdicts, so a length identifies the calls.
_CALLS: dict[tuple[str, int], Calls] = {}
_KEEP = 4


def _calls(record: RunRecord) -> Calls:
    key = (record.id, len(record.history))
    if key not in _CALLS:
        while len(_CALLS) >= _KEEP:
            _CALLS.pop(next(iter(_CALLS)))
        _CALLS[key] = Calls.of(record.history)
    return _CALLS[key]


def witness(record: RunRecord, invariant: Mapping[str, Any]) -> Witness | None:
    return witness_for(record.pattern, _calls(record), invariant)


def _toggle_key(key: str) -> str:
    return f"{key}-why"


def why(record: RunRecord, invariant: Mapping[str, Any], key: str) -> None:
    """In a FAIL card: a toggle that opens its witness (the anomaly and the story here; the diagram, which needs
    the page's width, under the cards: `diagrams`). Nothing for a rule that held or has no finder."""
    if invariant.get("holds") is not False or not has_finder(record.pattern, key_of(invariant)):
        return
    if not st.toggle("Why: the calls that prove it", key=_toggle_key(key)):
        return
    found = witness(record, invariant)
    if found is None:
        st.info("No small set of calls in this history proves it on its own: the verdict rests on the count above.")
        return
    st.markdown(f"**{plain(found.anomaly.value.capitalize())}** · {plain(found.story)}")
    st.caption("Its happens-before diagram is under the cards.")


def diagrams(record: RunRecord, invariants: Sequence[Mapping[str, Any]], key: str) -> None:
    """Under the cards, at the page's width: the happens-before diagram of each witness opened in a card (`key`
    is the cards' key; card i's toggle is `{key}-inv-{i}-why`). The chart's camera button saves an SVG."""
    for i, invariant in enumerate(invariants):
        if not st.session_state.get(_toggle_key(f"{key}-inv-{i}")) or invariant.get("holds") is not False:
            continue
        found = witness(record, invariant)
        if found is None:
            continue
        name = f"{record.pattern}-{found.anomaly.value.replace(' ', '-')}"
        config = {**PLOTLY_CONFIG, "toImageButtonOptions": {"format": "svg", "filename": name}}
        fig = happens_before(record.history, found)
        st.plotly_chart(fig, key=f"{key}-inv-{i}-diagram", theme=None, config=config)


_OPINIONS: dict[tuple[str, int], dict[str, Any]] = {}


def second_opinion(record: RunRecord) -> None:
    """Under the count of invariants that hold: the linearizability check's verdict on the same calls (a live
    run's from its summary, a file's worked out here); a disagreement is shown as an error."""
    # A file's own record of the check is not taken on trust: its calls are checked here, against its verdicts.
    opinion = (record.summary() or {}).get("linearizability") if record.run is not None else None
    if record.run is None and record.invariants():
        key = (record.id, len(record.history))
        if key not in _OPINIONS:
            while len(_OPINIONS) >= _KEEP:
                _OPINIONS.pop(next(iter(_OPINIONS)))
            _OPINIONS[key] = engine_opinion(record.pattern, record.history, record.options(), record.invariants())
        opinion = _OPINIONS[key]
    line = opinion_line(opinion if isinstance(opinion, Mapping) else None)
    if not line or not isinstance(opinion, Mapping):
        return
    if opinion.get("disagreement"):
        st.error(f"**Second opinion disagrees.** {plain(line.removeprefix('DISAGREES: '))}", icon=":material/gavel:")
    else:
        st.caption(f"Second opinion, the linearizability check: {plain(line)}")
