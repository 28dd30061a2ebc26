"""moto's DynamoDB stores read and written directly, with fewer Python calls than moto's own lookups: a table by
name, a region's backend, an item by key, a key attribute's value interned (KeyValue), and which items a write
names. The faithful rules, the fast path and the simulated behaviour all look items up here, so none of them
reaches into another's private names. All of it runs with the server's request lock held.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType

ItemKey = tuple[Any, Any]  # (hash DynamoType, range DynamoType or None)
Pending = deque[tuple[float, Any]]  # (visible_at monotonic s, moto Item before the write or None), oldest first


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


def expire(queue: Pending, now: float) -> None:
    while queue and queue[0][0] <= now:
        queue.popleft()


ONE_ITEM_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def one_item_key(params: dict[str, Any]) -> dict[str, Any]:
    """The attributes naming a one-item write's item: its Key, or the Item a PutItem writes."""
    return params.get("Key") or params.get("Item") or {}


def written_keys(op: str, params: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if op in ONE_ITEM_WRITES:
        yield params.get("TableName", ""), one_item_key(params)
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


def key_of(table: Any, attrs: dict[str, Any]) -> ItemKey | None:
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


INTERNED: dict[tuple[str, str], KeyValue] = {}  # (type, value as sent) -> its one KeyValue
_INTERN_AT_MOST = 50_000  # distinct keys kept; past that the table starts afresh (memory stays bounded)


def key_value(raw: Any) -> DynamoType:
    """A KeyValue for a valid S, N or B value; anything else is moto's own DynamoType (moto refuses such a key
    itself). The same (type, value) gets the same KeyValue (interned: a KeyValue is never changed), so the model's
    lookups of a key it saw in an earlier request find it by identity, without a call to __eq__."""
    if type(raw) is dict and len(raw) == 1:
        ((kind, value),) = raw.items()
        if kind in _SCALAR_KEYS and type(value) is str:
            interned = INTERNED.get((kind, value))
            if interned is not None:
                return interned
            if kind != "N":
                made = KeyValue(kind, value, value)
            else:
                try:
                    made = KeyValue(kind, value, Decimal(value))
                except ArithmeticError:
                    return DynamoType(raw)
            if len(INTERNED) >= _INTERN_AT_MOST:
                INTERNED.clear()
            INTERNED[(kind, value)] = made
            return made
    return DynamoType(raw)


def get_item(table: Any, key: ItemKey) -> Any:
    hash_key, range_key = key
    if range_key is not None:
        bucket = table.items.get(hash_key)
        return bucket.get(range_key) if bucket else None
    return table.items.get(hash_key)


def put_item(table: Any, key: ItemKey, item: Any) -> None:
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
