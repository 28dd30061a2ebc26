"""Which table, items and partitions a request names, read from its parameters as moto will see them. A key
that cannot be one (a map, a missing attribute) reads as None: moto then refuses the request itself, with
DynamoDB's ValidationException."""

from __future__ import annotations

import re
from typing import Any

from engine.server.moto_store import key_value

SINGLE_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
TRANSACTIONS = frozenset({"TransactWriteItems", "TransactGetItems"})

Ref = tuple[str, str]  # (region, table name)
Named = list[tuple[str, Any]]  # (kind, item key): kind is write, read, twrite or tget


def request_keys(op: str, params: dict[str, Any], table: Any) -> Named:
    """(kind, item key) of every item the request names on this table; kind says how it uses the item. A Query
    names its partition, as (partition, None)."""
    out: Named = []
    if op in SINGLE_WRITES or op == "GetItem":
        key = item_key(table, params.get("Key") or params.get("Item") or {})
        if key is not None:
            out.append(("write" if op != "GetItem" else "read", key))
    elif op in TRANSACTIONS:
        for action in params.get("TransactItems", []):
            for kind, body in action.items():
                if body.get("TableName") == table.name:
                    key = item_key(table, body.get("Key") or body.get("Item") or {})
                    if key is not None:
                        out.append(("tget" if kind == "Get" else "twrite", key))
    elif op == "BatchGetItem":
        for key_attrs in (params.get("RequestItems", {}).get(table.name) or {}).get("Keys", []):
            key = item_key(table, key_attrs)
            if key is not None:
                out.append(("read", key))
    elif op == "Query":
        partition = queried_partition(table, params)
        if partition is not None:
            out.append(("read", (partition, None)))
    return out


_KEY_TYPES = frozenset({"S", "N", "B"})


def _scalar(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _KEY_TYPES


def item_key(table: Any, attrs: dict[str, Any]) -> Any:
    """The item key a request names, or None when it names none a key can be (moto then refuses it with
    DynamoDB's ValidationException; a map as a key would not even hash). Its values are gsi_lag's interned
    KeyValues, so the model finds a key it saw before by identity."""
    if not isinstance(attrs, dict):
        return None
    raw_hash = attrs.get(table.hash_key_attr)
    if not _scalar(raw_hash):
        return None  # missing, null, or no scalar
    range_attr = table.range_key_attr
    if not range_attr:
        return key_value(raw_hash), None
    raw_range = attrs.get(range_attr)
    if not _scalar(raw_range):
        return None
    return key_value(raw_hash), key_value(raw_range)


def batch_attrs(request: Any) -> Any:
    """The item (put) or key (delete) one BatchWriteItem request names ({} when it names neither)."""
    body = (request.get("PutRequest") or request.get("DeleteRequest")) if isinstance(request, dict) else None
    return (body.get("Item") or body.get("Key") or {}) if isinstance(body, dict) else {}


_EQUALS = re.compile(r"([#\w.-]+)\s*=\s*(:[\w-]+)|(:[\w-]+)\s*=\s*([#\w.-]+)")


def queried_partition(table: Any, params: dict[str, Any]) -> Any:
    """The partition a Query reads, as its bucket's key: the partition key's value (the table's own, read by
    a local secondary index too), or (index, value) on a global secondary index; None if not found."""

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
    return (index, key_value(found)) if gsi is not None else key_value(found)


def consistent_read(op: str, params: dict[str, Any], table: str) -> bool:
    """Whether the request reads `table` with ConsistentRead: a BatchGetItem asks for it per table, in its
    RequestItems, every other read at the top."""
    if op == "BatchGetItem":
        asked = (params.get("RequestItems") or {}).get(table)
        return bool(isinstance(asked, dict) and asked.get("ConsistentRead"))
    return bool(params.get("ConsistentRead"))


def table_name(op: str, params: dict[str, Any]) -> str:
    """The table a request goes to; of one that names several, the first (the only one the model covers)."""
    name = params.get("TableName")
    if isinstance(name, str):
        return name
    if op in TRANSACTIONS:
        for action in params.get("TransactItems") or []:
            for body in action.values():
                return str(body.get("TableName", ""))
    if op in ("BatchGetItem", "BatchWriteItem"):
        for table in params.get("RequestItems") or {}:
            return str(table)
    return ""
