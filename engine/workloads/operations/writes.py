"""Single-item writes: those that count no change, and the counted ones, as written or racy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from engine.record.calls import ConditionFailed
from engine.workloads.capacity import read_units, write_units
from engine.workloads.operations.layout import DETAIL_BUSINESS, DETAIL_COUNTED, DETAIL_CREATED, NEW_PREFIX, pad
from engine.workloads.operations.op_run import OpRun
from engine.workloads.operations.reads import read_item
from engine.workloads.schema.operations import BatchWrite, Delete, Put, Retry, Update

# -- writes that count no change -----------------------------------------------------------------------------


def delete(run: OpRun, op: Delete) -> None:
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


def batch_write(run: OpRun, op: BatchWrite) -> None:
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


def put(run: OpRun, op: Put, racy: bool) -> None:
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


def update(run: OpRun, op: Update, racy: bool) -> None:
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
    retry: Retry,
    racy: bool,
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Read the item, change it in code, put it back with version + 1 and changes + 1: guarded by the version read
    (retried on a refusal, as `retry` says), or, racy, unguarded."""
    layout = run.mix.layout
    label = layout.label(rank)
    for attempt in range(retry.attempts):
        old = read_item(run, rank, consistent)
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
