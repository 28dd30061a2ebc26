"""What a history says, in plain pandas/numpy: outcome labels and colours, sampling for the browser, the call
log text, and each pattern's evidence (versions and lost updates, counters, cancellation reasons, leases).

Pure: frames in, frames/values out; no Streamlit, no Plotly. Every function takes a History snapshot frame
(columns seq, client, action, op, key, start_s, end_s, latency_ms, outcome, error, retries; optionally
`detail` (dicts) and `request` (the call in the seed's log format)) and never mutates it.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

READ_OPS = frozenset({"GetItem", "Query", "Scan", "TransactGetItems", "BatchGetItem", "DescribeTable"})
CONFLICT_CODES = ("ConditionalCheckFailedException", "TransactionCanceledException", "TransactionConflictException")

OK = "ok"
OK_READ = "ok (read)"
INFO = "info (unknown)"
CCF = "ConditionalCheckFailed"
TX_CANCELED = "TransactionCanceled"
TX_CONFLICT = "TransactionConflict"

# One fixed colour per outcome and error code, everywhere (timeline, rates, logs). Chosen to stay apart on a
# washed-out projector: no two are neighbours in hue and lightness.
COLOURS: dict[str, str] = {
    OK: "#2E7D32",  # green: applied
    OK_READ: "#A5D6A7",  # pale green: a read that returned
    CCF: "#EF6C00",  # orange: a condition refused the write
    TX_CANCELED: "#7B1FA2",  # purple: a transaction was cancelled
    TX_CONFLICT: "#D81B60",  # magenta: transactions collided
    INFO: "#1565C0",  # blue: unknown outcome (response lost)
}
_OTHER_COLOURS = ("#C62828", "#6D4C41", "#00838F", "#9E9D24", "#455A64", "#AD1457", "#283593")
LABEL_ORDER = (OK, OK_READ, CCF, TX_CANCELED, TX_CONFLICT, INFO)
FLAG_COLOUR = "#B71C1C"
SAFE_COLOUR = "#2E7D32"
RACY_COLOUR = "#C62828"


def short_code(code: str) -> str:
    """ConditionalCheckFailedException -> ConditionalCheckFailed (how people say it out loud)."""
    return code.removesuffix("Exception") if code else code


def colour(label: str) -> str:
    if label in COLOURS:
        return COLOURS[label]
    return _OTHER_COLOURS[sum(map(ord, label)) % len(_OTHER_COLOURS)]


def ordered(labels: Iterable[str]) -> list[str]:
    """Labels in the fixed legend order: the known ones first, then the rest alphabetically."""
    present = set(labels)
    return [x for x in LABEL_ORDER if x in present] + sorted(present - set(LABEL_ORDER))


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


def _strings(column: pd.Series) -> np.ndarray:
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


# -- invariants -------------------------------------------------------------------------------------------------


def flagged_calls(invariants: Sequence[Mapping[str, Any]]) -> set[int]:
    """History rows (seq) named as evidence by the invariants that failed."""
    return {int(s) for inv in invariants if not inv.get("holds", True) for s in inv.get("calls", ())}


def invariant(invariants: Sequence[Mapping[str, Any]], *words: str) -> Mapping[str, Any] | None:
    """The first invariant whose name contains all the words."""
    for inv in invariants:
        name = str(inv.get("name", "")).lower()
        if all(w in name for w in words):
            return inv
    return None


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and np.isfinite(value):
        return float(value)
    return None


# -- sampling ---------------------------------------------------------------------------------------------------


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


def _stable_hash(seq: np.ndarray) -> np.ndarray:
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
    h = _stable_hash(seq)
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


def sample(
    frame: pd.DataFrame, max_rows: int, *, keep: Iterable[int] = (), prefer: np.ndarray | None = None
) -> tuple[pd.DataFrame, Sampling]:
    """At most `max_rows` rows: every `keep` seq first, then `prefer`red rows (up to half), then a stable sample."""
    n = len(frame)
    if n <= max_rows:
        return frame, Sampling(n, n)
    seq = frame["seq"].to_numpy()
    keep_set = np.fromiter(keep, dtype=np.int64) if not isinstance(keep, np.ndarray) else keep
    flagged = np.isin(seq, keep_set) if len(keep_set) else None
    chosen, n_flag, n_pref = choose(seq, max_rows, keep=flagged, prefer=prefer)
    return frame[chosen], Sampling(int(chosen.sum()), n, n_flag, n_pref)


def nice_step(raw: float) -> float:
    """A round bin width at or above `raw` seconds."""
    for step in (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if step >= raw:
            return float(step)
    return float(np.ceil(raw / 3600) * 3600)


# -- the call in the seed's log format ---------------------------------------------------------------------------


def result_value(outcome: str, error: str) -> str:
    if outcome == "ok":
        return '"OK"'
    if outcome == "info":
        return f'"unknown: {error or "response lost"}"'
    return f'"{error or "failed"}"'


def text_or_none(value: Any) -> str | None:
    """A text column's value: None when missing (None, or NaN in a pandas string column) or empty."""
    return value if isinstance(value, str) and value else None


def call_block(row: Mapping[str, Any]) -> str:
    """One call: its request block (`>>> UpdateItem table` ...) then `=== #seq client c action ===` and the result."""
    request = text_or_none(row.get("request")) or f">>> {row.get('op', '?')}\n    key:        {row.get('key', '')}"
    detail = row.get("detail") or {}
    extra = ""
    if isinstance(detail, Mapping):
        if detail.get("reasons"):
            extra += f"\nreasons: {json.dumps(detail['reasons'])}"
        if detail.get("lost_response"):
            extra += "\n(response lost after the server applied it: injected)"
        if detail.get("attempts"):
            extra += f"\nattempts: {', '.join(str(a) for a in detail['attempts'])}"
    retries = f", {int(row['retries'])} retries" if int(row.get("retries", 0) or 0) else ""
    title = (
        f"=== #{int(row['seq'])} client {int(row['client'])} {row.get('action', '')} · "
        f"{float(row['latency_ms']):.1f} ms at {float(row['start_s']):.3f} s{retries} ==="
    )
    return f"{request}\n\n{title}\n{result_value(str(row['outcome']), str(row.get('error') or ''))}{extra}"


def last_calls(frame: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """These calls in the order they were invoked; the last `limit` when capped."""
    sub = frame.sort_values("start_s", kind="stable")
    return sub.tail(limit) if limit is not None and len(sub) > limit else sub


def call_log(frame: pd.DataFrame, limit: int | None = None) -> str:
    """The seed-format log of these calls, in the order they were invoked; the last `limit` when capped."""
    return "\n\n".join(call_block(row) for row in last_calls(frame, limit).to_dict("records"))


_MAX_HOVER_LINES = 12
_MAX_HOVER_WIDTH = 110


def _hover_request(request: str) -> str:
    lines = request.splitlines()
    if len(lines) > _MAX_HOVER_LINES:
        lines = lines[: _MAX_HOVER_LINES - 1] + [f"    ... (+{len(lines) - _MAX_HOVER_LINES + 1} lines)"]
    lines = [ln if len(ln) <= _MAX_HOVER_WIDTH else ln[: _MAX_HOVER_WIDTH - 1] + "…" for ln in lines]
    return "<br>".join(html.escape(ln).replace("  ", "&nbsp;&nbsp;") for ln in lines)


def hover_texts(rows: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """Plotly hover HTML: the call as the seed logs it (request, then the result), clipped to a readable size.

    Request texts repeat (a counter run sends one request thousands of times), so each is escaped once.
    """
    n = len(rows)
    if n == 0:
        return []
    requests = rows["request"].tolist() if "request" in rows else [None] * n
    ops, keys = _strings(rows["op"]), _strings(rows["key"])
    actions, outcomes, errors = _strings(rows["action"]), _strings(rows["outcome"]), _strings(rows["error"])
    seq, client = rows["seq"].to_numpy(), rows["client"].to_numpy()
    lat, start = rows["latency_ms"].to_numpy(), rows["start_s"].to_numpy()
    retries = rows["retries"].to_numpy() if "retries" in rows else np.zeros(n, dtype=np.int64)
    ds = details(rows)
    cache: dict[str, str] = {}
    out = []
    for i in range(n):
        request = text_or_none(requests[i]) or f">>> {ops[i]}\n    key:        {keys[i]}"
        head = cache.get(request)
        if head is None:
            head = cache[request] = _hover_request(request)
        d = ds[i]
        extra = ""
        if d:
            if d.get("reasons"):
                extra += "<br>reasons: " + html.escape(", ".join(map(str, d["reasons"])))
            if d.get("lost_response"):
                extra += "<br>(response lost after the server applied it)"
        more = f", {int(retries[i])} retries" if retries[i] else ""
        out.append(
            f"{head}<br><br>=== #{int(seq[i])} client {int(client[i])} {html.escape(actions[i])} · "
            f"{lat[i]:.1f} ms at {start[i]:.3f} s{more} ===<br>"
            f"{html.escape(result_value(outcomes[i], errors[i]))}{extra}<br><b>{html.escape(labels[i])}</b>"
        )
    return out


# -- details ----------------------------------------------------------------------------------------------------


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


# -- optimistic locking: versions and lost updates ---------------------------------------------------------------

WRITE_OPS = ("PutItem", "UpdateItem", "DeleteItem")


def _versioned(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The write calls whose detail carries a version: the rows, their versions and the versions they read."""
    if ("detail" not in frame and "detail.version" not in frame) or frame.empty:
        return frame.iloc[:0], np.zeros(0), np.zeros(0)
    sub = frame[where(frame["op"], WRITE_OPS)]
    version = detail_values(sub, "version")
    has = ~np.isnan(version)
    sub = sub[has]
    return sub, version[has], detail_values(sub, "read_version")


def version_writes(frame: pd.DataFrame, key: str | None = None) -> pd.DataFrame:
    """Writes that carry a version (detail "version"), with a status each.

    status: "written" (acknowledged and still in the chain), "lost" (acknowledged, then a later write of the
    same version erased it), "refused" (the version condition failed: a conflict), "unknown" (response lost).
    `key`: only this item; default the contested one (the key with the most versioned writes).
    """
    cols = ["seq", "client", "key", "t", "version", "read_version", "outcome", "status", "action", "winner"]
    sub, version, read_version = _versioned(frame)
    if sub.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(
        {
            "seq": sub["seq"].to_numpy(),
            "client": sub["client"].to_numpy(),
            "key": as_object(_strings(sub["key"])),
            "t": sub["end_s"].to_numpy(),
            "order": sub["complete_ns"].to_numpy() if "complete_ns" in sub else sub["end_s"].to_numpy(),
            "version": version.astype(np.int64),
            "read_version": np.where(np.isnan(read_version), -1, read_version).astype(np.int64),
            "outcome": as_object(_strings(sub["outcome"])),
            "action": as_object(_strings(sub["action"])),
        }
    )
    if key is None:
        key = out["key"].value_counts().idxmax()
    out = out[out["key"] == key].sort_values("order", kind="stable")
    out["status"] = as_object(
        np.where(out["outcome"] == "ok", "written", np.where(out["outcome"] == "info", "unknown", "refused"))
    ).to_numpy()
    out["winner"] = -1
    ok = out[out["outcome"] == "ok"]
    last = ok.groupby("version")["seq"].transform("last")
    lost = ok["seq"] != last
    out.loc[lost[lost].index, "status"] = "lost"
    out.loc[last.index, "winner"] = last
    return out[cols].reset_index(drop=True)


def lost_updates(frame: pd.DataFrame) -> pd.DataFrame:
    """Acknowledged versioned writes erased by a later write of the same version, on every key."""
    cols = ["seq", "client", "key", "version", "winner"]
    parts = [version_writes(frame, key) for key in version_writes_keys(frame)]
    parts = [p[p["status"] == "lost"] for p in parts]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts)[cols].reset_index(drop=True)


def version_writes_keys(frame: pd.DataFrame) -> list[str]:
    sub, _, _ = _versioned(frame)
    return sorted(set(_strings(sub["key"]))) if len(sub) else []


# -- counters ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CounterFacts:
    action: str
    acknowledged: int
    unknown: int
    final: int | None  # the counter read back after the run (None while it runs)
    lost: int | None
    series: pd.DataFrame  # t, acknowledged (cumulative), written (value written by that call, or NaN)


def counter_facts(
    frame: pd.DataFrame, invariants: Sequence[Mapping[str, Any]] = (), action: str = "increment"
) -> CounterFacts:
    """Acknowledged increments against the value clients wrote and the final count read back."""
    mine = where(frame["action"], [action])
    sub = frame[mine & where(frame["outcome"], ["ok"])].sort_values("end_s", kind="stable")
    unknown = int((mine & where(frame["outcome"], ["info"])).sum())
    series = pd.DataFrame(
        {
            "t": sub["end_s"].to_numpy(),
            "acknowledged": np.arange(1, len(sub) + 1),
            "written": detail_values(sub, "read") + 1,
            "seq": sub["seq"].to_numpy(),
        }
    )
    inv = invariant(invariants, "final", "count") or invariant(invariants, "acknowledged", "increment")
    final = as_number(inv.get("observed")) if inv else None
    final_i = int(final) if final is not None else None
    lost = max(0, len(sub) - final_i) if final_i is not None else None
    return CounterFacts(action, len(sub), unknown, final_i, lost, series)


# -- transactions: cancellation reasons ---------------------------------------------------------------------------

_TX_ITEM = re.compile(r"^\s{4}- (\w+)", re.MULTILINE)


def tx_item_kinds(request: str | None) -> list[str]:
    """The action kinds of a TransactWriteItems request in log format: ["Put", "Update", ...]."""
    return _TX_ITEM.findall(text_or_none(request) or "")


def cancellation_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Count of (call action, transaction item, reason code) over cancelled transactions; "None" reasons dropped."""
    cols = ["action", "item", "reason", "count"]
    if "detail" not in frame:
        return pd.DataFrame(columns=cols)
    counts: Counter[tuple[str, str, str]] = Counter()
    frame = frame[where(frame["error"], ["TransactionCanceledException"])] if "error" in frame else frame
    requests = frame["request"] if "request" in frame else pd.Series([None] * len(frame), index=frame.index)
    kinds_cache: dict[str, list[str]] = {}
    for action, d, request in zip(_strings(frame["action"]), details(frame), requests):
        reasons = d.get("reasons")
        if not reasons:
            continue
        if request not in kinds_cache:
            kinds_cache[request] = tx_item_kinds(request)
        kinds = kinds_cache[request]
        for i, reason in enumerate(reasons):
            if not reason or reason == "None":
                continue
            item = f"item {i + 1}" + (f" ({kinds[i]})" if i < len(kinds) else "")
            counts[(action, item, short_code(str(reason)))] += 1
    if not counts:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame([(*k, v) for k, v in counts.items()], columns=cols).sort_values(cols[:3]).reset_index(drop=True)


# -- actions × outcomes (every pattern) ---------------------------------------------------------------------------


def action_outcomes(frame: pd.DataFrame, *, writes_only: bool = False) -> pd.DataFrame:
    """Rows: action; columns: outcome label; values: call counts."""
    if frame.empty:
        return pd.DataFrame()
    labels = outcome_labels(frame, split_reads=False)
    actions = _strings(frame["action"])
    if writes_only:
        keep = ~np.isin(_strings(frame["op"]), list(READ_OPS))
        labels, actions = labels[keep], actions[keep]
    table = pd.crosstab(pd.Series(actions, name="action"), pd.Series(labels, name="outcome"))
    return table[ordered(table.columns)] if len(table.columns) else table


# -- unique constraints --------------------------------------------------------------------------------------------


def unique_facts(frame: pd.DataFrame, invariants: Sequence[Mapping[str, Any]] = ()) -> dict[str, int | None]:
    """Claims made, refused because the email was taken, refused by a GSI check, duplicates and sentinels."""
    actions = _strings(frame["action"])
    outcome = _strings(frame["outcome"])
    writes = where(frame["action"], ["sign-up", "change-email"])
    failed = frame[writes & (outcome == "fail")]
    # The sentinel Put is item 2 of both transactions (sign-up and change-email): its reason says "taken".
    refused_taken = sum(
        1
        for d in details(failed)
        if len(d.get("reasons") or []) > 1 and str(d["reasons"][1]).startswith("ConditionalCheck")
    )
    checks = frame[actions == "check-email"]
    seen_taken = sum(1 for d in details(checks) if d.get("taken"))
    dup = invariant(invariants, "share")
    sent = invariant(invariants, "sentinel", "per")
    orphans = invariant(invariants, "orphan")
    return {
        "claims acknowledged": int((writes & (outcome == "ok")).sum()),
        "refused: email taken": refused_taken,
        "refused: other": len(failed) - refused_taken,
        "GSI check said taken": seen_taken,
        "unknown outcome": int((writes & (outcome == "info")).sum()),
        "users sharing an email": int(dup.get("violations", 0)) if dup else None,
        "sentinels": int(sent["observed"]) if sent and as_number(sent.get("observed")) is not None else None,
        "orphan sentinels": int(orphans["observed"])
        if orphans and as_number(orphans.get("observed")) is not None
        else None,
    }


# -- idempotency keys ----------------------------------------------------------------------------------------------


def idempotency_facts(frame: pd.DataFrame) -> dict[str, int]:
    """Requests, sends, charges made (distinct charge ids), extra charges, replays, in-progress refusals."""
    actions = _strings(frame["action"])
    outcome = _strings(frame["outcome"])
    interesting = where(frame["action"], ["claim", "charge", "read-record", "reclaim"])
    sub = frame[interesting]
    ds = details(sub)
    acts, outs = actions[interesting], outcome[interesting]
    requests: set[str] = set()
    sends: set[tuple[int, str, int]] = set()
    charges: dict[str, set[str]] = defaultdict(set)
    replays = waits = refused = reclaims = 0
    for client, action, out, d in zip(sub["client"].tolist(), acts, outs, ds):
        request = d.get("request")
        if request is None:
            continue
        if not d.get("reuse"):
            requests.add(request)
        if action in ("claim", "charge"):
            sends.add((client, request, int(d.get("attempt") or 0)))
        if action == "charge" and out in ("ok", "info") and d.get("charge") and not d.get("reuse"):
            charges[request].add(str(d["charge"]))
        elif action == "read-record" and out == "ok":
            if d.get("record") == "completed" and d.get("reply"):
                replays += 1
            elif d.get("told") == "wait":
                waits += 1
            elif d.get("reply") == "refused":
                refused += 1
        elif action == "reclaim" and out == "ok":
            reclaims += 1
    made = sum(len(c) for c in charges.values())
    return {
        "logical requests": len(requests),
        "sends (retries and duplicates included)": len(sends),
        "charges made": made,
        "extra charges": made - len(charges),
        "replays of a stored reply": replays,
        "in-progress refusals (retry later)": waits,
        "key reused with another amount: refused": refused,
        "stuck claims taken over": reclaims,
    }


# -- GSI consistency ---------------------------------------------------------------------------------------------


def gsi_staleness(frame: pd.DataFrame) -> pd.DataFrame:
    """Per acknowledged write: when it was acknowledged, ms until the first read that saw it, reads it took.

    `seen_ms` is NaN for a write no read ever saw. Reads are matched to writes by (client, op).
    """
    cols = ["client", "op", "t", "seen_ms", "reads", "stale_reads", "seq"]
    writes = frame[where(frame["action"], ["write"]) & where(frame["outcome"], ["ok"])]
    reads = frame[where(frame["action"], ["read-back"]) & where(frame["outcome"], ["ok"])]
    if writes.empty:
        return pd.DataFrame(columns=cols)
    w = pd.DataFrame(
        {
            "client": writes["client"].to_numpy(),
            "op": detail_values(writes, "op"),
            "t": writes["end_s"].to_numpy(),
            "done_ns": writes["complete_ns"].to_numpy(),
            "seq": writes["seq"].to_numpy(),
        }
    )
    r = pd.DataFrame(
        {
            "client": reads["client"].to_numpy(),
            "op": detail_values(reads, "op"),
            "sent_ns": reads["invoke_ns"].to_numpy(),
            "stale": detail_values(reads, "stale") > 0,
        }
    )
    per = r.groupby(["client", "op"]).agg(reads=("stale", "size"), stale_reads=("stale", "sum"))
    first = r[~r["stale"]].groupby(["client", "op"])["sent_ns"].min().rename("first_ns")
    out = w.join(per, on=["client", "op"]).join(first, on=["client", "op"])
    out["seen_ms"] = np.clip((out["first_ns"] - out["done_ns"]) / 1e6, 0, None)
    out[["reads", "stale_reads"]] = out[["reads", "stale_reads"]].fillna(0).astype(int)
    return out[cols].reset_index(drop=True)


# -- distributed locking -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leases:
    holds: pd.DataFrame  # client, hold, token, start, end, ended ("released" | "expired" | "open"), takeover, seq
    events: pd.DataFrame  # client, t, kind, seq, token: heartbeat, expiry, refused-release, write-*, ...


def lease_timeline(frame: pd.DataFrame, flagged: Iterable[int] = ()) -> Leases:
    """Leases from the history: acquire → release (or expiry, moved by heartbeats), per worker and hold.

    A lease ends at its release when that came first, else at its expiry (expiresAt placed on the call's own
    clock: invoke + (expiresAt - now)). An acquisition made while the previous lease ended by expiry is a
    takeover. Writes are marked landed, refused (the fencing token) or stale-landed (named by an invariant).
    """
    from dashboard.aggregates import LeaseEvents  # the incremental path, fed the whole frame in one batch

    return LeaseEvents.of(frame).timeline(flagged)


def close_leases(leases: Any, events: list[Any], hold_cols: list[str], event_cols: list[str]) -> Leases:
    """Each lease ends at its release or its expiry, whichever came first; an expiry followed by another
    holder's start is a takeover. Shared by the whole-frame and the incremental (aggregates) paths."""
    rows = []
    for lease in sorted(leases, key=lambda x: x["start"]):
        release, expiry = lease["release"], lease["expiry"]
        if not np.isnan(release) and (np.isnan(expiry) or release <= expiry):
            end, ended = release, "released"
        elif not np.isnan(expiry):
            end, ended = expiry, "expired"
            events.append((lease["client"], expiry, "lease expired", lease["seq"], lease["token"]))
        else:
            end, ended = lease["start"], "open"
        rows.append(
            {
                "client": lease["client"],
                "hold": lease["hold"],
                "token": lease["token"],
                "start": lease["start"],
                "end": end,
                "ended": ended,
                "seq": lease["seq"],
            }
        )
    holds = pd.DataFrame(rows, columns=[c for c in hold_cols if c != "takeover"])
    prev_expired = holds["ended"].shift(1).eq("expired") & (holds["start"] >= holds["end"].shift(1) - 1e-9)
    holds["takeover"] = prev_expired.to_numpy(dtype=bool)
    return Leases(holds[hold_cols], pd.DataFrame(events, columns=event_cols).sort_values("t", kind="stable"))
