"""calibrate's latency probe: the time each operation takes, per operation (GetItem, PutItem, UpdateItem, Query,
TransactWriteItems, TransactGetItems), less this machine's own part of it.

Each probe call is paired with the same call against the lab's own embedded server, its answers held back
exactly HELD_MS (so they take the path the model's network time takes, and wake as late), made just before it
by the same thread. Each probe call's time less the median of its operation's local calls (less HELD_MS) is the
time the measured DynamoDB added (its network and service time); measured alongside, not beforehand, so a
loaded machine's own delays (which come and go) stay out of it, and the local calls' own spread is taken off
the measured spread.

The model has one network-time law for every operation (latency_ms, latency_p99_ms), fitted here from the plain
operations (GetItem, PutItem, UpdateItem, Query) pooled; a transaction's answer also waits its windows (commit
for TransactWriteItems, read and write for TransactGetItems: holds.py). Each operation's own median, 99th
percentile and 95 % interval go into the profile file, so a reader sees how far one law is from the account.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from engine.errors import LabError
from engine.server.profile import Z99, ProfileSpec

OPERATIONS = ("GetItem", "PutItem", "UpdateItem", "Query", "TransactWriteItems", "TransactGetItems")
PLAIN = ("GetItem", "PutItem", "UpdateItem", "Query")  # nothing but network time in the model
CALLS = 160  # per operation
THREADS = 8  # probe calls under way at once (each timed on its own; every write on an item of its own)
# Request units of one probe call of each operation: a consistent read or a write of an item under 1 KB, two in
# a transaction. (write units, read units)
UNITS = {
    "GetItem": (0.0, 1.0),
    "PutItem": (1.0, 0.0),
    "UpdateItem": (1.0, 0.0),
    "Query": (0.0, 1.0),
    "TransactWriteItems": (2.0, 0.0),
    "TransactGetItems": (0.0, 2.0),
}
_NO_WINDOWS = {
    "commit_ms": "0",
    "abort_ms": "0",
    "write_ms": "0",
    "read_ms": "0",
    "stale_share": "0",
    "write_units": "100000",
    "read_units": "100000",
}
_Q3 = 0.6744897501960817  # the standard normal's upper quartile
# How long the local server holds each answer back, exactly (taken off again): a held answer leaves when the
# server's loop wakes for it, late by as much as a loaded machine makes it, so the local calls are late by as
# much as the measured ones when that one is the lab's own server (the closed-loop test).
HELD_MS = 20.0


@dataclass(frozen=True, slots=True)
class OpLatency:
    """One operation's added time, ms: its median with a 95 % interval, and its 99th percentile (of a lognormal
    through its quartiles: a loaded machine's rare stalls would swell an empirical one)."""

    median_ms: float
    p99_ms: float
    interval_95: tuple[float, float]
    samples: int
    failed: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_ms": round(self.median_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "interval_95": [round(self.interval_95[0], 3), round(self.interval_95[1], 3)],
            "samples": self.samples,
            "failed": self.failed,
        }


def planned() -> tuple[int, float, float]:
    """(requests, write units, read units) of the probe on the measured DynamoDB, the put of the one item it reads
    included (the paired calls go to this machine's own server)."""
    writes = sum(UNITS[op][0] for op in OPERATIONS) * CALLS
    reads = sum(UNITS[op][1] for op in OPERATIONS) * CALLS
    return len(OPERATIONS) * CALLS + 1, writes + 1.0, reads


def _calls(client: Any, name: str) -> dict[str, Callable[[str], Any]]:
    """Each operation as one call; its argument makes the written item's key its own (a hot key would be
    throttled, and two transactions on one item would conflict)."""
    read_key = {"PK": "latency", "SK": "S"}

    def update(pk: str) -> dict[str, Any]:
        return {
            "TableName": name,
            "Key": {"PK": pk, "SK": "S"},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": 1},
        }

    return {
        "GetItem": lambda _: client.get_item(TableName=name, Key=read_key, ConsistentRead=True),
        "PutItem": lambda pk: client.put_item(TableName=name, Item={"PK": pk, "SK": "S"}),
        "UpdateItem": lambda pk: client.update_item(**update(pk)),
        "Query": lambda _: client.query(
            TableName=name,
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": "latency"},
            ConsistentRead=True,
        ),
        "TransactWriteItems": lambda pk: client.transact_write_items(TransactItems=[{"Update": update(pk)}]),
        "TransactGetItems": lambda _: client.transact_get_items(
            TransactItems=[{"Get": {"TableName": name, "Key": read_key}}]
        ),
    }


@contextmanager
def local_reference() -> Iterator[Any]:
    """A table on the lab's own embedded server whose answers are held back by a microsecond: the same calls
    against it take this machine's client, HTTP and timer time, which every run under the model adds by itself."""
    from engine.backends.backend import Backend, RetryPolicy
    from engine.backends.tables import TableSpec, drop_table, open_table

    # Held back a microsecond and nothing else: no window of its own (a transaction's would be taken off the
    # measured one's), no stale reads, no throttling.
    held = ProfileSpec.parse("aws-like", {"latency_ms": HELD_MS, "latency_p99_ms": HELD_MS, **_NO_WINDOWS})
    with Backend(profile=held) as local:
        client = local.client(threads=THREADS, retry=RetryPolicy("standard", 1))
        table = open_table(client, "calibrate-local", TableSpec())
        try:
            yield table
        finally:
            drop_table(table)


def measure(table: Any, reference: Any) -> tuple[dict[str, list[float]], dict[str, float], dict[str, int]]:
    """Each operation CALLS times on `table` (the measured DynamoDB), each call right after the same call on
    `reference` (local_reference()): the differences (ms) per operation, the spread (interquartile range, ms)
    of the local calls of each, and the calls that failed."""
    ops = {"probe": _calls(table.client, table.name), "local": _calls(reference.client, reference.name)}
    for target in (table, reference):
        target.client.put_item(TableName=target.name, Item={"PK": "latency", "SK": "S"})
    jobs = [(op, i) for i in range(CALLS) for op in OPERATIONS]  # operations interleaved: the same load for each
    probed: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    local: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    failed = dict.fromkeys(OPERATIONS, 0)
    lock = threading.Lock()
    tag = uuid.uuid4().hex[:8]

    def work() -> None:
        while True:
            with lock:
                if not jobs:
                    return
                op, i = jobs.pop()
            pk = f"latency-{tag}-{op}-{i}"
            try:
                local_ms = _timed(ops["local"][op], pk)
                probe_ms = _timed(ops["probe"][op], pk)
            except Exception:  # an error answer or none (a read timeout, a dropped connection): a failed sample,
                with lock:  # counted and reported; a thread it killed would lose its job without a word
                    failed[op] += 1
                continue
            with lock:
                probed[op].append(probe_ms)
                local[op].append(local_ms)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lost = len(OPERATIONS) * CALLS - sum(map(len, probed.values())) - sum(failed.values())
    if lost:  # never a fit on part of the calls without saying so
        raise LabError(
            f"the latency probe lost {lost} of its {len(OPERATIONS) * CALLS} calls (a probe thread stopped)",
            "run calibrate again; no profile was written",
        )
    # Less the median of the local calls of the same operation (less their hold), not each call's own partner: a
    # partner's own delay (a loaded machine holds a call up now and then) would widen the spread measured by as
    # much again. What the machine adds to the spread is taken off in fit, from the local calls' own spread.
    added = {op: [t - (statistics.median(local[op]) - HELD_MS) for t in probed[op]] for op in OPERATIONS if probed[op]}
    return added, {op: _spread(local[op]) for op in OPERATIONS if local[op]}, failed


def _timed(call: Callable[[str], Any], pk: str) -> float:
    started = time.perf_counter()
    call(pk)
    return (time.perf_counter() - started) * 1000.0


def _spread(values: list[float]) -> float:
    """The interquartile range."""
    if len(values) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q3 - q1


def fit(added_ms: list[float], failed: int = 0, local_spread: float = 0.0) -> OpLatency:
    """The median (with the 95 % interval of its order statistics: ranks n/2 ± 1.96·√n/2) and the 99th percentile
    of a lognormal with that median and the measured interquartile range, less `local_spread` (this machine's
    own: independent delays add their variances): a lognormal's is 2·median·sinh(0.674·sigma). A difference at
    or below zero (a call the measured DynamoDB answered faster than this machine's own server) is kept as
    0.1 ms: it still counts on its side of each quartile."""
    values = sorted(max(v, 0.1) for v in added_ms)
    n = len(values)
    median = statistics.median(values)
    spread = math.sqrt(max(_spread(values) ** 2 - local_spread**2, 0.0))
    sigma = math.asinh(spread / (2.0 * median)) / _Q3
    half = 1.96 * math.sqrt(n) / 2
    low, high = values[max(int(n / 2 - half), 0)], values[min(int(n / 2 + half), n - 1)]
    return OpLatency(median, median * math.exp(Z99 * sigma), (low, high), n, failed)


def fitted(
    added: dict[str, list[float]], local_spread: dict[str, float], failed: dict[str, int]
) -> tuple[dict[str, OpLatency], OpLatency | None]:
    """Each operation's figures, and the model's one network-time law: the plain operations' differences pooled
    and fitted as one (None when none was measured)."""
    per_op = {op: fit(added[op], failed.get(op, 0), local_spread.get(op, 0.0)) for op in OPERATIONS if added.get(op)}
    pooled = [v for op in PLAIN for v in added.get(op, [])]
    if not pooled:
        return per_op, None
    spreads = [local_spread[op] for op in PLAIN if op in local_spread]
    noise = math.sqrt(sum(x * x for x in spreads) / len(spreads)) if spreads else 0.0
    return per_op, fit(pooled, sum(failed.get(op, 0) for op in PLAIN), noise)
