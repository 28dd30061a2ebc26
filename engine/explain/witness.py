"""A witness: the smallest set of calls that proves an invariant broke, named as the literature names it.

After Jepsen's Elle, which names each anomaly and prints the smallest cycle of operations that proves it: here
the calls are a run's History rows, the relations between them are "read the value written by" and
"overwrote", and the story is one sentence a speaker can read out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.record.history import Call, Outcome
from engine.words import client_name


class Anomaly(StrEnum):
    """The standard vocabulary: what each witness is a case of."""

    LOST_UPDATE = "lost update"
    DOUBLE_APPLY = "double apply"
    OVERSELL = "oversell"
    TWO_OWNERS = "two owners of one lease"
    STALE_FENCED_WRITE = "stale fenced write"
    DUPLICATE_UNIQUE = "duplicate unique value"
    STALE_READ = "stale read"


class Relation(StrEnum):
    READ_FROM = "read the value written by"
    OVERWROTE = "overwrote"


@dataclass(frozen=True, slots=True)
class Step:
    """One call of a witness: its History row, the call as recorded, and what it read or wrote as the story
    tells it ("count = 41"), worked out from what the call recorded."""

    seq: int
    call: Call
    says: str = ""


@dataclass(frozen=True, slots=True)
class Edge:
    """`call` <relation> `other` (both History rows): "7 read the value written by 3", "9 overwrote 4".
    Only a relation the recorded calls make certain is given: never one that depends on an unknown order."""

    call: int
    relation: Relation
    other: int


@dataclass(frozen=True, slots=True)
class Witness:
    """Why `invariant` broke: `steps` (in real-time order of invocation) prove it on their own."""

    anomaly: Anomaly
    invariant: str  # the invariant's key
    key: str  # the item the calls met on
    steps: tuple[Step, ...]
    story: str
    edges: tuple[Edge, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(sorted(self.steps, key=lambda s: (s.call.invoke_ns, s.seq))))

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(s.seq for s in self.steps)

    def step(self, seq: int) -> Step:
        return next(s for s in self.steps if s.seq == seq)

    def as_dict(self) -> dict[str, Any]:
        return {
            "anomaly": self.anomaly.value,
            "invariant": self.invariant,
            "key": self.key,
            "story": self.story,
            "calls": [
                {"seq": s.seq, "client": s.call.client, "action": s.call.action, "says": s.says} for s in self.steps
            ],
            "edges": [{"call": e.call, "relation": e.relation.value, "other": e.other} for e in self.edges],
        }


# -- what a call certainly did ---------------------------------------------------------------------------------


def applied(call: Call) -> bool:
    """The call certainly took effect: acknowledged, or unknown only because botocore retried it after a lost
    answer and a later attempt was answered (applied once or twice, never not at all)."""
    return call.outcome is Outcome.OK or (call.outcome is Outcome.INFO and bool(call.detail.get("ambiguous_retry")))


def before(a: Call, b: Call) -> bool:
    """a certainly happened before b: a had returned before b was sent."""
    return a.complete_ns < b.invoke_ns


# -- the story's words -----------------------------------------------------------------------------------------


def clients(ids: Iterable[int]) -> str:
    """ "clients 3 and 5", "clients 1, 2 and 4", "client 3": the distinct ids, in order."""
    distinct = sorted(set(ids))
    if len(distinct) == 1:
        return client_name(distinct[0])
    names = [str(i) for i in distinct]
    return f"clients {', '.join(names[:-1])} and {names[-1]}"


def seconds(call: Call, t0_ns: int = 0) -> float:
    return (call.invoke_ns - t0_ns) / 1e9


def detail_value(call: Call, name: str) -> Any:
    value: Mapping[str, Any] = call.detail or {}
    return value.get(name)
