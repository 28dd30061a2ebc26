"""29 · Distributed locking: a lease Gantt. Holder bars per client (fencing token inside), heartbeats, expiries,
takeovers, refused zombie releases, and the protected writes: landed, refused by the token, or stale and landed.

A lease ends at its release when that came first, else at its expiry (expiresAt placed on the call's own clock:
invoke + (expiresAt - now)), which heartbeats move; an acquisition made once the previous lease expired is a
takeover.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import Calls, agg, count, empty, figure, style
from dashboard.figures.figure import lanes as count_lanes
from dashboard.figures.palette import CCF, COLOURS, FLAG_COLOUR, INFO, SAFE_COLOUR
from dashboard.state.aggregates import Aggregate, Rows
from dashboard.state.frames import detail_fields, strings, where
from dashboard.state.verdicts import Invariants, flagged_calls
from dashboard.text.words import client_name, plural
from dashboard.views.base import Ask, View
from engine.patterns.distributed_locking import (
    ACQUIRE,
    DETAIL_EXPIRES_AT,
    DETAIL_HOLD,
    DETAIL_NOW,
    DETAIL_PAUSED,
    DETAIL_TOKEN,
    HEARTBEAT,
    RELEASE,
    WRITE,
    DistributedLocking,
)


@dataclass(frozen=True)
class Leases:
    holds: pd.DataFrame  # client, hold, token, start, end, ended ("released" | "expired" | "open"), takeover, seq
    events: pd.DataFrame  # client, t, kind, seq, token: heartbeat, expiry, refused-release, write-*, ...


class LeaseEvents(Aggregate):
    """Leases and lock events, from the lock calls in arrival order."""

    def __init__(self) -> None:
        self.leases: dict[tuple[int, float], dict[str, Any]] = {}
        self.events: list[tuple[int, float, str | None, int, float, str, float]] = []

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        lock = frame[where(frame["action"], [ACQUIRE, HEARTBEAT, RELEASE, WRITE])]
        if lock.empty:
            return
        acts, outs = strings(lock["action"]), strings(lock["outcome"])
        hold, token, now, expires, paused = detail_fields(
            lock, DETAIL_HOLD, DETAIL_TOKEN, DETAIL_NOW, DETAIL_EXPIRES_AT, DETAIL_PAUSED
        )
        leases, events = self.leases, self.events
        for i, (client, seq, start, end, act, out) in enumerate(
            zip(
                lock["client"].tolist(),
                lock["seq"].tolist(),
                lock["start_s"].tolist(),
                lock["end_s"].tolist(),
                acts,
                outs,
            )
        ):
            key = (client, hold[i])
            lease_end = start + (expires[i] - now[i]) / 1000 if not np.isnan(expires[i]) else np.nan
            if act == ACQUIRE and out == "ok":
                leases[key] = {
                    "client": client,
                    "hold": hold[i],
                    "token": token[i],
                    "start": end,
                    "expiry": lease_end,
                    "release": np.nan,
                    "seq": seq,
                }
            elif act == HEARTBEAT:
                if out == "ok" and key in leases:
                    leases[key]["expiry"] = max(leases[key]["expiry"], lease_end)
                    events.append((client, end, "heartbeat", seq, token[i], out, paused[i]))
                elif out != "ok":
                    events.append((client, end, "heartbeat refused", seq, token[i], out, paused[i]))
            elif act == RELEASE:
                if out == "ok" and key in leases:
                    leases[key]["release"] = start
                elif out == "fail":
                    events.append((client, end, "zombie release refused", seq, token[i], out, paused[i]))
            elif act == WRITE:
                events.append((client, end, None, seq, token[i], out, paused[i]))  # its kind needs the verdicts

    def timeline(self, flagged: Iterable[int] = ()) -> Leases:
        flagged = set(flagged)
        hold_cols = ["client", "hold", "token", "start", "end", "ended", "takeover", "seq"]
        event_cols = ["client", "t", "kind", "seq", "token"]
        if not self.leases and not self.events:
            return Leases(pd.DataFrame(columns=hold_cols), pd.DataFrame(columns=event_cols))
        events = []
        for client, t, kind, seq, token, out, paused in self.events:
            if kind is None:
                if seq in flagged and out == "ok":
                    kind = "stale write landed"
                elif out == "fail":
                    kind = "stale write refused (fencing token)"
                elif out == "ok":
                    kind = "write after pause" if paused > 0 else "write"
                else:
                    kind = "write (unknown)"
            events.append((client, t, kind, seq, token))
        return close_leases(self.leases.values(), events, hold_cols, event_cols)


def close_leases(leases: Any, events: list[Any], hold_cols: list[str], event_cols: list[str]) -> Leases:
    """Each lease ends at its release or its expiry, whichever came first; an expiry followed by another
    holder's start is a takeover."""
    rows = []
    for lease in sorted(leases, key=lambda x: x["start"]):
        release, expiry = lease["release"], lease["expiry"]
        if not np.isnan(release) and (np.isnan(expiry) or release <= expiry):
            end, ended = release, "released"
        elif not np.isnan(expiry):
            end, ended = expiry, "expired"
            events.append((lease["client"], expiry, "lease expired", lease["seq"], lease["token"]))
        else:
            end, ended = lease["start"], "open"
        rows.append(
            {
                "client": lease["client"],
                "hold": lease["hold"],
                "token": lease["token"],
                "start": lease["start"],
                "end": end,
                "ended": ended,
                "seq": lease["seq"],
            }
        )
    holds = pd.DataFrame(rows, columns=[c for c in hold_cols if c != "takeover"])
    prev_expired = holds["ended"].shift(1).eq("expired") & (holds["start"] >= holds["end"].shift(1) - 1e-9)
    holds["takeover"] = prev_expired.to_numpy(dtype=bool)
    return Leases(holds[hold_cols], pd.DataFrame(events, columns=event_cols).sort_values("t", kind="stable"))


_LEASE_EVENTS = {
    "heartbeat": ("line-ns-open", "#0D47A1", 16),
    "heartbeat refused": ("line-ns-open", COLOURS[CCF], 16),
    "lease expired": ("x-thin-open", "#424242", 16),
    "zombie release refused": ("square-x-open", "#4E342E", 15),
    "write": ("circle", SAFE_COLOUR, 9),
    "write after pause": ("circle-open", SAFE_COLOUR, 12),
    "write (unknown)": ("circle", COLOURS[INFO], 9),
    "stale write refused (fencing token)": ("triangle-down", COLOURS[CCF], 15),
    "stale write landed": ("x", FLAG_COLOUR, 16),
}


def lease_gantt(
    calls: Calls,
    invariants: Invariants = (),
    *,
    x_range: Sequence[float] | None = None,
    title: str = "Lease Gantt: who held the lock when",
    lanes: int | None = None,
) -> go.Figure:
    """Holder bars per client (fencing token inside), heartbeats, expiries, takeovers, refused zombie releases,
    and the protected writes: landed, refused by the token, or stale and landed."""
    leases = agg(calls, LeaseEvents).timeline(flagged_calls(invariants))
    if leases.holds.empty:
        if leases.events.empty:
            return empty(title, "No lease acquired yet" if count(calls) else "No calls yet")
    holds, events = leases.holds, leases.events
    fig = figure()
    for ended, colour, pattern, label in (
        ("released", "#1565C0", "", "held, then released"),
        ("expired", "#90A4AE", "/", "held until the lease expired"),
        ("open", "#1565C0", ".", "held (no end recorded)"),
    ):
        rows = holds[holds["ended"] == ended]
        if rows.empty:
            continue
        hover = [
            f"{client_name(c)} hold {int(h) + 1}"
            + ("" if np.isnan(t) else f", fencing token {int(t)}")
            + f"<br>{a:.3f} → {b:.3f} s ({ended})"
            + ("<br><b>takeover of an expired lease</b>" if tk else "")
            for c, h, t, a, b, tk in zip(
                rows["client"], rows["hold"], rows["token"], rows["start"], rows["end"], rows["takeover"]
            )
        ]
        fig.add_trace(
            dict(
                type="bar",
                name=label,
                orientation="h",
                y=rows["client"],
                base=rows["start"],
                x=(rows["end"] - rows["start"]).clip(lower=0),
                width=0.6,
                marker=dict(color=colour, pattern=dict(shape=pattern, fgcolor="#546E7A"), line=dict(width=0)),
                customdata=hover,
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    tokens = holds[holds["token"].notna()]
    if len(tokens):  # the fencing token over the start of each lease
        fig.add_trace(
            dict(
                type="scatter",
                name="fencing token",
                mode="text",
                showlegend=False,
                x=tokens["start"],
                y=tokens["client"] - 0.42,
                text=[f"t{int(t)}" for t in tokens["token"]],
                textposition="middle right",
                textfont=dict(size=13, color="#0D47A1"),
                hoverinfo="skip",
            )
        )
    takeovers = holds[holds["takeover"]]
    if len(takeovers):
        fig.add_trace(
            dict(
                type="scatter",
                name="takeover after expiry",
                mode="markers",
                x=takeovers["start"],
                y=takeovers["client"],
                marker=dict(symbol="star", size=16, color="#6A1B9A"),
                hovertemplate="takeover at %{x:.3f} s<extra></extra>",
            )
        )
    for kind, (symbol, colour, size) in _LEASE_EVENTS.items():
        rows = events[events["kind"] == kind]
        if rows.empty:
            continue
        fig.add_trace(
            dict(
                type="scatter",
                name=kind,
                mode="markers",
                x=rows["t"],
                y=rows["client"],
                marker=dict(symbol=symbol, size=size, color=colour, line=dict(width=2, color=colour)),
                customdata=[
                    f"#{s} {client_name(c)} {kind}" + ("" if np.isnan(t) else f" (token {int(t)})")
                    for s, c, t in zip(rows["seq"], rows["client"], rows["token"])
                ],
                hovertemplate="%{customdata}<br>at %{x:.3f} s<extra></extra>",
            )
        )
    n_lanes = lanes or count_lanes(calls)
    fig.update_layout(barmode="overlay")
    fig.update_yaxes(
        autorange=False,
        range=[n_lanes - 0.5, -0.5],
        title_text="client",
        showgrid=False,
        tickmode="array",
        tickvals=list(range(n_lanes)) if n_lanes <= 24 else None,
        ticktext=[str(i) for i in range(n_lanes)] if n_lanes <= 24 else None,  # as on the timeline
    )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    kinds = events["kind"].value_counts()
    sub = (
        f"{plural(len(holds), 'lease')} · {int((holds['ended'] == 'expired').sum())} expired · "
        f"{plural(len(takeovers), 'takeover')} · "
        f"{plural(int(kinds.get('zombie release refused', 0)), 'zombie release')} refused · "
        f"stale writes: {int(kinds.get('stale write refused (fencing token)', 0))} refused, "
        f"{int(kinds.get('stale write landed', 0))} landed"
    )
    return style(
        fig,
        title,
        subtitle=sub,
        x_title="seconds",
        height=int(min(900, max(340, 170 + 30 * n_lanes))),
        meta={
            "leases": len(holds),
            "expired": int((holds["ended"] == "expired").sum()),
            "takeovers": len(takeovers),
            "stale_landed": int(kinds.get("stale write landed", 0)),
            "stale_refused": int(kinds.get("stale write refused (fencing token)", 0)),
            "zombie_refused": int(kinds.get("zombie release refused", 0)),
        },
    )


def draw(ask: Ask) -> list[go.Figure]:
    return [lease_gantt(ask.calls, ask.invariants, x_range=ask.x_range, lanes=ask.lanes)]


VIEW = View(
    pattern=DistributedLocking.name,
    aggregates=(LeaseEvents,),
    draw=draw,
    detail_fields=(DETAIL_HOLD, DETAIL_TOKEN, DETAIL_NOW, DETAIL_EXPIRES_AT, DETAIL_PAUSED),
)
