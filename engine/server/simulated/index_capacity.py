"""Global secondary indexes have capacity of their own, and a write to the base table writes its indexes too: AWS
documents that an index short of write capacity throttles the base table's writes ("if a global secondary index
on that table has insufficient write capacity, then the write activity on the table will be throttled", AWS
whitepaper on DynamoDB's GSIs; the ThrottlingReason is IndexWriteKeyRangeThroughputExceeded, naming the index).
So each write of an item that has an index's partition key charges one write unit to that index key's bucket
as well, and is refused whole when that bucket is empty.

Which index key a write charges: a put's new item's; an update's or a delete's item as it is before the write
(an update that moves the item to another index key is charged to the old one: the model does not evaluate
update expressions). Only tables with global indexes pay for this: a table without one costs nothing here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.server.moto_store import get_item, key_value
from engine.server.profile import ProfileSpec
from engine.server.simulated.buckets import Buckets, reason
from engine.server.simulated.item_keys import batch_attrs, item_key
from engine.server.simulated.refusals import THROTTLED_REASON, cancelled, throttled


def index_partitions(moto_table: Any) -> tuple[tuple[str, str], ...]:
    """(index name, its partition key attribute) of each global secondary index of the table."""
    out = []
    for index in getattr(moto_table, "global_indexes", None) or []:
        for part in index.schema:
            if part["KeyType"] == "HASH":
                out.append((index.name, part["AttributeName"]))
    return tuple(out)


def _index_key(moto_table: Any, attr: str, new_item: Any, key: Any) -> Any:
    """The index partition key the write charges: from the put's item (raw JSON), else the stored item's."""
    if isinstance(new_item, dict):
        raw = new_item.get(attr)
        return key_value(raw) if isinstance(raw, dict) and len(raw) == 1 else None
    stored = get_item(moto_table, key)
    value = stored.attrs.get(attr) if stored is not None else None
    return key_value({value.type: value.value}) if value is not None and value.type in ("S", "N", "B") else None


_CHECK = object()  # a transaction's ConditionCheck: an item it names but does not write


def writes(op: str, params: dict[str, Any], moto_table: Any) -> list[tuple[Any, Any]]:
    """(item key, the put's new item or None) of every write the request makes on this table, in its order (a
    transaction's ConditionCheck too, as _CHECK, so that positions match its cancellation reasons)."""
    name = moto_table.name
    if op == "PutItem":
        found = item_key(moto_table, params.get("Item") or {})
        return [] if found is None else [(found, params.get("Item"))]
    if op in ("UpdateItem", "DeleteItem"):
        found = item_key(moto_table, params.get("Key") or {})
        return [] if found is None else [(found, None)]
    out: list[tuple[Any, Any]] = []
    if op == "TransactWriteItems":
        for action in params.get("TransactItems") or []:
            for kind, body in action.items():
                if isinstance(body, dict) and body.get("TableName") == name:
                    found = item_key(moto_table, body.get("Key") or body.get("Item") or {})
                    if found is not None:
                        new_item = _CHECK if kind == "ConditionCheck" else body.get("Item") if kind == "Put" else None
                        out.append((found, new_item))
    elif op == "BatchWriteItem":
        for request in (params.get("RequestItems") or {}).get(name) or []:
            found = item_key(moto_table, batch_attrs(request))
            if found is not None:
                put = request.get("PutRequest") if isinstance(request, dict) else None
                out.append((found, put.get("Item") if isinstance(put, dict) else None))
    return out


def charge(
    op: str,
    params: dict[str, Any],
    table: Any,
    indexes: tuple[tuple[str, str], ...],
    buckets: Buckets,
    spec: ProfileSpec,
    now: float,
    counts: Counter[str],
) -> None:
    """Take one write unit per written item from each index key's bucket, or refuse the request whole: the
    table mode's throttling error naming the index, or for a transaction a cancellation with reason
    ThrottlingError on the items whose index key is hot."""
    moto_table, ref = table.moto, table.ref
    wanted: dict[Any, float] = {}
    per_item: list[set[Any]] = []
    for key, new_item in writes(op, params, moto_table):
        slots = set()
        for index, attr in indexes if new_item is not _CHECK else ():
            value = _index_key(moto_table, attr, new_item, key)
            if value is not None:
                at = (ref, (index, value), "w")
                wanted[at] = wanted.get(at, 0.0) + (2.0 if op == "TransactWriteItems" else 1.0)
                slots.add(at)
        per_item.append(slots)
    short = [at for at, units in wanted.items() if not buckets.has(at, units, spec, now)]
    if short:
        counts["throttled"] += 1
        if op == "TransactWriteItems":
            hot = set(short)
            raise cancelled([dict(THROTTLED_REASON) if slots & hot else {"Code": "None"} for slots in per_item])
        raise throttled(spec.table_mode, [reason(ref, at) for at in short])
    for at, units in wanted.items():
        buckets.take(at, units)
