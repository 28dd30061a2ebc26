"""The witnesses of atomic counters' broken rules (read-then-put): two clients read the same value and both
wrote the next one, so one increment, one invoice number or one ticket sale vanished or was handed out twice."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.operations import Kind, Op, Reading, op_of, operations
from engine.explain.registry import finds
from engine.explain.shapes import same_read
from engine.explain.witness import Anomaly, Witness
from engine.patterns.atomic_counters import (
    DETAIL_READ,
    FINAL_COUNT,
    INCREMENT,
    NEVER_OVERSOLD,
    REMAINING_ADDS_UP,
    SEQUENCE_GAP_FREE,
)
from engine.record.history import Call

PATTERN = "atomic-counters"


def _read(call: Call) -> Any:
    return call.detail.get(DETAIL_READ)


@finds(PATTERN, FINAL_COUNT)
def lost_increment(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return same_read(
        calls,
        FINAL_COUNT,
        calls.where(INCREMENT),
        read_of=_read,
        read_action="read-views",
        said=lambda v: (f"read views = {v}", f"wrote {v + 1}"),
        story=lambda who, v, _: f"{who} both read views = {v}; both wrote {v + 1}; one increment vanished",
    )


@finds(PATTERN, SEQUENCE_GAP_FREE)
def duplicate_number(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    def read(call: Call) -> Any:
        number = call.detail.get("number")
        return None if number is None else number - 1

    return same_read(
        calls,
        SEQUENCE_GAP_FREE,
        [(s, c) for s, c in calls.where("next-number") if c.op == "PutItem"],
        read_of=read,
        read_action="read-sequence",
        said=lambda v: (f"read next = {v}", f"took number {v + 1}"),
        story=lambda who, v, _: f"{who} both read next = {v}; both took invoice number {v + 1}; two invoices share it",
        anomaly=Anomaly.DUPLICATE_UNIQUE,
    )


def _same_ticket(calls: Calls, key: str, anomaly: Anomaly, ending: str) -> Witness | None:
    return same_read(
        calls,
        key,
        calls.where("buy-ticket"),
        read_of=_read,
        read_action="read-tickets",
        said=lambda r: (f"read remaining = {r}", f"sold one, wrote {r - 1}"),
        story=lambda who, r, _: f"{who} both read remaining = {r}; both sold a ticket and wrote {r - 1}; {ending}",
        anomaly=anomaly,
        prefer=lambda r: r,  # the last ticket sold twice tells it best
    )


@finds(PATTERN, NEVER_OVERSOLD)
def oversold(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return _same_ticket(calls, NEVER_OVERSOLD, Anomaly.OVERSELL, "one ticket went to two buyers")


@finds(PATTERN, REMAINING_ADDS_UP)
def lost_sale(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return _same_ticket(calls, REMAINING_ADDS_UP, Anomaly.LOST_UPDATE, "one sale left no mark on the stock")


@operations(PATTERN)
def counter_operations(calls: Calls, options: Mapping[str, Any]) -> Reading:
    """Each increment, number and sale is one add on its counter, from the client's read when it made one
    (read-then-put: what it wrote is what the add returned; ADD: nothing returned, UPDATED_NEW the number)."""
    ops: list[Op | None] = []
    for seq, call in calls:
        read = call.detail.get(DETAIL_READ)
        if call.action == INCREMENT:
            ret = None if read is None else read + 1
            ops.append(op_of(calls, seq, Kind.ADD, read_action="read-views", delta=1, ret=ret))
        elif call.action == "next-number":
            ops.append(op_of(calls, seq, Kind.ADD, read_action="read-sequence", delta=1, ret=call.detail.get("number")))
        elif call.action == "buy-ticket":
            ret = None if read is None else read - 1
            ops.append(op_of(calls, seq, Kind.ADD, read_action="read-tickets", delta=-1, floor=0, ret=ret))
    initial: dict[str, Any] = {"views": 0, "sequence": 0}
    if "tickets" in options:
        initial["tickets"] = int(options["tickets"])
    return Reading([op for op in ops if op is not None], initial)
