"""Replay a finished or imported run in place: the history cut at an instant `t` (every call that had completed by
then), drawn by the same charts, counters and pattern views as the run itself, with play, pause, a speed and a
time scrubber. Needs no DynamoDB: everything comes from the recorded history.

The cut is a prefix of the history (calls keep their seq, so the invariants' evidence still points at them): the
longest run of recorded calls that had all completed by `t`. Calls are recorded as they complete, so that is every
call completed by `t`, give or take the few a client process ships late.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.state.records import RunRecord, Source
from dashboard.text.plain import plain
from dashboard.text.words import plural
from engine.record.history import Call, History

# Slow motion too: the recorded demos last a second or a few, and a stale write lands in a few milliseconds.
SPEEDS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20)
TICK_S = 0.5  # how often a playing replay redraws
STEPS = 200  # positions of the scrubber


def completion_front(history: History) -> np.ndarray:
    """For each prefix length i+1, when its last call had completed (seconds from the run's start): the running
    maximum of completion times, so prefix_length() is a binary search."""
    ends = history.snapshot()["end_s"].to_numpy()
    return np.maximum.accumulate(ends) if len(ends) else ends


def prefix_length(front: np.ndarray, t: float) -> int:
    """How many calls (a prefix of the history) had all completed by `t`."""
    return int(np.searchsorted(front, t, side="right"))


class HistoryPrefix(History):
    """The first `n` calls of a History, read in place: a replay's cut copies nothing. Read-only; `grow` moves
    its end forward, bringing its counters up to date with the calls it adds (work in proportion to them)."""

    def __init__(self, source: History, n: int = 0) -> None:  # no History.__init__: every read goes to source
        self.source = source
        self.t0_ns = source.t0_ns
        self.n = 0
        self._totals: dict[str, Any] = {"ok": 0, "fail": 0, "info": 0, "retries": 0}
        self._error_names: Counter[str] = Counter()
        self._refusals: Counter[tuple[str, str]] = Counter()
        self.grow(n)

    def grow(self, n: int) -> None:
        n = min(n, len(self.source))
        if n <= self.n:
            return
        rows = self.source.snapshot(self.n, n)
        for outcome, count in rows["outcome"].value_counts().items():
            self._totals[str(outcome)] += int(count)
        self._totals["retries"] += int(rows["retries"].sum())
        refused = rows[(rows["error"] != "").to_numpy()]
        details = self.source.details(refused["seq"].tolist())
        for action, error, detail in zip(refused["action"].astype(str), refused["error"].astype(str), details):
            self._error_names[error] += 1  # as History.append counts them
            collided = bool(detail) and "TransactionConflict" in detail.get("reasons", ())
            self._refusals[(action, "TransactionConflict" if collided else error)] += 1
        self.n = n

    def __len__(self) -> int:
        return self.n

    def counts(self) -> dict[str, Any]:
        t = self._totals
        return {
            "calls": t["ok"] + t["fail"] + t["info"],
            **{k: t[k] for k in ("ok", "fail", "info")},
            "errors": dict(self._error_names),
            "refusals": dict(self._refusals),
            "retries": t["retries"],
        }

    def call(self, i: int) -> Call:
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.source.call(i)

    def details(self, rows: Iterable[int]) -> list[Mapping[str, Any]]:
        return self.source.details(rows)

    def snapshot(
        self, start: int = 0, stop: int | None = None, *, detail: bool = False, requests: bool = False
    ) -> pd.DataFrame:
        stop = self.n if stop is None else min(stop, self.n)
        return self.source.snapshot(start, stop, detail=detail, requests=requests)


def prefix_history(history: History, n: int) -> History:
    """The first `n` calls of `history`, on the same clock (read in place)."""
    return HistoryPrefix(history, n)


def as_of(invariants: Sequence[Mapping[str, Any]], n: int, total: int) -> list[dict[str, Any]]:
    """The invariants as of the first `n` of `total` calls: at the end, the final verdicts; before it, each
    keeps only the evidence (calls) that had happened, and its verdict is marked not yet known (`as_of`)."""
    if n >= total:
        return [dict(inv) for inv in invariants]
    out = []
    for inv in invariants:
        calls = [int(s) for s in inv.get("calls") or () if int(s) < n]
        out.append({**inv, "calls": calls, "calls_so_far": len(calls), "as_of": True})
    return out


def replay_record(record: RunRecord, n: int, t: float) -> RunRecord:
    """`record` as it stood once its first `n` calls had completed, at `t` seconds: an imported-like record the
    run page's panels draw as they draw any other."""
    return _cut_record(record, HistoryPrefix(record.history, n), t)


def _cut_record(record: RunRecord, prefix: HistoryPrefix, t: float, view: Any = None) -> RunRecord:
    n, total = len(prefix), len(record.history)
    summary = dict(record.summary() or {})
    summary["invariants"] = as_of(record.invariants(), n, total)
    summary["duration_s"] = t if n < total else summary.get("duration_s") or t
    summary["state"] = "replay" if n < total else (record.state if record.state != "imported" else "done")
    return dataclasses.replace(
        record,
        id=f"{record.id}@{n}",
        source=Source.IMPORTED,
        run=None,
        history=prefix,
        imported_summary=summary,
        _summary=None,
        _frames=None,
        _view=view,
    )


class Replayer:
    """One run replayed in one session: the cut at an instant, found by a binary search of the completion front,
    its aggregates grown in place when the instant moves forward (work in proportion to the calls it adds: a
    playing replay's tick) and rebuilt when it moves back (in proportion to the calls shown)."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self.front = completion_front(record.history)
        self.end = float(self.front[-1]) if len(self.front) else 0.0
        self._restart()

    def _restart(self) -> None:
        self.prefix = HistoryPrefix(self.record.history)
        self.view: Any = None
        self.shown: tuple[int, RunRecord] | None = None

    def at(self, t: float) -> RunRecord:
        n = prefix_length(self.front, t)
        if self.shown is not None and self.shown[0] == n:
            return self.shown[1]  # a paused replay redraws the same cut
        if n < self.prefix.n:
            self._restart()
        self.prefix.grow(n)
        shown = _cut_record(self.record, self.prefix, t, self.view)
        if self.view is None:
            self.view = shown.view()  # built once from the calls shown, then grown
        self.shown = (n, shown)
        return shown


# -- the controls ---------------------------------------------------------------------------------------------------


class Clock:
    """Where a replay stands and whether it plays, kept in the session under `key`."""

    def __init__(self, key: str, end: float) -> None:
        self.key = key
        self.end = max(end, 1e-3)
        state = st.session_state.setdefault(f"{key}-clock", {"playing": False, "wall": 0.0})
        self.state: dict[str, Any] = state

    @property
    def t_key(self) -> str:
        return f"{self.key}-t"

    @property
    def t(self) -> float:
        """The scrubbed instant; within half a step of the end it is the end (the slider's last step may stop a
        float's hair short of it, which would leave out the last call)."""
        t = float(st.session_state.get(self.t_key, self.end))
        return self.end if t >= self.end - self.step / 2 else t

    @property
    def step(self) -> float:
        return max(self.end / STEPS, 1e-3)

    @property
    def playing(self) -> bool:
        return bool(self.state["playing"])

    def play(self) -> None:
        if self.t >= self.end:
            st.session_state[self.t_key] = 0.0  # played to the end: Play starts again
        self.state.update(playing=True, wall=time.monotonic())

    def pause(self) -> None:
        self.state["playing"] = False

    def tick(self, speed: float) -> bool:
        """Advance by the wall time since the last tick × speed; False once the end is reached (and paused)."""
        now = time.monotonic()
        t = min(self.end, self.t + (now - float(self.state["wall"])) * speed)
        self.state["wall"] = now
        st.session_state[self.t_key] = t  # unrounded: rounding up could pass the slider's end
        if t >= self.end:
            self.pause()
            return False
        return True


def replayer(record: RunRecord, key: str) -> Replayer:
    """This session's Replayer of `record` under `key`; the last few are kept (each holds its cut's aggregates)."""
    kept: dict[str, Replayer] = st.session_state.setdefault("replayers", {})
    name = f"{key}-{record.id}"
    found = kept.pop(name, None)
    if found is None or found.record is not record or len(record.history) != len(found.front):
        found = Replayer(record)
    kept[name] = found  # the most recent last
    while len(kept) > 4:
        kept.pop(next(iter(kept)))
    return found


def replay_toggle(key: str, where: Any = None) -> bool:
    """The Replay toggle, in the page (or in `where`: presenter view puts it beside Start and Stop)."""
    return (where or st).toggle(
        "Replay",
        key=f"{key}-replay-on",
        help="watch this run happen again from its recorded history: play, pause, speed and a time scrubber",
    )


def replay_view(record: RunRecord, key: str, draw: Any, *, compact: bool = False) -> None:
    """Play/pause, speed and a time scrubber over `record`; `draw(cut_record, key, x_range)` draws the run as it
    stood at the scrubbed instant (every chart, counter and card the run page shows). `compact`: the controls and
    what they show on one row (presenter view)."""
    _replay([record], key, lambda cuts, k, x: draw(cuts[0], k, x), compact=compact)


def replay_pair(records: Sequence[RunRecord], key: str, draw: Any, *, compact: bool = False) -> None:
    """A Compare pair replayed on one clock (the longer run's span): `draw(cut_records, key, x_range)`."""
    _replay(records, key, draw, compact=compact)


def _replay(records: Sequence[RunRecord], key: str, draw: Any, *, compact: bool) -> None:
    replayers = [replayer(r, key) for r in records]
    end = max((r.end for r in replayers), default=0.0)
    clock = Clock(f"{key}-replay", end)
    # A replay opens at the start; a value kept from a longer run of the same key is brought into range.
    st.session_state[clock.t_key] = min(max(float(st.session_state.get(clock.t_key, 0.0)), 0.0), clock.end)
    speed_key = f"{key}-replay-speed" + ("-compact" if compact else "")  # a picker of another kind
    if not compact:
        st.segmented_control("Speed", SPEEDS, default=1, format_func=lambda s: f"{s:g}×", key=speed_key)

    def frame() -> None:
        speed = float(st.session_state.get(speed_key) or 1)
        if clock.playing and not clock.tick(speed):
            st.rerun()  # reached the end: one full rerun drops the timer
        t = clock.t
        cuts = [r.at(t) for r in replayers]
        if len(records) == 1:
            calls = f"{len(cuts[0].history):,} of {plural(len(records[0].history), 'call')} completed"
        else:
            calls = " · ".join(
                f"{plain(r.variant)}: {len(c.history):,} of {plural(len(r.history), 'call')}"
                for r, c in zip(records, cuts)
            )
        where = f"Replay at t = {t:.2f} s of {end:.2f} s: {calls} · {'playing' if clock.playing else 'paused'}"
        if compact:
            _controls(clock, key, label=f"{where} at {speed:g}×", speed_key=speed_key)
        else:
            _controls(clock, key)
            st.caption(f"{where} at {speed:g}×")
        draw(cuts, f"{key}-replay", (0.0, end * 1.02))

    st.fragment(frame, run_every=TICK_S if clock.playing else None)()


def _controls(clock: Clock, key: str, *, label: str = "Replay time (s)", speed_key: str | None = None) -> None:
    """Play or Pause, and the scrubber (disabled while playing); with a `speed_key`, a speed picker between them
    (compact: one row, the scrubber's label saying where the replay stands)."""
    if speed_key is None:
        c1, c2 = st.columns([1, 6], vertical_alignment="bottom")
    else:
        c1, speed, c2 = st.columns([1, 1, 8], vertical_alignment="bottom")
        speed.selectbox("Speed", SPEEDS, index=SPEEDS.index(1), format_func=lambda s: f"{s:g}×", key=speed_key)
    if clock.playing:
        if c1.button("Pause", icon=":material/pause:", key=f"{key}-replay-pause", width="stretch"):
            clock.pause()
            st.rerun()
    elif c1.button("Play", icon=":material/play_arrow:", key=f"{key}-replay-play", width="stretch"):
        clock.play()
        st.rerun()
    c2.slider(
        label,
        min_value=0.0,
        max_value=clock.end,
        step=clock.step,
        format="%.2f s",
        key=clock.t_key,
        disabled=clock.playing,
    )
