"""Simulated GSI propagation lag, per table (SIMULATED: moto's and DynamoDB Local's indexes are instant).

A table opts in with the tag `ddblab:gsi-lag-ms`. Every write to such a table remembers, per item key, the
image the item had before the write and when the write becomes visible to the index (write time + lag). A
Query or Scan on an index of that table runs while the not-yet-visible items are swapped for their older
images, all under the server's request lock, so the read sees exactly the index as it was `lag` ago for
those items: a new item missing, an old email still listed, a deleted item still there. Base-table reads
are never affected, as on DynamoDB.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LAG_TAG = "ddblab:gsi-lag-ms"
_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


def _backend() -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID]


class GsiLag:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        # (region, table, hash, range) -> deque of (visible_at, image_before or None)
        self._pending: dict[tuple[str, str, Any, Any], deque[tuple[float, Any]]] = {}

    def close(self) -> None:
        self._pending.clear()

    # -- called under the server lock ----------------------------------------------------------------------

    @contextmanager
    def around(self, op: str, params: dict[str, Any], region: str) -> Iterator[dict[str, bool]]:
        """Wrap one moto call; the caller sets result["ok"] when the call succeeded."""
        result = {"ok": False}
        if op in _WRITES:
            captured = self._capture(op, params, region)
            yield result
            if result["ok"]:
                now = time.monotonic()
                for (key, lag_s), image in captured.items():
                    self._pending.setdefault(key, deque()).append((now + lag_s, image))
        elif op in ("Query", "Scan") and params.get("IndexName"):
            with self._swapped(params.get("TableName", ""), region):
                yield result
        else:
            yield result

    def forget(self, table_name: str, item: Any) -> None:
        for key in [k for k in self._pending if k[1] == table_name and k[2] == item.hash_key]:
            del self._pending[key]

    # -- internals -----------------------------------------------------------------------------------------

    def _table(self, region: str, name: str) -> tuple[Any, float] | None:
        table = _backend()[region].tables.get(name)
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

    def _capture(self, op: str, params: dict[str, Any], region: str) -> dict[tuple[tuple[str, str, Any, Any], float], Any]:
        captured: dict[tuple[tuple[str, str, Any, Any], float], Any] = {}
        for table_name, attrs in _written_keys(op, params):
            found = self._table(region, table_name)
            if found is None:
                continue
            table, lag_s = found
            hash_key, range_key = _key_of(table, attrs)
            if hash_key is None:
                continue
            current = _get(table, hash_key, range_key)
            captured[((region, table_name, hash_key, range_key), lag_s)] = copy.deepcopy(current)
        return captured

    @contextmanager
    def _swapped(self, table_name: str, region: str) -> Iterator[None]:
        found = self._table(region, table_name)
        if found is None:
            yield
            return
        table, _ = found
        now = time.monotonic()
        restore: list[tuple[Any, Any, Any]] = []
        for key in [k for k in self._pending if k[0] == region and k[1] == table_name]:
            queue = self._pending[key]
            while queue and queue[0][0] <= now:
                queue.popleft()
            if not queue:
                del self._pending[key]
                continue
            _, hash_key, range_key = key[1], key[2], key[3]
            restore.append((hash_key, range_key, _get(table, hash_key, range_key)))
            _put(table, hash_key, range_key, queue[0][1])
        try:
            yield
        finally:
            for hash_key, range_key, item in reversed(restore):
                _put(table, hash_key, range_key, item)


def _written_keys(op: str, params: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if op in ("PutItem", "UpdateItem", "DeleteItem"):
        yield params.get("TableName", ""), params.get("Key") or params.get("Item") or {}
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


def _key_of(table: Any, attrs: dict[str, Any]) -> tuple[Any, Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    raw_hash = attrs.get(table.hash_key_attr)
    if raw_hash is None:
        return None, None
    raw_range = attrs.get(table.range_key_attr) if table.range_key_attr else None
    return DynamoType(raw_hash), DynamoType(raw_range) if raw_range is not None else None


def _get(table: Any, hash_key: Any, range_key: Any) -> Any:
    if range_key is not None:
        return table.items.get(hash_key, {}).get(range_key)
    return table.items.get(hash_key)


def _put(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    if range_key is not None:
        bucket = table.items[hash_key]  # a defaultdict(dict)
        if item is None:
            bucket.pop(range_key, None)
            if not bucket:
                table.items.pop(hash_key, None)
        else:
            bucket[range_key] = item
    elif item is None:
        table.items.pop(hash_key, None)
    else:
        table.items[hash_key] = item
