"""Transaction conflicts, as DynamoDB's transactions paper (Idziorek et al., USENIX ATC 2023) and its developer
guide describe them: every TransactWriteItems marks its items from prepare until commit *or* release, so a
committed one holds them for its commit window and a cancelled one holds those it had prepared (every item
but the ones that cancelled it) for its abort window. While held, another transaction naming the item is
cancelled with reason TransactionConflict, and a PutItem, UpdateItem or DeleteItem on it fails with
TransactionConflictException. A single write (PutItem, UpdateItem, DeleteItem, a BatchWriteItem's put or delete)
is itself ongoing for its write window: a TransactGetItems naming its item meanwhile is cancelled, as the
guide says ("an item within a TransactGetItems request is part of an ongoing ... BatchWriteItem, PutItem,
UpdateItem, or DeleteItem request"); other writes are not refused by it. All of it is decided before moto
sees the request, so nothing is half-applied."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.server.contention.item_keys import SINGLE_WRITES, TRANSACTIONS, Named, Ref
from engine.server.contention.refusals import CONFLICT_MESSAGE, cancelled
from engine.server.limits import Refused

_CHECKED = SINGLE_WRITES | TRANSACTIONS  # reads outside a transaction never wait for one
_PRUNE_ABOVE = 10_000  # expired marks are forgotten in one sweep past this many, so memory stays bounded


class Holds:
    """The items transactions hold, and the items single writes are writing, each until a monotonic time."""

    def __init__(self) -> None:
        self._until: dict[tuple[Ref, Any], float] = {}
        self.written: dict[tuple[Ref, Any], float] = {}  # single writes' items: cancel a TransactGetItems only
        # The window (s) the request being modelled holds its items for: its answer waits it out (model.delay_s).
        self.window = 0.0

    def hold(self, ref: Ref, keys: Named, until: float) -> None:
        """A transaction's items are held until `until` (a longer hold already there stays)."""
        held = self._until
        for _, key in keys:
            at = (ref, key)
            if held.get(at, 0.0) < until:
                held[at] = until

    def writing(self, ref: Ref, key: Any, until: float) -> None:
        """A single write is ongoing on `key` until `until`."""
        written = self.written
        written[(ref, key)] = until
        if len(written) > _PRUNE_ABOVE:
            self.written = {k: u for k, u in written.items() if u > until - 60.0}

    def holding(self) -> bool:
        """Whether any item may be held (an expired hold counts until it is looked at)."""
        return bool(self._until)

    def held(self, ref: Ref, key: Any, now: float) -> bool:
        until = self._until.get((ref, key))
        if until is not None and until <= now:
            del self._until[(ref, key)]
            return False
        return until is not None

    def check(self, op: str, ref: Ref, keys: Named, now: float, counts: Counter[str]) -> None:
        """Refuse a write or a transaction naming a held item: TransactionConflictException for a single write,
        a cancellation with reason TransactionConflict on the held items for a transaction (for a
        TransactGetItems, also on the items a single write is writing)."""
        if op not in _CHECKED or not (self._until or (op == "TransactGetItems" and self.written)):
            return
        held = [self.held(ref, key, now) for _, key in keys]
        if op == "TransactGetItems" and self.written:
            written = self.written
            held = [h or written.get((ref, key), 0.0) > now for h, (_, key) in zip(held, keys)]
        if len(self._until) > _PRUNE_ABOVE:
            self._until = {k: u for k, u in self._until.items() if u > now}
        if not any(held):
            return
        counts["transaction_conflicts"] += 1
        if op in SINGLE_WRITES:
            raise Refused("TransactionConflictException", CONFLICT_MESSAGE)
        raise cancelled(
            [{"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE} if h else {"Code": "None"} for h in held]
        )
