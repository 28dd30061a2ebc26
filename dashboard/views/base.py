"""What a pattern's view is: the pattern it belongs to, the aggregates its figures draw from, and the figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import plotly.graph_objects as go

from dashboard.figures.figure import Calls
from dashboard.state.aggregates import Aggregate
from dashboard.state.verdicts import Invariants


@dataclass(frozen=True, kw_only=True)
class Ask:
    """What a view is asked to draw: the calls, the verdicts (none while the run goes), the run's knobs, the
    x range shared with a neighbouring chart, and the number of client lanes."""

    calls: Calls
    invariants: Invariants = ()
    options: Mapping[str, Any] | None = None
    x_range: Sequence[float] | None = None
    lanes: int | None = None


class Draw(Protocol):
    def __call__(self, ask: Ask) -> list[go.Figure]: ...


@dataclass(frozen=True, kw_only=True)
class View:
    """One pattern's part of the Run and Compare pages, most telling figure first."""

    pattern: str  # the engine Pattern's name
    aggregates: tuple[type[Aggregate], ...]  # what `draw` reads from a live run (built as the calls arrive)
    draw: Draw
    detail_fields: tuple[str, ...] = ()  # numeric detail fields it reads, extracted once into a finished run's frame
