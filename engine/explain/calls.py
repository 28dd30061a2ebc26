"""A run's calls picked out of its History once, with the look-ups every witness finder needs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.explain.witness import Step
from engine.history import Call, History


@dataclass(frozen=True)
class Calls:
    """Every call with its History row (seq), in the order the History received them."""

    rows: tuple[tuple[int, Call], ...]
    t0_ns: int = 0
    _by_client: dict[int, list[tuple[int, Call]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, history: History) -> Calls:
        rows = tuple(enumerate(history.calls()))
        by_client: dict[int, list[tuple[int, Call]]] = defaultdict(list)
        for seq, call in sorted(rows, key=lambda r: (r[1].invoke_ns, r[0])):
            by_client[call.client].append((seq, call))
        return cls(rows, history.t0_ns, dict(by_client))

    def __iter__(self) -> Iterator[tuple[int, Call]]:
        return iter(self.rows)

    def __getitem__(self, seq: int) -> Call:
        return self.rows[seq][1]

    def where(self, action: str | None = None, key: str | None = None) -> list[tuple[int, Call]]:
        return [
            (s, c) for s, c in self.rows if (action is None or c.action == action) and (key is None or c.key == key)
        ]

    def previous(self, seq: int, action: str, key: str | None = None) -> tuple[int, Call] | None:
        """The same client's last call of `action` (on `key`) sent before call `seq`: the read a write was
        computed from, the check before a write."""
        call = self[seq]
        found = None
        for s, c in self._by_client.get(call.client, ()):
            if c.invoke_ns >= call.invoke_ns:
                break
            if c.action == action and (key is None or c.key == key):
                found = (s, c)
        return found

    def step(self, seq: int, says: str = "") -> Step:
        return Step(seq, self[seq], says)
