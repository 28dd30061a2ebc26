"""27 · Idempotency keys: logical requests and sends against the charges made, extra charges called out, and the
replays, in-progress refusals and takeovers that kept a retried charge from happening twice."""

from __future__ import annotations

from collections import defaultdict

import plotly.graph_objects as go

from dashboard.figures.figure import Calls, agg, empty, figure, style
from dashboard.figures.palette import COLOURS, INFO, RACY_COLOUR, SAFE_COLOUR
from dashboard.state.aggregates import Aggregate, Rows
from dashboard.state.frames import details, strings, where
from dashboard.state.verdicts import Invariants
from dashboard.text.words import plural
from dashboard.views.base import Ask, View
from engine.patterns.idempotency_keys import (
    CHARGE_CARD,
    CLAIM,
    DETAIL_ATTEMPT,
    DETAIL_CHARGE,
    DETAIL_RECORD,
    DETAIL_REPLY,
    DETAIL_REQUEST,
    DETAIL_REUSE,
    DETAIL_TOLD,
    READ_RECORD,
    RECLAIM,
    IdempotencyKeys,
)


class Charges(Aggregate):
    """Logical requests, sends, charges made per request, replays and refusals."""

    def __init__(self) -> None:
        self.requests: set[str] = set()
        self.sends: set[tuple[int, str, int]] = set()
        self.charges: dict[str, set[str]] = defaultdict(set)
        self.replays = self.waits = self.refused = self.reclaims = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        interesting = where(frame["action"], [CLAIM, CHARGE_CARD, READ_RECORD, RECLAIM])
        if not interesting.any():
            return
        sub = frame[interesting]
        for client, action, out, d in zip(
            sub["client"].tolist(), strings(sub["action"]), strings(sub["outcome"]), details(sub)
        ):
            request = d.get(DETAIL_REQUEST)
            if request is None:
                continue
            if not d.get(DETAIL_REUSE):
                self.requests.add(request)
            if action in (CLAIM, CHARGE_CARD):
                self.sends.add((client, request, int(d.get(DETAIL_ATTEMPT) or 0)))
            if action == CHARGE_CARD and out in ("ok", "info") and d.get(DETAIL_CHARGE) and not d.get(DETAIL_REUSE):
                self.charges[request].add(str(d[DETAIL_CHARGE]))
            elif action == READ_RECORD and out == "ok":
                if d.get(DETAIL_RECORD) == "completed" and d.get(DETAIL_REPLY):
                    self.replays += 1
                elif d.get(DETAIL_TOLD) == "wait":
                    self.waits += 1
                elif d.get(DETAIL_REPLY) == "refused":
                    self.refused += 1
            elif action == RECLAIM and out == "ok":
                self.reclaims += 1

    def facts(self) -> dict[str, int]:
        made = sum(len(c) for c in self.charges.values())
        return {
            "logical requests": len(self.requests),
            "sends (retries and duplicates included)": len(self.sends),
            "charges made": made,
            "extra charges": made - len(self.charges),
            "replays of a stored reply": self.replays,
            "in-progress refusals (retry later)": self.waits,
            "key reused with another amount: refused": self.refused,
            "stuck claims taken over": self.reclaims,
        }


_IDEMPOTENCY_COLOURS = {
    "logical requests": "#455A64",
    "sends (retries and duplicates included)": "#78909C",
    "charges made": SAFE_COLOUR,
    "extra charges": RACY_COLOUR,
}


def idempotency_view(
    calls: Calls, invariants: Invariants = (), *, title: str = "Charges requested vs made"
) -> go.Figure:
    """Logical requests and sends against charges made; extra charges called out; replays and refusals."""
    facts = agg(calls, Charges).facts()
    if not facts["logical requests"]:
        return empty(title, "No requests yet")
    names = list(facts)
    values = [facts[n] for n in names]
    colours = [_IDEMPOTENCY_COLOURS.get(n, COLOURS[INFO]) for n in names]
    if not facts["extra charges"]:
        colours[names.index("extra charges")] = SAFE_COLOUR
    fig = figure()
    fig.add_trace(
        dict(
            type="bar",
            x=values,
            y=names,
            orientation="h",
            marker=dict(color=colours),
            text=[f"{v:,}" for v in values],
            textposition="outside",
            cliponaxis=False,
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(range=[0, max(values) * 1.2 or 1])
    extra = facts["extra charges"]
    sub = (
        f"{plural(extra, 'extra charge')}: retries and duplicate deliveries charged the card again"
        if extra
        else f"{plural(facts['charges made'], 'charge')} for {plural(facts['logical requests'], 'request')} sent "
        f"{plural(facts['sends (retries and duplicates included)'], 'time')}: each charged once"
    )
    return style(fig, title, subtitle=sub, legend=False, height=int(120 + 46 * len(names)), meta=facts)


def draw(ask: Ask) -> list[go.Figure]:
    return [idempotency_view(ask.calls, ask.invariants)]


VIEW = View(pattern=IdempotencyKeys.name, aggregates=(Charges,), draw=draw, detail_fields=(DETAIL_ATTEMPT,))
