"""A Scan's or Query's ExclusiveStartKey must hold exactly the key attributes of its table (and of its index, when
it reads one). moto crashed (500) on `{}` and carried on from a key lacking the sort key (200); DynamoDB Local
answers "Exclusive Start Key must have same size as table's key schema", and DynamoDB "The provided starting
key is invalid" for a key of the right size but other names. Runs under the server's lock (reads the schemas)."""

from __future__ import annotations

from typing import Any

from engine.server.faithful.limits import Refused
from engine.server.moto_store import moto_table

SIZE_MISMATCH = "Exclusive Start Key must have same size as table's key schema"
INVALID = "The provided starting key is invalid: The provided key element does not match the schema"


def check(params: dict[str, Any], region: str) -> None:
    """Raise Refused when a Scan's or Query's `params` start from a key that is not its table's (or index's)."""
    start = params.get("ExclusiveStartKey")
    if not isinstance(start, dict):
        return  # absent, or a wrong type shapes.check has refused
    table = moto_table(region, params.get("TableName"))
    if table is None:
        return  # moto answers ResourceNotFoundException
    names = {table.hash_key_attr, table.range_key_attr} - {None}
    index = params.get("IndexName")
    if isinstance(index, str):
        for candidate in [*(table.global_indexes or []), *(table.indexes or [])]:
            if candidate.name == index:
                names |= {k["AttributeName"] for k in candidate.schema}
    if len(start) != len(names):
        raise Refused("ValidationException", SIZE_MISMATCH)
    if not names.issubset(start):
        raise Refused("ValidationException", INVALID)
