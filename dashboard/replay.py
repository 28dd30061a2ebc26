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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import streamlit as st

from dashboard.records import RunRecord, Source
from engine.history import History

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


def prefix_history(history: History, n: int) -> History:
    """A new History holding the first `n` calls of `history`, on the same clock."""
    cut = History(t0_ns=history.t0_ns)
    cut.extend(history.calls(range(min(n, len(history)))))
    return cut


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
    total = len(record.history)
    summary = dict(record.summary() or {})
    summary["invariants"] = as_of(record.invariants(), n, total)
    summary["duration_s"] = t if n < total else summary.get("duration_s") or t
    summary["state"] = "replay" if n < total else (record.state if record.state != "imported" else "done")
    return dataclasses.replace(
        record,
        id=f"{record.id}@{n}",
        source=Source.IMPORTED,
        run=None,
        history=prefix_history(record.history, n),
        imported_summary=summary,
        _summary=None,
        _frames=None,
        _view=None,
    )


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


_CUTS: dict[tuple[str, int, int], RunRecord] = {}  # the last few cuts drawn, shared by sessions (like the runs)
_FRONTS: dict[tuple[str, int], np.ndarray] = {}


def _front(record: RunRecord) -> np.ndarray:
    key = (record.id, len(record.history))
    if key not in _FRONTS:
        if len(_FRONTS) >= 16:
            _FRONTS.pop(next(iter(_FRONTS)))
        _FRONTS[key] = completion_front(record.history)
    return _FRONTS[key]


def cut(record: RunRecord, t: float) -> RunRecord:
    """The record at `t` (cached: a paused replay redraws the same cut)."""
    n = prefix_length(_front(record), t)
    key = (record.id, len(record.history), n)
    if key not in _CUTS:
        if len(_CUTS) >= 8:
            _CUTS.pop(next(iter(_CUTS)))
        _CUTS[key] = replay_record(record, n, t)
    return _CUTS[key]


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
    fronts = [_front(r) for r in records]
    end = max((float(f[-1]) for f in fronts if len(f)), default=0.0)
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
        cuts = [cut(r, t) for r in records]
        if len(records) == 1:
            calls = f"{len(cuts[0].history):,} of {len(records[0].history):,} calls completed"
        else:
            calls = " · ".join(
                f"{r.variant}: {len(c.history):,} of {len(r.history):,} calls" for r, c in zip(records, cuts)
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
