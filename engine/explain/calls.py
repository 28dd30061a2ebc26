"""A run's calls picked out of its History once, with the look-ups every witness finder needs."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.explain.witness import Step
from engine.record.history import Call, History, Outcome


@dataclass(frozen=True)
class Calls:
    """Every call with its History row (seq), in the order the History received them."""

    rows: tuple[tuple[int, Call], ...]
    t0_ns: int = 0
    # (client, action) -> the invocation times and rows of its calls, in order of invocation
    _by_action: dict[tuple[int, str], tuple[list[int], list[int]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def of(cls, history: History) -> Calls:
        rows = tuple(enumerate(_calls(history)))
        by_action: dict[tuple[int, str], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for seq, call in sorted(rows, key=lambda r: (r[1].invoke_ns, r[0])):
            times, seqs = by_action[(call.client, call.action)]
            times.append(call.invoke_ns)
            seqs.append(seq)
        return cls(rows, history.t0_ns, dict(by_action))

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
        times, seqs = self._by_action.get((call.client, action), ([], []))
        for i in range(bisect.bisect_left(times, call.invoke_ns) - 1, -1, -1):
            c = self[seqs[i]]
            if key is None or c.key == key:
                return seqs[i], c
        return None

    def step(self, seq: int, says: str = "") -> Step:
        return Step(seq, self[seq], says)


def _calls(history: History) -> list[Call]:
    """Every call, from one columnar snapshot (its details decoded in one go: a call at a time costs several
    times more), with the times as the calls recorded them."""
    frame = history.snapshot(detail=True, requests=False)
    t0 = history.t0_ns
    outcomes = {o.value: o for o in Outcome}
    return [
        Call(
            client=int(client),
            action=str(action),
            op=str(op),
            key=str(key),
            invoke_ns=int(invoke) + t0,
            complete_ns=int(complete) + t0,
            outcome=outcomes[str(outcome)],
            error=str(error) or None,
            retries=int(retries),
            detail=detail,
        )
        for client, action, op, key, invoke, complete, outcome, error, retries, detail in zip(
            frame["client"].tolist(),
            frame["action"].astype(str).tolist(),
            frame["op"].astype(str).tolist(),
            frame["key"].astype(str).tolist(),
            frame["invoke_ns"].tolist(),
            frame["complete_ns"].tolist(),
            frame["outcome"].astype(str).tolist(),
            frame["error"].astype(str).tolist(),
            frame["retries"].tolist(),
            frame["detail"],
        )
    ]
