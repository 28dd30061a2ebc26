"""Why transactions were cancelled: (call action, transaction item, reason) counts and their heatmap. Drawn by
every pattern whose writes are transactions."""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import Calls, agg, empty, figure, style
from dashboard.figures.palette import short_code
from dashboard.state.aggregates import Aggregate, Rows
from dashboard.state.frames import details, strings, where
from dashboard.state.runview import RunView
from dashboard.text.calls import text_or_none
from dashboard.text.words import plural

_TX_ITEM = re.compile(r"^\s{4}- (\w+)", re.MULTILINE)


def tx_item_kinds(request: str | None) -> list[str]:
    """The action kinds of a TransactWriteItems request in log format: ["Put", "Update", ...]."""
    return _TX_ITEM.findall(text_or_none(request) or "")


class Cancellations(Aggregate):
    """(call action, transaction item, reason) counts over cancelled transactions,
    and whether the run made any transaction at all."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.transactional = False
        self._kinds: dict[str | None, list[str]] = {}

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        self.transactional = self.transactional or bool(where(frame["op"], ["TransactWriteItems"]).any())
        if "detail" not in frame or "error" not in frame:
            return
        cancelled = frame[where(frame["error"], ["TransactionCanceledException"])]
        if cancelled.empty:
            return
        requests = cancelled["request"].tolist() if "request" in cancelled else [None] * len(cancelled)
        for action, d, request in zip(strings(cancelled["action"]), details(cancelled), requests):
            reasons = d.get("reasons")
            if not reasons:
                continue
            if request not in self._kinds:
                self._kinds[request] = tx_item_kinds(request)
            kinds = self._kinds[request]
            for i, reason in enumerate(reasons):
                if not reason or reason == "None":
                    continue
                item = f"item {i + 1}" + (f" ({kinds[i]})" if i < len(kinds) else "")
                self.counts[(action, item, short_code(str(reason)))] += 1

    def table(self) -> pd.DataFrame:
        cols = ["action", "item", "reason", "count"]
        if not self.counts:
            return pd.DataFrame(columns=cols)
        return (
            pd.DataFrame([(*k, v) for k, v in self.counts.items()], columns=cols)
            .sort_values(cols[:3])
            .reset_index(drop=True)
        )


def cancellation_heatmap(calls: Calls, *, title: str = "Cancellation reasons per action") -> go.Figure:
    """Action × reason heatmap over cancelled transactions: which item of which transaction failed, and why."""
    counts = agg(calls, Cancellations).table()
    if counts.empty:
        return empty(title, "No transaction was cancelled", height=220)
    counts["row"] = counts["action"] + " · " + counts["item"]
    table = counts.pivot_table(index="row", columns="reason", values="count", aggfunc="sum", fill_value=0)
    z = table.to_numpy()
    fig = figure()
    fig.add_trace(
        dict(
            type="heatmap",
            z=z,
            x=list(table.columns),
            y=list(table.index),
            colorscale="Oranges",
            text=z,
            texttemplate="%{text}",
            textfont=dict(size=18),
            zmin=0,  # with zmax: plotly ignores a zmin alone, and one column of 229 and 241 read as white and red
            zmax=max(int(z.max()), 1),
            hovertemplate="%{y}<br>%{x}: %{z}<extra></extra>",
            colorbar=dict(title="calls"),
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    # Reason names are long CamelCase words: rotated, plotly runs them into the title; two lines, level, below.
    fig.update_xaxes(
        showgrid=False,
        tickangle=0,
        tickmode="array",
        tickvals=list(table.columns),
        ticktext=[_two_lines(str(r)) for r in table.columns],
    )
    total = int(counts["count"].sum())
    return style(
        fig,
        title,
        subtitle=f"{plural(total, 'failing item')} in cancelled transactions (reasons 'None' left out)",
        height=int(200 + 55 * len(table.index)),
        legend=False,
        meta={"cells": int((z > 0).sum())},
    )


def _two_lines(reason: str) -> str:
    """A CamelCase reason split into two lines at the word boundary nearest its middle (TransactionConflict ->
    Transaction / Conflict); a single word stays as it is."""
    cuts = [i for i in range(1, len(reason)) if reason[i].isupper() and reason[i - 1].islower()]
    if not cuts:
        return reason
    cut = min(cuts, key=lambda i: abs(len(reason) - 2 * i))
    return f"{reason[:cut]}<br>{reason[cut:]}"


def transactional(calls: Calls) -> bool:
    """Whether the run made any transaction at all (a variant without them has no cancellation to show)."""
    if isinstance(calls, RunView):
        return calls.get(Cancellations).transactional
    return len(calls) > 0 and bool(where(calls["op"], ["TransactWriteItems"]).any())
