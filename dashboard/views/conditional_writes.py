"""22 · Conditional writes: which guarded writes went through and which a condition refused, per action."""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.figures.actions import ActionOutcomes, action_outcomes
from dashboard.views.base import Ask, View
from engine.patterns.conditional_writes import ConditionalWrites


def draw(ask: Ask) -> list[go.Figure]:
    return [action_outcomes(ask.calls)]


VIEW = View(pattern=ConditionalWrites.name, aggregates=(ActionOutcomes,), draw=draw)
