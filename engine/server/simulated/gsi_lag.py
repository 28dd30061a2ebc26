"""Simulated GSI propagation lag, per table (SIMULATED: moto's and DynamoDB Local's indexes are instant).

A table opts in with the tag `ddblab:gsi-lag-ms` (engine/backends/tables.py writes it when TableSpec.gsi_lag_ms > 0).
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
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from engine.server.moto_store import (
    ONE_ITEM_WRITES,
    ItemKey,
    Pending,
    expire,
    get_item,
    key_of,
    moto_table,
    one_item_key,
    put_item,
    written_keys,
)

LAG_TAG = "ddblab:gsi-lag-ms"
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
_TABLE_LIFECYCLE = frozenset({"CreateTable", "DeleteTable"})
_INDEX_READS = frozenset({"Query", "Scan"})
_WROTE, _SWAPPED, _LIFECYCLE = "wrote", "swapped", "lifecycle"  # what `before` hands `after`

_TableRef = tuple[str, str]  # (region, table name)


class GsiLag:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock  # the server's request lock: held by every caller but `close`
        self._pending: dict[_TableRef, dict[ItemKey, Pending]] = {}

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
                put_item(table, key, item)
        elif not ok:
            return
        elif kind is _WROTE:
            now = time.monotonic()
            for (ref, key, lag_s), image in what.items():
                queue = self._pending.setdefault(ref, {}).setdefault(key, deque())
                expire(queue, now)  # keeps a key written often but never read through an index small
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
        for tag in table.tags or []:
            if tag.get("Key") == LAG_TAG:
                try:
                    lag_ms = float(tag.get("Value", 0))
                except ValueError:
                    return None
                return (table, lag_ms / 1000.0) if lag_ms > 0 else None
        return None

    def _capture(self, op: str, params: dict[str, Any], region: str) -> dict[tuple[_TableRef, ItemKey, float], Any]:
        """Before a write: a copy of every item it may change, on tables that lag (moto updates in place)."""
        captured: dict[tuple[_TableRef, ItemKey, float], Any] = {}
        if op in ONE_ITEM_WRITES:  # the hot writes: their table, without the generator; their key only if it lags
            written: Iterable[tuple[str, Any]] = ((params.get("TableName", ""), None),)
        else:
            written = written_keys(op, params)
        for table_name, attrs in written:
            found = self._table(region, table_name)
            if found is None:
                continue
            table, lag_s = found
            if attrs is None:
                attrs = one_item_key(params)
            key = key_of(table, attrs)
            if key is None:
                continue
            captured.setdefault(((region, table_name), key, lag_s), copy.deepcopy(get_item(table, key)))
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
        restore: list[tuple[ItemKey, Any]] = []
        for key in list(pending):
            queue = pending[key]
            expire(queue, now)
            if not queue:
                del pending[key]
                continue
            restore.append((key, get_item(table, key)))
            put_item(table, key, queue[0][1])  # the image before the oldest write the index has not seen yet
        return table, restore
