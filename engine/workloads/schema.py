"""The workload file's schema: pydantic models with every field's meaning, its caps, and the parser that turns
YAML text into a `Workload` or a list of problems, one per field, each naming the field and the fix."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.errors import BadInput

MAX_ITEM_BYTES = 400 * 1024  # DynamoDB's item size limit, names and values together
MAX_TRANSACT_ITEMS = 100  # TransactWriteItems / TransactGetItems
MAX_BATCH_ITEMS = 25  # BatchWriteItem
MAX_ITEMS = 100_000  # items written at the start: set-up time grows with them
MAX_CLIENTS = 256  # as the run's default thread cap
MAX_RATE = 20_000.0  # requests per second: far past what one machine's Python sends
MAX_OPS_PER_CLIENT = 1_000_000
MAX_DURATION_S = 3600.0
MAX_THINK_MS = 60_000.0
MAX_ATTEMPTS = 50
MAX_BACKOFF_MS = 10_000.0
MAX_FILE_CHARS = 64 * 1024  # a workload file is a page of YAML: a dashboard editor's paste is refused past it


_ATTRIBUTE_NAME = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"
# What every item carries for the lab (operations.Layout.item): a file's own attributes take other names.
RESERVED_ATTRIBUTES = frozenset(
    {"PK", "SK", "GSI1PK", "GSI1SK", "version", "changes", "balance", "counter", "data", "pad"}
)


class _Model(BaseModel):
    # An unknown field is a typo until proven otherwise: refused, with the known ones named.
    model_config = ConfigDict(extra="forbid", frozen=True)


class KeyAttribute(_Model):
    """A key attribute of the table."""

    name: str = Field(min_length=1, max_length=255, description="attribute name, e.g. customerId")
    type: Literal["S", "N"] = Field("S", description="S (string) or N (number)")


class Gsi(_Model):
    """A global secondary index: items are spread over `groups` index partitions (item i in group i mod groups)."""

    name: str = Field(min_length=3, max_length=255, description="index name, e.g. by-region")
    groups: int = Field(10, ge=1, le=MAX_ITEMS, description="distinct index partition key values")


class Table(_Model):
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
            raise _at("attributes", f"{taken[0]!r} is an attribute the lab keeps itself: give it another name")
        return self

    @model_validator(mode="after")
    def _sort_key_for_partitions(self) -> Table:
        if self.items_per_partition > 1 and self.sort_key is None:
            raise _at(
                "items_per_partition",
                "items_per_partition above 1 needs a sort_key: give table.sort_key, e.g. {name: sk}",
            )
        return self


class Keys(_Model):
    """Which keys clients touch: uniform, Zipf (rank r drawn with weight 1/r^s), or a hot set (the first
    `hot_keys` keys take `hot_share` of the traffic, the rest share what is left evenly)."""

    distribution: Literal["uniform", "zipf", "hot-set"] = Field("uniform", description="uniform, zipf or hot-set")
    s: float = Field(1.0, gt=0, le=10, description="Zipf exponent (zipf only)")
    hot_keys: int = Field(1, ge=1, le=MAX_ITEMS, description="keys in the hot set (hot-set only)")
    hot_share: float = Field(0.9, ge=0, le=1, description="share of traffic on the hot set (hot-set only)")


class Retry(_Model):
    """What a read-modify-write does when its write is refused because another client got there first."""

    attempts: int = Field(5, ge=1, le=MAX_ATTEMPTS, description="tries in all, the first included")
    backoff_ms: float = Field(5.0, ge=0, le=MAX_BACKOFF_MS, description="base of exponential backoff with jitter")
    max_backoff_ms: float = Field(200.0, ge=0, le=MAX_BACKOFF_MS, description="cap of one backoff")


class _Op(_Model):
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
            raise _at("condition", "guard: condition needs a condition expression: add condition: 'balance >= :zero'")
        clash = sorted(set(self.values) & {":d", ":one", ":zero"})
        if clash:
            raise _at("values", f"{clash[0]!r} is a value the lab defines itself: give it another name")
        if self.condition and (self.mode != "set" or self.guard != "condition"):
            raise _at("condition", "condition is used only with mode: set and guard: condition: set those or drop it")
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


class Load(_Model):
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
            raise _at("rate", "open loop needs a target rate: add rate: 100 (operations per second)")
        if self.mode == "closed" and self.rate is not None:
            raise _at("rate", "rate is for open loop: add mode: open, or drop rate")
        return self


INVARIANTS = ("no-lost-change", "all-or-nothing", "one-winner")


class Workload(_Model):
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
            raise _at("operations", "the operations' weights sum to 0: give at least one operation a weight above 0")
        names = [op.name for op in self.operations]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise _at("operations", f"two operations are named {dup[0]!r}: give each a name of its own")
        if any(isinstance(op, Query) and op.index for op in self.operations) and self.table.gsi is None:
            raise _at("table.gsi", "a query with index: true needs table.gsi: add gsi: {name: by-group}")
        for i, op in enumerate(self.operations):
            if isinstance(op, TransactWrite) and op.items + op.checks > MAX_TRANSACT_ITEMS:
                raise _at(
                    f"operations[{i}].checks",
                    f"items + checks is {op.items + op.checks}: a transaction takes at most {MAX_TRANSACT_ITEMS}",
                )
        widest = max((getattr(op, "items", 1) + getattr(op, "checks", 0) for op in self.operations), default=1)
        if widest > self.table.items:
            raise _at("table.items", f"an operation needs {widest} distinct keys but table.items is {self.table.items}")
        if self.invariants is not None:
            allowed = applicable_invariants(self)
            for inv in self.invariants:
                if inv not in allowed:
                    raise _at(
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


# -- parsing, with one message per problem ----------------------------------------------------------------------


class WorkloadInvalid(BadInput):
    """A workload file that cannot run: `problems` has one (field path, message) per problem."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "the workload") -> None:
        self.problems = problems
        first = f"{problems[0][0]}: {problems[0][1]}" if problems[0][0] else problems[0][1]
        more = (
            f" (and {len(problems) - 1} more problems: `python -m engine workload check`)" if len(problems) > 1 else ""
        )
        super().__init__(f"{source} is invalid: {first}{more}", "fix the field named, then run it again")

    def lines(self) -> list[str]:
        return [f"{path}: {message}" if path else message for path, message in self.problems]


_AT = " | "  # a model-level check's message is "field path | problem and fix": the path names the field


def _at(field: str, message: str) -> ValueError:
    return ValueError(f"{field}{_AT}{message}")


def _path(loc: tuple[Any, ...], data: Any) -> str:
    """pydantic's location as the file's field path: operations[1].retry.attempts (the tag level left out)."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
        elif isinstance(node, Mapping) and item in node:
            parts.append(f".{item}" if parts else str(item))
            node = node[item]
        elif item in OPERATION_TYPES:
            continue  # the discriminator's branch: not a field of the file
        else:
            parts.append(f".{item}" if parts else str(item))
            node = None
    return "".join(parts)


def _message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown field: remove it, or check its spelling against docs/workloads.md"
    if kind == "missing":
        return "required: add it"
    if kind == "union_tag_invalid":
        return f"{ctx.get('tag')!r} is not an operation type: use one of {', '.join(OPERATION_TYPES)}"
    if kind == "union_tag_not_found":
        return f"an operation needs a type: add type: one of {', '.join(OPERATION_TYPES)}"
    if kind == "literal_error":
        return f"{error.get('input')!r} is not allowed: use {ctx.get('expected')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = ctx.get("ge", ctx.get("gt", ctx.get("le", ctx.get("lt"))))
        word = {"greater_than_equal": "at least", "greater_than": "above", "less_than_equal": "at most"}.get(
            kind, "below"
        )
        return f"{error.get('input')!r} is out of range: use a value {word} {bound}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"])).partition(_AT)[2] or str(ctx.get("error", error["msg"]))
    if kind == "string_too_short":
        return f"{error.get('input')!r} is too short: use at least {ctx.get('min_length')} characters"
    if kind == "string_too_long":
        return f"too long: use at most {ctx.get('max_length')} characters"
    if kind == "string_pattern_mismatch":
        return f"{str(error.get('input'))[:60]!r} has characters a name cannot: use letters, digits, '.', '_', '-'"
    if kind == "too_short":
        return "must not be empty: give at least one"
    return f"{error['msg']} (got {str(error.get('input'))[:60]!r})"


def parse_data(data: Any, source: str = "the workload") -> Workload:
    if not isinstance(data, Mapping):
        raise WorkloadInvalid([("", "the file must be a mapping of fields (name:, operations:, ...)")], source)
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        problems: list[tuple[str, str]] = []
        for err in e.errors():
            path = _path(tuple(err["loc"]), data)
            if err["type"] == "value_error" and _AT in str((err.get("ctx") or {}).get("error", "")):
                field = str(err["ctx"]["error"]).partition(_AT)[0]
                path = f"{path}.{field}" if path else field
            if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
                path += ".type"
            item = (path, _message(err))
            if item not in problems:
                problems.append(item)
        raise WorkloadInvalid(problems, source) from None


def parse(text: str, source: str = "the workload") -> Workload:
    """YAML text to a Workload; WorkloadInvalid with every problem (a YAML syntax error with its line and column)."""
    if len(text) > MAX_FILE_CHARS:
        raise WorkloadInvalid(
            [("", f"the file is {len(text):,} characters: a workload is at most {MAX_FILE_CHARS:,}; shorten it")],
            source,
        )
    try:
        # Aliases can expand a few lines into billions of nodes (the "billion laughs"): a workload needs none.
        if any(isinstance(token, yaml.AliasToken) for token in yaml.scan(text, Loader=yaml.SafeLoader)):
            raise WorkloadInvalid([("", "YAML aliases (*name) are not allowed: write the values out")], source)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(e, "problem", None) or str(e)
        raise WorkloadInvalid(
            [("", f"YAML syntax error at {where}{what}: fix the file's syntax there")], source
        ) from None
    return parse_data(data, source)


def load(path: str) -> Workload:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"cannot read workload file {path!r}: {e.strerror}", "give the path of a .yaml file") from None
    except UnicodeDecodeError:
        raise BadInput(f"workload file {path!r} is not UTF-8 text", "save it as UTF-8 YAML") from None
    return parse(text, path)


def from_json(text: str) -> Workload:
    """The spec as carried in a run's options (Workload.to_json)."""
    return parse_data(json.loads(text), "the workload in the run's options")
