"""Witness shapes several patterns share, each a finder's building block.

`same_read`: two clients read the same value of one item and both wrote what they computed from it, so one of
the writes erased the other: the lost update of a read-modify-write (a counter, a balance, a ticket stock).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from engine.explain.calls import Calls
from engine.explain.witness import Anomaly, Edge, Relation, Step, Witness, before, clients
from engine.record.history import Call, Outcome


def same_read(
    calls: Calls,
    invariant: str,
    writes: Iterable[tuple[int, Call]],
    *,
    read_of: Callable[[Call], Hashable | None],
    read_action: str,
    said: Callable[[Any], tuple[str, str]],
    story: Callable[[str, Any, str], str],
    anomaly: Anomaly = Anomaly.LOST_UPDATE,
    prefer: Callable[[Any], Any] | None = None,
) -> Witness | None:
    """Two acknowledged writes to one key by different clients, each computed from a read (`read_of` its
    value, from the write's own detail) of the same value, with the reads that returned it.

    `said(value)` is what the read and the write say ("count = 41", "wrote 42"); `story(who, value, key)`
    the sentence. Of the candidate values, `prefer` picks (default: the first met in the run).
    """
    by_value: dict[tuple[str, Hashable], list[tuple[int, Call]]] = defaultdict(list)
    for seq, call in writes:
        value = read_of(call)
        if call.outcome is Outcome.OK and value is not None:
            by_value[(call.key, value)].append((seq, call))
    candidates = []
    for (key, value), group in by_value.items():
        pair = _two_clients(group)
        if pair is not None:
            candidates.append((key, value, pair))
    if not candidates:
        return None
    if prefer is not None:
        candidates.sort(key=lambda c: prefer(c[1]))
    key, value, pair = candidates[0]
    read_says, write_says = said(value)
    steps: list[Step] = []
    edges: list[Edge] = []
    for seq, call in pair:
        steps.append(Step(seq, call, write_says))
        read = calls.previous(seq, read_action, key)
        if read is not None:
            steps.append(Step(read[0], read[1], read_says))
    (s1, w1), (s2, w2) = sorted(pair, key=lambda p: p[1].complete_ns)
    if before(w1, w2):
        edges.append(Edge(s2, Relation.OVERWROTE, s1))
    return Witness(
        anomaly=anomaly,
        invariant=invariant,
        key=key,
        steps=tuple(steps),
        story=story(clients(c.client for _, c in pair), value, key),
        edges=tuple(edges),
    )


def _two_clients(group: list[tuple[int, Call]]) -> tuple[tuple[int, Call], tuple[int, Call]] | None:
    """The first two writes of the group by different clients (one client's own writes are in sequence)."""
    first = group[0]
    for other in group[1:]:
        if other[1].client != first[1].client:
            return first, other
    return None
