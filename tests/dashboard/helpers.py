"""Recorded histories (tests/data) and a big synthetic one built from them, for chart tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from bench.dashboard.recorded import Repeated
from engine.record.history import Call, History, Outcome, read_jsonl

DATA = Path(__file__).resolve().parent.parent / "data"


def load(name: str) -> tuple[History, dict[str, Any]]:
    history, meta = read_jsonl(DATA / f"{name}.jsonl")
    return history, meta.get("summary") or {}


def frame(name: str):
    history, summary = load(name)
    return history.snapshot(detail=True, requests=True), summary


def scaled(name: str, n_calls: int) -> tuple[History, dict[str, Any]]:
    """`n_calls` calls made by repeating a recorded history later and later in time (seq keeps growing)."""
    recorded = Repeated(DATA / f"{name}.jsonl")
    return recorded.history(n_calls), recorded.summary


def call(
    client: int,
    action: str,
    op: str,
    t0: float,
    t1: float,
    outcome: str = "ok",
    error: str | None = None,
    key: str = "k",
    detail: dict[str, Any] | None = None,
    request: str | None = None,
) -> Call:
    return Call(
        client=client,
        action=action,
        op=op,
        key=key,
        invoke_ns=int(t0 * 1e9),
        complete_ns=int(t1 * 1e9),
        outcome=Outcome(outcome),
        error=error,
        detail=detail or {},
        request=request,
    )


def history_of(calls: list[Call]) -> History:
    h = History(t0_ns=0)
    h.extend(calls)
    return h


def growing(history: History, pattern: str, rng: Any, max_batch: int, each: Any = None, view_of: Any = None):
    """The calls of `history` arriving in random batches of 1..max_batch into a new History, and the run's view
    brought up to date after each batch (as a live page refreshes), then `each(view)` (a page drawing it).
    `view_of(view)` may first change the new view (e.g. smaller samples)."""
    from dashboard.state.records import _Frames
    from dashboard.state.runview import RunView
    from dashboard.views import aggregates_for

    calls = history.calls()
    live = History(t0_ns=history.t0_ns)
    view = RunView(live, _Frames(live).rows, aggregates_for(pattern))
    if view_of is not None:
        view_of(view)
    i = 0
    while i < len(calls):
        k = int(rng.integers(1, max_batch + 1))
        live.extend(calls[i : i + k])
        i += k
        view.update()
        if each is not None:
            each(view)
    return live, view


def valid(fig: go.Figure) -> go.Figure:
    """Charts are built unvalidated for speed; plotly's validators must accept every one of them."""
    assert isinstance(fig, go.Figure)
    go.Figure(fig.to_dict())
    return fig


def names(fig: go.Figure) -> list[str]:
    return [t.name for t in fig.data]
