"""The model's pass for a GetItem, PutItem, UpdateItem or DeleteItem of a plain key (strings, numbers or binary):
most requests a run makes. It does what model.AwsLike.begin's general pass does for them (one bucket, the holds,
a stale image), with what a table's requests share worked out once per table (model._Table), the key read and
the bucket refilled in place, and a small record (Single) instead of the general pass's: each Python call here
is about 1 % of an exact request's server CPU, and aws-like may cost at most 10 % more. Any other request, or an
odd key, goes the general way (model.AwsLike.begin_general).

Same behaviour as the general pass, request for request: the same buckets and units, the same holds and
watches, the same stale images and the same draws from the model's one random source, in the same order."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from engine.server.moto_store import INTERNED, KeyValue, get_item, key_value
from engine.server.simulated.batch import Modelled
from engine.server.simulated.buckets import Buckets, reason
from engine.server.simulated.holds import Holds
from engine.server.simulated.index_capacity import charge
from engine.server.simulated.refusals import throttled
from engine.server.simulated.stale_reads import StaleReads, _snapshot

SINGLE_ITEM = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem"})
# moto replaces the Item object a PutItem overwrites and only unlinks the one a DeleteItem deletes, so the old
# object is the image before the write as it is; an UpdateItem changes its item in place, so that one is copied.
_REPLACED = frozenset({"PutItem", "DeleteItem"})
_monotonic = time.monotonic

Answer = tuple[str, list[tuple[str, str]], bytes]


class Single:
    """A single-item request's pass, from SingleItemPass.begin to AwsLike.end: a write whose image the lagging copy keeps
    (`image` set), or an eventually consistent read the lagging copy serves (`restore` set). The caller (the
    server's app) reads it as batch.Modelled: `ok`, `answer`, `kept` and `watch`."""

    __slots__ = ("ok", "answer", "table", "key", "image", "now", "restore")
    kept: ClassVar[None] = None  # never a BatchWriteItem
    watch: ClassVar[None] = None  # never a TransactGetItems

    def __init__(self, table: Any, key: Any, image: Any, now: float, restore: list[tuple[Any, Any]] | None) -> None:
        self.ok = False
        self.answer = b""
        self.table = table  # model._Table
        self.key = key
        self.image = image
        self.now = now
        self.restore = restore

    def send(self, call_moto: Callable[[bytes], Answer], body: bytes) -> Answer:
        return call_moto(body)


def _plain(raw: Any) -> KeyValue | None:
    """moto_store.key_value of a key attribute's value, for a value not seen before (begin finds one seen
    before in the interned table itself); None for anything but a valid S, N or B value."""
    if type(raw) is not dict or len(raw) != 1:
        return None
    made = key_value(raw)
    return made if type(made) is KeyValue else None


class SingleItemPass:
    """AwsLike.begin, whose first part (this class, a base of model.AwsLike) takes the single-item requests on their
    own: one Python call for most requests, where a pass through a second function cost another 1 %."""

    _buckets: Buckets
    _holds: Holds
    _stale: StaleReads

    def begin(self, op: str, params: dict[str, Any], table: Any) -> Modelled | Single | None:
        """Before one moto call on an aws-like table (`table`, a model._Table): Refused (throttled, conflict), or
        the request's pass through the model, with stale images swapped in for an eventually consistent read.
        The caller sets `ok`, calls moto (through `send` when `kept` is not None: a BatchWriteItem may lose some of
        its writes to UnprocessedItems), then calls `end`, also when the call raised. None: the request passed
        and `end` would have nothing to do (most single-item reads: their pass allocates nothing), so the caller
        calls moto as for an exact table."""
        holds = self._holds
        holds.window = 0.0
        if op not in SINGLE_ITEM:
            return self.begin_general(op, params, table)
        attrs = params.get("Key") or params.get("Item")
        if type(attrs) is not dict:
            return self.begin_general(op, params, table)
        # The key's values, interned (moto_store.key_value): a value seen before is found at once.
        raw = attrs.get(table.hash_attr)
        partition = None
        if type(raw) is dict and len(raw) == 1:
            for pair in raw.items():
                if type(pair[1]) is str:
                    partition = INTERNED.get(pair)
        if partition is None and (partition := _plain(raw)) is None:
            return self.begin_general(op, params, table)
        if table.range_attr:
            raw = attrs.get(table.range_attr)
            sort = None
            if type(raw) is dict and len(raw) == 1:
                for pair in raw.items():
                    if type(pair[1]) is str:
                        sort = INTERNED.get(pair)
            if sort is None and (sort := _plain(raw)) is None:
                return self.begin_general(op, params, table)
            key: Any = (partition, sort)
        else:
            key = (partition, None)
        now = _monotonic()
        spec = table.profile
        counts = table.counts
        counts["requests"] += 1
        ref = table.ref
        if op == "GetItem":
            eventual = not params.get("ConsistentRead")
            if not self._buckets.admit_one(ref, partition, "r", 0.5 if eventual else 1.0, spec.read_units, now):
                counts["throttled"] += 1
                raise throttled(spec.table_mode, [reason(ref, (ref, partition, "r"))])
            if not eventual:
                return None
            counts["eventual_reads"] += 1
            # StaleReads.swap_in, its draw made here: most eventual reads end at it
            stale = self._stale
            pending = stale.lagging.get(ref)
            if not pending or stale.draw() >= spec.stale_share:
                return None
            restore = stale.swap_one(pending, key, table.moto, now, counts)
            return None if restore is None else Single(table, key, None, now, restore)
        if not self._buckets.admit_one(ref, partition, "w", 1.0, spec.write_units, now):
            counts["throttled"] += 1
            raise throttled(spec.table_mode, [reason(ref, (ref, partition, "w"))])
        if holds.held_until:  # an item may be held (holds.check)
            holds.check(op, ref, [("write", key)], now, counts)
        if table.indexes:  # its indexes' write capacity too (index_capacity.py)
            charge(op, params, table, table.indexes, self._buckets, spec, now, counts)
        if holds.watched:  # a TransactGetItems under way on the item is cancelled (holds.py), condition or not
            holds.landed(ref, key, now)
        if not table.stale:
            return None
        image = get_item(table.moto, key)
        return Single(table, key, image if op in _REPLACED else _snapshot(image), now, None)

    def begin_general(self, op: str, params: dict[str, Any], table: Any) -> Modelled | None:
        raise NotImplementedError  # model.AwsLike's
