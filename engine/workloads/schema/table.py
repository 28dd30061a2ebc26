"""The table and the items it holds when the run starts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.workloads.schema.base import StrictModel, at_field
from engine.workloads.schema.limits import MAX_ITEM_BYTES, MAX_ITEMS

_ATTRIBUTE_NAME = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
# What every item carries for the lab (operations/layout.py, Layout.item): a file's own attributes take other names.
RESERVED_ATTRIBUTES = frozenset(
    {"PK", "SK", "GSI1PK", "GSI1SK", "version", "changes", "balance", "counter", "data", "pad"}
)


class KeyAttribute(StrictModel):
    """A key attribute of the table."""

    name: str = Field(min_length=1, max_length=255, description="attribute name, e.g. customerId")
    type: Literal["S", "N"] = Field("S", description="S (string) or N (number)")


class Gsi(StrictModel):
    """A global secondary index: items are spread over `groups` index partitions (item i in group i mod groups)."""

    name: str = Field(min_length=3, max_length=255, description="index name, e.g. by-region")
    groups: int = Field(10, ge=1, le=MAX_ITEMS, description="distinct index partition key values")


class Table(StrictModel):
    """The table and the items it holds when the run starts. The lab stores them in its own layout (string keys
    PK/SK, index GSI1): the names here label the keys in the report."""

    partition_key: KeyAttribute = Field(KeyAttribute(name="id", type="S"), description="partition key")
    sort_key: KeyAttribute | None = Field(None, description="optional sort key")
    items: int = Field(100, ge=1, le=MAX_ITEMS, description="items written before the clients start")
    items_per_partition: int = Field(
        1, ge=1, le=1000, description="items sharing one partition key (needs sort_key when above 1)"
    )
    item_size: int = Field(
        1024,
        ge=64,
        le=MAX_ITEM_BYTES,
        description="bytes per item as DynamoDB counts them (names + values): decides the capacity units",
    )
    balance: int = Field(1000, ge=0, le=10**12, description="each item's starting balance (what transfers move)")
    gsi: Gsi | None = Field(None, description="optional global secondary index, for query operations on it")
    attributes: dict[Annotated[str, Field(pattern=_ATTRIBUTE_NAME)], int | str] = Field(
        {},
        max_length=20,
        description="more attributes every item starts with, e.g. {status: active}, for conditions to test",
    )

    @model_validator(mode="after")
    def _own_names(self) -> Table:
        taken = sorted(set(self.attributes) & RESERVED_ATTRIBUTES)
        if taken:
            raise at_field("attributes", f"{taken[0]!r} is an attribute the lab keeps itself: give it another name")
        return self

    @model_validator(mode="after")
    def _sort_key_for_partitions(self) -> Table:
        if self.items_per_partition > 1 and self.sort_key is None:
            raise at_field(
                "items_per_partition",
                "items_per_partition above 1 needs a sort_key: give table.sort_key, e.g. {name: sk}",
            )
        return self
