"""Each operation of a workload's mix, as written and in its racy form, every call through `ctx.call`.

Every item carries `version`, `changes` (how many counted changes were applied to it: the invariants' ground
truth), `balance` (what transfers move), `counter` (what ADD adds to), `data` and a `pad` bringing it to the
declared size. Every counted write raises `version` too, so a version-checked write sees any change in between. A counted write adds 1 to `changes` in the same request; its racy form reads the item and puts it
back with `changes` + 1 and no condition, so two clients that read the same item lose one change.

Each call's detail says which operation it belongs to (`o`, per client), its step (read or write), its try, the
capacity units it consumed (`wcu`/`rcu`), the item keys it changed (`items`) and, on the operation's first call,
how late it started after its scheduled arrival (`late_ms`)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.record.calls import Ambiguous, CallError, ClientContext, ConditionFailed, TransactionCanceled
from engine.workloads import schema as s
from engine.workloads.capacity import item_size, read_units, write_units
from engine.workloads.keys import KeySampler

GSI_NAME = "GSI1"  # the lab's one index layout (engine/backends/tables.py)
NEW_PREFIX = "NEW#"  # create-only puts go to keys of their own
DETAIL_COUNTED = "items"  # the item keys a call changed and counted (one change each)
DETAIL_CREATED = "created"  # the key a create-only put created
DETAIL_TOKEN = "token"  # a transaction's ClientRequestToken: its resends are applied once at most, with it
DETAIL_BUSINESS = "business"  # refused by the file's own rule (a condition, a floor), not by a race
OPENING_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Layout:
    """Where a key rank lives in the lab's PK/SK table, and what its item looks like."""

    w: s.Workload

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

    def __init__(self, w: s.Workload) -> None:
        self.w = w
        self.layout = Layout(w)
        self.ops = [op for op in w.operations if op.weight > 0]
        self.total = sum(op.weight for op in self.ops)
        self.samplers = {op.name: KeySampler(op.keys or w.keys, w.table.items) for op in self.ops}

    def choose(self, rng: Any) -> s.Operation:
        x = rng.random() * self.total
        for op in self.ops:
            x -= op.weight
            if x < 0:
                return op
        return self.ops[-1]

    def opening(self) -> s.Operation | None:
        """The operation of the opening round: the first read-modify-write of the mix (its racy form has a gap)."""
        for op in self.ops:
            if isinstance(op, (s.Update, s.TransactWrite)) or (isinstance(op, s.Put) and op.mode != "unconditional"):
                return op
        return None


class OpRun:
    """One operation of one client: its calls share `o`, the first carries how late it started."""

    def __init__(
        self, ctx: ClientContext, mix: Mix, op: s.Operation, o: int, late_ms: float | None, stream: str | None = None
    ) -> None:
        self.ctx = ctx
        self.mix = mix
        self.op = op
        self.o = o
        self.late_ms = late_ms
        self.stream = stream  # the open-loop schedule its arrival came from
        self.table = ctx.table.name
        self.gate: Callable[[], None] | None = None  # the opening round's barrier, met between read and write
        self.pinned = False  # the opening round: every key draw gives the hottest keys, rank 0 first

    def rank(self) -> int:
        return 0 if self.pinned else self.mix.samplers[self.op.name].draw(self.ctx.rng)

    def ranks(self, k: int) -> list[int]:
        return list(range(k)) if self.pinned else self.mix.samplers[self.op.name].draw_distinct(self.ctx.rng, k)

    def call(self, step: str, api: str, *, key: str, detail: Mapping[str, Any] | None = None, **params: Any) -> Any:
        d: dict[str, Any] = {"o": self.o, "step": step, **(detail or {})}
        if self.late_ms is not None:
            d["late_ms"] = round(self.late_ms, 3)
            if self.stream is not None:
                d["stream"] = self.stream
            self.late_ms = None
        return self.ctx.call(self.op.name, api, key=key, detail=d, **params)

    def meet(self) -> None:
        if self.gate is not None:
            gate, self.gate = self.gate, None
            gate()

    def backoff(self, attempt: int, retry: s.Retry) -> bool:
        return self.ctx.backoff(attempt, retry.backoff_ms / 1000, retry.max_backoff_ms / 1000)


def run_operation(run: OpRun, racy: bool) -> None:
    """Run one operation to its end; a refusal it does not retry, or an unknown outcome, ends it (recorded)."""
    op = run.op
    try:
        if isinstance(op, s.Get):
            _get(run, op)
        elif isinstance(op, s.Query):
            _query(run, op)
        elif isinstance(op, s.Delete):
            _delete(run, op)
        elif isinstance(op, s.BatchWrite):
            _batch_write(run, op)
        elif isinstance(op, s.TransactGet):
            _transact_get(run, op)
        elif isinstance(op, s.Put):
            _put(run, op, racy)
        elif isinstance(op, s.Update):
            _update(run, op, racy)
        elif isinstance(op, s.TransactWrite):
            _transact_write(run, op, racy)
    except CallError:
        pass  # recorded in the History with its cause; the report and the invariants read it there


def opening_gate(ctx: ClientContext) -> Callable[[], None] | None:
    """A barrier for the clients of this process (single process: every client of the run; client processes and
    cluster workers: the clients of its share), or None when it holds one client only."""
    local = ctx.shared.get("_share_clients") or len(ctx.shared.get("_ops_done") or ())
    if local < 2:
        return None
    with _GATE_LOCK:
        barrier = ctx.shared.setdefault("_workload_opening", threading.Barrier(local, timeout=OPENING_TIMEOUT_S))

    def meet() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # a client stopped early: the others go on

    return meet


_GATE_LOCK = threading.Lock()


# -- reads ------------------------------------------------------------------------------------------------------


def _get(run: OpRun, op: s.Get) -> None:
    rank = run.rank()
    run.call(
        "read",
        "GetItem",
        key=run.mix.layout.label(rank),
        detail={"rcu": read_units(run.mix.layout.size, consistent=op.consistent)},
        TableName=run.table,
        Key=run.mix.layout.key(rank),
        ConsistentRead=op.consistent,
    )


def _query(run: OpRun, op: s.Query) -> None:
    rank = run.rank()
    layout = run.mix.layout
    size = layout.size
    consistent = op.consistent and not op.index

    def units(response: Mapping[str, Any]) -> dict[str, Any]:
        total = int(response.get("Count", 0)) * size
        return {"rcu": read_units(max(total, 1), consistent=consistent)}

    if op.index:
        run.call(
            "read",
            "Query",
            key=layout.group(rank),
            observe=units,
            TableName=run.table,
            IndexName=GSI_NAME,
            KeyConditionExpression="GSI1PK = :g",
            ExpressionAttributeValues={":g": layout.group(rank)},
            Limit=op.limit,
        )
    else:
        run.call(
            "read",
            "Query",
            key=layout.partition(rank),
            observe=units,
            TableName=run.table,
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": layout.partition(rank)},
            ConsistentRead=consistent,
            Limit=op.limit,
        )


def _transact_get(run: OpRun, op: s.TransactGet) -> None:
    layout = run.mix.layout
    ranks = run.ranks(op.items)
    run.call(
        "read",
        "TransactGetItems",
        key=layout.label(ranks[0]),
        detail={
            "keys": [layout.label(r) for r in ranks],
            "rcu": read_units(layout.size, consistent=True, transactional=True) * len(ranks),
        },
        TransactItems=[{"Get": {"TableName": run.table, "Key": layout.key(r)}} for r in ranks],
    )


def _read(run: OpRun, rank: int, consistent: bool) -> dict[str, Any] | None:
    layout = run.mix.layout
    response = run.call(
        "read",
        "GetItem",
        key=layout.label(rank),
        detail={"rcu": read_units(layout.size, consistent=consistent)},
        TableName=run.table,
        Key=layout.key(rank),
        ConsistentRead=consistent,
    )
    item = response.get("Item")
    return dict(item) if item is not None else None


# -- writes that count no change -----------------------------------------------------------------------------


def _delete(run: OpRun, op: s.Delete) -> None:
    rank = run.rank()
    layout = run.mix.layout
    extra: dict[str, Any] = {"ConditionExpression": "attribute_exists(PK)"} if op.conditional else {}
    run.call(
        "write",
        "DeleteItem",
        key=layout.label(rank),
        detail={"wcu": write_units(layout.size), **({DETAIL_BUSINESS: True} if op.conditional else {})},
        TableName=run.table,
        Key=layout.key(rank),
        **extra,
    )


def _batch_write(run: OpRun, op: s.BatchWrite) -> None:
    layout = run.mix.layout
    ranks = run.ranks(op.items)
    requests = [{"PutRequest": {"Item": layout.item(r, data=f"c{run.ctx.client_id}-{run.o}")}} for r in ranks]
    for attempt in range(5):
        response = run.call(
            "write",
            "BatchWriteItem",
            key=layout.label(ranks[0]),
            detail={"keys": [layout.label(r) for r in ranks], "wcu": write_units(layout.size) * len(requests)},
            RequestItems={run.table: requests},
        )
        requests = (response.get("UnprocessedItems") or {}).get(run.table) or []
        if not requests or not run.ctx.backoff(attempt, 0.005, 0.2):
            return


# -- counted writes ------------------------------------------------------------------------------------------


def _put(run: OpRun, op: s.Put, racy: bool) -> None:
    layout = run.mix.layout
    rank = run.rank()
    data = f"c{run.ctx.client_id}-{run.o}"
    if op.mode == "unconditional":
        run.call(
            "write",
            "PutItem",
            key=layout.label(rank),
            detail={"wcu": write_units(layout.size)},
            TableName=run.table,
            Item=layout.item(rank, data=data),
        )
        return
    if op.mode == "create-only":
        label = f"{NEW_PREFIX}{rank}"
        item = pad({**layout.new_key(rank), "owner": run.ctx.client_id, "op": run.o}, layout.size)
        if racy:
            found = run.call(
                "read",
                "GetItem",
                key=label,
                detail={"rcu": read_units(layout.size, consistent=True)},
                TableName=run.table,
                Key=layout.new_key(rank),
                ConsistentRead=True,
            ).get("Item")
            run.meet()
            if found is not None:
                return  # the check in code said taken
            extra: dict[str, Any] = {}
        else:
            run.meet()
            extra = {"ConditionExpression": "attribute_not_exists(PK)"}
        run.call(
            "write",
            "PutItem",
            key=label,
            detail={"wcu": write_units(layout.size), DETAIL_CREATED: label},
            TableName=run.table,
            Item=item,
            **extra,
        )
        return
    _read_modify_write(run, rank, op.read_consistent, op.retry, racy, lambda old: {"data": data})


def _update(run: OpRun, op: s.Update, racy: bool) -> None:
    layout = run.mix.layout
    rank = run.rank()
    label = layout.label(rank)
    data = f"c{run.ctx.client_id}-{run.o}"
    if op.mode == "add":
        if racy:
            _read_modify_write(
                run, rank, op.read_consistent, op.retry, True, lambda old: {"counter": int(old["counter"]) + op.amount}
            )
            return
        run.meet()
        run.call(
            "write",
            "UpdateItem",
            key=label,
            detail={"wcu": write_units(layout.size), DETAIL_COUNTED: [label]},
            TableName=run.table,
            Key=layout.key(rank),
            UpdateExpression="ADD #n :amount, changes :one, version :one",
            ExpressionAttributeNames={"#n": "counter"},
            ExpressionAttributeValues={":amount": op.amount, ":one": 1},
        )
        return
    if op.guard == "version" or racy:
        # racy: the guard (the version, or the file's condition) is dropped, the put is unconditional
        _read_modify_write(run, rank, op.read_consistent, op.retry, racy, lambda old: {"data": data})
        return
    condition = op.condition or ""
    # `#word` in the condition names the attribute `word` (how a reserved word such as status is written).
    names = {"#lab_data": "data", **{f"#{n}": n for n in re.findall(r"#([A-Za-z0-9_]+)", condition)}}
    values: dict[str, Any] = {":d": data, ":one": 1}
    # Only the values the condition names: DynamoDB refuses a request that defines one it does not use.
    values.update({name: value for name, value in {":zero": 0, **op.values}.items() if name in condition})
    run.meet()
    run.call(
        "write",
        "UpdateItem",
        key=label,
        detail={"wcu": write_units(layout.size), DETAIL_COUNTED: [label], DETAIL_BUSINESS: True},
        TableName=run.table,
        Key=layout.key(rank),
        UpdateExpression="SET #lab_data = :d ADD changes :one, version :one",
        ConditionExpression=condition,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )


def _read_modify_write(
    run: OpRun,
    rank: int,
    consistent: bool,
    retry: s.Retry,
    racy: bool,
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Read the item, change it in code, put it back with version + 1 and changes + 1: guarded by the version read
    (retried on a refusal, as `retry` says), or, racy, unguarded."""
    layout = run.mix.layout
    label = layout.label(rank)
    for attempt in range(retry.attempts):
        old = _read(run, rank, consistent)
        run.meet()
        base = old if old is not None else layout.item(rank)
        version, changes = int(base.get("version", 0)), int(base.get("changes", 0))
        new = pad({**base, **change(base), "version": version + 1, "changes": changes + 1}, layout.size)
        guard: dict[str, Any] = {}
        if not racy:
            if old is None:
                guard = {"ConditionExpression": "attribute_not_exists(PK)"}
            else:
                guard = {"ConditionExpression": "version = :v", "ExpressionAttributeValues": {":v": version}}
        detail = {"wcu": write_units(layout.size), DETAIL_COUNTED: [label], "try": attempt + 1}
        try:
            run.call("write", "PutItem", key=label, detail=detail, TableName=run.table, Item=new, **guard)
            return
        except ConditionFailed:
            if attempt + 1 >= retry.attempts or not run.backoff(attempt, retry):
                return  # given up: the last refusal is in the History


def _transact_write(run: OpRun, op: s.TransactWrite, racy: bool) -> None:
    layout = run.mix.layout
    everything = run.ranks(op.items + op.checks)
    ranks, checked = everything[: op.items], everything[op.items :]
    labels = [layout.label(r) for r in ranks]
    deltas = [-op.amount * (len(ranks) - 1)] + [op.amount] * (len(ranks) - 1)
    if racy:
        _racy_transfer(run, op, ranks, deltas)
        return
    run.meet()
    items = []
    for r, delta in zip(ranks, deltas):
        update: dict[str, Any] = {
            "TableName": run.table,
            "Key": layout.key(r),
            "UpdateExpression": "ADD balance :d, changes :one, version :one",
            "ExpressionAttributeValues": {":d": delta, ":one": 1},
        }
        if op.floor and delta < 0:
            update["ConditionExpression"] = "balance >= :need"
            update["ExpressionAttributeValues"] = {**update["ExpressionAttributeValues"], ":need": -delta}
        items.append({"Update": update})
    for r in checked:  # refused (a business refusal) if the item was deleted
        items.append(
            {
                "ConditionCheck": {
                    "TableName": run.table,
                    "Key": layout.key(r),
                    "ConditionExpression": "attribute_exists(PK)",
                }
            }
        )
    units = write_units(layout.size, transactional=True) * len(everything)
    token = _token(run) if op.token else None
    for attempt in range(op.retry.attempts):
        extra = {"ClientRequestToken": token} if token else {}
        detail: dict[str, Any] = {"wcu": units, DETAIL_COUNTED: labels, "try": attempt + 1}
        if token:
            detail[DETAIL_TOKEN] = token
        if op.floor or op.checks:
            detail[DETAIL_BUSINESS] = True  # a ConditionalCheckFailed reason is the floor or a check saying no
        try:
            run.call("write", "TransactWriteItems", key=labels[0], detail=detail, TransactItems=items, **extra)
            return
        except TransactionCanceled as e:
            if "TransactionConflict" not in e.reasons:
                return  # the floor, or a throttle past the client's own retries: not a race to retry
            token = _token(run) if op.token else None  # refused for sure: a new request, a new token
        except Ambiguous:
            if not token:
                return  # unknown, and resending without a token could apply it twice
            # with its token, the same request is applied at most once: send it again
        if attempt + 1 >= op.retry.attempts or not run.backoff(attempt, op.retry):
            return


def _racy_transfer(run: OpRun, op: s.TransactWrite, ranks: list[int], deltas: list[int]) -> None:
    """The transfer without a transaction: read each item, then put each back changed, one by one, unguarded."""
    layout = run.mix.layout
    olds = [_read(run, r, True) for r in ranks]
    run.meet()
    first = olds[0] or layout.item(ranks[0])
    if op.floor and int(first["balance"]) + deltas[0] < 0:
        return  # the floor, checked in code
    for r, old, delta in zip(ranks, olds, deltas):
        base = old if old is not None else layout.item(r)
        new = pad(
            {
                **base,
                "balance": int(base["balance"]) + delta,
                "changes": int(base.get("changes", 0)) + 1,
                "version": int(base.get("version", 0)) + 1,
            },
            layout.size,
        )
        label = layout.label(r)
        detail = {"wcu": write_units(layout.size), DETAIL_COUNTED: [label], "delta": delta}
        run.call("write", "PutItem", key=label, detail=detail, TableName=run.table, Item=new)


def _token(run: OpRun) -> str:
    """A ClientRequestToken from the client's seeded random: a run with a seed sends the same tokens."""
    return f"{run.ctx.client_id}-{run.o}-{run.ctx.rng.getrandbits(64):016x}"


def size_of_item(w: s.Workload) -> int:
    return item_size(Layout(w).item(0))
