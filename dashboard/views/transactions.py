"""25 · Transactions: why placements were cancelled (which item of which transaction, and the reason), then every
action's outcomes: the separate-writes variant makes no transaction, so it shows only the latter."""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.figures.actions import ActionOutcomes, action_outcomes
from dashboard.figures.cancellations import Cancellations, cancellation_heatmap, transactional
from dashboard.views.base import Ask, View
from engine.patterns.transactions import Transactions


def draw(ask: Ask) -> list[go.Figure]:
    if transactional(ask.calls):
        return [cancellation_heatmap(ask.calls), action_outcomes(ask.calls)]
    return [action_outcomes(ask.calls)]


VIEW = View(pattern=Transactions.name, aggregates=(Cancellations, ActionOutcomes), draw=draw)
