"""Outcomes and latency over time, as a live chart draws them: counts per (time bin, outcome label) and a latency
histogram per time bin, by completion time.

- bins of a width that divides every width the chart can ask for (0.05 s, then 1 s, 5 s, 60 s... as the run grows),
  summed into the chart's bins when drawn;
- latency in log-spaced buckets (1 % wide) per bin: percentiles within 1 % while a run goes (a finished run's
  chart uses the exact percentiles again: `RunView.latency_columns`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dashboard.figures.palette import ordered
from dashboard.state.aggregates import Aggregate, Rows, done_ns, unsplit


def nice_step(raw: float) -> float:
    """A round bin width at or above `raw` seconds."""
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if step >= raw:
            return float(step)
    return float(np.ceil(raw / 3600) * 3600)


# Each width divides every wider bin width nice_step can give (0.05 s divides all; 1 s all from 1 s up; ...).
_STORE_NS = (50_000_000, 1_000_000_000, 5_000_000_000, 60_000_000_000, 300_000_000_000, 3_600_000_000_000)
GAMMA = 1.01  # latency buckets: [GAMMA**b, GAMMA**(b + 1)) ms
_LOG_GAMMA = math.log(GAMMA)
_MIN_MS = 1e-3


def bin_width(span_s: float, target: int) -> float:
    """The chart's bin width (s): about `target` bins over the span, rounded (nice_step)."""
    return nice_step(max(span_s / target, 0.05))


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
            name = unsplit(label)
            merged[name] = merged[name] + counts[:, i] if name in merged else counts[:, i]
        order = ordered(name for name, column in merged.items() if column.sum())
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
