"""How a run's calls read as operations on single objects: the vocabulary each pattern's witnesses module uses to
tell the linearizability check (`linearizable`) what its calls did, and the helpers that build operations from
calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.explain.calls import Calls
from engine.record.history import Outcome


class _Absent:
    """The state of an object known not to exist (an item not yet created)."""

    def __repr__(self) -> str:
        return "absent"


ABSENT: Any = _Absent()


class Kind(StrEnum):
    READ = "read"  # returned `value`
    READ_NOT = "read-not"  # returned something other than `value`
    WRITE = "write"  # set `value`
    ADD = "add"  # added `delta`; if `floor` is given, only when the result stays >= floor; returned `ret`
    CAS = "cas"  # set `value` if the state was `expect`
    INSERT = "insert"  # set `value` if the object was absent
    REMOVE = "remove"  # made it absent
    SETNX = "setnx"  # set `value` if absent, else left it; either way returned the state, which is `value`


@dataclass(frozen=True, slots=True)
class Op:
    """One operation on one object, made of one call or a few (a read and the write computed from it)."""

    obj: str
    kind: Kind
    invoke_ns: int
    complete_ns: int
    outcome: Outcome  # OK: took effect; FAIL: refused by its own condition; INFO: may or may not have
    seqs: tuple[int, ...]  # the History rows it is made of
    value: Any = None
    expect: Any = None
    delta: int = 0
    floor: int | None = None
    ret: Any = None  # ADD: the value after it, when the call returned it


@dataclass(frozen=True)
class Reading:
    """How a run's calls read as operations: the operations, the objects' known initial states, and the
    objects whose calls could not be read (why)."""

    ops: list[Op]
    initial: Mapping[str, Any] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)


Operations = Callable[[Calls, Mapping[str, Any]], Reading]
_OPERATIONS: dict[str, Operations] = {}


def operations(pattern: str) -> Callable[[Operations], Operations]:
    """Register how a pattern's calls read as operations on single objects."""

    def register(fn: Operations) -> Operations:
        _OPERATIONS[pattern] = fn
        return fn

    return register


def reader_for(pattern: str) -> Operations | None:
    """How the pattern's calls read as operations, None when it does not say (its module must be loaded)."""
    return _OPERATIONS.get(pattern)


# -- helpers for the patterns' readings ------------------------------------------------------------------------

CONDITION_FAILED = "ConditionalCheckFailedException"


def outcome_of(call: Any, refusals: Sequence[str] = (CONDITION_FAILED,)) -> Outcome | None:
    """The call's outcome as an operation's, or None to leave it out: refused for a reason other than its own
    condition (throttled, invalid), it tells nothing about the object."""
    if call.outcome is Outcome.FAIL and call.error not in refusals:
        return None
    return call.outcome


def op_of(
    calls: Calls,
    seq: int,
    kind: Kind,
    *,
    obj: str | None = None,
    read_action: str | None = None,
    outcome: Outcome | None = None,
    **fields: Any,
) -> Op | None:
    """The operation call `seq` makes; with `read_action`, it starts at its client's read of the object just
    before (a read-modify-write is one operation from the read to the write)."""
    call = calls[seq]
    outcome = outcome_of(call) if outcome is None else outcome
    if outcome is None:
        return None
    seqs: tuple[int, ...] = (seq,)
    invoke = call.invoke_ns
    if read_action is not None:
        read = calls.previous(seq, read_action, call.key)
        if read is not None:
            seqs, invoke = (read[0], seq), read[1].invoke_ns
    return Op(
        obj=call.key if obj is None else obj,
        kind=kind,
        invoke_ns=invoke,
        complete_ns=call.complete_ns,
        outcome=outcome,
        seqs=seqs,
        **fields,
    )
