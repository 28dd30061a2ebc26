"""The model's pass for a GetItem, PutItem, UpdateItem or DeleteItem of a plain key (strings, numbers or binary):
most requests a run makes. It does what model.AwsLike.begin's general pass does for them (one bucket, the holds,
a stale image), with what a table's requests share worked out once per table (model._Table) and the bucket
refilled in place: the general pass cost an aws-like request about a third more server CPU than an exact one.
Any other request, or an odd key, goes the general way."""

from __future__ import annotations

import time
from typing import Any

from engine.server.contention.batch import Modelled
from engine.server.contention.buckets import Buckets
from engine.server.contention.holds import Holds
from engine.server.contention.refusals import throttled
from engine.server.contention.stale_reads import StaleReads, _snapshot
from engine.server.gsi_lag import _INTERNED, KeyValue, _get, key_value

SINGLE_ITEM = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem"})
# moto replaces the Item object a PutItem overwrites and only unlinks the one a DeleteItem deletes, so the old
# object is the image before the write as it is; an UpdateItem changes its item in place, so that one is copied.
_REPLACED = frozenset({"PutItem", "DeleteItem"})
_monotonic = time.monotonic


def begin_single(
    op: str, params: dict[str, Any], table: Any, buckets: Buckets, holds: Holds, stale: StaleReads
) -> Modelled | None:
    """AwsLike.begin for a single-item request (op in SINGLE_ITEM) on `table` (model._Table); None when its key is
    not a plain one, for the general pass to take."""
    attrs = params.get("Key") or params.get("Item")
    if type(attrs) is not dict:
        return None
    partition = _plain_key(attrs.get(table.hash_attr))
    if partition is None:
        return None
    if table.range_attr:
        sort = _plain_key(attrs.get(table.range_attr))
        if sort is None:
            return None
        key: tuple[Any, Any] = (partition, sort)
    else:
        key = (partition, None)
    now = _monotonic()
    spec = table.profile
    counts = table.counts
    counts["requests"] += 1
    ref = table.ref
    reading = op == "GetItem"
    eventual = reading and not params.get("ConsistentRead")
    if reading:
        admitted = buckets.admit_one(ref, partition, "r", 0.5 if eventual else 1.0, spec.read_units, now)
    else:
        admitted = buckets.admit_one(ref, partition, "w", 1.0, spec.write_units, now)
    if not admitted:
        counts["throttled"] += 1
        raise throttled()
    keys = [("read" if reading else "write", key)]
    if not reading and holds.holding():
        holds.check(op, ref, keys, now, counts)
    result = Modelled(table, op, ref, keys, now, counts)
    if eventual:
        counts["eventual_reads"] += 1
        result.restore = stale.swap_in(op, ref, keys, table.moto, spec, now, counts)
    elif not reading and table.stale:
        image = _get(table.moto, key)
        result.captured = [(key, image if op in _REPLACED else _snapshot(image))]
    return result


def _plain_key(raw: Any) -> KeyValue | None:
    """gsi_lag.key_value of a key attribute's value, found in its interned table at once for a value seen before;
    None for anything but a valid S, N or B value."""
    if type(raw) is not dict or len(raw) != 1:
        return None
    for pair in raw.items():
        if type(pair[1]) is str:
            seen = _INTERNED.get(pair)
            if seen is not None:
                return seen
    made = key_value(raw)
    return made if type(made) is KeyValue else None
