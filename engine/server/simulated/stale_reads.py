"""Eventually consistent reads: each write on an aws-like table remembers the item's previous image for the
profile's `stale_ms`. A GetItem, BatchGetItem, Query or Scan without ConsistentRead is served, with probability
`stale_share`, by the lagging copy: every item written in the last `stale_ms` shows its image from before those
writes. (GSI reads keep their own lag, gsi_lag.py.)"""

from __future__ import annotations

import copy
import math
import random
from collections import Counter, deque
from typing import Any

from engine.server.moto_store import Pending, expire, get_item, put_item, written_keys
from engine.server.profile import Z99, ProfileSpec, draw_ms
from engine.server.simulated.item_keys import SINGLE_WRITES, Named, Ref, item_key

_WRITES = SINGLE_WRITES | {"TransactWriteItems", "BatchWriteItem"}


class StaleReads:
    """The images the lagging copy still shows, per table and item, oldest first (as gsi_lag's)."""

    def __init__(self, chance: random.Random) -> None:
        self._random = chance  # the model's own: one seed makes a whole run's draws repeatable
        self.chance = chance  # for a caller that draws itself (single_item.py)
        self.draw = chance.random  # swap_in's draw, for a caller that makes it itself (swap_one)
        # Per table, per item: what the lagging copy still shows (read, not changed, outside this class).
        self.lagging: dict[Ref, dict[Any, Pending]] = {}

    def capture(
        self, op: str, params: dict[str, Any], table: Any, spec: ProfileSpec, keys: Named
    ) -> list[tuple[Any, Any]]:
        """Before a write: the images of the items it may change (moto updates them in place), one per item, in
        the order the request names them. `keys` are the request's own (item_keys.request_keys): a single write's
        item is among them, already read."""
        if spec.stale_ms <= 0 or spec.stale_share <= 0 or op not in _WRITES:
            return []
        if op in SINGLE_WRITES:
            for _, key in keys:  # the one item it names
                return [(key, _snapshot(get_item(table, key)))]
            return []
        captured: dict[Any, Any] = {}
        for name, attrs in written_keys(op, params):
            if name != table.name:
                continue
            key = item_key(table, attrs)
            if key is not None and key not in captured:
                captured[key] = _snapshot(get_item(table, key))
        return list(captured.items())

    def remember(self, ref: Ref, captured: list[tuple[Any, Any]], spec: ProfileSpec, now: float) -> None:
        """After the write succeeded: its captured images stay visible to stale reads for `stale_ms`."""
        if not captured:
            return
        pending = self.lagging.get(ref)
        if pending is None:
            pending = self.lagging[ref] = {}
        until = now + draw_ms(self._random, spec.stale_ms, spec.stale_spread, spec.stale_cap_ms)
        for key, image in captured:
            queue = pending.get(key)
            if queue is None:
                queue = pending[key] = deque()
            elif queue:
                expire(queue, now)
            # The lagging copy applies writes in order: a later write never shows before an earlier one.
            queue.append((until if not queue or queue[-1][0] <= until else queue[-1][0], image))

    def swap_one(self, pending: dict[Any, Pending], key: Any, table: Any, now: float, counts: Counter[str]) -> Any:
        """swap_in for a GetItem of `key` whose draw (`draw() < stale_share`) its caller made, `pending` being its
        table's lagging images: the item shows its lagging image; returns what `swap_back` puts back, or None."""
        queue = pending.get(key)
        if queue is None:
            return None
        expire(queue, now)
        if not queue:
            del pending[key]
            return None
        restore = [(key, get_item(table, key))]
        put_item(table, key, queue[0][1])  # the image before the oldest write this copy has not seen
        counts["stale_reads"] += 1
        return restore

    def swap_in(
        self, op: str, ref: Ref, keys: Named, table: Any, spec: ProfileSpec, now: float, counts: Counter[str]
    ) -> list[tuple[Any, Any]]:
        """Before an eventually consistent read: with probability `stale_share`, the items it may read show their
        lagging images while moto reads them; returns what `swap_back` puts back after (the current images)."""
        pending = self.lagging.get(ref)
        if not pending or self._random.random() >= spec.stale_share:
            return []
        wanted = [key for _, key in keys] if op in ("GetItem", "BatchGetItem") else list(pending)
        restore: list[tuple[Any, Any]] = []
        for key in wanted:
            queue = pending.get(key)
            if queue is None:
                continue
            expire(queue, now)
            if not queue:
                del pending[key]
                continue
            restore.append((key, get_item(table, key)))
            put_item(table, key, queue[0][1])  # the image before the oldest write this copy has not seen
        if restore:
            counts["stale_reads"] += 1
        return restore

    @staticmethod
    def swap_back(table: Any, restore: list[tuple[Any, Any]]) -> None:
        """After the read (also one that raised): the items `swap_in` changed show their current images again."""
        for key, item in reversed(restore):
            put_item(table, key, item)


def lag_law(spec: ProfileSpec) -> tuple[float, float, float]:
    """(median ms, sigma, cap ms) of a table's lag: draw_ms's terms, worked out once per table."""
    sigma = math.log(spec.stale_spread) / Z99 if spec.stale_spread > 1.0 else 0.0
    return spec.stale_ms, sigma, spec.stale_cap_ms


_SHARED_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL"})  # moto replaces these values, never changes them


def _snapshot(item: Any) -> Any:
    """A copy of a moto Item as it is now: scalar values are shared (moto replaces a scalar attribute's value
    object, never changes it), maps, lists and sets (changed in place) are deep-copied. About ten times
    cheaper than copy.deepcopy on the small items the patterns write, and it runs on every aws-like write."""
    if item is None:
        return None
    # object.__new__, not moto's BaseModel.__new__: that one only appends to instances_tracked (untracked.py).
    copied = _new_object(type(item))
    copied.hash_key, copied.range_key = item.hash_key, item.range_key
    attrs = item.attrs
    copied_attrs = _new_dict(type(attrs))
    _update(copied_attrs, attrs)  # dict's own update: LimitedSizeDict's __setitem__ checks nothing a copy needs
    for name, value in attrs.items():
        if value.type not in _SHARED_TYPES:
            _set(copied_attrs, name, copy.deepcopy(value))
    copied.attrs = copied_attrs
    return copied


_new_object = object.__new__
_new_dict = dict.__new__
_update = dict.update
_set = dict.__setitem__
