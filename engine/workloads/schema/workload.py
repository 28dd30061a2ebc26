"""The whole file: the table, the mix, the load, and which generic invariants the mix allows."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, model_validator

from engine.workloads.schema.base import StrictModel, at_field
from engine.workloads.schema.limits import (
    MAX_CLIENTS,
    MAX_DURATION_S,
    MAX_OPS_PER_CLIENT,
    MAX_RATE,
    MAX_THINK_MS,
    MAX_TRANSACT_ITEMS,
)
from engine.workloads.schema.operations import (
    BatchWrite,
    Delete,
    Keys,
    Operation,
    Put,
    Query,
    TransactWrite,
    Update,
)
from engine.workloads.schema.table import Table


class Load(StrictModel):
    """How hard the clients press. closed: each client runs one operation after another with `think_ms` between.
    open: operations arrive at `rate` per second (Poisson), spread over `clients` threads, each with one request in
    flight (so `clients` caps the requests in flight); latency counts from each arrival's scheduled time."""

    mode: Literal["closed", "open"] = Field("closed", description="closed or open")
    clients: int = Field(8, ge=1, le=MAX_CLIENTS, description="client threads; in open loop, the cap in flight")
    think_ms: float = Field(0.0, ge=0, le=MAX_THINK_MS, description="closed loop: pause after each operation")
    rate: float | None = Field(None, gt=0, le=MAX_RATE, description="open loop: target operations per second")
    ops: int | None = Field(
        None, ge=1, le=MAX_OPS_PER_CLIENT, description="operations per client (default 50 with no duration_s)"
    )
    duration_s: float | None = Field(None, gt=0, le=MAX_DURATION_S, description="time limit in seconds")

    @model_validator(mode="after")
    def _rate_for_open(self) -> Load:
        if self.mode == "open" and self.rate is None:
            raise at_field("rate", "open loop needs a target rate: add rate: 100 (operations per second)")
        if self.mode == "closed" and self.rate is not None:
            raise at_field("rate", "rate is for open loop: add mode: open, or drop rate")
        return self


INVARIANTS = ("no-lost-change", "all-or-nothing", "one-winner")


class Workload(StrictModel):
    """A team's table and traffic."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="short name")
    description: str = Field("", max_length=4000, description="what a team learns from it")
    table: Table = Field(Table(), description="the table and its starting items")
    keys: Keys = Field(Keys(), description="default key popularity")
    operations: list[Operation] = Field(min_length=1, max_length=32, description="the mix, each with a weight")
    load: Load = Field(Load(), description="closed or open loop")
    lost_responses: float = Field(
        0.0, ge=0, le=1, description="share of writes whose answer is lost after the server applied them"
    )
    invariants: list[Literal["no-lost-change", "all-or-nothing", "one-winner"]] | None = Field(
        None, description="which generic invariants to judge (default: every one the operations allow)"
    )

    @model_validator(mode="after")
    def _mix(self) -> Workload:
        if sum(op.weight for op in self.operations) <= 0:
            raise at_field(
                "operations", "the operations' weights sum to 0: give at least one operation a weight above 0"
            )
        names = [op.name for op in self.operations]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise at_field("operations", f"two operations are named {dup[0]!r}: give each a name of its own")
        if any(isinstance(op, Query) and op.index for op in self.operations) and self.table.gsi is None:
            raise at_field("table.gsi", "a query with index: true needs table.gsi: add gsi: {name: by-group}")
        for i, op in enumerate(self.operations):
            if isinstance(op, TransactWrite) and op.items + op.checks > MAX_TRANSACT_ITEMS:
                raise at_field(
                    f"operations[{i}].checks",
                    f"items + checks is {op.items + op.checks}: a transaction takes at most {MAX_TRANSACT_ITEMS}",
                )
        widest = max((getattr(op, "items", 1) + getattr(op, "checks", 0) for op in self.operations), default=1)
        if widest > self.table.items:
            raise at_field(
                "table.items", f"an operation needs {widest} distinct keys but table.items is {self.table.items}"
            )
        if self.invariants is not None:
            allowed = applicable_invariants(self)
            for inv in self.invariants:
                if inv not in allowed:
                    raise at_field(
                        "invariants", f"invariant {inv!r} does not apply to these operations: {why_not(self, inv)}"
                    )
        return self

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"), sort_keys=True)

    def declared_invariants(self) -> tuple[str, ...]:
        return tuple(self.invariants) if self.invariants is not None else applicable_invariants(self)


# -- which invariants a mix allows ---------------------------------------------------------------------------


def _overwrites(w: Workload) -> list[str]:
    """Operations that change an item without counting the change: the count of applied changes cannot be trusted."""
    return [
        op.name
        for op in w.operations
        if op.weight > 0
        and (isinstance(op, (Delete, BatchWrite)) or (isinstance(op, Put) and op.mode == "unconditional"))
    ]


def _counted(w: Workload) -> list[str]:
    return [
        op.name
        for op in w.operations
        if op.weight > 0
        and (isinstance(op, (Update, TransactWrite)) or (isinstance(op, Put) and op.mode == "version-checked"))
    ]


def applicable_invariants(w: Workload) -> tuple[str, ...]:
    found = []
    if _counted(w) and not _overwrites(w):
        found.append("no-lost-change")
    if any(isinstance(op, TransactWrite) and op.weight > 0 for op in w.operations) and not _overwrites(w):
        found.append("all-or-nothing")
    if any(isinstance(op, Put) and op.mode == "create-only" and op.weight > 0 for op in w.operations):
        found.append("one-winner")
    return tuple(found)


def why_not(w: Workload, invariant: str) -> str:
    over = _overwrites(w)
    if over and invariant in ("no-lost-change", "all-or-nothing"):
        return f"{over[0]!r} overwrites or deletes items without counting the change; remove it from invariants"
    need = {
        "no-lost-change": "an update, a version-checked put or a transact_write",
        "all-or-nothing": "a transact_write",
        "one-winner": "a create-only put",
    }[invariant]
    return f"it needs {need} with a weight above 0; add one or remove the invariant"
