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
   (`read_units`/s), holding a tenth of a second's worth (at least a unit; a larger request passes when the
   bucket is full and leaves it in debt): a request past it is answered with
   ProvisionedThroughputExceededException (in a transaction: cancelled with reason ThrottlingError), which
   botocore retries per the run's retry policy. Units: 1 per item written (2 in a transaction), 1 per item
   read with ConsistentRead (0.5 without, 2 in a transaction), as for items up to 1 KB / 4 KB. A Query reads one partition: it takes one read's units from its partition key's bucket (as
   a query reading up to 4 KB does; on a global secondary index, from that index's bucket for the key).
   A Scan is not charged to any key: DynamoDB reads a scan's pages partition after partition against the
   table's capacity, and the model has no table-wide ceiling.
4. Network time. Each request's answer is held back for a time drawn from a lognormal distribution (median
   `latency_ms`, 99th percentile `latency_p99_ms`), outside the lock: the server's loop answers others
   meanwhile (serve.py), so requests overlap as they do on AWS.

BatchWriteItem is not atomic on DynamoDB: each put or delete in it is an item-level write of its own. So each
one on an item a transaction holds (TransactionConflict), or past its key's bucket (throttled), is left out
and returned in UnprocessedItems, and the rest are applied; when none could be processed and all for
throughput, the whole request is refused with ProvisionedThroughputExceededException, as DynamoDB documents.

Not modelled: capacity does not depend on item size, a Scan is not throttled, a partition is one partition
key (DynamoDB splits and merges partitions), and only the first table of a request that names several
(a BatchWriteItem or a transaction across tables) gets the model.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
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


_Answer = tuple[str, list[tuple[str, str]], bytes]  # status, headers, body


class Modelled(dict[str, bool]):
    """What `AwsLike.around` yields: the caller sets ["ok"] and makes its moto call through `send`, which
    passes a BatchWriteItem on with the writes the model left out removed, and returns them in the answer's
    UnprocessedItems."""

    def __init__(self) -> None:
        super().__init__(ok=False)
        self.table = ""
        self.kept: list[Any] | None = None  # this table's writes that go to moto (None: the request as sent)
        self.unprocessed: list[Any] = []
        self.params: dict[str, Any] = {}

    def send(self, call_moto: Callable[[bytes], _Answer], body: bytes) -> _Answer:
        if self.kept is None:
            return call_moto(body)
        requests = {name: items for name, items in (self.params.get("RequestItems") or {}).items()}
        if self.kept:
            requests[self.table] = self.kept
        else:
            del requests[self.table]
        if requests:
            status, headers, out = call_moto(json.dumps({**self.params, "RequestItems": requests}).encode())
            if not status.startswith("200"):
                return status, headers, out
            answer = json.loads(out)
        else:  # nothing left to send: every write of the request was left out
            status, headers, answer = "200 OK", [("Content-Type", "application/x-amz-json-1.0")], {}
        answer.setdefault("UnprocessedItems", {}).setdefault(self.table, []).extend(self.unprocessed)
        out = json.dumps(answer).encode()
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        return status, [*headers, ("Content-Length", str(len(out)))], out


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
    def around(self, op: str, params: dict[str, Any], region: str, table: _Table) -> Iterator[Modelled]:
        """Wrap one moto call on an aws-like table: Refused before it (throttled, conflict), stale images
        swapped in for it, holds and images recorded after it. The caller sets result["ok"] and calls moto
        through result.send (a BatchWriteItem may lose some of its writes to UnprocessedItems)."""
        now = time.monotonic()
        spec = table.profile
        ref = (region, table.moto.name)
        counts = self.stats.setdefault(table.moto.name, Counter())
        counts["requests"] += 1
        keys = self._keys(op, params, table.moto)
        self._admit(op, params, ref, keys, spec, now, counts)
        self._check_holds(op, ref, keys, now, counts)
        result = Modelled()
        if op == "BatchWriteItem":
            params = self._split_batch(params, ref, table.moto, spec, now, counts, result)
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
            key = _item_key(table, params.get("Key") or params.get("Item") or {})
            if key is not None:
                out.append(("write" if op != "GetItem" else "read", key))
        elif op in ("TransactWriteItems", "TransactGetItems"):
            for action in params.get("TransactItems", []):
                for kind, body in action.items():
                    if body.get("TableName") == table.name:
                        key = _item_key(table, body.get("Key") or body.get("Item") or {})
                        if key is not None:
                            out.append(("tget" if kind == "Get" else "twrite", key))
        elif op == "BatchGetItem":
            for key_attrs in (params.get("RequestItems", {}).get(table.name) or {}).get("Keys", []):
                key = _item_key(table, key_attrs)
                if key is not None:
                    out.append(("read", key))
        elif op == "Query":
            partition = _queried_partition(table, params)
            if partition is not None:
                out.append(("read", (partition, None)))
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
        throttled = [slot[1] for slot, units in wanted.items() if not self._has(slot, units, spec, now)]
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

    def _has(self, slot: tuple[_Ref, Any, str], units: float, spec: ProfileSpec, now: float) -> bool:
        """Refill the slot's bucket to now; True when it holds `units`. A bucket holds a tenth of a second of
        its rate but at least one unit, and a request larger than the bucket passes when it is full, leaving
        it in debt: at a few units per second the rate still holds on average, and every request can pass."""
        rate = spec.write_units if slot[2] == "w" else spec.read_units
        size = max(rate * _BURST_S, 1.0)
        tokens, last = self._buckets.get(slot) or (size, now)
        tokens = min(size, tokens + (now - last) * rate)
        self._buckets[slot] = [tokens, now]
        return tokens >= min(units, size)

    def _held(self, ref: _Ref, key: Any, now: float) -> bool:
        until = self._holds.get((ref, key))
        if until is not None and until <= now:
            del self._holds[(ref, key)]
            return False
        return until is not None

    def _split_batch(
        self,
        params: dict[str, Any],
        ref: _Ref,
        table: Any,
        spec: ProfileSpec,
        now: float,
        counts: Counter[str],
        result: Modelled,
    ) -> dict[str, Any]:
        """A BatchWriteItem's puts and deletes on this table, one item-level write each: those on an item a
        transaction holds, or past their key's bucket, are left out for UnprocessedItems. Returns the params
        of what goes on (for the stale-read images). Raises ProvisionedThroughputExceededException when no
        write of the request could be processed and every one was throttled, as DynamoDB does."""
        requests = (params.get("RequestItems") or {}).get(table.name) or []
        keys = [_item_key(table, _batch_attrs(request)) for request in requests]
        if None in keys:
            return params  # a write without a valid key: moto refuses the whole request, as DynamoDB does
        if len(set(keys)) < len(keys):  # DynamoDB refuses it whole (moto would apply both writes)
            raise Refused("ValidationException", "Provided list of item keys contains duplicates")
        kept: list[Any] = []
        conflicted = throttled = 0
        for request, key in zip(requests, keys):
            if self._held(ref, key, now):
                conflicted += 1
                result.unprocessed.append(request)
            elif not self._has((ref, key[0], "w"), 1.0, spec, now):
                throttled += 1
                result.unprocessed.append(request)
            else:
                self._buckets[(ref, key[0], "w")][0] -= 1.0
                kept.append(request)
        counts["transaction_conflicts"] += conflicted
        counts["throttled"] += 1 if throttled else 0
        if not result.unprocessed:
            return params
        others = len(params.get("RequestItems") or {}) > 1
        if not kept and not others and not conflicted:
            raise Refused(
                "ProvisionedThroughputExceededException",
                "The level of throughput for one partition key was exceeded (simulated per-key ceiling)",
            )
        result.table, result.kept, result.params = table.name, kept, params
        return {**params, "RequestItems": {**params["RequestItems"], table.name: kept}}

    def _check_holds(self, op: str, ref: _Ref, keys: list[tuple[str, Any]], now: float, counts: Counter[str]) -> None:
        if not self._holds or op not in ("TransactWriteItems", "TransactGetItems", *_SINGLE_WRITES):
            return
        held = [self._held(ref, key, now) for _, key in keys]
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
            key = _item_key(table, attrs)
            if key is not None and key not in captured:
                captured[key] = _snapshot(_get(table, key))
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


_SHARED_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL"})  # moto replaces these values, never changes them


def _snapshot(item: Any) -> Any:
    """A copy of a moto Item as it is now: scalar values are shared (moto replaces a scalar attribute's value
    object, never changes it), maps, lists and sets (changed in place) are deep-copied. About ten times
    cheaper than copy.deepcopy on the small items the patterns write, and it runs on every aws-like write."""
    if item is None:
        return None
    item_cls: Any = type(item)
    attrs_cls: Any = type(item.attrs)
    copied = item_cls.__new__(item_cls)
    copied.hash_key, copied.range_key = item.hash_key, item.range_key
    attrs = attrs_cls.__new__(attrs_cls)
    for name, value in item.attrs.items():
        dict.__setitem__(attrs, name, value if value.type in _SHARED_TYPES else copy.deepcopy(value))
    copied.attrs = attrs
    return copied


def _cancelled(reasons: list[dict[str, str]]) -> Refused:
    codes = ", ".join(r["Code"] for r in reasons)
    return Refused(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": reasons},
    )


def _batch_attrs(request: Any) -> Any:
    """The item (put) or key (delete) one BatchWriteItem request names ({} when it names neither)."""
    body = (request.get("PutRequest") or request.get("DeleteRequest")) if isinstance(request, dict) else None
    return (body.get("Item") or body.get("Key") or {}) if isinstance(body, dict) else {}


_KEY_TYPES = frozenset({"S", "N", "B"})


def _scalar(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _KEY_TYPES


def _item_key(table: Any, attrs: dict[str, Any]) -> Any:
    """The item key a request names, or None when it names none a key can be (moto then refuses it with
    DynamoDB's ValidationException; a map as a key would not even hash)."""
    if not isinstance(attrs, dict):
        return None
    for attr in (table.hash_key_attr, table.range_key_attr):
        if attr and attr in attrs and not _scalar(attrs[attr]):
            return None
    return _key_of(table, attrs)


_EQUALS = re.compile(r"([#\w.-]+)\s*=\s*(:[\w-]+)|(:[\w-]+)\s*=\s*([#\w.-]+)")


def _queried_partition(table: Any, params: dict[str, Any]) -> Any:
    """The partition a Query reads, as its bucket's key: the partition key's value (the table's own, read by
    a local secondary index too), or (index, value) on a global secondary index; None if not found."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    index = str(params.get("IndexName") or "")
    attr = table.hash_key_attr
    gsi = next((i for i in getattr(table, "global_indexes", []) or [] if i.name == index), None)
    if gsi is not None:
        attr = next(k["AttributeName"] for k in gsi.schema if k["KeyType"] == "HASH")
    found: Any = None
    legacy = (params.get("KeyConditions") or {}).get(attr)
    if legacy:
        found = (legacy.get("AttributeValueList") or [None])[0]
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    for match in _EQUALS.finditer(str(params.get("KeyConditionExpression") or "")):
        name, value = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
        if names.get(name, name) == attr and value in values:
            found = values[value]
    if not _scalar(found):
        return None
    return (index, DynamoType(found)) if gsi is not None else DynamoType(found)


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
