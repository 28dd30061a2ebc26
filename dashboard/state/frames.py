"""Reading the columns of a History snapshot frame, fast: categories, string and outcome-label columns, and the
numeric fields of each call's detail.

A snapshot frame has the columns seq, client, action, op, key, start_s, end_s, latency_ms, outcome, error, retries;
optionally `detail` (dicts) and `request` (the call in the seed's log format). Nothing here mutates it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dashboard.figures.palette import INFO, OK, OK_READ, ordered, short_code
from engine.record.codes import READS as READ_OPS

WRITE_OPS = ("PutItem", "UpdateItem", "DeleteItem")


def categories(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """(codes, category names) of a column: free for the categorical columns of a History snapshot."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = ["" if c is None else str(c) for c in column.cat.categories]
        codes = column.cat.codes.to_numpy()
        if (codes < 0).any():
            cats = cats + [""]
            codes = np.where(codes < 0, len(cats) - 1, codes)
        return codes.astype(np.int64), cats
    codes, uniques = pd.factorize(column.fillna("").astype(str), sort=False)
    return codes.astype(np.int64), [str(u) for u in uniques]


def as_object(values: Sequence[Any] | np.ndarray) -> pd.Series:
    """Strings kept as plain Python objects (pandas 3 would otherwise convert them to Arrow, at a cost)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def strings(column: pd.Series) -> np.ndarray:
    codes, cats = categories(column)
    return np.asarray(cats, dtype=object)[codes] if len(cats) else np.full(len(column), "", dtype=object)


def where(column: pd.Series, values: Iterable[str]) -> np.ndarray:
    """Boolean mask of rows whose value is one of `values` (vectorised over categories)."""
    wanted = set(values)
    codes, cats = categories(column)
    return np.array([c in wanted for c in cats], dtype=bool)[codes] if len(cats) else np.zeros(len(column), bool)


def outcome_codes(frame: pd.DataFrame, *, split_reads: bool = True) -> tuple[np.ndarray, list[str]]:
    """A label code per call and the labels, in legend order: ok / ok (read) / the failure's short error code /
    info (unknown). Vectorised over the categories, so 100k calls cost a few milliseconds."""
    n = len(frame)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    out_codes, out_cats = categories(frame["outcome"])
    names = [OK, OK_READ, INFO]
    ok_cat = np.array([c == "ok" for c in out_cats])[out_codes]
    info_cat = np.array([c == "info" for c in out_cats])[out_codes]
    if "error" in frame:
        err_codes, err_cats = categories(frame["error"])
    else:
        err_codes, err_cats = np.zeros(n, dtype=np.int64), [""]
    err_idx = []
    for c in err_cats:
        label = short_code(c) or "fail"
        if label not in names:
            names.append(label)
        err_idx.append(names.index(label))
    row = np.asarray(err_idx, dtype=np.int64)[err_codes]
    if split_reads and "op" in frame:
        op_codes, op_cats = categories(frame["op"])
        ok_code = np.where(np.array([c in READ_OPS for c in op_cats])[op_codes], 1, 0)
    else:
        ok_code = np.zeros(n, dtype=np.int64)
    row = np.where(ok_cat, ok_code, np.where(info_cat, 2, row))
    present = np.flatnonzero(np.bincount(row, minlength=len(names)))
    order = ordered(names[i] for i in present)
    remap = np.full(len(names), -1, dtype=np.int64)
    for new, label in enumerate(order):
        remap[names.index(label)] = new
    return remap[row], order


def outcome_labels(frame: pd.DataFrame, *, split_reads: bool = True) -> np.ndarray:
    """One label per call: ok / ok (read) / info (unknown) / the short error code of a failure."""
    codes, order = outcome_codes(frame, split_reads=split_reads)
    return np.asarray(order, dtype=object)[codes] if len(order) else np.zeros(0, dtype=object)


def details(frame: pd.DataFrame) -> list[Mapping[str, Any]]:
    """The detail dict of each row ({} when the snapshot has none)."""
    if "detail" not in frame:
        return [{}] * len(frame)
    return [d if d.__class__ is dict else (d if isinstance(d, Mapping) else {}) for d in frame["detail"].tolist()]


# Numeric detail fields the views read. A whole-run frame (RunRecord.frame) carries them as columns
# "detail.<name>" (NaN when absent), extracted in one pass; a live refresh reads them from the new calls' details.
DETAIL_FIELDS = (
    "version",
    "read_version",
    "read",
    "number",
    "amount",
    "token",
    "taken",
    "op",
    "hold",
    "attempt",
    "stale",
    "paused",
    "now",
    "expiresAt",
)


def numeric(value: Any) -> float:
    """A detail value as a float: numbers as themselves, booleans as 1/0, anything else NaN."""
    return float(value) if isinstance(value, (int, float)) else np.nan


def detail_values(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric detail field per row (float, NaN when absent): the precomputed column when there is one."""
    col = f"detail.{name}"
    if col in frame:
        return frame[col].to_numpy(dtype=float)
    return np.fromiter((numeric(d.get(name)) for d in details(frame)), dtype=float, count=len(frame))


def numeric_fields(ds: Sequence[Mapping[str, Any] | None], names: Sequence[str]) -> list[np.ndarray]:
    """Per name, its numeric value (as `numeric`) in each detail dict, in one pass over the dicts."""
    index = {name: i for i, name in enumerate(names)}
    columns = [np.full(len(ds), np.nan) for _ in names]
    rows: list[list[int]] = [[] for _ in names]
    values: list[list[float]] = [[] for _ in names]
    for row, d in enumerate(ds):
        if d:
            for name, value in d.items():
                i = index.get(name)
                if i is not None and isinstance(value, (int, float)):
                    rows[i].append(row)
                    values[i].append(value)
    for column, at, vs in zip(columns, rows, values):
        if at:
            column[at] = vs
    return columns


def detail_fields(frame: pd.DataFrame, *names: str) -> list[np.ndarray]:
    """Several numeric detail fields per row (as detail_values), reading each detail dict once."""
    if all(f"detail.{name}" in frame for name in names) or "detail" not in frame:
        return [detail_values(frame, name) for name in names]
    return numeric_fields(details(frame), names)
