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
from engine.server.simulated.refusals import cancelled, throttled

_BURST_S = 0.1  # a bucket holds a tenth of a second of its rate

Slot = tuple[Ref, Any, str]  # (table, partition key as _plain gives it, "w" or "r")
_THROTTLED = {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity for this key"}


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
        self._buckets: dict[Slot, list[float]] = {}

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
                short.append(at[1])
        if short:
            counts["throttled"] += 1
            if op.startswith("Transact"):
                raise cancelled([dict(_THROTTLED) if _plain(key[0]) in short else {"Code": "None"} for _, key in keys])
            raise throttled()
        buckets = self._buckets
        for at, units in wanted.items():
            buckets[at][0] -= units  # take(), written out

    def admit_one(self, ref: Ref, partition: KeyValue, bucket: str, units: float, rate: float, now: float) -> bool:
        """has() and take() of one partition key's bucket, in one step (single_item.py): the one bucket of a
        single-item request. False, and nothing taken, when it does not hold `units`."""
        at = (ref, (partition.type, partition._cast), bucket)
        size = rate * _BURST_S
        if size < 1.0:
            size = 1.0
        state = self._buckets.get(at)
        if state is None:
            tokens = size
            state = self._buckets[at] = [size, now]
        else:
            tokens = state[0] + (now - state[1]) * rate
            if tokens > size:
                tokens = size
            state[1] = now
        if tokens < (units if units < size else size):
            state[0] = tokens
            return False
        state[0] = tokens - units
        return True

    def has(self, slot: Slot, units: float, spec: ProfileSpec, now: float) -> bool:
        """Refill the slot's bucket to now; True when it holds `units`. A bucket holds a tenth of a second of
        its rate but at least one unit, and a request larger than the bucket passes when it is full, leaving
        it in debt: at a few units per second the rate still holds on average, and every request can pass."""
        rate = spec.write_units if slot[2] == "w" else spec.read_units
        size = max(rate * _BURST_S, 1.0)
        tokens, last = self._buckets.get(slot) or (size, now)
        tokens = min(size, tokens + (now - last) * rate)
        self._buckets[slot] = [tokens, now]
        return tokens >= min(units, size)

    def take(self, slot: Slot, units: float) -> None:
        """Spend `units` of a bucket `has` just refilled (it may go into debt)."""
        self._buckets[slot][0] -= units
