"""Which calls a chart shows when it cannot show them all: a stable sample that keeps the flagged and failed ones.

The choice is by a fixed hash of each call's seq, so a live chart's sample changes little between refreshes and a
bottom-k reservoir fed the calls in any batches picks exactly what the choice over all of them picks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Sampling:
    shown: int
    total: int
    flagged_kept: int = 0
    failures_kept: int = 0

    @property
    def sampled(self) -> bool:
        return self.shown < self.total

    def note(self, what: str = "calls") -> str:
        if not self.sampled:
            return ""
        kept = []
        if self.flagged_kept:
            kept.append(f"all {self.flagged_kept:,} flagged")
        if self.failures_kept:
            kept.append(f"{self.failures_kept:,} failed/unknown")
        extra = f"; kept {' and '.join(kept)}" if kept else ""
        return f"sampled: {self.shown:,} of {self.total:,} {what} shown{extra}"


def stable_hash(seq: np.ndarray) -> np.ndarray:
    # Knuth's multiplicative hash of the row number: a fixed pseudo-random order, so a live chart's sample
    # changes little from one refresh to the next as the run grows.
    return (seq.astype(np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)


def choose(
    seq: np.ndarray, max_rows: int, *, keep: np.ndarray | None = None, prefer: np.ndarray | None = None
) -> tuple[np.ndarray, int, int]:
    """Which of these rows (by seq) to show, at most `max_rows`: the `keep` ones first (up to half), then
    `prefer`red ones (up to half of the rest), then a stable sample. (chosen mask, kept, preferred taken).

    Each step takes the rows with the smallest stable hash of their seq, so the choice among any superset of
    the bottom-`max_rows` rows of each category is the same (aggregates.Reservoir relies on it)."""
    n = len(seq)
    chosen = np.zeros(n, dtype=bool)
    h = stable_hash(seq)
    budget = max_rows

    def take(mask: np.ndarray, k: int) -> int:
        idx = np.flatnonzero(mask & ~chosen)
        if k <= 0 or not len(idx):
            return 0
        if len(idx) > k:
            idx = idx[np.argpartition(h[idx], k - 1)[:k]]
        chosen[idx] = True
        return len(idx)

    n_flag = take(keep, budget // 2) if keep is not None else 0
    budget -= n_flag
    n_pref = take(prefer, budget // 2) if prefer is not None else 0
    budget -= n_pref
    take(np.ones(n, dtype=bool), budget)
    return chosen, n_flag, n_pref


class Reservoir:
    """The k rows with the smallest stable hash of their seq among all rows offered so far (a bottom-k sample).

    A hash is a fixed function of the row, so the bottom k of everything is the bottom k of (the bottom k so far,
    the new rows): kept from the new rows only, and exactly what `choose` over all of that category would keep.
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
