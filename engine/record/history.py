"""The record of a run: one Call per boto3 call, kept columnar so a million calls stay small.

Interval semantics (after Porcupine and Jepsen), written down once:
- `invoke_ns` is taken just before the boto3 call, `complete_ns` just after it returned or raised, both from
  `time.monotonic_ns()` of the same process. The closed interval [invoke_ns, complete_ns] contains the moment
  the server applied the call, if it did. Two calls whose intervals overlap were concurrent.
- `outcome` OK: the call was applied. FAIL: it definitely was not (a condition failed, a transaction was
  cancelled, the request was invalid). INFO: unknown, e.g. the response was lost after the request left, or
  botocore retried a call that may have been applied by an earlier attempt.
"""

from __future__ import annotations

import json
import threading
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from engine.errors import HistoryFileError

FORMAT = "ddblab-history"
FORMAT_VERSION = 1
_BOM = "\ufeff"  # what Windows editors put first in a UTF-8 file: not part of the header


class Outcome(StrEnum):
    OK = "ok"  # applied
    FAIL = "fail"  # definitely not applied: ConditionalCheckFailed, TransactionCanceled, Validation
    INFO = "info"  # unknown: timeout or connection lost after the request left (an ambiguous write)


_OUTCOMES = (Outcome.OK, Outcome.FAIL, Outcome.INFO)
_OUTCOME_CODE = {o: i for i, o in enumerate(_OUTCOMES)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One boto3 call as the client saw it."""

    client: int  # which thread
    action: str  # pattern-level intent: "withdraw", "acquire", "charge"
    op: str  # DynamoDB operation: "PutItem", "TransactWriteItems"
    key: str
    invoke_ns: int
    complete_ns: int
    outcome: Outcome
    error: str | None = None  # DynamoDB error code, never message text
    retries: int = 0  # attempts botocore made beyond the first (ResponseMetadata.RetryAttempts)
    detail: Mapping[str, Any] = field(default_factory=dict)  # version read/written, reasons, fence token, ...
    request: str | None = None  # the call in the seed's log format

    @property
    def latency_ns(self) -> int:
        return self.complete_ns - self.invoke_ns


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


# One encoder for every call: json.dumps with options builds a new encoder each time, which cost more than
# encoding a small detail map.
_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))


def dumps(value: Any) -> str:
    """JSON for details and exports: Decimals as numbers, sets as lists."""
    return _ENCODER.encode(value)


class _Interner:
    """Maps repeated strings to small ints; code 0 is None."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.values: list[str | None] = [None]
        self._codes: dict[str, int] = {}
        self._bytes = 0
        self._max_bytes = max_bytes

    def code(self, value: str | None) -> int:
        if value is None:
            return 0
        code = self._codes.get(value)
        if code is None:
            if self._max_bytes is not None and self._bytes + len(value) > self._max_bytes:
                return 0  # over budget: the text is dropped, the call itself is still recorded
            code = len(self.values)
            self._codes[value] = code
            self.values.append(value)
            self._bytes += len(value)
        return code


class History:
    """Thread-safe, append-only, columnar record of Calls.

    Detail maps are stored as compact JSON in one bytearray; request texts are interned with a byte budget,
    so a counter run that repeats one request costs four bytes a call for it.
    """

    def __init__(self, *, request_text_budget: int = 32 * 1024 * 1024, t0_ns: int | None = None) -> None:
        self.t0_ns = time.monotonic_ns() if t0_ns is None else t0_ns
        self._lock = threading.Lock()
        self._client = array("i")
        self._action = array("H")
        self._op = array("B")
        self._key = array("I")
        self._invoke = array("q")
        self._complete = array("q")
        self._outcome = array("b")
        self._error = array("H")
        self._retries = array("H")
        self._request = array("I")
        self._detail_end = array("Q")
        self._detail = bytearray()
        self._actions = _Interner()
        self._ops = _Interner()
        self._keys = _Interner()
        self._errors = _Interner()
        self._requests = _Interner(request_text_budget)
        self._outcome_counts = [0, 0, 0]
        self._error_counts: Counter[str] = Counter()
        # (action, error) of every refused call, so live counters can tell a lost race from a sold-out refusal;
        # a cancellation whose reasons name TransactionConflict is keyed by that, whatever the action.
        self._refusals: Counter[tuple[str, str]] = Counter()
        self._retry_total = 0

    # -- writing -------------------------------------------------------------------------------------------

    def append(self, call: Call) -> None:
        detail = dumps(call.detail).encode() if call.detail else b""
        with self._lock:
            self._client.append(call.client)
            self._action.append(self._actions.code(call.action))
            self._op.append(self._ops.code(call.op))
            self._key.append(self._keys.code(call.key))
            self._invoke.append(call.invoke_ns)
            self._complete.append(call.complete_ns)
            oc = _OUTCOME_CODE[call.outcome]
            self._outcome.append(oc)
            self._error.append(self._errors.code(call.error))
            self._retries.append(min(call.retries, 65535))
            self._request.append(self._requests.code(call.request))
            self._detail += detail
            self._detail_end.append(len(self._detail))
            self._outcome_counts[oc] += 1
            if call.error:
                self._error_counts[call.error] += 1
                collided = call.detail and "TransactionConflict" in call.detail.get("reasons", ())
                self._refusals[(call.action, "TransactionConflict" if collided else call.error)] += 1
            self._retry_total += call.retries

    def extend(self, calls: Iterable[Call]) -> None:
        for call in calls:
            self.append(call)

    # -- reading -------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._client)

    def counts(self) -> dict[str, Any]:
        """Live progress, cheap enough to poll several times a second while a run goes on."""
        with self._lock:
            ok, fail, info = self._outcome_counts
            return {
                "calls": ok + fail + info,
                "ok": ok,
                "fail": fail,
                "info": info,
                "errors": dict(self._error_counts),
                "refusals": dict(self._refusals),
                "retries": self._retry_total,
            }

    def _detail_at(self, i: int) -> Mapping[str, Any]:
        start = self._detail_end[i - 1] if i else 0
        end = self._detail_end[i]
        return json.loads(self._detail[start:end]) if end > start else {}

    def call(self, i: int) -> Call:
        with self._lock:
            return Call(
                client=self._client[i],
                action=self._actions.values[self._action[i]] or "",
                op=self._ops.values[self._op[i]] or "",
                key=self._keys.values[self._key[i]] or "",
                invoke_ns=self._invoke[i],
                complete_ns=self._complete[i],
                outcome=_OUTCOMES[self._outcome[i]],
                error=self._errors.values[self._error[i]],
                retries=self._retries[i],
                detail=self._detail_at(i),
                request=self._requests.values[self._request[i]],
            )

    def __iter__(self) -> Iterator[Call]:
        for i in range(len(self)):
            yield self.call(i)

    def calls(self, rows: Iterable[int] | None = None) -> list[Call]:
        return [self.call(i) for i in (range(len(self)) if rows is None else rows)]

    def details(self, rows: Iterable[int]) -> list[Mapping[str, Any]]:
        """Detail maps of many rows, decoded in one json.loads (a per-row loads costs several times more)."""
        with self._lock:
            ends = self._detail_end
            parts = [bytes(self._detail[(ends[i - 1] if i else 0) : ends[i]]) or b"{}" for i in rows]
        return json.loads(b"[" + b",".join(parts) + b"]") if parts else []

    def snapshot(
        self, start: int = 0, stop: int | None = None, *, detail: bool = False, requests: bool = False
    ) -> pd.DataFrame:
        """A columnar copy of rows [start, stop) as a DataFrame; cheap: no per-row Python work by default.

        Columns: seq, client, action, op, key, invoke_ns, complete_ns (relative to t0), start_s, end_s,
        latency_ms, outcome, error ("" when none), retries; plus `detail` (dicts) and `request` (text) on request.
        """
        with self._lock:
            n = len(self._client)
            stop = n if stop is None else min(stop, n)
            start = max(0, min(start, stop))
            cols: dict[str, np.ndarray] = {
                "client": np.frombuffer(self._client[start:stop], dtype=np.int32).astype(np.int32),
                "action": np.frombuffer(self._action[start:stop], dtype=np.uint16).copy(),
                "op": np.frombuffer(self._op[start:stop], dtype=np.uint8).copy(),
                "key": np.frombuffer(self._key[start:stop], dtype=np.uint32).copy(),
                "invoke": np.frombuffer(self._invoke[start:stop], dtype=np.int64).copy(),
                "complete": np.frombuffer(self._complete[start:stop], dtype=np.int64).copy(),
                "outcome": np.frombuffer(self._outcome[start:stop], dtype=np.int8).copy(),
                "error": np.frombuffer(self._error[start:stop], dtype=np.uint16).copy(),
                "retries": np.frombuffer(self._retries[start:stop], dtype=np.uint16).copy(),
                "request": np.frombuffer(self._request[start:stop], dtype=np.uint32).copy(),
            }
            names: dict[str, list[str | None]] = {
                "action": list(self._actions.values),
                "op": list(self._ops.values),
                "key": list(self._keys.values),
                "error": list(self._errors.values),
                "request": list(self._requests.values),
            }
            details = None
        if detail:
            details = self.details(range(start, stop))
        invoke = cols["invoke"] - self.t0_ns
        complete = cols["complete"] - self.t0_ns
        frame = pd.DataFrame(
            {
                "seq": np.arange(start, stop, dtype=np.int64),
                "client": cols["client"],
                "action": _categorical(cols["action"], names["action"]),
                "op": _categorical(cols["op"], names["op"]),
                "key": _categorical(cols["key"], names["key"]),
                "invoke_ns": invoke,
                "complete_ns": complete,
                "start_s": invoke / 1e9,
                "end_s": complete / 1e9,
                "latency_ms": (complete - invoke) / 1e6,
                "outcome": pd.Categorical.from_codes(cols["outcome"], categories=[o.value for o in _OUTCOMES]),
                "error": _categorical(cols["error"], names["error"], none_as=""),
                "retries": cols["retries"].astype(np.int32),
            }
        )
        if requests:
            values = names["request"]
            frame["request"] = [values[c] for c in cols["request"]]
        if details is not None:
            frame["detail"] = details
        return frame

    # -- files ---------------------------------------------------------------------------------------------

    def write_jsonl(self, out: TextIO, meta: Mapping[str, Any] | None = None) -> int:
        """A header line, then one JSON object per call. Returns the number of calls written."""
        out.write(dumps({"format": FORMAT, "version": FORMAT_VERSION, "meta": dict(meta or {})}) + "\n")
        count = 0
        for call in self.calls(range(len(self))):
            out.write(dumps(call_to_dict(call, self.t0_ns)) + "\n")
            count += 1
        return count

    def write_csv(self, out: TextIO, labels: Mapping[str, str] | None = None) -> int:
        """Every call as a spreadsheet row; `labels` are columns with one value for the whole run, last (a CSV has
        no header for the run, so a simulated profile travels on every row)."""
        frame = self.snapshot(requests=True)
        frame["detail"] = [dumps(d) if d else "" for d in self.details(range(len(frame)))]
        for name, value in (labels or {}).items():
            frame[name] = value
        frame.to_csv(out, index=False)
        return len(frame)

    def export(self, path: str | Path, meta: Mapping[str, Any] | None = None) -> int:
        """Write to `path` by its suffix (.jsonl or .csv), via a temporary file so nothing is half-written."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".jsonl", ".csv"):
            from engine.errors import BadInput

            raise BadInput(
                f"cannot export history to {path.name!r}: unknown file type",
                "name the file *.jsonl (replayable) or *.csv (for spreadsheets)",
            )
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as out:
                if suffix == ".jsonl":
                    count = self.write_jsonl(out, meta)
                else:
                    count = self.write_csv(out, csv_labels((meta or {}).get("summary") or {}))
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a disk that filled up, a folder that went away: leave no half file
            raise
        return count


def _categorical(codes: np.ndarray, values: list[str | None], none_as: str | None = None) -> pd.Categorical:
    # Code 0 is None in every interner; categories must be unique strings.
    categories = [none_as if v is None else v for v in values]
    if none_as is None:
        categories[0] = "\x00none"
    return pd.Categorical.from_codes(codes.astype(np.int64), categories=categories)


def call_to_dict(call: Call, t0_ns: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = {
        "client": call.client,
        "action": call.action,
        "op": call.op,
        "key": call.key,
        "invoke_ns": call.invoke_ns - t0_ns,
        "complete_ns": call.complete_ns - t0_ns,
        "outcome": call.outcome.value,
        "error": call.error,
        "retries": call.retries,
    }
    if call.detail:
        row["detail"] = dict(call.detail)
    if call.request:
        row["request"] = call.request
    return row


def read_jsonl(source: str | Path | TextIO) -> tuple[History, dict[str, Any]]:
    """Load a history written by `History.write_jsonl`, every field checked (engine/record/schema.py) before anything is
    kept; raises HistoryFileError naming the line and the field. Returns the history and the header's meta, its
    summary checked too."""
    from engine.record import schema  # only a file being read needs its checks

    if isinstance(source, (str, Path)):
        try:
            with open(source, encoding="utf-8") as f:
                return read_jsonl(f)
        except (OSError, UnicodeDecodeError) as e:
            raise HistoryFileError(
                f"cannot read history file {str(source)!r}: {e}", "pick a .jsonl file exported by the lab"
            ) from None
    fix = schema.FIX
    lines = iter(source)
    try:
        header_line = next(lines, "")
    except UnicodeDecodeError:
        raise HistoryFileError("history file is not UTF-8 text", fix) from None
    try:
        header = schema.loads(header_line.removeprefix(_BOM))
    except (ValueError, RecursionError):
        raise HistoryFileError("line 1 of the history file is not JSON", fix) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise HistoryFileError("the file has no ddblab history header on line 1", fix)
    if header.get("version") != FORMAT_VERSION or isinstance(header.get("version"), bool):
        raise HistoryFileError(
            f"history format version {str(header.get('version'))[:20]!r} is not supported",
            f"export it again with this version of the lab (format {FORMAT_VERSION})",
        )
    meta = schema.check_meta(header.get("meta"))
    history = History(t0_ns=0)
    distinct: dict[str, set[str]] = {name: set() for name in schema.MAX_DISTINCT}
    try:
        for number, line in enumerate(lines, start=2):
            if not line.strip():
                continue
            try:
                row = schema.loads(line)
            except (ValueError, RecursionError):
                raise HistoryFileError(f"line {number} of the history file is not JSON (truncated?)", fix) from None
            fields = schema.check_call(row, number)
            for name, seen in distinct.items():
                value = fields[name]
                if value is not None and value not in seen:
                    seen.add(value)
                    if len(seen) > schema.MAX_DISTINCT[name]:
                        raise HistoryFileError(
                            f"line {number} of the history file: more than {schema.MAX_DISTINCT[name]:,} "
                            f"different {name} values",
                            fix,
                        )
            history.append(Call(**{**fields, "outcome": Outcome(fields["outcome"])}))
    except UnicodeDecodeError:
        raise HistoryFileError("history file is not UTF-8 text", fix) from None
    return history, meta


def csv_labels(summary: Mapping[str, Any]) -> dict[str, str]:
    """The run-wide columns of a CSV export: the server profile, marked SIMULATED under aws-like with the knobs it
    changed (the rates in such a file came from the server's model, and a spreadsheet shows nothing else to say so)."""
    from engine.server.profile import ProfileSpec, simulated_label  # here: not on every import chain of History

    profile = summary.get("profile")
    if not isinstance(profile, Mapping) or not profile.get("name"):
        return {}
    spec = ProfileSpec.from_summary(dict(profile))  # its knobs off the model's defaults are named in the column
    if spec is not None:
        return {"server_profile": simulated_label(spec)}
    return {"server_profile": f"{profile['name']} (SIMULATED)" if profile.get("simulated") else str(profile["name"])}
