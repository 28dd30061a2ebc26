"""Requests that name one item twice, refused as DynamoDB refuses them, in both profiles: moto applies both of a
BatchWriteItem's writes to one key and reads a TransactGetItems' item twice (it refuses the other kinds itself:
a BatchGetItem's duplicate keys, a TransactWriteItems' two actions on one item)."""

from __future__ import annotations

from typing import Any

from engine.server.faithful.limits import Refused
from engine.server.moto_store import moto_table
from engine.server.simulated.item_keys import batch_attrs, item_key

BATCH_DUPLICATES = "Provided list of item keys contains duplicates"
TRANSACTION_DUPLICATES = "Transaction request cannot include multiple operations on one item"


def check(op: str, params: dict[str, Any], region: str) -> None:
    """Raise Refused when a BatchWriteItem names one key twice in a table, or a TransactGetItems one item twice.
    A request whose table or key is no table or key is left to moto, which refuses it."""
    if op not in ("BatchWriteItem", "TransactGetItems"):
        return  # every other request: no work on the hot path
    try:
        _check(op, params, region)
    except Refused:
        raise
    except Exception:  # a key moto cannot even hash, a region it does not know: moto answers those itself
        return


def _check(op: str, params: dict[str, Any], region: str) -> None:
    if op == "BatchWriteItem":
        for name, requests in (params.get("RequestItems") or {}).items():
            table = moto_table(region, name)
            if table is not None and isinstance(requests, list):
                _unique([item_key(table, batch_attrs(request)) for request in requests], BATCH_DUPLICATES)
    elif op == "TransactGetItems":
        keys = []
        for action in params.get("TransactItems") or []:
            body = action.get("Get") if isinstance(action, dict) else None
            table = moto_table(region, body.get("TableName")) if isinstance(body, dict) else None
            if table is not None and isinstance(body, dict):
                key = item_key(table, body.get("Key") or {})
                keys.append(None if key is None else (table.name, key))
        _unique(keys, TRANSACTION_DUPLICATES)


def _unique(keys: list[Any], message: str) -> None:
    named = [key for key in keys if key is not None]
    if len(set(named)) < len(named):
        raise Refused("ValidationException", message)
