"""One run's aggregates (what its charts draw from), brought up to date with the calls that arrived since the
last refresh, and the few exact columns a finished run's charts read again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, cast

import pandas as pd

from dashboard.figures.timebins import TimeBins
from dashboard.figures.timeline_sample import TimelineSample
from dashboard.state.aggregates import A, Aggregate, Rows

BATCH = 100_000  # rows read from the History at a time when catching up (a page opened late, an import)


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
            return cast(A, agg)

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
