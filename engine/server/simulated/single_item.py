"""The model's pass for a GetItem, PutItem, UpdateItem or DeleteItem of a plain key (strings, numbers or binary):
most requests a run makes. It does what model.AwsLike.begin_general and end_general do for them (one bucket, the
holds, a stale image), with what a table's requests share worked out once per table (model._Table), the key read
and the bucket refilled in place, a small record (Single) instead of the general one, and a write's lagging image
kept in `end` itself: this pass is most of what aws-like costs in server CPU over exact (at most 10 % more).
Any other request, or an odd key, goes the general way.

Same behaviour as the general pass, request for request: the same buckets and units, the same holds and
watches, the same stale images and the same draws from the model's one random source, in the same order."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

from engine.server.moto_store import INTERNED, KeyValue, get_item, key_value
from engine.server.simulated.batch import Modelled
from engine.server.simulated.buckets import BURST_S, Buckets, reason
from engine.server.simulated.holds import Holds
from engine.server.simulated.index_capacity import charge
from engine.server.simulated.refusals import throttled
from engine.server.simulated.stale_reads import StaleReads, _snapshot

SINGLE_ITEM = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem"})
# moto replaces the Item object a PutItem overwrites and only unlinks the one a DeleteItem deletes, so the old
# object is the image before the write as it is; an UpdateItem changes its item in place, so that one is copied.
_REPLACED = frozenset({"PutItem", "DeleteItem"})
_monotonic = time.monotonic
_exp, _log, _sqrt, _cos, _sin, _TWO_PI = math.exp, math.log, math.sqrt, math.cos, math.sin, 2.0 * math.pi

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
    """AwsLike.begin and end (this class is a base of model.AwsLike): the single-item requests taken here, in one
    Python call each, every other request passed on to begin_general and end_general (model.py)."""

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
            bucket, units, rate = "r", 0.5 if eventual else 1.0, spec.read_units
        else:
            bucket, units, rate = "w", 1.0, spec.write_units
        # The one bucket of a single-item request: Buckets.has and take in one step, written out (buckets.py).
        at = (ref, (partition.type, partition._cast), bucket)
        size = rate * BURST_S
        if size < 1.0:
            size = 1.0
        levels = self._buckets.levels
        state = levels.get(at)
        if state is None:
            tokens = size
            state = levels[at] = [size, now]
        else:
            tokens = state[0] + (now - state[1]) * rate
            if tokens > size:
                tokens = size
            state[1] = now
        if tokens < (units if units < size else size):
            state[0] = tokens
            counts["throttled"] += 1
            raise throttled(spec.table_mode, [reason(ref, (ref, partition, bucket))])
        state[0] = tokens - units
        if op == "GetItem":
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

    def end(self, result: Modelled | Single) -> None:
        """After the moto call `begin` started: a read's swapped images put back; a write that succeeded leaves
        its image for stale reads (StaleReads.remember, written out for one image, with its table's lag law
        worked out once); anything else: end_general."""
        if type(result) is not Single:
            return self.end_general(result)  # type: ignore[arg-type]  # a Modelled: every type but Single
        stale = self._stale
        if result.restore is not None:
            stale.swap_back(result.table.moto, result.restore)
            return None
        if not result.ok:
            return None
        table, now, key = result.table, result.now, result.key
        median, sigma, cap = table.lag
        if sigma:
            # random.gauss(0, 1) of the model's random source, written out (its own code and state, gauss_next):
            # the same draws, a Python call less on every write.
            chance: Any = stale.chance
            z = chance.gauss_next
            chance.gauss_next = None
            if z is None:
                x2pi = chance.random() * _TWO_PI
                g2rad = _sqrt(-2.0 * _log(1.0 - chance.random()))
                z = _cos(x2pi) * g2rad
                chance.gauss_next = _sin(x2pi) * g2rad
            lag_ms = median * _exp(sigma * z)
            until = now + (lag_ms if lag_ms < cap else cap) / 1000.0
        else:
            until = now + (median if median < cap else cap) / 1000.0
        lagging = stale.lagging
        pending = lagging.get(table.ref)
        if pending is None:
            pending = lagging[table.ref] = {}
        queue = pending.get(key)
        if queue is None:
            pending[key] = deque(((until, result.image),))
            return None
        while queue and queue[0][0] <= now:  # moto_store.expire, written out
            queue.popleft()
        # The lagging copy applies writes in order: a later write never shows before an earlier one.
        queue.append((until if not queue or queue[-1][0] <= until else queue[-1][0], result.image))
        return None

    def begin_general(self, op: str, params: dict[str, Any], table: Any) -> Modelled | None:
        raise NotImplementedError  # model.AwsLike's

    def end_general(self, result: Modelled) -> None:
        raise NotImplementedError  # model.AwsLike's
