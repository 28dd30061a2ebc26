"""The ✕ marks a per-call timeline puts on the calls that broke an invariant.

A racy counter run names hundreds of calls: a ✕ on each turns the timeline into a red blob that hides the very
interleaving a talk is about. Given the witnesses of the broken invariants (engine/explain: the few calls that
prove each break), only those get a ✕, one trace per invariant (a click on one opens its explainer: the trace's
`meta` names the invariant); the other flagged calls are one more trace, hidden until its legend entry is clicked.
Without witnesses, every flagged call gets a ✕ as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dashboard.figures.figure import Spec, Texts
from dashboard.figures.palette import FLAG_COLOUR
from dashboard.text.words import plural

WITNESS_MARK = 24  # px: a witness's ✕ reads from the back of a room; the others' 16 px were a blob
OTHER_MARK = 16
WHY = "why it broke"  # the witnesses' legend entry


@dataclass(frozen=True)
class Witnessed:
    """One broken invariant's witness as the timeline marks it: the invariant's key, what the anomaly is called
    ("lost update") and its calls (History rows)."""

    key: str
    anomaly: str
    seqs: tuple[int, ...]


def witness_seqs(witnesses: Iterable[Witnessed]) -> set[int]:
    return {s for w in witnesses for s in w.seqs}


def _marks(name: str, m: np.ndarray, y: np.ndarray, x: np.ndarray, hover: np.ndarray, size: int) -> dict:
    return dict(
        type="scatter",
        name=name,
        mode="markers",
        y=y[m],
        x=x[m],
        customdata=Texts(hover[m]),
        marker=dict(symbol="x-thin", size=size, line=dict(width=3 if size <= OTHER_MARK else 5, color=FLAG_COLOUR)),
        hovertemplate="%{customdata}<extra></extra>",
    )


def add_marks(
    fig: Spec,
    seq: np.ndarray,
    y: np.ndarray,
    x: np.ndarray,
    hover: np.ndarray,
    flagged: set[int],
    witnesses: Sequence[Witnessed] = (),
) -> tuple[int, str]:
    """The ✕ traces for the calls drawn (`seq`, at `x` on lane `y`, with their hover texts); returns how many
    flagged calls are drawn and what the subtitle says of the marks ("" to let the caller say it)."""
    n_flagged = int(np.isin(seq, list(flagged)).sum()) if flagged else 0
    if not witnesses:
        if n_flagged:
            fig.add_trace(_marks("broke an invariant", np.isin(seq, list(flagged)), y, x, hover, OTHER_MARK))
        return n_flagged, ""
    proof = witness_seqs(witnesses)
    first = True
    for w in witnesses:
        m = np.isin(seq, list(w.seqs))
        if m.any():
            # One legend entry for them all: an entry each pushed the legend beside a presenter's plot, narrowing it.
            trace = _marks(WHY if first else f"why: {w.anomaly}", m, y, x, hover, WITNESS_MARK)
            fig.add_trace({**trace, "legendgroup": "why", "showlegend": first, "meta": {"witness": w.key}})
            first = False
    others = np.isin(seq, list(flagged - proof)) if flagged else np.zeros(len(seq), dtype=bool)
    if others.any():
        trace = _marks(plural(int(others.sum()), "more flagged call"), others, y, x, hover, OTHER_MARK)
        fig.add_trace({**trace, "visible": "legendonly"})  # the control to show them all: its legend entry
    said = f"✕ {plural(int(np.isin(seq, list(proof)).sum()), 'call')} prove it: click one for why"
    if others.any():
        said += f" · {int(others.sum()):,} more in the legend"
    return n_flagged, said
