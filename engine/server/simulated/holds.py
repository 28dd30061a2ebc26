"""Transaction conflicts, as DynamoDB's transactions paper (Idziorek et al., USENIX ATC 2023) and its developer
guide describe them: every TransactWriteItems marks its items from prepare until commit *or* release, so a
committed one holds them for its commit window and a cancelled one holds those it had prepared (every item
but the ones that cancelled it) for its abort window. While held, another transaction naming the item is
cancelled with reason TransactionConflict, and a PutItem, UpdateItem or DeleteItem on it fails with
TransactionConflictException. Refusals are decided before moto sees the request, so nothing is half-applied.

A TransactGetItems is cancelled when one of its items is part of an ongoing PutItem, UpdateItem, DeleteItem,
BatchWriteItem or TransactWriteItems (developer guide, "Transaction conflict handling"; the API reference's
TransactionCanceledException: "an ongoing TransactGetItems operation that conflicts with a concurrent PutItem,
UpdateItem, DeleteItem or TransactWriteItems request"). A single write applies at one instant here, taken as
the end of its own window (it was under way for `write_ms` before); a TransactGetItems is under way for
`read_ms` after it reads. The two overlap exactly when the write applies within read_ms + write_ms after the
read, so the read is watched that long (Watch) and cancelled, when its answer is due, if a write landed on one
of its items meanwhile. Writes themselves wait for nothing: their answers are not held back, so a client never
meets its own write, and a single write costs one dict test while no TransactGetItems is under way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.server.simulated.item_keys import SINGLE_WRITES, TRANSACTIONS, Named, Ref
from engine.server.simulated.refusals import CONFLICT_MESSAGE, cancelled
from engine.server.wire import Refused

_CHECKED = SINGLE_WRITES | TRANSACTIONS  # reads outside a transaction never wait for one
_PRUNE_ABOVE = 10_000  # expired marks are forgotten in one sweep past this many, so memory stays bounded


class Watch:
    """A TransactGetItems under way until `until`: the positions of its items a write landed on meanwhile."""

    __slots__ = ("until", "size", "hits")

    def __init__(self, until: float, size: int) -> None:
        self.until = until
        self.size = size
        self.hits: set[int] = set()

    def reasons(self) -> list[dict[str, str]] | None:
        """The cancellation reasons when a write landed on one of its items, else None."""
        if not self.hits:
            return None
        conflict = {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}
        return [dict(conflict) if i in self.hits else {"Code": "None"} for i in range(self.size)]


class Holds:
    """The items transactions hold, each until a monotonic time, and the TransactGetItems under way."""

    def __init__(self) -> None:
        self.held_until: dict[tuple[Ref, Any], float] = {}  # per (table, item key): read, not changed, outside
        # The window (s) the request being modelled holds its items for: its answer waits it out (model.delay_s).
        self.window = 0.0
        self.watched: dict[tuple[Ref, Any], list[tuple[Watch, int]]] = {}  # TransactGetItems under way, per item

    def watch(self, ref: Ref, keys: Named, until: float) -> Watch:
        """A TransactGetItems that passed: under way on its items until `until`."""
        watch = Watch(until, len(keys))
        watched = self.watched
        for i, (_, key) in enumerate(keys):
            watched.setdefault((ref, key), []).append((watch, i))
        if len(watched) > _PRUNE_ABOVE:
            self.watched = {k: [w for w in ws if w[0].until > until - 60.0] for k, ws in watched.items()}
            self.watched = {k: ws for k, ws in self.watched.items() if ws}
        return watch

    def landed(self, ref: Ref, key: Any, now: float) -> None:
        """A write landed on `key`: every TransactGetItems under way on it is to be cancelled."""
        entries = self.watched.get((ref, key))
        if entries is None:
            return
        live = [(watch, i) for watch, i in entries if watch.until > now]
        for watch, i in live:
            watch.hits.add(i)
        if live:
            self.watched[(ref, key)] = live
        else:
            del self.watched[(ref, key)]

    def hold(self, ref: Ref, keys: Named, until: float) -> None:
        """A transaction's items are held until `until` (a longer hold already there stays)."""
        held = self.held_until
        for _, key in keys:
            at = (ref, key)
            if held.get(at, 0.0) < until:
                held[at] = until

    def holding(self) -> bool:
        """Whether any item may be held (an expired hold counts until it is looked at)."""
        return bool(self.held_until)

    def held(self, ref: Ref, key: Any, now: float) -> bool:
        until = self.held_until.get((ref, key))
        if until is not None and until <= now:
            del self.held_until[(ref, key)]
            return False
        return until is not None

    def check(self, op: str, ref: Ref, keys: Named, now: float, counts: Counter[str]) -> None:
        """Refuse a write or a transaction naming a held item: TransactionConflictException for a single write,
        a cancellation with reason TransactionConflict on the held items for a transaction."""
        if not self.held_until or op not in _CHECKED:
            return
        held = [self.held(ref, key, now) for _, key in keys]
        if len(self.held_until) > _PRUNE_ABOVE:
            self.held_until = {k: u for k, u in self.held_until.items() if u > now}
        if not any(held):
            return
        counts["transaction_conflicts"] += 1
        if op in SINGLE_WRITES:
            raise Refused("TransactionConflictException", CONFLICT_MESSAGE)
        raise cancelled(
            [{"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE} if h else {"Code": "None"} for h in held]
        )
