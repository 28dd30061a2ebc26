"""26 · Unique constraints: email claims made, refused because the sentinel said taken, GSI checks that said taken,
the shared-email verdict's two counts (takes of a held email during the run, users sharing one at the end: a bar
each) and what the table held at the end (sentinels, orphan sentinels)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.cancellations import Cancellations, cancellation_heatmap, transactional
from dashboard.figures.figure import Calls, agg, count, empty, figure, style
from dashboard.figures.palette import CCF, COLOURS, INFO, RACY_COLOUR, SAFE_COLOUR
from dashboard.state.aggregates import Aggregate, Rows
from dashboard.state.frames import details, strings, where
from dashboard.state.verdicts import Invariants, invariant, observed
from dashboard.views.base import Ask, View
from engine.patterns.unique_constraints import (
    CHANGE_EMAIL,
    CHECK_EMAIL,
    DETAIL_TAKEN,
    NO_ORPHAN_SENTINEL,
    NO_SHARED_EMAIL,
    ONE_SENTINEL_PER_EMAIL,
    SENTINEL_ITEM,
    SIGN_UP,
    UniqueConstraints,
    shared_counts,
)

# The shared-email verdict's two counts, a bar each: writes that took an email another user held during the run,
# and extra users sharing one at the end (users move on, so either can be zero while the other is not).
TAKEN = "took a held email (during the run)"
SHARING = "extra users sharing one (at the end)"
# Its violations (the larger of the two), for a verdict whose counts cannot be read apart.
SHARED = "took a held email (run) or shared it (end)"
VERDICT_BARS = (TAKEN, SHARING, SHARED)


class Claims(Aggregate):
    """Email claims: acknowledged, refused (taken or other), GSI checks that said taken, unknown."""

    def __init__(self) -> None:
        self.acked = self.refused_taken = self.failed = self.seen_taken = self.unknown = 0
        self.n = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        self.n += len(frame)
        outcome = strings(frame["outcome"])
        writes = where(frame["action"], [SIGN_UP, CHANGE_EMAIL])
        failed = frame[writes & (outcome == "fail")]
        # The sentinel Put is item 2 of both transactions (sign-up and change-email): its reason says "taken".
        self.refused_taken += sum(
            1
            for d in details(failed)
            if len(d.get("reasons") or []) > SENTINEL_ITEM
            and str(d["reasons"][SENTINEL_ITEM]).startswith("ConditionalCheck")
        )
        self.failed += len(failed)
        self.seen_taken += sum(1 for d in details(frame[where(frame["action"], [CHECK_EMAIL])]) if d.get(DETAIL_TAKEN))
        self.acked += int((writes & (outcome == "ok")).sum())
        self.unknown += int((writes & (outcome == "info")).sum())

    def facts(self, invariants: Invariants = ()) -> dict[str, int | None]:
        """The claims, and what the verdicts read back from the table (None while the run goes)."""
        return {
            "claims acknowledged": self.acked,
            "refused: email taken": self.refused_taken,
            "refused: other": self.failed - self.refused_taken,
            "GSI check said taken": self.seen_taken,
            "unknown outcome": self.unknown,
            **shared_facts(invariant(invariants, NO_SHARED_EMAIL)),
            "sentinels": observed(invariants, ONE_SENTINEL_PER_EMAIL),
            "orphan sentinels": observed(invariants, NO_ORPHAN_SENTINEL),
        }


def shared_facts(verdict: Mapping[str, Any] | None) -> dict[str, int | None]:
    """The shared-email verdict's bars: its two counts, each None when the verdict does not give it (a file from
    before takes were judged has only the end's); its violations alone when neither can be read (never a guess)."""
    if verdict is None:
        return {TAKEN: None, SHARING: None, SHARED: None}  # judged when the run ends
    takes, sharing = shared_counts(verdict)
    if takes is None and sharing is None:
        return {TAKEN: None, SHARING: None, SHARED: int(verdict.get("violations") or 0)}
    return {TAKEN: takes, SHARING: sharing, SHARED: None}


def unique_view(
    calls: Calls, invariants: Invariants = (), *, title: str = "Email claims: sentinels and duplicates"
) -> go.Figure:
    facts = agg(calls, Claims).facts(invariants)
    shown = {k: v for k, v in facts.items() if v is not None and (v or k in (*VERDICT_BARS, "claims acknowledged"))}
    if not any(shown.values()) and not count(calls):
        return empty(title, "No claims yet")
    bad = {*VERDICT_BARS, "orphan sentinels"}
    colours = [
        RACY_COLOUR
        if k in bad and v
        else COLOURS[CCF]
        if k.startswith("refused") or k.startswith("GSI")
        else COLOURS[INFO]
        if k.startswith("unknown")
        else SAFE_COLOUR
        for k, v in shown.items()
    ]
    fig = figure()
    fig.add_trace(
        dict(
            type="bar",
            x=list(shown.values()),
            y=list(shown.keys()),
            orientation="h",
            marker=dict(color=colours),
            text=[f"{v:,}" for v in shown.values()],
            textposition="auto",
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    sub = shared_caption(invariant(invariants, NO_SHARED_EMAIL))
    return style(
        fig,
        title,
        subtitle=sub,
        x_title="count",
        legend=False,
        height=int(150 + 50 * len(shown)),
        meta={k: v for k, v in facts.items()},
    )


def shared_caption(verdict: Mapping[str, Any] | None) -> str:
    """What the shared-email verdict counted, in its own words: takes during the run and/or sharing at the end."""
    if verdict is None:
        return "shared emails are judged when the run ends"
    if not verdict.get("violations"):
        return str(verdict.get("explanation") or "no user took an email another user held")
    # observed names both counts ("N takes of a held email during the run; M extra users ... at the end"); a file
    # recorded before takes were judged says only the end ("M extra users on K emails").
    # The emails and users in its parentheses are in the run's headline; here they ran off a half-width chart.
    seen = str(verdict.get("observed") or "").split(" (", 1)[0]
    if not seen:
        return str(verdict["explanation"])
    takes, _ = shared_counts(verdict)
    unjudged = "; takes during the run not judged (recorded before they were)" if takes is None else ""
    return f"shared email: {seen}{unjudged}"


def draw(ask: Ask) -> list[go.Figure]:
    claims = unique_view(ask.calls, ask.invariants)
    return [claims, cancellation_heatmap(ask.calls)] if transactional(ask.calls) else [claims]


VIEW = View(pattern=UniqueConstraints.name, aggregates=(Claims, Cancellations), draw=draw)
