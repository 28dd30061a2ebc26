"""moto's two lookups of every item request, the same answers with fewer Python calls (fastpath.tune_moto).

- `DynamoHandler.dynamodb_backend`: moto's BackendDict and AccountSpecificBackend __getitem__s (about nine Python
  calls, two or three times a request) when the backend already exists; read straight from the dicts here.
- `DynamoType.__hash__` and `__eq__` of a string or binary: moto's `cast_value` runs five type tests to return
  the value itself (six calls per hash, twelve per comparison; a GetItem hashes and compares its key twice each).
- A `Table`'s truth test (`if table:` in get_table and PutItem's validations): moto's `__bool__` calls its
  `__nonzero__`, which always answers True; now answered at once (one call, not two; `__len__` must not decide).
- `Table.attribute_keys`, the key names of a table and its indexes (three times a PutItem, once a GetItem): a
  fresh list built without `copy.copy`'s dispatch and a closure per call.
"""

from __future__ import annotations

from typing import Any

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler

from engine.server.moto_store import region_backend

_PLAIN_VALUE = ("S", "B")  # the types whose cast_value is their value


def install() -> None:
    """Put the lookups below in moto's classes (once)."""
    if getattr(DynamoType, "_ddblab_lookup", False):
        return
    DynamoType._ddblab_lookup = True  # type: ignore[attr-defined]
    DynamoHandler.dynamodb_backend = property(_dynamodb_backend)  # type: ignore[method-assign, assignment]
    DynamoType.__hash__ = _hash  # type: ignore[method-assign]
    DynamoType.__eq__ = _eq  # type: ignore[method-assign]
    Table.__bool__ = _always_true  # type: ignore[method-assign, assignment]
    Table.attribute_keys = property(_attribute_keys)  # type: ignore[method-assign, assignment]


def _dynamodb_backend(handler: Any) -> Any:
    """DynamoHandler.dynamodb_backend: dynamodb_backends[account][region], without moto's __getitem__s when both
    entries exist (moto_store.region_backend; written out here, as it runs for every request)."""
    backends = dict.get(dynamodb_backends, handler.current_account)
    backend = dict.get(backends, handler.region) if backends is not None else None
    return region_backend(handler.current_account, handler.region) if backend is None else backend


def _always_true(_table: Table) -> bool:
    """Table.__bool__: True, as moto's __nonzero__ answers for every table."""
    return True


def _attribute_keys(table: Table) -> list[str]:
    """Table.attribute_keys: the table's key names, then each index's, in moto's order; a new list every time."""
    indexes = table.indexes + table.global_indexes
    if not indexes:
        return table.table_key_attrs[:]
    return table.table_key_attrs + [attr["AttributeName"] for index in indexes for attr in index.schema]


def _hash(self: DynamoType) -> int:
    """DynamoType.__hash__: hash((type, cast_value)), with a string's or binary's cast_value read as its value."""
    kind = self.type
    if kind in _PLAIN_VALUE:
        return hash((kind, self.value))
    return hash((kind, self.cast_value))


def _eq(self: DynamoType, other: Any) -> bool:
    """DynamoType.__eq__: the same types and equal cast values; two plain DynamoTypes of a string or binary type
    compare their values (their cast values) at once."""
    kind = self.type
    if kind in _PLAIN_VALUE and type(other) is DynamoType:
        return other.type == kind and self.value == other.value
    return self.type == other.type and self.cast_value == other.cast_value
