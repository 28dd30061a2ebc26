"""The witnesses of optimistic locking's broken rules (blind-write): two clients read one account at the same
version and both wrote the next version, so the later put erased the earlier change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds, key_of
from engine.explain.shapes import same_read
from engine.explain.witness import Witness
from engine.patterns.optimistic_locking.invariants import (
    BALANCE_ADDS_UP,
    NO_LOST_UPDATE,
    VERSION_COUNTS_WRITES,
    account_pk,
)
from engine.record.history import Call

PATTERN = "optimistic-locking"


def _read_version(call: Call) -> Any:
    return call.detail.get("read_version")


@finds(PATTERN, NO_LOST_UPDATE, BALANCE_ADDS_UP, VERSION_COUNTS_WRITES)
def lost_change(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return same_read(
        calls,
        key_of(invariant),
        [(s, c) for s, c in calls if c.action in ("deposit", "withdraw")],
        read_of=_read_version,
        read_action="read",
        said=lambda v: (f"read version {v}", f"wrote version {v + 1}"),
        story=lambda who, v, key: (
            f"{who} both read {key} at version {v}; both wrote version {v + 1}; one change vanished"
        ),
    )


@operations(PATTERN)
def account_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each deposit or withdrawal is one compare-and-set of the account's (version, balance), from the read it
    was computed from to the put: what the client meant, whether or not it sent the condition (a blind write
    that was told it succeeded claims it moved the account on from what it read)."""
    ops: list[Op] = []
    unknown: dict[str, str] = {}
    for seq, call in calls:
        if call.action not in ("deposit", "withdraw"):
            continue
        d = call.detail
        if not all(name in d for name in ("read_version", "version", "balance", "amount")):
            unknown[call.key] = f"{call.key}: a write records no version or balance read"
            continue
        expect = (int(d["read_version"]), int(d["balance"]) - int(d["amount"]))
        op = op_of(
            calls, seq, Kind.CAS, read_action="read", expect=expect, value=(int(d["version"]), int(d["balance"]))
        )
        if op is not None:
            ops.append(op)
    initial = {}
    if "accounts" in options and "initial_balance" in options:
        initial = {account_pk(i): (1, int(options["initial_balance"])) for i in range(int(options["accounts"]))}
    return Reading(ops, initial, unknown)
