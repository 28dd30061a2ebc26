"""Transaction conflicts: a committed TransactWriteItems holds every item it names for the profile's
`commit_ms` (DynamoDB's prepare and commit phases). While held, another transaction naming the item is cancelled
with reason TransactionConflict, and a single write on it fails with TransactionConflictException; both are
refused before moto sees them, so nothing is half-applied."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.server.faithful.limits import Refused
from engine.server.simulated.item_keys import SINGLE_WRITES, TRANSACTIONS, Named, Ref
from engine.server.simulated.refusals import CONFLICT_MESSAGE, cancelled

_CHECKED = SINGLE_WRITES | TRANSACTIONS  # reads outside a transaction never wait for one
_PRUNE_ABOVE = 10_000  # expired holds are forgotten in one sweep past this many, so memory stays bounded


class Holds:
    """The items committed transactions hold, each until a monotonic time."""

    def __init__(self) -> None:
        self._until: dict[tuple[Ref, Any], float] = {}

    def hold(self, ref: Ref, keys: Named, until: float) -> None:
        """After a committed transaction: every item it names is held until `until`."""
        for _, key in keys:
            self._until[(ref, key)] = until

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
        a cancellation with reason TransactionConflict on the held items for a transaction."""
        if not self._until or op not in _CHECKED:
            return
        held = [self.held(ref, key, now) for _, key in keys]
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
