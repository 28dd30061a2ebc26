"""Under a broken invariant's card: why it broke; above the cards, the linearizability check's second opinion. A toggle opens its witness (engine/explain): the anomaly's
name, the one-sentence story and the happens-before diagram of the few calls that prove it, which the chart's
camera button saves as an SVG for a slide."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from dashboard.happens_before import happens_before
from dashboard.records import RunRecord
from dashboard.ui import PLOTLY_CONFIG, plain
from dashboard.verdicts import key_of
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


def why(record: RunRecord, invariant: Mapping[str, Any], key: str) -> None:
    """A toggle under a FAIL card that opens its witness; nothing for a rule that held or has no finder."""
    if invariant.get("holds") is not False or not has_finder(record.pattern, key_of(invariant)):
        return
    if not st.toggle("Why: the calls that prove it", key=f"{key}-why"):
        return
    found = witness(record, invariant)
    if found is None:
        st.info("No small set of calls in this history proves it on its own: the verdict rests on the count above.")
        return
    st.markdown(f"**{plain(found.anomaly.value.capitalize())}** · {plain(found.story)}")
    config = {
        **PLOTLY_CONFIG,
        "toImageButtonOptions": {"format": "svg", "filename": f"{record.pattern}-{found.anomaly.value}"},
    }
    st.plotly_chart(happens_before(record.history, found), key=f"{key}-why-chart", theme=None, config=config)


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
