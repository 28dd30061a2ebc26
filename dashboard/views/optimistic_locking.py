"""23 · Optimistic locking: the version history of the contested item. Which client wrote each version when,
the writes the version check refused between them, and lost updates (one version acknowledged twice) in red.

`VersionWrites` keeps, per item, the versioned writes in arrival order, which acknowledged write holds each version
(the one completed last; every other one was overwritten: lost) and bottom-k samples for the chart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.figure import MAX_POINTS, Calls, Texts, agg, empty, figure, scatter, style
from dashboard.figures.palette import CCF, COLOURS, FLAG_COLOUR, INFO, OK
from dashboard.figures.sampling import Reservoir, Sampling, choose, stable_hash, thin_index
from dashboard.state.aggregates import Aggregate, Grow, Rows, SortedTail, done_ns
from dashboard.state.frames import WRITE_OPS, as_object, categories, detail_fields, where
from dashboard.text.words import client_name, plural
from dashboard.views.base import Ask, View
from engine.patterns.optimistic_locking import DETAIL_READ_VERSION, DETAIL_VERSION, OptimisticLocking

POINTS_KEEP = MAX_POINTS  # writes kept per category: the most the chart draws

_OUTCOME_CODE = {"ok": 0, "fail": 1, "info": 2}
STATUS = np.array(["written", "refused", "unknown", "lost"], dtype=object)  # by code: outcome code, 3 = lost


class ItemWrites:
    """The versioned writes of one item, in arrival order, and what says which of them were lost."""

    COLS = {
        "seq": np.int64,
        "client": np.int64,
        "t": np.float64,
        "order": np.int64,
        "version": np.int64,
        "read_version": np.int64,
        "outcome": np.int8,
        "action": np.int64,
    }

    def __init__(self, k: int) -> None:
        self.cols = {name: Grow(dtype) for name, dtype in self.COLS.items()}
        self.acked = SortedTail(pos=np.int64)  # acknowledged writes by (completion, seq)
        self.holder: dict[int, int] = {}  # version -> position of the acknowledged write completed last with it
        self.n = self.n_ok = self.n_refused = 0
        self.vmin, self.vmax = math.inf, -math.inf
        self.ok = Reservoir(k)
        self.other = Reservoir(k)  # refused and unknown
        self.lost = Reservoir(k)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name].v

    def add(self, **new: np.ndarray) -> None:
        start = self.n
        for name, col in self.cols.items():
            col.extend(new[name])
        self.n += len(new["seq"])
        pos = np.arange(start, self.n)
        h = stable_hash(new["seq"])
        ok = new["outcome"] == 0
        self.n_ok += int(ok.sum())
        self.n_refused += int((new["outcome"] == 1).sum())
        self.vmin = min(self.vmin, int(new["version"].min()))
        self.vmax = max(self.vmax, int(new["version"].max()))
        self.ok.offer(h[ok], lambda pick: {"pos": pos[ok][pick]})
        self.other.offer(h[~ok], lambda pick: {"pos": pos[~ok][pick]})
        self.acked.add(key=new["order"][ok], seq=new["seq"][ok], pos=pos[ok])
        # A version's holder is its acknowledged write that completed last; every other one was overwritten (lost).
        order = self["order"]
        holder = self.holder
        lost = []
        for p, v, o in zip(pos[ok].tolist(), new["version"][ok].tolist(), new["order"][ok].tolist()):
            held = holder.get(v)
            if held is None:
                holder[v] = p
            elif (o, p) > (int(order[held]), held):
                holder[v] = p
                lost.append(held)
            else:
                lost.append(p)
        if lost:
            lost_pos = np.asarray(lost, dtype=np.int64)
            self.lost.offer(stable_hash(self["seq"][lost_pos]), lambda pick: {"pos": lost_pos[pick]})

    @property
    def n_lost(self) -> int:
        return self.n_ok - len(self.holder)

    def status(self, pos: np.ndarray) -> np.ndarray:
        """Status code per position: 0 written, 1 refused, 2 unknown, 3 lost."""
        code = self["outcome"][pos].astype(np.int64)
        versions = self["version"][pos].tolist()
        held = np.fromiter((self.holder.get(v, -1) for v in versions), dtype=np.int64, count=len(pos))
        return np.where((code == 0) & (held != pos), 3, code)


class VersionWrites(Aggregate):
    """Versioned writes (detail DETAIL_VERSION) per item, for the version history of the most written one."""

    def __init__(self, k: int = POINTS_KEEP) -> None:
        self.k = k
        self.items: dict[str, ItemWrites] = {}
        self.actions: list[str] = []
        self._action: dict[str, int] = {}

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        if "detail" not in frame and f"detail.{DETAIL_VERSION}" not in frame:
            return
        writes = frame[where(frame["op"], WRITE_OPS)]
        version, read_version = detail_fields(writes, DETAIL_VERSION, DETAIL_READ_VERSION)
        has = ~np.isnan(version)
        if not has.any():
            return
        writes, version, read_version = writes[has], version[has], read_version[has]
        key_codes, keys = categories(writes["key"])
        action_codes, actions = categories(writes["action"])
        action_ids = np.asarray([self._action_id(a) for a in actions], dtype=np.int64)[action_codes]
        outcome_codes, outcomes = categories(writes["outcome"])
        outcome = np.asarray([_OUTCOME_CODE.get(o, 1) for o in outcomes], dtype=np.int8)[outcome_codes]
        cols = {
            "seq": writes["seq"].to_numpy(),
            "client": writes["client"].to_numpy().astype(np.int64),
            "t": writes["end_s"].to_numpy(),
            "order": done_ns(writes),
            "version": version.astype(np.int64),
            "read_version": np.where(np.isnan(read_version), -1, read_version).astype(np.int64),
            "outcome": outcome,
            "action": action_ids,
        }
        for code in np.unique(key_codes):
            mine = key_codes == code
            item = self.items.get(keys[code])
            if item is None:
                item = self.items[keys[code]] = ItemWrites(self.k)
            item.add(**{name: values[mine] for name, values in cols.items()})

    def _action_id(self, action: str) -> int:
        if action not in self._action:
            self._action[action] = len(self.actions)
            self.actions.append(action)
        return self._action[action]

    def contested(self) -> str | None:
        """The item with the most versioned writes (the first seen of equals)."""
        best, most = None, 0
        for key, item in self.items.items():
            if item.n > most:
                best, most = key, item.n
        return best

    def sample(self, key: str, max_rows: int) -> tuple[pd.DataFrame, Sampling]:
        """At most `max_rows` of the item's writes as `choose` over all of them picks (keep=lost, prefer=not
        written), in completion order: seq, client, t, version, read_version, outcome, status, action, winner,
        winner_t."""
        item = self.items[key]
        if max_rows > self.k:
            raise ValueError(f"this sample keeps {self.k} writes per category, {max_rows} were asked for")
        if item.n <= max_rows:
            pos = np.arange(item.n)
            status = item.status(pos)
            sampling = Sampling(item.n, item.n)
        else:
            pos = np.unique(np.concatenate([r.cols["pos"] for r in (item.ok, item.other, item.lost) if len(r)]))
            status = item.status(pos)
            chosen, n_flag, n_pref = choose(item["seq"][pos], max_rows, keep=status == 3, prefer=status != 0)
            pos, status = pos[chosen], status[chosen]
            sampling = Sampling(len(pos), item.n, n_flag, n_pref)
        by_time = np.lexsort((item["seq"][pos], item["order"][pos]))
        pos, status = pos[by_time], status[by_time]
        versions = item["version"][pos].tolist()
        holder = np.fromiter((item.holder.get(v, -1) for v in versions), dtype=np.int64, count=len(pos))
        winner = np.where(item["outcome"][pos] == 0, item["seq"][np.maximum(holder, 0)], -1)
        return pd.DataFrame(
            {
                "seq": item["seq"][pos],
                "client": item["client"][pos],
                "t": item["t"][pos],
                "version": item["version"][pos],
                "read_version": item["read_version"][pos],
                "outcome": as_object(np.array(["ok", "fail", "info"], dtype=object)[item["outcome"][pos]]),
                "status": as_object(STATUS[status]),
                "action": as_object(np.asarray(self.actions, dtype=object)[item["action"][pos]]),
                "winner": winner,
                "winner_t": np.where(holder >= 0, item["t"][np.maximum(holder, 0)], np.nan),
            }
        ), sampling

    def acknowledged(self, key: str, max_rows: int) -> pd.DataFrame:
        """At most `max_rows` evenly spaced acknowledged writes of the item, in completion order: t, version, and
        `ideal`, the version had none been lost (the first one's, plus one per acknowledged write before)."""
        item = self.items[key]
        idx = thin_index(len(item.acked), max_rows)
        pos = item.acked["pos"][idx]
        first = item["version"][item.acked["pos"][0]] if len(item.acked) else 0
        return pd.DataFrame({"t": item["t"][pos], "version": item["version"][pos], "ideal": first + idx})


_STATUS_STYLE = {
    "written": dict(color=COLOURS[OK], symbol="circle", size=10, name="written"),
    "lost": dict(color=FLAG_COLOUR, symbol="x", size=11, name="lost: overwritten by the same version"),
    "refused": dict(color=COLOURS[CCF], symbol="triangle-down", size=9, name="refused: version moved (conflict)"),
    "unknown": dict(color=COLOURS[INFO], symbol="diamond", size=10, name="unknown (response lost)"),
}


def version_history(
    calls: Calls,
    *,
    max_points: int = MAX_POINTS,
    x_range: Sequence[float] | None = None,
    title: str = "Version history of the contested item",
) -> go.Figure:
    """Which client wrote each version when; refused writes (conflicts) between; lost updates in red."""
    writes = agg(calls, VersionWrites, k=max_points)
    key = writes.contested()
    if key is None:
        return empty(title, "No versioned writes yet")
    item = writes.items[key]
    lost, refused = item.n_lost, item.n_refused
    shown, sampling = writes.sample(key, max_points)
    note = " · " + sampling.note("writes") if sampling.sampled else ""
    acked = writes.acknowledged(key, max_points)  # in completion order, thinned evenly
    fig = figure()
    if lost:  # where the version would be had no acknowledged write been erased
        fig.add_trace(
            scatter(
                "version if none were lost",
                acked["t"],
                acked["ideal"],
                "lines",
                line=dict(color="#424242", width=2, dash="dash"),
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        scatter(
            "current version",
            acked["t"],
            acked["version"],
            "lines",
            line=dict(color="#90A4AE", width=2, shape="hv"),
            hoverinfo="skip",
        )
    )
    # A lost write and the write that erased it, joined: the two clients that raced for one version.
    pairs = shown[shown["status"] == "lost"]
    if len(pairs):
        t0 = pairs["t"].to_numpy()
        t1 = np.where(np.isnan(pairs["winner_t"].to_numpy()), t0, pairs["winner_t"].to_numpy())
        v = pairs["version"].to_numpy(dtype=float)
        xs = np.column_stack([t0, t1, np.full(len(t0), np.nan)]).ravel()  # NaN breaks the line between pairs
        ys = np.column_stack([v, v, np.full(len(v), np.nan)]).ravel()
        fig.add_trace(
            scatter(
                "same version written twice",
                xs,
                ys,
                "lines",
                line=dict(color=FLAG_COLOUR, width=2),
                hoverinfo="skip",
            )
        )
    for name, look in _STATUS_STYLE.items():
        rows = shown[shown["status"] == name]
        if rows.empty:
            continue
        text = Texts(
            [
                f"#{s} {client_name(c)} {a}<br>read v{r} → wrote v{v}"
                + (f"<br>erased by #{w}" if name == "lost" else "")
                for s, c, a, r, v, w in zip(
                    rows["seq"].tolist(),
                    rows["client"].tolist(),
                    rows["action"].tolist(),
                    rows["read_version"].tolist(),
                    rows["version"].tolist(),
                    rows["winner"].tolist(),
                )
            ]
        )
        line = dict(width=2, color=look["color"]) if name == "lost" else dict(width=1, color="white")
        fig.add_trace(
            scatter(
                str(look["name"]),
                rows["t"],
                rows["version"],
                "markers",
                marker=dict(color=look["color"], symbol=look["symbol"], size=look["size"], line=line),
                text=text,
                hovertemplate="%{text}<br>at %{x:.3f} s<extra>" + name + "</extra>",
            )
        )
    if x_range is not None:
        fig.update_xaxes(range=list(x_range))
    headline = (
        f"{plural(lost, 'lost update')}: two clients wrote the same version, the later erased the earlier"
        if lost
        else "none lost: every version was written once"
    )
    return style(
        fig,
        f"{title} ({key})",
        subtitle=f"{headline} · {plural(refused, 'conflict')} refused{note}",
        x_title="seconds",
        y_title="version",
        height=420,
        meta={
            "key": key,
            "lost": lost,
            "refused": refused,
            "sampled": sampling.sampled,
            "y_max": float(max(item.vmax, item.vmin + item.n_ok)),
        },
    )


def draw(ask: Ask) -> list[go.Figure]:
    return [version_history(ask.calls, x_range=ask.x_range)]


VIEW = View(
    pattern=OptimisticLocking.name,
    aggregates=(VersionWrites,),
    draw=draw,
    detail_fields=(DETAIL_VERSION, DETAIL_READ_VERSION),
)
