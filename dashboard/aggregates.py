"""What each chart draws from, kept up to date from the calls that arrived since the last refresh.

A History only grows, and a live page redraws every chart about once a second. Re-reading (and re-grouping) a
million calls each time costs seconds, so each chart keeps the little it draws from and takes in only the new
calls (`RunView.update`: History rows [last, n), their details parsed once):

- outcomes over time: call counts per (time bin, outcome label), in bins of a width that divides every width the
  chart can ask for (0.05 s, then 1 s, 5 s, 60 s... as the run grows), summed into the chart's bins when drawn;
- latency: a histogram of log-spaced buckets (1 % wide) per time bin: percentiles within 1 % while a run goes;
  a finished run's chart uses the exact percentiles again (`RunView.latency_columns`);
- per-call timeline: a bottom-k sample (the k calls with the smallest stable hash of their seq) of the plain
  calls and one of the others: exactly the calls `analysis.sample` would pick from all of them;
- per pattern: version history (per item: acknowledged writes in completion order, the write holding each
  version, bottom-k samples), counter series, cancellation reasons, claims, charges, GSI reads per write,
  leases, action × outcome tallies.

The charts draw a DataFrame through the same aggregates (`Aggregate.of(frame)`: the whole frame as one batch), so
a live chart and the chart of a finished run or an imported file come from one piece of code; the tests feed
recorded histories in random batches and check that the figures do not depend on how the calls arrived.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np
import pandas as pd

from dashboard import analysis as an

TIMELINE_KEEP = 5000  # calls kept per timeline category: the most a timeline draws (charts.MAX_BARS_FINAL)
POINTS_KEEP = 4000  # writes kept per version-history category: the most it draws (charts.MAX_POINTS)
BATCH = 100_000  # rows read from the History at a time when catching up (a page opened late, an import)


# -- small building blocks ------------------------------------------------------------------------------------------


class Grow:
    """A numpy array that grows at its end (amortised doubling); `.v` is the filled part (a view)."""

    __slots__ = ("a", "n")

    def __init__(self, dtype: Any) -> None:
        self.a = np.empty(64, dtype=dtype)
        self.n = 0

    def extend(self, values: Any) -> None:
        values = np.asarray(values, dtype=self.a.dtype)
        need = self.n + len(values)
        if need > len(self.a):
            bigger = np.empty(max(need, 2 * len(self.a)), dtype=self.a.dtype)
            bigger[: self.n] = self.a[: self.n]
            self.a = bigger
        self.a[self.n : need] = values
        self.n = need

    @property
    def v(self) -> np.ndarray:
        return self.a[: self.n]


class Reservoir:
    """The k rows with the smallest stable hash of their seq among all rows offered so far (a bottom-k sample).

    A hash is a fixed function of the row, so the bottom k of everything is the bottom k of (the bottom k so far,
    the new rows): kept from the new rows only, and exactly what `analysis.sample` would draw from that category.
    Rows are stored as columns (`cols`), sorted by hash.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.hash = np.zeros(0, dtype=np.uint64)
        self.cols: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.hash)

    def candidates(self, hashes: np.ndarray) -> np.ndarray:
        """Positions of the offered rows that may enter (at most k)."""
        if len(self.hash) >= self.k:
            pick = np.flatnonzero(hashes < self.hash[-1])
        else:
            pick = np.arange(len(hashes))
        if len(pick) > self.k:
            pick = pick[np.argpartition(hashes[pick], self.k - 1)[: self.k]]
        return pick

    def merge(self, hashes: np.ndarray, cols: dict[str, np.ndarray]) -> None:
        """Add these candidates (their hashes and columns) and keep the bottom k."""
        if not len(hashes):
            return
        allh = np.concatenate([self.hash, hashes])
        keep = np.argsort(allh, kind="stable")[: self.k]
        self.hash = allh[keep]
        self.cols = {
            name: np.concatenate([self.cols[name], values])[keep] if self.cols else values[keep]
            for name, values in cols.items()
        }

    def offer(self, hashes: np.ndarray, take: Callable[[np.ndarray], dict[str, np.ndarray]]) -> None:
        """`take(idx)` gives the columns of the offered rows at `idx` (only called for those that may stay)."""
        pick = self.candidates(hashes)
        if len(pick):
            self.merge(hashes[pick], take(pick))


def thin_index(n: int, most: int) -> np.ndarray:
    """At most `most` evenly spaced positions out of n (the ends included): a line thinned evenly."""
    return np.arange(n) if n <= most else np.linspace(0, n - 1, most).astype(np.int64)


class SortedTail:
    """Columns kept sorted by (key, seq) while rows arrive nearly in that order (calls are recorded as they
    complete, a few out of order): new rows are appended, or merged into the short tail they overlap."""

    def __init__(self, key: Any = np.int64, **dtypes: Any) -> None:
        self.cols = {name: Grow(dtype) for name, dtype in {"key": key, "seq": np.int64, **dtypes}.items()}

    def __len__(self) -> int:
        return self.cols["key"].n

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name].v

    def add(self, **new: np.ndarray) -> None:
        if not len(new["key"]):
            return
        order = np.lexsort((new["seq"], new["key"]))
        new = {name: np.asarray(values)[order] for name, values in new.items()}
        n = len(self)
        keys = self.cols["key"]
        if n and new["key"][0] < keys.a[n - 1]:  # new seqs are larger: equal keys never go before old rows
            i = int(np.searchsorted(keys.v, new["key"][0], side="right"))
            merged = {name: np.concatenate([col.a[i:n], new[name]]) for name, col in self.cols.items()}
            again = np.lexsort((merged["seq"], merged["key"]))
            for name, col in self.cols.items():
                col.n = i
                col.extend(merged[name][again])
        else:
            for name, col in self.cols.items():
                col.extend(new[name])


class Rows(NamedTuple):
    """A batch of History rows (a snapshot frame with `detail` and `request`) and each row's outcome label."""

    frame: pd.DataFrame
    codes: np.ndarray  # index into `order` per row
    order: list[str]  # outcome labels (ok / ok (read) / short error code / info (unknown)), analysis.outcome_codes

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Rows:
        codes, order = an.outcome_codes(frame)
        return cls(frame, codes, order)

    def labels(self) -> np.ndarray:
        return np.asarray(self.order, dtype=object)[self.codes] if self.order else np.zeros(0, dtype=object)

    def plain(self) -> np.ndarray:
        """Calls that went as planned: ok, or ok (read)."""
        return np.isin(self.codes, [i for i, label in enumerate(self.order) if label in (an.OK, an.OK_READ)])


A = TypeVar("A", bound="Aggregate")


class Aggregate:
    """What one chart draws from. `add` takes a batch of new rows; nothing else changes the aggregate."""

    def add(self, rows: Rows) -> None:
        raise NotImplementedError

    @classmethod
    def of(cls: type[A], frame: pd.DataFrame, **kwargs: Any) -> A:
        """The aggregate of a whole frame (one batch)."""
        agg = cls(**kwargs)
        if len(frame):
            agg.add(Rows.of(frame))
        return agg


def _unsplit(label: str) -> str:
    return an.OK if label == an.OK_READ else label


# -- outcomes and latency over time --------------------------------------------------------------------------------

# Each width divides every wider bin width nice_step can give (0.05 s divides all; 1 s all from 1 s up; ...).
_STORE_NS = (50_000_000, 1_000_000_000, 5_000_000_000, 60_000_000_000, 300_000_000_000, 3_600_000_000_000)
GAMMA = 1.01  # latency buckets: [GAMMA**b, GAMMA**(b + 1)) ms
_LOG_GAMMA = math.log(GAMMA)
_MIN_MS = 1e-3


def done_ns(frame: pd.DataFrame) -> np.ndarray:
    """Completion time of each call, ns since the clients were released."""
    if "complete_ns" in frame:
        return frame["complete_ns"].to_numpy()
    return np.round(frame["end_s"].to_numpy() * 1e9).astype(np.int64)


def bin_width(span_s: float, target: int) -> float:
    """The chart's bin width (s): about `target` bins over the span, rounded (analysis.nice_step)."""
    return an.nice_step(max(span_s / target, 0.05))


def latency_bucket(ms: np.ndarray) -> np.ndarray:
    return np.floor(np.log(np.maximum(ms, _MIN_MS)) / _LOG_GAMMA).astype(np.int64)


def sketch_quantiles(hist: np.ndarray, lo: int, qs: Sequence[float]) -> np.ndarray:
    """Quantiles (numpy's linear definition) of each row of a bucket histogram: [row, q].

    Values inside a bucket are taken as spread evenly in log space, so the error is under half a bucket."""
    hist = np.atleast_2d(hist)
    cum = hist.cumsum(axis=1)
    n = cum[:, -1]
    rows = np.arange(len(hist))

    def value(k: np.ndarray) -> np.ndarray:
        j = (cum > k[:, None]).argmax(axis=1)
        count = hist[rows, j]
        start = cum[rows, j] - count
        return GAMMA ** (lo + j + (k - start + 0.5) / np.maximum(count, 1))

    out = np.empty((len(hist), len(qs)))
    for i, q in enumerate(qs):
        r = q * (n - 1)
        k0 = np.floor(r)
        k1 = np.minimum(k0 + 1, n - 1)
        out[:, i] = value(k0) + (value(k1) - value(k0)) * (r - k0)
    return out


class TimeBins(Aggregate):
    """Call counts per (time bin, outcome label) and a latency histogram per time bin, by completion time."""

    def __init__(self) -> None:
        self.store_ns = _STORE_NS[0]
        self.labels: list[str] = []
        self._col: dict[str, int] = {}
        self.counts = np.zeros((0, 0), dtype=np.int64)  # [store bin, label]
        self.lat = np.zeros((0, 0), dtype=np.int64)  # [store bin, bucket - lat_lo]
        self.lat_all = np.zeros(0, dtype=np.int64)
        self.lat_lo = 0
        self.n = 0
        self.end_ns = 0  # latest completion (clipped at 0): the last bin
        self.end_s = -math.inf  # latest completion: the span

    def _label(self, label: str) -> int:
        if label not in self._col:
            self._col[label] = len(self.labels)
            self.labels.append(label)
        return self._col[label]

    def _room(self, bins: int, labels: int, lo: int, hi: int) -> None:
        rows = max(bins, len(self.counts))
        if rows > len(self.counts) or labels > self.counts.shape[1]:
            grown = np.zeros(
                (
                    max(rows, 2 * len(self.counts)) if rows > len(self.counts) else rows,
                    max(labels, self.counts.shape[1]),
                ),
                dtype=np.int64,
            )
            grown[: len(self.counts), : self.counts.shape[1]] = self.counts
            self.counts = grown
        width = self.lat.shape[1]
        new_lo = min(lo, self.lat_lo) if width else lo
        new_hi = max(hi + 1, self.lat_lo + width) if width else hi + 1
        if len(self.lat) < len(self.counts) or new_lo < self.lat_lo or new_hi > self.lat_lo + width:
            grown = np.zeros((len(self.counts), new_hi - new_lo), dtype=np.int64)
            grown[: len(self.lat), self.lat_lo - new_lo : self.lat_lo - new_lo + width] = self.lat
            self.lat = grown
            every = np.zeros(new_hi - new_lo, dtype=np.int64)
            every[self.lat_lo - new_lo : self.lat_lo - new_lo + width] = self.lat_all
            self.lat_all = every
            self.lat_lo = new_lo

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        if not len(frame):
            return
        gid = np.asarray([self._label(label) for label in rows.order], dtype=np.int64)[rows.codes]
        done = done_ns(frame)
        self.n += len(frame)
        self.end_ns = max(self.end_ns, int(max(done.max(), 0)))
        self.end_s = max(self.end_s, float(frame["end_s"].max()))
        self._coarsen()  # first, so a long batch is never binned finer than it will be kept
        b = np.clip(done, 0, None) // self.store_ns
        bucket = latency_bucket(frame["latency_ms"].to_numpy())
        b_lo, b_hi = int(b.min()), int(b.max())
        self._room(b_hi + 1, len(self.labels), int(bucket.min()), int(bucket.max()))
        n_bins, n_labels, width = b_hi - b_lo + 1, self.counts.shape[1], self.lat.shape[1]
        self.counts[b_lo : b_hi + 1] += np.bincount((b - b_lo) * n_labels + gid, minlength=n_bins * n_labels).reshape(
            n_bins, n_labels
        )
        cell = bucket - self.lat_lo
        self.lat[b_lo : b_hi + 1] += np.bincount((b - b_lo) * width + cell, minlength=n_bins * width).reshape(
            n_bins, width
        )
        self.lat_all += np.bincount(cell, minlength=width)

    def _coarsen(self) -> None:
        """Bins as wide as the narrowest chart bin allows: their number stays bounded as the run grows."""
        narrowest = round(bin_width(self.span(), 60) * 1e9)
        store = (
            max(w for w in _STORE_NS if w <= narrowest and narrowest % w == 0)
            if narrowest >= _STORE_NS[0]
            else _STORE_NS[0]
        )
        if store <= self.store_ns:
            return
        f = store // self.store_ns
        rows = -(-len(self.counts) // f) * f
        for name in ("counts", "lat"):
            table = getattr(self, name)
            padded = np.zeros((rows, table.shape[1]), dtype=np.int64)
            padded[: len(table)] = table
            setattr(self, name, padded.reshape(rows // f, f, table.shape[1]).sum(axis=1))
        self.store_ns = store

    def span(self) -> float:
        return self.end_s if self.n else 1.0

    def used_bins(self) -> int:
        return self.end_ns // self.store_ns + 1 if self.n else 0

    def _binned(self, table: np.ndarray, span_s: float, target: int) -> tuple[np.ndarray, float]:
        """`table` summed into the chart's bins: ([bin, column], width in s)."""
        width = bin_width(span_s, target)
        width_ns = round(width * 1e9)
        if width_ns % self.store_ns:  # a span shorter than the data's: the nearest width the bins allow
            width_ns = -(-width_ns // self.store_ns) * self.store_ns
            width = width_ns / 1e9
        f = width_ns // self.store_ns
        n_bins = self.end_ns // width_ns + 1
        padded = np.zeros((n_bins * f, table.shape[1]), dtype=np.int64)
        used = min(self.used_bins(), n_bins * f)
        padded[:used] = table[:used]
        return padded.reshape(n_bins, f, table.shape[1]).sum(axis=1), width

    def rates(self, span_s: float | None = None, target: int = 60) -> tuple[np.ndarray, list[str], float]:
        """(counts [bin, label], labels in legend order (reads count as ok), bin width in s)."""
        counts, width = self._binned(self.counts, self.span() if span_s is None else span_s, target)
        merged: dict[str, np.ndarray] = {}
        for i, label in enumerate(self.labels):
            name = _unsplit(label)
            merged[name] = merged[name] + counts[:, i] if name in merged else counts[:, i]
        order = an.ordered(name for name, column in merged.items() if column.sum())
        table = np.column_stack([merged[name] for name in order]) if order else np.zeros((len(counts), 0), np.int64)
        return table, order, width

    def latency(
        self, span_s: float | None = None, target: int = 50, qs: Sequence[float] = (0.5, 0.95, 0.99)
    ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
        """(bin ids with calls, percentiles [bin, q], bin width in s, percentiles over every call)."""
        hist, width = self._binned(self.lat, self.span() if span_s is None else span_s, target)
        ids = np.flatnonzero(hist.sum(axis=1))
        return (
            ids,
            sketch_quantiles(hist[ids], self.lat_lo, qs),
            width,
            sketch_quantiles(self.lat_all, self.lat_lo, qs)[0],
        )


# -- per-call timeline ---------------------------------------------------------------------------------------------

_TIMELINE_COLS = ("seq", "client", "start_s", "end_s", "latency_ms", "retries")
_TIMELINE_TEXT = ("action", "op", "key", "outcome", "error")


def row_columns(frame: pd.DataFrame, idx: np.ndarray, labels: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Rows `idx` of a snapshot frame as plain columns (strings as objects), enough to draw and hover them."""
    sub = frame.iloc[idx]
    cols = {name: sub[name].to_numpy() for name in _TIMELINE_COLS if name in sub}
    for name in _TIMELINE_TEXT:
        cols[name] = an._strings(sub[name]) if name in sub else np.full(len(sub), "", dtype=object)
    cols["request"] = sub["request"].to_numpy(dtype=object) if "request" in sub else np.full(len(sub), None, object)
    cols["detail"] = np.asarray(an.details(sub) + [None], dtype=object)[:-1]
    if labels is not None:
        cols["label"] = labels[idx]
    return cols


class TimelineSample(Aggregate):
    """The calls a timeline may draw: bottom-k samples of the failed/unknown calls and of the plain ones."""

    def __init__(self, k: int = TIMELINE_KEEP) -> None:
        self.k = k
        self.failed = Reservoir(k)
        self.plain = Reservoir(k)
        self.n = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        labels = rows.labels()
        h = an._stable_hash(frame["seq"].to_numpy())
        plain = rows.plain()
        picked = []
        for reservoir, mask in ((self.failed, ~plain), (self.plain, plain)):
            idx = np.flatnonzero(mask)
            picked.append(idx[reservoir.candidates(h[idx])])
        every = np.concatenate(picked)
        if len(every):  # the columns of both categories' candidates in one go
            cols = row_columns(frame, every, labels)
            split = len(picked[0])
            self.failed.merge(h[picked[0]], {name: values[:split] for name, values in cols.items()})
            self.plain.merge(h[picked[1]], {name: values[split:] for name, values in cols.items()})
        self.n += len(frame)

    def sample(self, max_rows: int, flagged: pd.DataFrame | None = None) -> tuple[pd.DataFrame, an.Sampling]:
        """What `analysis.sample(all calls, max_rows, keep=flagged, prefer=not plain)` returns, in seq order,
        with a `label` column. `flagged`: the flagged calls' rows (a snapshot frame), none while a run goes."""
        if max_rows > self.k:
            raise ValueError(f"this sample keeps {self.k} calls per category, {max_rows} were asked for")
        parts = [r.cols for r in (self.failed, self.plain) if len(r)]
        if flagged is not None and len(flagged):
            parts.append(row_columns(flagged, np.arange(len(flagged)), an.outcome_labels(flagged)))
        if not parts:
            return pd.DataFrame(), an.Sampling(0, 0)
        cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        _, first = np.unique(cols["seq"], return_index=True)
        cols = {name: values[first] for name, values in cols.items()}  # seq order, each call once
        shown = pd.DataFrame(cols)
        if self.n <= max_rows:
            return shown, an.Sampling(self.n, self.n)
        keep = (
            np.isin(cols["seq"], flagged["seq"].to_numpy())
            if flagged is not None and len(flagged)
            else np.zeros(len(shown), dtype=bool)
        )
        prefer = ~np.isin(cols["label"], [an.OK, an.OK_READ])
        chosen, n_flag, n_pref = an.choose(cols["seq"], max_rows, keep=keep, prefer=prefer)
        return shown[chosen].reset_index(drop=True), an.Sampling(int(chosen.sum()), self.n, n_flag, n_pref)


# -- calls per action and outcome ------------------------------------------------------------------------------------


class ActionOutcomes(Aggregate):
    """Call counts per (action, outcome label), reads counted as ok (analysis.action_outcomes)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def add(self, rows: Rows) -> None:
        actions, cats = an.categories(rows.frame["action"])
        labels = [_unsplit(label) for label in rows.order]
        pairs = actions * max(len(rows.order), 1) + rows.codes
        for pair, count in zip(*np.unique(pairs, return_counts=True)):
            a, c = divmod(int(pair), max(len(rows.order), 1))
            self.counts[(cats[a], labels[c])] += int(count)

    def table(self) -> pd.DataFrame:
        """Rows: action (sorted); columns: outcome label (legend order); values: call counts."""
        if not self.counts:
            return pd.DataFrame()
        actions = sorted({a for a, _ in self.counts})
        labels = an.ordered({label for _, label in self.counts})
        table = pd.DataFrame(0, index=pd.Index(actions, name="action"), columns=pd.Index(labels, name="outcome"))
        for (action, label), count in self.counts.items():
            table.loc[action, label] += count
        return table


# -- optimistic locking --------------------------------------------------------------------------------------------

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
        h = an._stable_hash(new["seq"])
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
            self.lost.offer(an._stable_hash(self["seq"][lost_pos]), lambda pick: {"pos": lost_pos[pick]})

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
    """Versioned writes (detail "version") per item, for the version history of the most written one."""

    def __init__(self, k: int = POINTS_KEEP) -> None:
        self.k = k
        self.items: dict[str, ItemWrites] = {}
        self.actions: list[str] = []
        self._action: dict[str, int] = {}

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        if "detail" not in frame and "detail.version" not in frame:
            return
        writes = frame[an.where(frame["op"], an.WRITE_OPS)]
        version, read_version = an.detail_fields(writes, "version", "read_version")
        has = ~np.isnan(version)
        if not has.any():
            return
        writes, version, read_version = writes[has], version[has], read_version[has]
        key_codes, keys = an.categories(writes["key"])
        action_codes, actions = an.categories(writes["action"])
        action_ids = np.asarray([self._action_id(a) for a in actions], dtype=np.int64)[action_codes]
        outcome_codes, outcomes = an.categories(writes["outcome"])
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

    def sample(self, key: str, max_rows: int) -> tuple[pd.DataFrame, an.Sampling]:
        """`analysis.sample(writes, max_rows, keep=lost, prefer=not written)` of the item's writes, in
        completion order, with the columns of analysis.version_writes."""
        item = self.items[key]
        if max_rows > self.k:
            raise ValueError(f"this sample keeps {self.k} writes per category, {max_rows} were asked for")
        if item.n <= max_rows:
            pos = np.arange(item.n)
            status = item.status(pos)
            sampling = an.Sampling(item.n, item.n)
        else:
            pos = np.unique(np.concatenate([r.cols["pos"] for r in (item.ok, item.other, item.lost) if len(r)]))
            status = item.status(pos)
            chosen, n_flag, n_pref = an.choose(item["seq"][pos], max_rows, keep=status == 3, prefer=status != 0)
            pos, status = pos[chosen], status[chosen]
            sampling = an.Sampling(len(pos), item.n, n_flag, n_pref)
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
                "outcome": an.as_object(np.array(["ok", "fail", "info"], dtype=object)[item["outcome"][pos]]),
                "status": an.as_object(STATUS[status]),
                "action": an.as_object(np.asarray(self.actions, dtype=object)[item["action"][pos]]),
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


# -- atomic counters -----------------------------------------------------------------------------------------------


class CounterSeries(Aggregate):
    """Acknowledged increments in completion order (t, the value each wrote), and the unknown ones."""

    def __init__(self, action: str = "increment") -> None:
        self.action = action
        self.acked = SortedTail(key=np.float64, t=np.float64, written=np.float64)
        self.unknown = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        mine = an.where(frame["action"], [self.action])
        ok = frame[mine & an.where(frame["outcome"], ["ok"])]
        self.unknown += int((mine & an.where(frame["outcome"], ["info"])).sum())
        if len(ok):
            t = ok["end_s"].to_numpy()
            self.acked.add(key=t, seq=ok["seq"].to_numpy(), t=t, written=an.detail_values(ok, "read") + 1)

    @property
    def acknowledged(self) -> int:
        return len(self.acked)

    def series(self, max_rows: int) -> pd.DataFrame:
        """At most `max_rows` evenly spaced points: t, acknowledged (cumulative), written (NaN if unknown), seq."""
        idx = thin_index(len(self.acked), max_rows)
        return pd.DataFrame(
            {
                "t": self.acked["t"][idx],
                "acknowledged": idx + 1,
                "written": self.acked["written"][idx],
                "seq": self.acked["seq"][idx],
            }
        )

    def facts(self, invariants: Sequence[Mapping[str, Any]] = (), max_rows: int = POINTS_KEEP) -> an.CounterFacts:
        """analysis.counter_facts, with the series thinned to `max_rows` points (its last point kept)."""
        inv = an.invariant(invariants, "final", "count") or an.invariant(invariants, "acknowledged", "increment")
        final = an.as_number(inv.get("observed")) if inv else None
        final_i = int(final) if final is not None else None
        lost = max(0, self.acknowledged - final_i) if final_i is not None else None
        return an.CounterFacts(self.action, self.acknowledged, self.unknown, final_i, lost, self.series(max_rows))


# -- transactions: cancellation reasons ---------------------------------------------------------------------------


class Cancellations(Aggregate):
    """(call action, transaction item, reason) counts over cancelled transactions (analysis.cancellation_counts),
    and whether the run made any transaction at all."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.transactional = False
        self._kinds: dict[str | None, list[str]] = {}

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        self.transactional = self.transactional or bool(an.where(frame["op"], ["TransactWriteItems"]).any())
        if "detail" not in frame or "error" not in frame:
            return
        cancelled = frame[an.where(frame["error"], ["TransactionCanceledException"])]
        if cancelled.empty:
            return
        requests = cancelled["request"].tolist() if "request" in cancelled else [None] * len(cancelled)
        for action, d, request in zip(an._strings(cancelled["action"]), an.details(cancelled), requests):
            reasons = d.get("reasons")
            if not reasons:
                continue
            if request not in self._kinds:
                self._kinds[request] = an.tx_item_kinds(request)
            kinds = self._kinds[request]
            for i, reason in enumerate(reasons):
                if not reason or reason == "None":
                    continue
                item = f"item {i + 1}" + (f" ({kinds[i]})" if i < len(kinds) else "")
                self.counts[(action, item, an.short_code(str(reason)))] += 1

    def table(self) -> pd.DataFrame:
        cols = ["action", "item", "reason", "count"]
        if not self.counts:
            return pd.DataFrame(columns=cols)
        return (
            pd.DataFrame([(*k, v) for k, v in self.counts.items()], columns=cols)
            .sort_values(cols[:3])
            .reset_index(drop=True)
        )


# -- unique constraints ------------------------------------------------------------------------------------------


class Claims(Aggregate):
    """Email claims: acknowledged, refused (taken or other), GSI checks that said taken, unknown."""

    def __init__(self) -> None:
        self.acked = self.refused_taken = self.failed = self.seen_taken = self.unknown = 0
        self.n = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        self.n += len(frame)
        outcome = an._strings(frame["outcome"])
        writes = an.where(frame["action"], ["sign-up", "change-email"])
        failed = frame[writes & (outcome == "fail")]
        # The sentinel Put is item 2 of both transactions (sign-up and change-email): its reason says "taken".
        self.refused_taken += sum(
            1
            for d in an.details(failed)
            if len(d.get("reasons") or []) > 1 and str(d["reasons"][1]).startswith("ConditionalCheck")
        )
        self.failed += len(failed)
        self.seen_taken += sum(
            1 for d in an.details(frame[an.where(frame["action"], ["check-email"])]) if d.get("taken")
        )
        self.acked += int((writes & (outcome == "ok")).sum())
        self.unknown += int((writes & (outcome == "info")).sum())

    def facts(self, invariants: Sequence[Mapping[str, Any]] = ()) -> dict[str, int | None]:
        """analysis.unique_facts."""
        dup = an.invariant(invariants, "share")
        sent = an.invariant(invariants, "sentinel", "per")
        orphans = an.invariant(invariants, "orphan")
        return {
            "claims acknowledged": self.acked,
            "refused: email taken": self.refused_taken,
            "refused: other": self.failed - self.refused_taken,
            "GSI check said taken": self.seen_taken,
            "unknown outcome": self.unknown,
            "users sharing an email": int(dup.get("violations", 0)) if dup else None,
            "sentinels": int(sent["observed"]) if sent and an.as_number(sent.get("observed")) is not None else None,
            "orphan sentinels": int(orphans["observed"])
            if orphans and an.as_number(orphans.get("observed")) is not None
            else None,
        }


# -- idempotency keys ----------------------------------------------------------------------------------------------


class Charges(Aggregate):
    """Logical requests, sends, charges made per request, replays and refusals (analysis.idempotency_facts)."""

    def __init__(self) -> None:
        self.requests: set[str] = set()
        self.sends: set[tuple[int, str, int]] = set()
        self.charges: dict[str, set[str]] = defaultdict(set)
        self.replays = self.waits = self.refused = self.reclaims = 0

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        interesting = an.where(frame["action"], ["claim", "charge", "read-record", "reclaim"])
        if not interesting.any():
            return
        sub = frame[interesting]
        for client, action, out, d in zip(
            sub["client"].tolist(), an._strings(sub["action"]), an._strings(sub["outcome"]), an.details(sub)
        ):
            request = d.get("request")
            if request is None:
                continue
            if not d.get("reuse"):
                self.requests.add(request)
            if action in ("claim", "charge"):
                self.sends.add((client, request, int(d.get("attempt") or 0)))
            if action == "charge" and out in ("ok", "info") and d.get("charge") and not d.get("reuse"):
                self.charges[request].add(str(d["charge"]))
            elif action == "read-record" and out == "ok":
                if d.get("record") == "completed" and d.get("reply"):
                    self.replays += 1
                elif d.get("told") == "wait":
                    self.waits += 1
                elif d.get("reply") == "refused":
                    self.refused += 1
            elif action == "reclaim" and out == "ok":
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


# -- GSI consistency ---------------------------------------------------------------------------------------------


class GsiReads(Aggregate):
    """Acknowledged writes (arrival order) and, per (client, op), the reads of them: how many, how many stale,
    when the first fresh one was sent (analysis.gsi_staleness)."""

    def __init__(self) -> None:
        self.writes = {
            name: Grow(dtype)
            for name, dtype in (
                ("client", np.int64),
                ("op", np.float64),
                ("t", np.float64),
                ("done_ns", np.int64),
                ("seq", np.int64),
            )
        }
        self.reads: dict[tuple[int, float], list[Any]] = {}  # (client, op) -> [reads, stale, first fresh sent_ns]

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        ok = an.where(frame["outcome"], ["ok"])
        writes = frame[an.where(frame["action"], ["write"]) & ok]
        if len(writes):
            for name, values in (
                ("client", writes["client"].to_numpy()),
                ("op", an.detail_values(writes, "op")),
                ("t", writes["end_s"].to_numpy()),
                ("done_ns", writes["complete_ns"].to_numpy()),
                ("seq", writes["seq"].to_numpy()),
            ):
                self.writes[name].extend(values)
        reads = frame[an.where(frame["action"], ["read-back"]) & ok]
        if len(reads):
            stale, op = an.detail_fields(reads, "stale", "op")
            for client, read_op, sent, s in zip(
                reads["client"].tolist(), op.tolist(), reads["invoke_ns"].tolist(), (stale > 0).tolist()
            ):
                if read_op != read_op:  # NaN: no group (pandas' groupby drops it too)
                    continue
                group = self.reads.setdefault((client, read_op), [0, 0, None])
                group[0] += 1
                group[1] += s
                if not s and (group[2] is None or sent < group[2]):
                    group[2] = sent

    def table(self, max_rows: int | None = None) -> pd.DataFrame:
        """One row per acknowledged write (at most `max_rows`, evenly spaced): client, op, t, seen_ms, reads,
        stale_reads, seq."""
        n = self.writes["seq"].n
        idx = thin_index(n, n if max_rows is None else max_rows)
        w = {name: col.v[idx] for name, col in self.writes.items()}
        groups = [self.reads.get((c, o), (0, 0, None)) for c, o in zip(w["client"].tolist(), w["op"].tolist())]
        first = np.array([np.nan if g[2] is None else g[2] for g in groups], dtype=float)
        return pd.DataFrame(
            {
                "client": w["client"],
                "op": w["op"],
                "t": w["t"],
                "seen_ms": np.clip((first - w["done_ns"]) / 1e6, 0, None),
                "reads": np.array([g[0] for g in groups], dtype=np.int64),
                "stale_reads": np.array([g[1] for g in groups], dtype=np.int64),
                "seq": w["seq"],
            }
        )


# -- distributed locking -----------------------------------------------------------------------------------------


class LeaseEvents(Aggregate):
    """Leases and lock events, from the lock calls in arrival order (analysis.lease_timeline, step by step)."""

    def __init__(self) -> None:
        self.leases: dict[tuple[int, float], dict[str, Any]] = {}
        self.events: list[tuple[int, float, str | None, int, float, str, float]] = []

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        lock = frame[an.where(frame["action"], ["acquire", "heartbeat", "release", "write"])]
        if lock.empty:
            return
        acts, outs = an._strings(lock["action"]), an._strings(lock["outcome"])
        hold, token, now, expires, paused = an.detail_fields(lock, "hold", "token", "now", "expiresAt", "paused")
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
            if act == "acquire" and out == "ok":
                leases[key] = {
                    "client": client,
                    "hold": hold[i],
                    "token": token[i],
                    "start": end,
                    "expiry": lease_end,
                    "release": np.nan,
                    "seq": seq,
                }
            elif act == "heartbeat":
                if out == "ok" and key in leases:
                    leases[key]["expiry"] = max(leases[key]["expiry"], lease_end)
                    events.append((client, end, "heartbeat", seq, token[i], out, paused[i]))
                elif out != "ok":
                    events.append((client, end, "heartbeat refused", seq, token[i], out, paused[i]))
            elif act == "release":
                if out == "ok" and key in leases:
                    leases[key]["release"] = start
                elif out == "fail":
                    events.append((client, end, "zombie release refused", seq, token[i], out, paused[i]))
            elif act == "write":
                events.append((client, end, None, seq, token[i], out, paused[i]))  # its kind needs the verdicts

    def timeline(self, flagged: Iterable[int] = ()) -> an.Leases:
        flagged = set(flagged)
        hold_cols = ["client", "hold", "token", "start", "end", "ended", "takeover", "seq"]
        event_cols = ["client", "t", "kind", "seq", "token"]
        if not self.leases and not self.events:
            return an.Leases(pd.DataFrame(columns=hold_cols), pd.DataFrame(columns=event_cols))
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
        return an.close_leases(self.leases.values(), events, hold_cols, event_cols)


# -- one run -------------------------------------------------------------------------------------------------------

PATTERN_AGGREGATES: dict[str, tuple[type[Aggregate], ...]] = {
    "optimistic-locking": (VersionWrites,),
    "atomic-counters": (CounterSeries,),
    "transactions": (Cancellations, ActionOutcomes),
    "unique-constraints": (Claims, Cancellations),
    "idempotency-keys": (Charges,),
    "gsi-consistency": (GsiReads,),
    "distributed-locking": (LeaseEvents,),
}


def aggregates_for(pattern: str) -> tuple[type[Aggregate], ...]:
    """What the Run page's charts of this pattern draw from."""
    return (TimeBins, TimelineSample, *PATTERN_AGGREGATES.get(pattern, (ActionOutcomes,)))


class RunView:
    """A run's aggregates, brought up to date with the calls that arrived since the last `update`.

    `rows(start, stop)` gives History rows [start, stop) as a snapshot frame with `detail` and `request` (the
    registry's incremental frame, which parses each call's details once). Use as `with view:` to read it while
    other sessions refresh the same run: that updates it and holds its lock.
    """

    def __init__(
        self,
        history: Any,
        rows: Callable[[int, int], pd.DataFrame],
        kinds: Iterable[type[Aggregate]] = (TimeBins, TimelineSample),
    ) -> None:
        self.history = history
        self._rows = rows
        self._lock = threading.RLock()
        self.aggregates: dict[type[Aggregate], Aggregate] = {kind: kind() for kind in kinds}
        self.n = 0
        self.max_client = -1
        self.final = False  # set by the owner once the history stops growing
        self._exact: tuple[int, pd.DataFrame] | None = None
        self._picked: dict[frozenset[int], pd.DataFrame] = {}
        self._memo: dict[Any, Any] = {}

    def __enter__(self) -> RunView:
        self._lock.acquire()
        try:
            self.update()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def update(self) -> RunView:
        """Take in the calls recorded since the last update (in batches of at most BATCH)."""
        with self._lock:
            n = len(self.history)
            while self.n < n:
                stop = min(n, self.n + BATCH)
                rows = Rows.of(self._rows(self.n, stop))
                for agg in self.aggregates.values():
                    agg.add(rows)
                if len(rows.frame):
                    self.max_client = max(self.max_client, int(rows.frame["client"].max()))
                self.n = stop
            return self

    def get(self, kind: type[A]) -> A:
        """The aggregate of this kind, built from every call so far the first time it is asked for."""
        with self._lock:
            agg = self.aggregates.get(kind)
            if agg is None:
                agg = kind()
                for start in range(0, self.n, BATCH):
                    agg.add(Rows.of(self._rows(start, min(self.n, start + BATCH))))
                self.aggregates[kind] = agg
            return agg  # type: ignore[return-value]

    @property
    def lanes(self) -> int:
        return self.max_client + 1 if self.n else 1

    @property
    def span(self) -> float:
        """Seconds from the start to the latest completion (1.0 before any call)."""
        return self.get(TimeBins).span()

    def rows_at(self, seqs: Iterable[int]) -> pd.DataFrame:
        """The rows of these calls (e.g. the ones an invariant names), read in runs of nearby seqs; the last
        few sets asked for are kept."""
        wanted = frozenset(int(s) for s in seqs if 0 <= int(s) < self.n)
        if wanted in self._picked:
            return self._picked[wanted]
        ordered = sorted(wanted)
        parts = []
        i = 0
        while i < len(ordered):
            j = i
            while j + 1 < len(ordered) and ordered[j + 1] - ordered[j] <= 16:
                j += 1
            chunk = self._rows(ordered[i], ordered[j] + 1)
            parts.append(chunk[chunk["seq"].isin(wanted).to_numpy()])
            i = j + 1
        rows = pd.concat(parts, ignore_index=True) if parts else self._rows(0, 0)
        if len(self._picked) >= 16:
            self._picked.pop(next(iter(self._picked)))
        self._picked[wanted] = rows
        return rows

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        """`make()`, computed once per key for as long as no call arrives (a finished run's exact figures)."""
        if self._memo.get("n") != self.n:
            self._memo = {"n": self.n}
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def latency_columns(self) -> pd.DataFrame | None:
        """complete_ns, end_s and latency_ms of every call once the run has ended (for exact percentiles);
        None while it goes."""
        if not self.final:
            return None
        if self._exact is None or self._exact[0] != self.n:
            frame = self.history.snapshot(0, self.n)
            self._exact = (self.n, frame[["complete_ns", "end_s", "latency_ms"]])
        return self._exact[1]
