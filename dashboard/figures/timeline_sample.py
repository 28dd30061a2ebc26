"""The calls a per-call timeline may draw: bottom-k samples of the failed/unknown calls and of the plain ones,
exactly the calls a stable sample of all of them would pick (dashboard.figures.sampling)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.figures.palette import OK, OK_READ
from dashboard.figures.sampling import Reservoir, Sampling, choose, stable_hash
from dashboard.state.aggregates import Aggregate, Rows
from dashboard.state.frames import details, outcome_labels, strings
from dashboard.text.calls import hover_texts

TIMELINE_KEEP = 5000  # calls kept per timeline category: the most a timeline draws (charts.MAX_BARS_FINAL)

_TIMELINE_COLS = ("seq", "client", "start_s", "end_s", "latency_ms", "retries")
_TIMELINE_TEXT = ("action", "op", "key", "outcome", "error")


def row_columns(frame: pd.DataFrame, idx: np.ndarray, labels: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Rows `idx` of a snapshot frame as plain columns (strings as objects), enough to draw and hover them."""
    sub = frame.iloc[idx]
    cols = {name: sub[name].to_numpy() for name in _TIMELINE_COLS if name in sub}
    for name in _TIMELINE_TEXT:
        cols[name] = strings(sub[name]) if name in sub else np.full(len(sub), "", dtype=object)
    cols["request"] = sub["request"].to_numpy(dtype=object) if "request" in sub else np.full(len(sub), None, object)
    cols["detail"] = np.asarray(details(sub) + [None], dtype=object)[:-1]
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
        self._hovers: dict[int, str] = {}  # seq -> hover HTML: a call's text never changes, and redraws are frequent

    def add(self, rows: Rows) -> None:
        frame = rows.frame
        labels = rows.labels()
        h = stable_hash(frame["seq"].to_numpy())
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

    def sample(self, max_rows: int, flagged: pd.DataFrame | None = None) -> tuple[pd.DataFrame, Sampling]:
        """What `choose` over all calls (max_rows, keep=flagged, prefer=not plain) picks, in seq order,
        with a `label` column. `flagged`: the flagged calls' rows (a snapshot frame), none while a run goes."""
        if max_rows > self.k:
            raise ValueError(f"this sample keeps {self.k} calls per category, {max_rows} were asked for")
        parts = [r.cols for r in (self.failed, self.plain) if len(r)]
        if flagged is not None and len(flagged):
            parts.append(row_columns(flagged, np.arange(len(flagged)), outcome_labels(flagged)))
        if not parts:
            return pd.DataFrame(), Sampling(0, 0)
        cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        _, first = np.unique(cols["seq"], return_index=True)
        cols = {name: values[first] for name, values in cols.items()}  # seq order, each call once
        shown = pd.DataFrame(cols)
        if self.n <= max_rows:
            return shown, Sampling(self.n, self.n)
        keep = (
            np.isin(cols["seq"], flagged["seq"].to_numpy())
            if flagged is not None and len(flagged)
            else np.zeros(len(shown), dtype=bool)
        )
        prefer = ~np.isin(cols["label"], [OK, OK_READ])
        chosen, n_flag, n_pref = choose(cols["seq"], max_rows, keep=keep, prefer=prefer)
        return shown[chosen].reset_index(drop=True), Sampling(int(chosen.sum()), self.n, n_flag, n_pref)

    def hovers(self, shown: pd.DataFrame, labels: list[str]) -> list[str]:
        """calltext.hover_texts of `shown` (rows of `sample`, with their labels), each call's text made once: a
        live refresh or a replay's tick redraws mostly the calls it drew before."""
        seqs = shown["seq"].tolist()
        missing = [i for i, seq in enumerate(seqs) if seq not in self._hovers]
        if missing:
            if len(self._hovers) + len(missing) > 2 * len(seqs):  # keep what is drawn now, drop what was sampled out
                self._hovers = {seq: self._hovers[seq] for seq in seqs if seq in self._hovers}
            texts = hover_texts(shown.iloc[missing], [labels[i] for i in missing])
            self._hovers.update(zip((seqs[i] for i in missing), texts))
        return [self._hovers[seq] for seq in seqs]
