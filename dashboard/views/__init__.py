"""One module per pattern: what that pattern shows (its aggregates, its figures, their captions), registered by
the pattern's name. Found by scanning this package, as the engine finds its patterns, so adding a pattern's view
is adding a file; tests/dashboard/test_views.py checks that every pattern has one and every one has a pattern."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.actions import ActionOutcomes, action_outcomes
from dashboard.figures.figure import Calls
from dashboard.figures.timebins import TimeBins
from dashboard.figures.timeline_sample import TimelineSample
from dashboard.state.aggregates import Aggregate
from dashboard.state.verdicts import Invariants
from dashboard.views.base import Ask, View

__all__ = ["Ask", "View", "aggregates_for", "all_views", "detail_fields", "pattern_views", "view_for"]

_NOT_VIEWS = {"base"}


def _calls_by_action(ask: Ask) -> list[go.Figure]:
    return [action_outcomes(ask.calls)]


# For a history whose pattern this dashboard does not know (an imported file from another version).
UNKNOWN = View(pattern="", aggregates=(ActionOutcomes,), draw=_calls_by_action)


@cache
def all_views() -> dict[str, View]:
    """Pattern name -> its view, as each module of this package declares it (`VIEW`)."""
    found: dict[str, View] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name in _NOT_VIEWS or module.name.startswith("_"):
            continue
        view = getattr(importlib.import_module(f"{__name__}.{module.name}"), "VIEW", None)
        if not isinstance(view, View):
            raise TypeError(f"dashboard/views/{module.name}.py declares no VIEW: give it one (see CONTRIBUTING)")
        found[view.pattern] = view
    return found


def view_for(pattern: str) -> View:
    return all_views().get(pattern, UNKNOWN)


def aggregates_for(pattern: str) -> tuple[type[Aggregate], ...]:
    """What the Run page's charts of this pattern draw from: the generic charts' and its view's."""
    return (TimeBins, TimelineSample, *view_for(pattern).aggregates)


@cache
def detail_fields() -> tuple[str, ...]:
    """Every numeric detail field some view reads (a finished run's frame carries them as columns)."""
    return tuple(dict.fromkeys(name for view in all_views().values() for name in view.detail_fields))


def pattern_views(
    pattern: str,
    calls: Calls,
    invariants: Invariants = (),
    options: Mapping[str, Any] | None = None,
    *,
    x_range: Sequence[float] | None = None,
    lanes: int | None = None,
) -> list[go.Figure]:
    """The per-pattern figures of the Run and Compare pages, most telling first."""
    ask = Ask(calls=calls, invariants=invariants, options=options, x_range=x_range, lanes=lanes)
    return view_for(pattern).draw(ask)
