"""Key attributes of the wrong type, refused as DynamoDB refuses them, in both profiles: moto crashed with a 500
on a map, list or set as a key value (it hashes the key) and served a key of the wrong scalar type as a key that
is not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.server.gsi_lag import moto_table
from engine.server.limits import Refused

KEY_MISMATCH = "The provided key element does not match the schema"
_KEYED = frozenset(
    {"GetItem", "DeleteItem", "UpdateItem", "PutItem", "BatchGetItem", "BatchWriteItem"}
    | {"TransactGetItems", "TransactWriteItems"}
)


def check(op: str, params: dict[str, Any], region: str) -> None:
    """Raise Refused when a request names an item by a key attribute of another type than its table's. A
    request whose table or shape is wrong is left to moto, which refuses it."""
    if op not in _KEYED:
        return
    try:
        _check(op, params, region)
    except Refused:
        raise
    except Exception:  # a body of another shape than the API's: moto refuses it with DynamoDB's words
        return


def _check(op: str, params: dict[str, Any], region: str) -> None:
    for table_name, attrs, is_item in _named(op, params):
        table = moto_table(region, table_name) if isinstance(table_name, str) else None
        if table is None or not isinstance(attrs, dict):
            continue
        for name, wanted in ((table.hash_key_attr, table.hash_key_type), (table.range_key_attr, table.range_key_type)):
            value = attrs.get(name) if name else None
            if value is None:
                continue  # missing: moto refuses it with DynamoDB's words
            given = next(iter(value)) if isinstance(value, dict) and len(value) == 1 else None
            if given != wanted:
                if is_item:
                    raise Refused(
                        "ValidationException",
                        "One or more parameter values were invalid: Type mismatch for key "
                        f"{name} expected: {wanted} actual: {given or 'none'}",
                    )
                raise Refused("ValidationException", KEY_MISMATCH)
        if is_item:
            _check_index_keys(table, attrs)


def _check_index_keys(table: Any, item: dict[str, Any]) -> None:
    """An item whose index key attribute has another type than its definition is refused (moto stored it, and a
    Scan of the index then crashed sorting it against the others)."""
    indexes = table.indexes + table.global_indexes
    if not indexes:
        return
    defined = {a.get("AttributeName"): a.get("AttributeType") for a in table.attr or []}
    for index in indexes:
        for name in index.schema_key_attrs:
            value = item.get(name)
            if value is None:
                continue  # an item without the attribute is left out of the index
            given = next(iter(value)) if isinstance(value, dict) and len(value) == 1 else None
            if given != defined.get(name):
                raise Refused(
                    "ValidationException",
                    "One or more parameter values were invalid: Type mismatch for Index Key "
                    f"{name} Expected: {defined.get(name)} Actual: {given or 'none'} IndexName: {index.name}",
                )


def _named(op: str, params: dict[str, Any]) -> Iterator[tuple[Any, Any, bool]]:
    """(table name, key or item attributes, whether they are a whole item) of everything the request names."""
    if op in ("GetItem", "DeleteItem", "UpdateItem"):
        yield params.get("TableName"), params.get("Key"), False
    elif op == "PutItem":
        yield params.get("TableName"), params.get("Item"), True
    elif op == "BatchGetItem":
        for name, asked in _items(params.get("RequestItems")):
            for key in asked.get("Keys") or [] if isinstance(asked, dict) else []:
                yield name, key, False
    elif op == "BatchWriteItem":
        for name, requests in _items(params.get("RequestItems")):
            for request in requests if isinstance(requests, list) else []:
                if isinstance(request, dict):
                    if isinstance(request.get("PutRequest"), dict):
                        yield name, request["PutRequest"].get("Item"), True
                    if isinstance(request.get("DeleteRequest"), dict):
                        yield name, request["DeleteRequest"].get("Key"), False
    else:  # TransactGetItems, TransactWriteItems
        for action in params.get("TransactItems") or []:
            for kind, body in action.items() if isinstance(action, dict) else []:
                if isinstance(body, dict):
                    yield body.get("TableName"), body.get("Item" if kind == "Put" else "Key"), kind == "Put"


def _items(value: Any) -> Any:
    return value.items() if isinstance(value, dict) else ()
