"""A witness drawn as a happens-before diagram: one lane per client, only the witness's calls, each as a bar
over its [invoke, complete] interval on the run's real-time axis, and an arrow for each "read the value written
by" and "overwrote" between them. Titled with the anomaly's name, the story under it: what a slide needs.

A pure function of the history (for its clock) and the witness; the Run page's invariant cards show it.
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.figures.figure import figure, style
from dashboard.figures.palette import CCF, COLOURS, INFO, OK, colour, short_code
from engine.explain.witness import Relation, Step, Witness, client_name
from engine.record.history import History, Outcome

LANE_PX = 110  # per client lane: room for the bar and its label above it
ARROW = "#37474F"


def _label(step: Step) -> str:
    what = step.says or step.call.action
    return f"{step.call.action}: {what}" if step.says else what


def _colour(step: Step) -> str:
    if step.call.outcome is Outcome.OK:
        return COLOURS[OK]
    if step.call.outcome is Outcome.INFO:
        return COLOURS[INFO]
    code = short_code(step.call.error or "")
    return COLOURS[CCF] if code == CCF else colour(code)


def happens_before(history: History, witness: Witness) -> go.Figure:
    """The diagram of one witness; x in ms since the run began."""
    t0 = history.t0_ns
    steps = witness.steps
    clients = sorted({s.call.client for s in steps})
    lane = {c: i for i, c in enumerate(clients)}
    ms = {s.seq: ((s.call.invoke_ns - t0) / 1e6, (s.call.complete_ns - t0) / 1e6) for s in steps}
    fig = figure()
    # Labels take turns above and below their bars along a lane, so a read and the write right after it do
    # not print over each other.
    below: dict[int, bool] = {}
    for s in steps:
        start, end = ms[s.seq]
        y = lane[s.call.client]
        fig.add_trace(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [start, end],
                "y": [y, y],
                "line": {"color": _colour(s), "width": 14},
                "marker": {"size": [0, 12], "color": _colour(s), "symbol": "line-ns"},
                "hovertemplate": (
                    f"#{s.seq} {client_name(s.call.client)}<br>{s.call.op} {s.call.key}<br>{_label(s)}"
                    f"<br>{start:,.1f} → {end:,.1f} ms · {s.call.outcome.value}<extra></extra>"
                ),
                "showlegend": False,
            }
        )
        below[y] = not below.get(y, True)
        fig.add_annotation(
            x=(start + end) / 2,
            y=y,
            yshift=-24 if below[y] else 22,
            text=_label(s),
            showarrow=False,
            font={"size": 15},
        )
    for edge in witness.edges:
        if edge.call not in ms or edge.other not in ms:
            continue
        head, tail = witness.step(edge.call), witness.step(edge.other)
        # The earlier call took effect after it was sent and before the later one returned (which took effect
        # after it): each end sits at the middle of the part of its bar where that instant can be.
        (ti, tc), (hi, hc) = ms[tail.seq], ms[head.seq]
        x_tail, x_head = (ti + min(tc, hc)) / 2, (max(hi, ti) + hc) / 2
        y_tail, y_head = lane[tail.call.client], lane[head.call.client]
        fig.add_annotation(
            x=x_head,
            y=y_head,
            ax=x_tail,
            ay=y_tail,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            text="",
            showarrow=True,
            arrowhead=3,
            arrowsize=1.4,
            arrowwidth=2.5,
            arrowcolor=ARROW,
        )
        fig.add_annotation(
            x=(x_tail + x_head) / 2,
            y=(y_tail + y_head) / 2,
            xshift=10,
            text=f"<i>{'overwrote' if edge.relation is Relation.OVERWROTE else 'read from'}</i>",
            showarrow=False,
            font={"size": 14, "color": ARROW},
        )
    first = min(v[0] for v in ms.values())
    last = max(v[1] for v in ms.values())
    pad = max(1.0, (last - first) * 0.06)
    fig.update_xaxes(range=[first - pad, last + pad])
    fig.update_yaxes(
        tickvals=list(range(len(clients))),
        ticktext=[client_name(c) for c in clients],
        range=[len(clients) - 0.4, -0.6],  # the first client on top
        showgrid=False,
    )
    return style(
        fig,
        f"{witness.anomaly.value.capitalize()} on {witness.key}",
        subtitle=witness.story,
        height=170 + LANE_PX * len(clients),
        x_title="ms since the run began",
        legend=False,
        meta={"witness": witness.as_dict()},
    )
