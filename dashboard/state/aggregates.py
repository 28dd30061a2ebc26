"""The building blocks of what each chart draws from, kept up to date from the calls that arrived since the last
refresh.

A History only grows, and a live page redraws every chart about once a second. Re-reading (and re-grouping) a
million calls each time costs seconds, so each chart keeps the little it draws from (an `Aggregate`) and takes in
only the new calls (`RunView.update`: History rows [last, n), their details parsed once, as `Rows`).

The charts draw a DataFrame through the same aggregates (`Aggregate.of(frame)`: the whole frame as one batch), so a
live chart and the chart of a finished run or an imported file come from one piece of code; the tests feed recorded
histories in random batches and check that the figures do not depend on how the calls arrived.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

import numpy as np
import pandas as pd

from dashboard.figures.palette import OK, OK_READ
from dashboard.state.frames import outcome_codes


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
    order: list[str]  # outcome labels (ok / ok (read) / short error code / info (unknown)), frames.outcome_codes

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Rows:
        codes, order = outcome_codes(frame)
        return cls(frame, codes, order)

    def labels(self) -> np.ndarray:
        return np.asarray(self.order, dtype=object)[self.codes] if self.order else np.zeros(0, dtype=object)

    def plain(self) -> np.ndarray:
        """Calls that went as planned: ok, or ok (read)."""
        return np.isin(self.codes, [i for i, label in enumerate(self.order) if label in (OK, OK_READ)])


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


def unsplit(label: str) -> str:
    """An outcome label with reads counted as ok."""
    return OK if label == OK_READ else label


def done_ns(frame: pd.DataFrame) -> np.ndarray:
    """Completion time of each call, ns since the clients were released."""
    if "complete_ns" in frame:
        return frame["complete_ns"].to_numpy()
    return np.round(frame["end_s"].to_numpy() * 1e9).astype(np.int64)
