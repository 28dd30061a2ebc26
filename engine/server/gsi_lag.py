"""Simulated GSI propagation lag, per table (SIMULATED: moto's and DynamoDB Local's indexes are instant).

A table opts in with the tag `ddblab:gsi-lag-ms` (engine/tables.py writes it when TableSpec.gsi_lag_ms > 0).
Every successful write to such a table remembers, per item key, the image the item had before the write and
when the write becomes visible to the indexes (write time + lag). A Query or Scan on a global secondary index
of that table runs while the not-yet-visible items are swapped for their older images, all under the server's
request lock, so the read sees each such item as the index had it `lag` ago: a new item missing, an old
email still listed, a deleted item still there. Base-table reads (GetItem, Query/Scan without IndexName) and
local secondary indexes are never affected, as on DynamoDB. A GSI never shows writes out of order: an item's
image only moves forward, write by write.

Simplifications: every write takes exactly `lag` to show (DynamoDB's lag varies, typically under a second);
an item the TTL sweeper deletes leaves the indexes at once; PartiQL reads are not lagged.
All methods are called with the server's request lock held, except `close`.
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType

from engine.server.profile import PROFILE_TAG, ProfileSpec

LAG_TAG = "ddblab:gsi-lag-ms"
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
_TABLE_LIFECYCLE = frozenset({"CreateTable", "DeleteTable"})
_INDEX_READS = frozenset({"Query", "Scan"})
_WROTE, _SWAPPED, _LIFECYCLE = "wrote", "swapped", "lifecycle"  # what `before` hands `after`

_TableRef = tuple[str, str]  # (region, table name)
_ItemKey = tuple[Any, Any]  # (hash DynamoType, range DynamoType or None)
_Pending = deque[tuple[float, Any]]  # (visible_at monotonic s, moto Item before the write or None), oldest first


def moto_table(region: str, name: Any) -> Any:
    """moto's table of that name in that region, or None (also for a name that is no string)."""
    if type(name) is not str and not isinstance(name, str):
        return None
    # region_backend written out: this runs two or three times a request.
    backends = dict.get(dynamodb_backends, DEFAULT_ACCOUNT_ID)
    backend = dict.get(backends, region) if backends is not None else None
    if backend is None:
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    return backend.tables.get(name)


def region_backend(account: str, region: str) -> Any:
    """dynamodb_backends[account][region], read straight from the two dicts when both entries exist (moto's
    __getitem__s, about nine Python calls, create a missing one; every request looks it up two to four times).
    A reset of moto's backends clears the dicts, so a stale backend is never found here."""
    backends = dict.get(dynamodb_backends, account)
    backend = dict.get(backends, region) if backends is not None else None
    return dynamodb_backends[account][region] if backend is None else backend


class GsiLag:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock  # the server's request lock: held by every caller but `close`
        self._pending: dict[_TableRef, dict[_ItemKey, _Pending]] = {}

    def close(self) -> None:
        with self._lock:
            self._pending.clear()

    def before(self, op: str, params: dict[str, Any], region: str) -> Any:
        """Before one moto call: what `after` needs (None when nothing). The caller calls `after` once the call
        is over, also when it raised (ok False then). Two plain calls, not a context manager: this runs on every
        request, and a generator-based one cost about seven calls."""
        if op in _WRITES:
            captured = self._capture(op, params, region)
            return (_WROTE, captured) if captured else None
        if op in _INDEX_READS and params.get("IndexName"):
            restore = self._swap_in(str(params.get("TableName", "")), str(params["IndexName"]), region)
            return (_SWAPPED, restore) if restore else None
        if op in _TABLE_LIFECYCLE:
            return (_LIFECYCLE, (region, str(params.get("TableName", ""))))
        return None

    def after(self, state: Any, ok: bool) -> None:
        """After the moto call `before` saw: a write's images wait their lag, an index read's swapped images are
        put back, a table created or deleted starts with nothing pending."""
        if state is None:
            return
        kind, what = state
        if kind is _SWAPPED:
            table, restore = what
            for key, item in restore:
                _put(table, key, item)
        elif not ok:
            return
        elif kind is _WROTE:
            now = time.monotonic()
            for (ref, key, lag_s), image in what.items():
                queue = self._pending.setdefault(ref, {}).setdefault(key, deque())
                _expire(queue, now)  # keeps a key written often but never read through an index small
                queue.append((now + lag_s, image))
        else:
            # A table re-created under the same name (walkthroughs reuse theirs) starts with nothing pending.
            self._pending.pop(what, None)

    def forget(self, table_name: str, item: Any) -> None:
        """The TTL sweeper deleted `item`: drop its pending images (it leaves the indexes at once)."""
        key = (item.hash_key, item.range_key)
        for ref, pending in self._pending.items():
            if ref[1] == table_name:
                pending.pop(key, None)

    # -- internals -----------------------------------------------------------------------------------------

    def _table(self, region: str, name: str) -> tuple[Any, float] | None:
        """The moto table and its lag in seconds, if it has GSIs and opted in."""
        table = moto_table(region, name)
        if table is None or not table.global_indexes:
            return None
        profile = ""
        for tag in table.tags or []:
            if tag.get("Key") == LAG_TAG:
                try:
                    lag_ms = float(tag.get("Value", 0))
                except ValueError:
                    return None
                return (table, lag_ms / 1000.0) if lag_ms > 0 else None
            if tag.get("Key") == PROFILE_TAG:
                profile = str(tag.get("Value", ""))
        lag_ms = _profile_lag_ms(profile) if profile else 0.0  # aws-like tables lag by default (its gsi_lag_ms)
        return (table, lag_ms / 1000.0) if lag_ms > 0 else None

    def _capture(self, op: str, params: dict[str, Any], region: str) -> dict[tuple[_TableRef, _ItemKey, float], Any]:
        """Before a write: a copy of every item it may change, on tables that lag (moto updates in place)."""
        captured: dict[tuple[_TableRef, _ItemKey, float], Any] = {}
        if op in _ONE_ITEM_WRITES:  # the hot writes: their table, without the generator; their key only if it lags
            written: Iterable[tuple[str, Any]] = ((params.get("TableName", ""), None),)
        else:
            written = _written_keys(op, params)
        for table_name, attrs in written:
            found = self._table(region, table_name)
            if found is None:
                continue
            table, lag_s = found
            if attrs is None:
                attrs = _one_item_key(params)
            key = _key_of(table, attrs)
            if key is None:
                continue
            captured.setdefault(((region, table_name), key, lag_s), copy.deepcopy(_get(table, key)))
        return captured

    def _swap_in(self, table_name: str, index_name: str, region: str) -> Any:
        """Before an index read: the items not yet visible to the indexes show their older images; returns the
        table and the current images, for `after` to put back (None when nothing was swapped)."""
        found = self._table(region, table_name)
        pending = self._pending.get((region, table_name))
        if found is None or not pending or not any(i.name == index_name for i in found[0].global_indexes):
            return None
        table = found[0]
        now = time.monotonic()
        restore: list[tuple[_ItemKey, Any]] = []
        for key in list(pending):
            queue = pending[key]
            _expire(queue, now)
            if not queue:
                del pending[key]
                continue
            restore.append((key, _get(table, key)))
            _put(table, key, queue[0][1])  # the image before the oldest write the index has not seen yet
        return table, restore


@functools.lru_cache(maxsize=64)
def _profile_lag_ms(tag_value: str) -> float:
    """The GSI lag an aws-like profile tag gives its table's indexes (0 for exact, or a tag that does not parse)."""
    try:
        spec = ProfileSpec.from_tag(tag_value)
    except Exception:
        return 0.0
    return spec.gsi_lag_ms if spec.simulated else 0.0


def _expire(queue: _Pending, now: float) -> None:
    while queue and queue[0][0] <= now:
        queue.popleft()


_ONE_ITEM_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def _one_item_key(params: dict[str, Any]) -> dict[str, Any]:
    """The attributes naming a one-item write's item: its Key, or the Item a PutItem writes."""
    return params.get("Key") or params.get("Item") or {}


def _written_keys(op: str, params: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if op in _ONE_ITEM_WRITES:
        yield params.get("TableName", ""), _one_item_key(params)
    elif op == "TransactWriteItems":
        for action in params.get("TransactItems", []):
            for kind, body in action.items():
                if kind != "ConditionCheck":
                    yield body.get("TableName", ""), body.get("Key") or body.get("Item") or {}
    elif op == "BatchWriteItem":
        for table_name, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                body = request.get("PutRequest") or request.get("DeleteRequest") or {}
                yield table_name, body.get("Item") or body.get("Key") or {}


def _key_of(table: Any, attrs: dict[str, Any]) -> _ItemKey | None:
    raw_hash = attrs.get(table.hash_key_attr)
    if raw_hash is None:
        return None
    raw_range = attrs.get(table.range_key_attr) if table.range_key_attr else None
    if table.range_key_attr and raw_range is None:
        return None  # an invalid request: moto refuses it, nothing to remember
    return key_value(raw_hash), key_value(raw_range) if raw_range is not None else None


_SCALAR_KEYS = frozenset({"S", "N", "B"})


class KeyValue(DynamoType):
    """A key attribute's value as moto's DynamoType, with its hash and cast value worked out once: moto's own
    work them out again (about six calls) on every hash and comparison, and the aws-like model and the GSI lag
    hash an item's key about ten times a request. Equal to, and hashed as, moto's DynamoType of the same value,
    so it finds moto's items (and moto finds one it stores)."""

    def __init__(self, kind: str, value: str, cast: Any) -> None:  # no DynamoType.__init__: a scalar
        self.type, self.value = kind, value
        self._cast = cast
        self._hash = hash((kind, cast))

    @property
    def cast_value(self) -> Any:
        return self._cast

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DynamoType):
            return NotImplemented  # e.g. a bucket's (index, value) tuple of the same hash
        if self.type != "N":
            # A string or binary: moto's cast_value of one is its value, without its five type tests (this
            # compares with moto's own keys at every lookup in a table).
            return self.type == other.type and self.value == other.value
        return other.type == "N" and self._cast == other.cast_value

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __deepcopy__(self, memo: dict[int, Any]) -> KeyValue:
        # DynamoType's own deepcopy (moto copies whole tables for a transaction) sets type and value only: a copy
        # without its hash crashed the next lookup with AttributeError, a 500.
        return KeyValue(self.type, self.value, self._cast)


_INTERNED: dict[tuple[str, str], KeyValue] = {}  # (type, value as sent) -> its one KeyValue
_INTERN_AT_MOST = 50_000  # distinct keys kept; past that the table starts afresh (memory stays bounded)


def key_value(raw: Any) -> DynamoType:
    """A KeyValue for a valid S, N or B value; anything else is moto's own DynamoType (moto refuses such a key
    itself). The same (type, value) gets the same KeyValue (interned: a KeyValue is never changed), so the model's
    lookups of a key it saw in an earlier request find it by identity, without a call to __eq__."""
    if type(raw) is dict and len(raw) == 1:
        ((kind, value),) = raw.items()
        if kind in _SCALAR_KEYS and type(value) is str:
            interned = _INTERNED.get((kind, value))
            if interned is not None:
                return interned
            if kind != "N":
                made = KeyValue(kind, value, value)
            else:
                try:
                    made = KeyValue(kind, value, Decimal(value))
                except ArithmeticError:
                    return DynamoType(raw)
            if len(_INTERNED) >= _INTERN_AT_MOST:
                _INTERNED.clear()
            _INTERNED[(kind, value)] = made
            return made
    return DynamoType(raw)


def _get(table: Any, key: _ItemKey) -> Any:
    hash_key, range_key = key
    if range_key is not None:
        bucket = table.items.get(hash_key)
        return bucket.get(range_key) if bucket else None
    return table.items.get(hash_key)


def _put(table: Any, key: _ItemKey, item: Any) -> None:
    hash_key, range_key = key
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
    elif item is not None:
        table.items[hash_key][range_key] = item  # a defaultdict(dict)
    else:
        bucket = table.items.get(hash_key)
        if bucket is not None:
            bucket.pop(range_key, None)
            if not bucket:
                del table.items[hash_key]
