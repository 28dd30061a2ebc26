"""TransactWriteItems as a transfer between items, and its racy form without a transaction."""

from __future__ import annotations

from typing import Any

from engine.record.calls import Ambiguous, TransactionCanceled
from engine.workloads.capacity import write_units
from engine.workloads.operations.layout import DETAIL_BUSINESS, DETAIL_COUNTED, DETAIL_TOKEN, pad
from engine.workloads.operations.op_run import OpRun
from engine.workloads.operations.reads import read_item
from engine.workloads.schema.operations import TransactWrite


def transact_write(run: OpRun, op: TransactWrite, racy: bool) -> None:
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


def _racy_transfer(run: OpRun, op: TransactWrite, ranks: list[int], deltas: list[int]) -> None:
    """The transfer without a transaction: read each item, then put each back changed, one by one, unguarded."""
    layout = run.mix.layout
    olds = [read_item(run, r, True) for r in ranks]
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
