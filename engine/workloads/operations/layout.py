"""Where a key rank lives in the lab's table and what its item holds, and the mix's weighted choice of operation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.workloads.capacity import item_size
from engine.workloads.keys import KeySampler
from engine.workloads.schema.operations import Operation, Put, TransactWrite, Update
from engine.workloads.schema.workload import Workload

GSI_NAME = "GSI1"  # the lab's one index layout (engine/backends/tables.py)
NEW_PREFIX = "NEW#"  # create-only puts go to keys of their own
DETAIL_COUNTED = "items"  # the item keys a call changed and counted (one change each)
DETAIL_CREATED = "created"  # the key a create-only put created
DETAIL_TOKEN = "token"  # a transaction's ClientRequestToken: its resends are applied once at most, with it
DETAIL_BUSINESS = "business"  # refused by the file's own rule (a condition, a floor), not by a race


@dataclass(frozen=True)
class Layout:
    """Where a key rank lives in the lab's PK/SK table, and what its item looks like."""

    w: Workload

    def partition(self, rank: int) -> str:
        return f"{self.w.table.partition_key.name}#{rank // self.w.table.items_per_partition}"

    def label(self, rank: int) -> str:
        """The item's key as the History records it: partition/sort, so a partition's keys share a prefix."""
        sk = self.w.table.sort_key
        return self.partition(rank) + (f"/{sk.name}#{rank % self.w.table.items_per_partition}" if sk else "")

    def key(self, rank: int) -> dict[str, str]:
        sk = self.w.table.sort_key
        return {"PK": self.partition(rank), "SK": f"{sk.name}#{rank % self.w.table.items_per_partition}" if sk else "-"}

    def new_key(self, rank: int) -> dict[str, str]:
        return {"PK": f"{NEW_PREFIX}{rank}", "SK": "-"}

    def group(self, rank: int) -> str:
        gsi = self.w.table.gsi
        return f"group#{rank % gsi.groups}" if gsi else ""

    def item(self, rank: int, **attributes: Any) -> dict[str, Any]:
        """A whole item at the declared size: keys, the given attributes, padding."""
        item: dict[str, Any] = {**self.key(rank), "version": 0, "changes": 0, "balance": self.w.table.balance}
        item["counter"] = 0
        item["data"] = "-"
        item.update(self.w.table.attributes)
        if self.w.table.gsi:
            item["GSI1PK"] = self.group(rank)
            item["GSI1SK"] = item["PK"] + "/" + item["SK"]
        item.update(attributes)
        return pad(item, self.w.table.item_size)

    @property
    def size(self) -> int:
        return self.w.table.item_size


def pad(item: dict[str, Any], size: int) -> dict[str, Any]:
    base = item_size({k: v for k, v in item.items() if k != "pad"}) + len("pad")
    return {**item, "pad": "x" * max(1, size - base)}


class Mix:
    """The operations and their samplers, chosen by weight with the client's seeded random."""

    def __init__(self, w: Workload) -> None:
        self.w = w
        self.layout = Layout(w)
        self.ops = [op for op in w.operations if op.weight > 0]
        self.total = sum(op.weight for op in self.ops)
        self.samplers = {op.name: KeySampler(op.keys or w.keys, w.table.items) for op in self.ops}

    def choose(self, rng: Any) -> Operation:
        x = rng.random() * self.total
        for op in self.ops:
            x -= op.weight
            if x < 0:
                return op
        return self.ops[-1]

    def opening(self) -> Operation | None:
        """The operation of the opening round: the first read-modify-write of the mix (its racy form has a gap)."""
        for op in self.ops:
            if isinstance(op, (Update, TransactWrite)) or (isinstance(op, Put) and op.mode != "unconditional"):
                return op
        return None


def size_of_item(w: Workload) -> int:
    return item_size(Layout(w).item(0))
