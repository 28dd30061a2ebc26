"""The operation types of a mix, with the key popularity and the retry policy an operation may give."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.workloads.schema.base import StrictModel, at_field
from engine.workloads.schema.limits import (
    MAX_ATTEMPTS,
    MAX_BACKOFF_MS,
    MAX_BATCH_ITEMS,
    MAX_ITEMS,
    MAX_TRANSACT_ITEMS,
)


class Keys(StrictModel):
    """Which keys clients touch: uniform, Zipf (rank r drawn with weight 1/r^s), or a hot set (the first
    `hot_keys` keys take `hot_share` of the traffic, the rest share what is left evenly)."""

    distribution: Literal["uniform", "zipf", "hot-set"] = Field("uniform", description="uniform, zipf or hot-set")
    s: float = Field(1.0, gt=0, le=10, description="Zipf exponent (zipf only)")
    hot_keys: int = Field(1, ge=1, le=MAX_ITEMS, description="keys in the hot set (hot-set only)")
    hot_share: float = Field(0.9, ge=0, le=1, description="share of traffic on the hot set (hot-set only)")


class Retry(StrictModel):
    """What a read-modify-write does when its write is refused because another client got there first."""

    attempts: int = Field(5, ge=1, le=MAX_ATTEMPTS, description="tries in all, the first included")
    backoff_ms: float = Field(5.0, ge=0, le=MAX_BACKOFF_MS, description="base of exponential backoff with jitter")
    max_backoff_ms: float = Field(200.0, ge=0, le=MAX_BACKOFF_MS, description="cap of one backoff")


class _Op(StrictModel):
    name: str = Field(min_length=1, max_length=64, description="the operation's name in the report")
    weight: float = Field(ge=0, le=1e6, description="relative share of the mix")
    keys: Keys | None = Field(None, description="key popularity for this operation (default: the workload's)")


class Get(_Op):
    """GetItem of one key."""

    type: Literal["get"]
    consistent: bool = Field(True, description="ConsistentRead")


class Put(_Op):
    """PutItem of a whole item: unconditional (last writer wins), create-only (attribute_not_exists: one winner per
    key, on keys of their own, NEW#n), or version-checked (read, then put with version = read + 1 if unchanged)."""

    type: Literal["put"]
    mode: Literal["unconditional", "create-only", "version-checked"] = Field(
        "version-checked", description="unconditional, create-only or version-checked"
    )
    read_consistent: bool = Field(True, description="the read before a version-checked put: ConsistentRead")
    retry: Retry = Field(Retry(), description="retry policy of a version-checked put")


class Update(_Op):
    """UpdateItem: ADD `amount` to a counter (atomic on the server), or SET a field read-modify-write, guarded by the
    version read (`guard: version`) or by the file's own condition expression (`guard: condition`)."""

    type: Literal["update"]
    mode: Literal["add", "set"] = Field("set", description="add (server-side counter) or set (read-modify-write)")
    amount: int = Field(1, ge=-(10**9), le=10**9, description="what ADD adds to the counter")
    guard: Literal["version", "condition"] = Field("version", description="what guards a set: version or condition")
    condition: str | None = Field(
        None,
        max_length=4096,
        description="condition expression for guard: condition, e.g. 'balance >= :zero' or '#status = :active' "
        "(#word names the attribute word: write reserved words such as status so); :zero (0) and the `values` "
        "are defined; a refusal counts as a business refusal",
    )
    values: dict[Annotated[str, Field(pattern=r"^:[A-Za-z0-9_]{1,64}$")], int | str] = Field(
        {}, max_length=20, description="the condition's values, e.g. {':active': active}"
    )
    read_consistent: bool = Field(True, description="the read before a set: ConsistentRead")
    retry: Retry = Field(Retry(), description="retry policy on a version conflict")

    @model_validator(mode="after")
    def _condition_given(self) -> Update:
        if self.mode == "set" and self.guard == "condition" and not self.condition:
            raise at_field(
                "condition", "guard: condition needs a condition expression: add condition: 'balance >= :zero'"
            )
        clash = sorted(set(self.values) & {":d", ":one", ":zero"})
        if clash:
            raise at_field("values", f"{clash[0]!r} is a value the lab defines itself: give it another name")
        if self.condition and (self.mode != "set" or self.guard != "condition"):
            raise at_field(
                "condition", "condition is used only with mode: set and guard: condition: set those or drop it"
            )
        return self


class Delete(_Op):
    """DeleteItem of one key, optionally only if it exists (a refusal then is a business refusal)."""

    type: Literal["delete"]
    conditional: bool = Field(False, description="only if the item exists (attribute_exists)")


class TransactWrite(_Op):
    """TransactWriteItems over `items` distinct keys: a transfer of `amount` from the first key to the others
    (each item's balance changes, the total does not), optionally refused when the first key's balance would go
    below 0 (a business refusal), optionally with a ClientRequestToken, resent with the same token when the answer
    was lost, so a retry is applied at most once."""

    type: Literal["transact_write"]
    items: int = Field(2, ge=1, le=MAX_TRANSACT_ITEMS, description="distinct keys per transaction")
    amount: int = Field(1, ge=0, le=10**9, description="what moves from the first key to each other key")
    floor: bool = Field(False, description="refuse a transfer that takes the first key's balance below 0")
    token: bool = Field(False, description="send a ClientRequestToken, and resend with it when an answer is lost")
    checks: int = Field(
        0,
        ge=0,
        le=MAX_TRANSACT_ITEMS - 1,
        description="ConditionCheck items on more keys (each must exist); items + checks ≤ 100",
    )
    retry: Retry = Field(Retry(), description="retry policy on a TransactionConflict")


class TransactGet(_Op):
    """TransactGetItems over `items` distinct keys."""

    type: Literal["transact_get"]
    items: int = Field(2, ge=1, le=MAX_TRANSACT_ITEMS, description="distinct keys per transaction")


class BatchWrite(_Op):
    """BatchWriteItem putting `items` whole items (last writer wins on each, no conditions)."""

    type: Literal["batch_write"]
    items: int = Field(5, ge=1, le=MAX_BATCH_ITEMS, description="items per batch")


class Query(_Op):
    """Query one partition of the table, or one group of the index."""

    type: Literal["query"]
    index: bool = Field(False, description="query the table's gsi instead of the table")
    consistent: bool = Field(False, description="ConsistentRead (table only: a GSI is never consistent)")
    limit: int = Field(25, ge=1, le=1000, description="items per page (one page is read)")


Operation = Annotated[
    Get | Put | Update | Delete | TransactWrite | TransactGet | BatchWrite | Query, Field(discriminator="type")
]
OPERATION_TYPES = ("get", "put", "update", "delete", "transact_write", "transact_get", "batch_write", "query")
