"""Hot partition keys: a token bucket per partition key for writes (`write_units`/s) and reads (`read_units`/s).
Units, as for items up to 1 KB written / 4 KB read: 1 per item written (2 in a transaction), 1 per item read with
ConsistentRead (0.5 without, 2 in a transaction). A Query takes one read's units from its partition's bucket
(on a global secondary index, that index's); a Scan is charged to no key. A request past its bucket is refused
whole, before moto sees it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType

from engine.server.moto_store import KeyValue
from engine.server.profile import ProfileSpec
from engine.server.simulated.item_keys import Named, Ref, consistent_read
from engine.server.simulated.refusals import THROTTLED_REASON, cancelled, key_range_reason, throttled

BURST_S = 0.1  # a bucket holds a tenth of a second of its rate

Slot = tuple[Ref, Any, str]  # (table, partition key as _plain gives it, "w" or "r")


def _plain(partition: Any) -> Any:
    """A partition key as (type, value) (moto's own hash of it, without its four Python calls per hash: a slot is
    hashed five times a request); a global index's (index, key) and a test's plain key are kept as they are."""
    if type(partition) is KeyValue:  # the key of every request but an odd one: its cast value worked out once
        return (partition.type, partition._cast)
    if isinstance(partition, DynamoType):
        return (partition.type, partition.cast_value)
    return partition


def slot(ref: Ref, partition: Any, bucket: str) -> Slot:
    """The bucket of a partition key on a table: "w" for writes, "r" for reads."""
    return (ref, _plain(partition), bucket)


class Buckets:
    """Each partition key's write and read bucket: [tokens, last refill (monotonic s)]."""

    def __init__(self) -> None:
        self.levels: dict[Slot, list[float]] = {}  # read and changed by single_item.py too

    def admit(
        self,
        op: str,
        params: dict[str, Any],
        ref: Ref,
        keys: Named,
        spec: ProfileSpec,
        now: float,
        counts: Counter[str],
        eventual: bool | None = None,
    ) -> None:
        """Take the request's capacity units from each partition key's bucket, or refuse it whole: throttled, or
        for a transaction cancelled with reason ThrottlingError on the items of the throttled keys. `eventual`:
        whether it reads without ConsistentRead, when the caller knows already."""
        if eventual is None:
            eventual = not consistent_read(op, params, ref[1])
        wanted: dict[Slot, float] = {}
        for kind, key in keys:
            if kind in ("write", "twrite"):
                units, bucket = (2.0 if kind == "twrite" else 1.0), "w"
            else:
                units, bucket = (2.0 if kind == "tget" else 0.5 if eventual else 1.0), "r"
            partition = key[0]  # slot() and _plain(), written out for a KeyValue (every request but odd ones)
            at = (ref, (partition.type, partition._cast) if type(partition) is KeyValue else _plain(partition), bucket)
            wanted[at] = wanted.get(at, 0.0) + units
        short = []
        for at, units in wanted.items():
            if not self.has(at, units, spec, now):
                short.append(at)
        if short:
            counts["throttled"] += 1
            if op.startswith("Transact"):
                hot = {at[1] for at in short}
                raise cancelled(
                    [dict(THROTTLED_REASON) if _plain(key[0]) in hot else {"Code": "None"} for _, key in keys]
                )
            raise throttled(spec.table_mode, [reason(ref, at) for at in short])
        buckets = self.levels
        for at, units in wanted.items():
            buckets[at][0] -= units  # take(), written out

    def has(self, slot: Slot, units: float, spec: ProfileSpec, now: float) -> bool:
        """Refill the slot's bucket to now; True when it holds `units`. A bucket holds a tenth of a second of
        its rate but at least one unit, and a request larger than the bucket passes when it is full, leaving
        it in debt: at a few units per second the rate still holds on average, and every request can pass."""
        rate = spec.write_units if slot[2] == "w" else spec.read_units
        size = max(rate * BURST_S, 1.0)
        tokens, last = self.levels.get(slot) or (size, now)
        tokens = min(size, tokens + (now - last) * rate)
        self.levels[slot] = [tokens, now]
        return tokens >= min(units, size)

    def take(self, slot: Slot, units: float) -> None:
        """Spend `units` of a bucket `has` just refilled (it may go into debt)."""
        self.levels[slot][0] -= units


def reason(ref: Ref, at: Slot) -> dict[str, str]:
    """The ThrottlingReason of a throttled bucket: its table's or, for a global index's key ((index, value), the
    one slot whose partition keeps its DynamoType), its index's."""
    partition = at[1]
    gsi = type(partition) is tuple and len(partition) == 2 and isinstance(partition[1], DynamoType)
    return key_range_reason(ref[0], ref[1], str(partition[0]) if gsi else "", at[2])
