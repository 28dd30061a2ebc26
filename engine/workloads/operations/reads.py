"""The reads of the mix, and the read before a read-modify-write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.workloads.capacity import read_units
from engine.workloads.operations.layout import GSI_NAME
from engine.workloads.operations.op_run import OpRun
from engine.workloads.schema.operations import Get, Query, TransactGet


def get(run: OpRun, op: Get) -> None:
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


def query(run: OpRun, op: Query) -> None:
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


def transact_get(run: OpRun, op: TransactGet) -> None:
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


def read_item(run: OpRun, rank: int, consistent: bool) -> dict[str, Any] | None:
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
