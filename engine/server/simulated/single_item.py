"""The model's pass for a GetItem, PutItem, UpdateItem or DeleteItem of a plain key (strings, numbers or binary):
most requests a run makes. It does what model.AwsLike.begin's general pass does for them (one bucket, the holds,
a stale image), with what a table's requests share worked out once per table (model._Table) and the bucket
refilled in place: the general pass cost an aws-like request about a third more server CPU than an exact one.
Any other request, or an odd key, goes the general way."""

from __future__ import annotations

import time
from typing import Any

from engine.server.moto_store import INTERNED, KeyValue, get_item, key_value
from engine.server.simulated.batch import Modelled
from engine.server.simulated.buckets import Buckets
from engine.server.simulated.holds import Holds
from engine.server.simulated.refusals import throttled
from engine.server.simulated.stale_reads import StaleReads, _snapshot

SINGLE_ITEM = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem"})
# moto replaces the Item object a PutItem overwrites and only unlinks the one a DeleteItem deletes, so the old
# object is the image before the write as it is; an UpdateItem changes its item in place, so that one is copied.
_REPLACED = frozenset({"PutItem", "DeleteItem"})
_monotonic = time.monotonic


def single_key(params: dict[str, Any], table: Any) -> tuple[Any, Any] | None:
    """The item key of a single-item request on `table` (model._Table), as interned KeyValues; None when its key is
    not a plain one (the general pass takes it)."""
    attrs = params.get("Key") or params.get("Item")
    if type(attrs) is not dict:
        return None
    partition = _plain_key(attrs.get(table.hash_attr))
    if partition is None:
        return None
    if not table.range_attr:
        return partition, None
    sort = _plain_key(attrs.get(table.range_attr))
    return None if sort is None else (partition, sort)


def begin_single(
    op: str,
    params: dict[str, Any],
    key: tuple[Any, Any],
    table: Any,
    buckets: Buckets,
    holds: Holds,
    stale: StaleReads,
) -> Modelled | None:
    """AwsLike.begin for a single-item request (op in SINGLE_ITEM) of `key` on `table` (model._Table). None when
    AwsLike.end would have nothing to do after it (a read that swapped no stale image in, a write that leaves no
    image for stale reads): most reads, so their pass allocates nothing."""
    now = _monotonic()
    spec = table.profile
    counts = table.counts
    counts["requests"] += 1
    ref = table.ref
    partition = key[0]
    if op == "GetItem":
        eventual = not params.get("ConsistentRead")
        if not buckets.admit_one(ref, partition, "r", 0.5 if eventual else 1.0, spec.read_units, now):
            counts["throttled"] += 1
            raise throttled()
        if not eventual:
            return None
        counts["eventual_reads"] += 1
        keys = [("read", key)]
        restore = stale.swap_in(op, ref, keys, table.moto, spec, now, counts)
        if not restore:
            return None
        result = Modelled(table, op, ref, keys, now, counts)
        result.restore = restore
        return result
    if not buckets.admit_one(ref, partition, "w", 1.0, spec.write_units, now):
        counts["throttled"] += 1
        raise throttled()
    keys = [("write", key)]
    if holds.holding():
        holds.check(op, ref, keys, now, counts)
    if not table.stale:
        return None
    result = Modelled(table, op, ref, keys, now, counts)
    image = get_item(table.moto, key)
    result.captured = [(key, image if op in _REPLACED else _snapshot(image))]
    return result


def _plain_key(raw: Any) -> KeyValue | None:
    """moto_store.key_value of a key attribute's value, found in its interned table at once for a value seen before;
    None for anything but a valid S, N or B value."""
    if type(raw) is not dict or len(raw) != 1:
        return None
    for pair in raw.items():
        if type(pair[1]) is str:
            seen = INTERNED.get(pair)
            if seen is not None:
                return seen
    made = key_value(raw)
    return made if type(made) is KeyValue else None
