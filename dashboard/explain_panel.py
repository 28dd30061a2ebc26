"""Under a broken invariant's card: why it broke. A toggle opens its witness (engine/explain): the anomaly's
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
