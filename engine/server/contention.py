"""The aws-like profile's model of DynamoDB under contention. Everything here is SIMULATED (profile.py has the
knobs, their defaults and where those come from); tables of the exact profile never reach it.

What it adds, on top of the server's one request lock (which keeps every request atomic in both profiles):
1. Transaction conflicts. A committed TransactWriteItems holds every item it names for `commit_ms`, and its
   answer leaves only after that window (DynamoDB's prepare and commit phases). While held, another
   TransactWriteItems or TransactGetItems naming the item is cancelled with reason TransactionConflict, and a
   PutItem, UpdateItem or DeleteItem on it fails with TransactionConflictException. Nothing is half-applied:
   a refused request is refused before moto sees it.
2. Eventually consistent reads. Each write remembers the item's previous image for `stale_ms`. A GetItem,
   BatchGetItem, Query or Scan without ConsistentRead is served, with probability `stale_share`, by the
   lagging copy: every item written in the last `stale_ms` shows its image from before those writes. A read
   with ConsistentRead=True never is. (GSI reads keep their own lag, gsi_lag.py.)
3. Hot partition keys. A token bucket per partition key for writes (`write_units`/s) and reads
   (`read_units`/s), holding at most a tenth of a second's worth: a request past it is answered with
   ProvisionedThroughputExceededException (in a transaction: cancelled with reason ThrottlingError), which
   botocore retries per the run's retry policy. Units: 1 per item written (2 in a transaction), 1 per item
   read with ConsistentRead (0.5 without, 2 in a transaction), as for items up to 1 KB / 4 KB.
4. Network time. Each request's answer is held back for a time drawn from a lognormal distribution (median
   `latency_ms`, 99th percentile `latency_p99_ms`), outside the lock: the server's loop answers others
   meanwhile (serve.py), so requests overlap as they do on AWS.

Not modelled: BatchWriteItem is neither held nor throttled, Query and Scan are not throttled, capacity does
not depend on item size, and a partition is one partition key (DynamoDB splits and merges partitions).
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from engine.server.gsi_lag import _expire, _get, _key_of, _Pending, _put, _written_keys
from engine.server.limits import Refused
from engine.server.profile import PROFILE_TAG, ProfileSpec

_SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
_TABLE_CHANGES = frozenset({"CreateTable", "DeleteTable", "TagResource", "UntagResource"})
_BURST_S = 0.1  # a bucket holds a tenth of a second of its rate
_Z99 = 2.3263478740408408  # the standard normal's 99th percentile

_Ref = tuple[str, str]  # (region, table name)


@dataclass
class _Table:
    moto: Any
    profile: ProfileSpec


def _backend() -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]


class AwsLike:
    """State of the model; every method is called with the server's request lock held, except `delay_s`."""

    def __init__(self, default: ProfileSpec, seed: int | None = None) -> None:
        self.default = default  # for tables without a ddblab:profile tag
        self._random = random.Random(seed)
        self._tables: dict[_Ref, _Table | None] = {}
        self._holds: dict[tuple[_Ref, Any], float] = {}  # item -> until (monotonic s)
        self._buckets: dict[tuple[_Ref, Any, str], list[float]] = {}  # [tokens, last refill]
        self._pending: dict[_Ref, dict[Any, _Pending]] = {}  # stale images, as gsi_lag's
        self.stats: dict[str, Counter[str]] = {}  # per table name: what the model did

    # -- which tables it covers ---------------------------------------------------------------------------

    def table_changed(self, op: str) -> bool:
        """Forget cached profiles when tables or their tags change. True when `op` is such a change."""
        if op in _TABLE_CHANGES:
            self._tables.clear()
            return True
        return False

    def profile(self, op: str, params: dict[str, Any], region: str) -> _Table | None:
        """The table a data request goes to, when its profile is aws-like; None otherwise."""
        name = _table_name(op, params)
        if not name:
            return None
        ref = (region, name)
        if ref not in self._tables:
            self._tables[ref] = self._load(region, name)
        return self._tables[ref]

    def _load(self, region: str, name: str) -> _Table | None:
        table = _backend()[region].tables.get(name)
        if table is None:
            return None
        spec = self.default
        for tag in table.tags or []:
            if tag.get("Key") == PROFILE_TAG:
                try:
                    spec = ProfileSpec.from_tag(str(tag.get("Value", "")))
                except Exception:
                    spec = self.default
        return _Table(table, spec) if spec.simulated else None

    # -- one request ----------------------------------------------------------------------------------------

    @contextmanager
    def around(self, op: str, params: dict[str, Any], region: str, table: _Table) -> Iterator[dict[str, bool]]:
        """Wrap one moto call on an aws-like table: Refused before it (throttled, conflict), stale images
        swapped in for it, holds and images recorded after it. The caller sets result["ok"]."""
        now = time.monotonic()
        spec = table.profile
        ref = (region, table.moto.name)
        counts = self.stats.setdefault(table.moto.name, Counter())
        counts["requests"] += 1
        keys = self._keys(op, params, table.moto)
        self._admit(op, params, ref, keys, spec, now, counts)
        self._check_holds(op, ref, keys, now, counts)
        result = {"ok": False}
        if op in _READS and not params.get("ConsistentRead") and not params.get("IndexName"):
            counts["eventual_reads"] += 1
            with self._stale(op, ref, keys, table.moto, spec, now, counts):
                yield result
            return
        captured = self._capture(op, params, table.moto, spec)
        yield result
        if not result["ok"]:
            return
        if op == "TransactWriteItems" and spec.commit_ms > 0:
            until = now + spec.commit_ms / 1000.0
            for _, key in keys:
                self._holds[(ref, key)] = until
            counts["transactions_held"] += 1
        if captured:
            pending = self._pending.setdefault(ref, {})
            for key, image in captured.items():
                queue = pending.setdefault(key, deque())
                _expire(queue, now)
                queue.append((now + spec.stale_ms / 1000.0, image))

    def delay_s(self, op: str, table: _Table, ok: bool) -> float:
        """How long the answer waits before it leaves: network time, plus the commit window of a committed
        transaction."""
        spec = table.profile
        delay = 0.0
        if spec.latency_ms > 0:
            sigma = math.log(max(spec.latency_p99_ms, spec.latency_ms) / spec.latency_ms) / _Z99
            delay = spec.latency_ms * math.exp(sigma * self._random.gauss(0.0, 1.0)) / 1000.0
        if op == "TransactWriteItems" and ok:
            delay += spec.commit_ms / 1000.0
        return min(delay, 10.0)

    def table_stats(self, name: str) -> dict[str, int]:
        return dict(self.stats.get(name, Counter()))

    # -- internals ------------------------------------------------------------------------------------------

    def _keys(self, op: str, params: dict[str, Any], table: Any) -> list[tuple[str, Any]]:
        """(kind, item key) of every item the request names on this table; kind says how it uses the item."""
        out: list[tuple[str, Any]] = []
        if op in _SINGLE_WRITES or op == "GetItem":
            key = _key_of(table, params.get("Key") or params.get("Item") or {})
            if key is not None:
                out.append(("write" if op != "GetItem" else "read", key))
        elif op in ("TransactWriteItems", "TransactGetItems"):
            for action in params.get("TransactItems", []):
                for kind, body in action.items():
                    if body.get("TableName") == table.name:
                        key = _key_of(table, body.get("Key") or body.get("Item") or {})
                        if key is not None:
                            out.append(("tget" if kind == "Get" else "twrite", key))
        elif op == "BatchGetItem":
            for key_attrs in (params.get("RequestItems", {}).get(table.name) or {}).get("Keys", []):
                key = _key_of(table, key_attrs)
                if key is not None:
                    out.append(("read", key))
        return out

    def _admit(
        self,
        op: str,
        params: dict[str, Any],
        ref: _Ref,
        keys: list[tuple[str, Any]],
        spec: ProfileSpec,
        now: float,
        counts: Counter[str],
    ) -> None:
        """Take the request's capacity units from each partition key's bucket, or refuse it whole."""
        eventual = not params.get("ConsistentRead")
        wanted: dict[tuple[_Ref, Any, str], float] = {}
        for kind, key in keys:
            if kind in ("write", "twrite"):
                units, bucket = (2.0 if kind == "twrite" else 1.0), "w"
            else:
                units, bucket = (2.0 if kind == "tget" else 0.5 if eventual else 1.0), "r"
            slot = (ref, key[0], bucket)
            wanted[slot] = wanted.get(slot, 0.0) + units
        throttled = []
        for slot, units in wanted.items():
            rate = spec.write_units if slot[2] == "w" else spec.read_units
            tokens, last = self._buckets.get(slot) or (rate * _BURST_S, now)
            tokens = min(rate * _BURST_S, tokens + (now - last) * rate)
            self._buckets[slot] = [tokens, now]
            if tokens < units:
                throttled.append(slot[1])
        if throttled:
            counts["throttled"] += 1
            if op.startswith("Transact"):
                reasons = [
                    {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity for this key"}
                    if key[0] in throttled
                    else {"Code": "None"}
                    for _, key in keys
                ]
                raise _cancelled(reasons)
            raise Refused(
                "ProvisionedThroughputExceededException",
                "The level of throughput for one partition key was exceeded (simulated per-key ceiling)",
            )
        for slot, units in wanted.items():
            self._buckets[slot][0] -= units

    def _check_holds(self, op: str, ref: _Ref, keys: list[tuple[str, Any]], now: float, counts: Counter[str]) -> None:
        if not self._holds or op not in ("TransactWriteItems", "TransactGetItems", *_SINGLE_WRITES):
            return
        held = []
        for _, key in keys:
            until = self._holds.get((ref, key))
            if until is not None and until <= now:
                del self._holds[(ref, key)]
                until = None
            held.append(until is not None)
        if len(self._holds) > 10_000:
            self._holds = {k: u for k, u in self._holds.items() if u > now}
        if not any(held):
            return
        counts["transaction_conflicts"] += 1
        if op in _SINGLE_WRITES:
            raise Refused("TransactionConflictException", "Transaction is ongoing for the item")
        raise _cancelled(
            [
                {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
                if h
                else {"Code": "None"}
                for h in held
            ]
        )

    def _capture(self, op: str, params: dict[str, Any], table: Any, spec: ProfileSpec) -> dict[Any, Any]:
        """Before a write: the images of the items it may change, for stale reads (moto updates in place)."""
        if spec.stale_ms <= 0 or spec.stale_share <= 0:
            return {}
        if op not in _SINGLE_WRITES and op not in ("TransactWriteItems", "BatchWriteItem"):
            return {}
        captured: dict[Any, Any] = {}
        for name, attrs in _written_keys(op, params):
            if name != table.name:
                continue
            key = _key_of(table, attrs)
            if key is not None and key not in captured:
                captured[key] = copy.deepcopy(_get(table, key))
        return captured

    @contextmanager
    def _stale(
        self,
        op: str,
        ref: _Ref,
        keys: list[tuple[str, Any]],
        table: Any,
        spec: ProfileSpec,
        now: float,
        counts: Counter[str],
    ) -> Iterator[None]:
        pending = self._pending.get(ref)
        if not pending or self._random.random() >= spec.stale_share:
            yield
            return
        wanted = [key for _, key in keys] if op in ("GetItem", "BatchGetItem") else list(pending)
        restore: list[tuple[Any, Any]] = []
        for key in wanted:
            queue = pending.get(key)
            if queue is None:
                continue
            _expire(queue, now)
            if not queue:
                del pending[key]
                continue
            restore.append((key, _get(table, key)))
            _put(table, key, queue[0][1])  # the image before the oldest write this copy has not seen
        if restore:
            counts["stale_reads"] += 1
        try:
            yield
        finally:
            for key, item in reversed(restore):
                _put(table, key, item)


def _cancelled(reasons: list[dict[str, str]]) -> Refused:
    codes = ", ".join(r["Code"] for r in reasons)
    return Refused(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )


def _table_name(op: str, params: dict[str, Any]) -> str:
    name = params.get("TableName")
    if isinstance(name, str):
        return name
    if op in ("TransactWriteItems", "TransactGetItems"):
        for action in params.get("TransactItems") or []:
            for body in action.values():
                return str(body.get("TableName", ""))
    if op in ("BatchGetItem", "BatchWriteItem"):
        for table in params.get("RequestItems") or {}:
            return str(table)
    return ""


def encode_error(refused: Refused) -> bytes:
    """DynamoDB's JSON error body, with the cancellation reasons of a cancelled transaction."""
    body: dict[str, Any] = {"__type": f"com.amazonaws.dynamodb.v20120810#{refused.code}", "message": refused.message}
    body.update(refused.extra)
    return json.dumps(body).encode()
