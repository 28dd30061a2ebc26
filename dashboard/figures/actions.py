"""Calls per action and outcome: the one chart every pattern can show (its aggregate and its figure)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import Calls, agg, empty, figure, style
from dashboard.figures.palette import colour, ordered
from dashboard.state.aggregates import Aggregate, Rows, unsplit
from dashboard.state.frames import categories


class ActionOutcomes(Aggregate):
    """Call counts per (action, outcome label), reads counted as ok."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def add(self, rows: Rows) -> None:
        actions, cats = categories(rows.frame["action"])
        labels = [unsplit(label) for label in rows.order]
        pairs = actions * max(len(rows.order), 1) + rows.codes
        for pair, count in zip(*np.unique(pairs, return_counts=True)):
            a, c = divmod(int(pair), max(len(rows.order), 1))
            self.counts[(cats[a], labels[c])] += int(count)

    def table(self) -> pd.DataFrame:
        """Rows: action (sorted); columns: outcome label (legend order); values: call counts."""
        if not self.counts:
            return pd.DataFrame()
        actions = sorted({a for a, _ in self.counts})
        labels = ordered({label for _, label in self.counts})
        table = pd.DataFrame(0, index=pd.Index(actions, name="action"), columns=pd.Index(labels, name="outcome"))
        for (action, label), count in self.counts.items():
            table.loc[action, label] += count
        return table


def action_outcomes(calls: Calls, *, title: str = "Calls per action and outcome") -> go.Figure:
    table = agg(calls, ActionOutcomes).table()
    if table.empty:
        return empty(title, "No calls yet")
    fig = figure()
    for label in table.columns:
        fig.add_trace(
            dict(
                type="bar",
                name=label,
                y=list(table.index),
                x=table[label],
                orientation="h",
                marker=dict(color=colour(label)),
                text=table[label].where(table[label] > 0),
                textposition="inside",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed", showgrid=False)
    return style(fig, title, x_title="calls", height=int(160 + 48 * len(table.index)))
