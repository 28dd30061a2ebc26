"""BatchWriteItem, which is not atomic on DynamoDB: each put or delete in it is an item-level write of its own.
So each one on an item a transaction holds (TransactionConflict), or past its key's bucket (throttled), is left
out and returned in UnprocessedItems, and the rest are applied; when none could be processed and all for
throughput, the whole request is refused with ProvisionedThroughputExceededException, as DynamoDB documents."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from engine.server.profile import ProfileSpec
from engine.server.simulated.buckets import Buckets, slot
from engine.server.simulated.holds import Holds
from engine.server.simulated.item_keys import Named, Ref, batch_attrs, item_key
from engine.server.simulated.refusals import throttled

Answer = tuple[str, list[tuple[str, str]], bytes]  # status, headers, body


class Modelled:
    """One request's pass through the model, from `AwsLike.begin` to `AwsLike.end`: the caller sets `ok` and makes
    its moto call through `send` when `kept` is not None, which passes a BatchWriteItem on with the writes the
    model left out removed, and returns them in the answer's UnprocessedItems. A plain class with slots, not a
    context manager: it runs on every aws-like request, and a generator-based one cost about seven calls."""

    __slots__ = (
        "ok",
        "table",
        "kept",
        "unprocessed",
        "params",
        "target",
        "op",
        "ref",
        "keys",
        "now",
        "counts",
        "restore",
        "captured",
    )

    def __init__(self, target: Any, op: str, ref: Ref, keys: Named, now: float, counts: Counter[str]) -> None:
        self.ok = False
        self.table = ""
        self.kept: list[Any] | None = None  # this table's writes that go to moto (None: the request as sent)
        self.unprocessed: list[Any] = []
        self.params: dict[str, Any] = {}
        # What `AwsLike.end` needs: the table (model.py's _Table), the operation, the table's (region, name), the
        # request's item keys, its start time and counts; then the images to put back after a read the lagging
        # copy served (None when no read), or those a write captured (stale_reads.py).
        self.target = target
        self.op = op
        self.ref = ref
        self.keys = keys
        self.now = now
        self.counts = counts
        self.restore: list[tuple[Any, Any]] | None = None
        self.captured: list[tuple[Any, Any]] = []

    def send(self, call_moto: Callable[[bytes], Answer], body: bytes) -> Answer:
        if self.kept is None:
            return call_moto(body)
        requests = {name: items for name, items in (self.params.get("RequestItems") or {}).items()}
        if self.kept:
            requests[self.table] = self.kept
        else:
            del requests[self.table]
        if requests:
            status, headers, out = call_moto(json.dumps({**self.params, "RequestItems": requests}).encode())
            if not status.startswith("200"):
                return status, headers, out
            answer = json.loads(out)
        else:  # nothing left to send: every write of the request was left out
            status, headers, answer = "200 OK", [("Content-Type", "application/x-amz-json-1.0")], {}
        answer.setdefault("UnprocessedItems", {}).setdefault(self.table, []).extend(self.unprocessed)
        out = json.dumps(answer).encode()
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        return status, [*headers, ("Content-Length", str(len(out)))], out


def split_batch(
    params: dict[str, Any],
    ref: Ref,
    table: Any,
    spec: ProfileSpec,
    now: float,
    counts: Counter[str],
    result: Modelled,
    holds: Holds,
    buckets: Buckets,
) -> dict[str, Any]:
    """A BatchWriteItem's puts and deletes on this table, one item-level write each: those on an item a
    transaction holds, or past their key's bucket, are left out for UnprocessedItems (in `result`). Returns the
    params of what goes on (for the stale-read images). Raises ProvisionedThroughputExceededException when no
    write of the request could be processed and every one was throttled, as DynamoDB does."""
    requests = (params.get("RequestItems") or {}).get(table.name) or []
    keys = [item_key(table, batch_attrs(request)) for request in requests]
    if None in keys:
        return params  # a write without a valid key: moto refuses the whole request, as DynamoDB does
    kept: list[Any] = []
    conflicted = short = 0
    for request, key in zip(requests, keys):
        if holds.held(ref, key, now):
            conflicted += 1
            result.unprocessed.append(request)
        elif not buckets.has(slot(ref, key[0], "w"), 1.0, spec, now):
            short += 1
            result.unprocessed.append(request)
        else:
            buckets.take(slot(ref, key[0], "w"), 1.0)
            kept.append(request)
    counts["transaction_conflicts"] += conflicted
    counts["throttled"] += 1 if short else 0
    if not result.unprocessed:
        return params
    others = len(params.get("RequestItems") or {}) > 1
    if not kept and not others and not conflicted:
        raise throttled()
    result.table, result.kept, result.params = table.name, kept, params
    return {**params, "RequestItems": {**params["RequestItems"], table.name: kept}}
