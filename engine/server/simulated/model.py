"""The aws-like model's one object: which tables it covers (by their profile tag), and each request on them
through its parts in order: throttling (buckets.py), transaction holds (holds.py), BatchWriteItem's left-out
writes (batch.py), stale reads (stale_reads.py), then the answer's network time."""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.server.moto_store import moto_table
from engine.server.profile import PROFILE_TAG, Z99, ProfileSpec, draw_ms
from engine.server.simulated.batch import Modelled, split_batch
from engine.server.simulated.buckets import Buckets
from engine.server.simulated.holds import Holds
from engine.server.simulated.index_capacity import charge, index_partitions
from engine.server.simulated.item_keys import (
    Ref,
    batch_attrs,
    consistent_read,
    item_key,
    request_keys,
    table_name,
)
from engine.server.simulated.refusals import cancelled
from engine.server.simulated.single_item import SingleItemPass
from engine.server.simulated.stale_reads import StaleReads, lag_law
from engine.server.wire import Refused

_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
_TABLE_CHANGES = frozenset({"CreateTable", "DeleteTable", "TagResource", "UntagResource"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
_INDEXED_WRITES = _WRITES | {"TransactWriteItems", "BatchWriteItem"}


@dataclass
class _Table:
    moto: Any
    profile: ProfileSpec
    # Worked out once per table: every request on it reads them.
    ref: Ref  # (region, name)
    counts: Counter[str]  # what the model did on it: AwsLike.stats[name]
    hash_attr: str
    range_attr: str | None
    stale: bool  # stale reads are simulated (stale_ms and stale_share above 0)
    # Answers wait: every one its network time (delays), a transaction's its window (windows). The app asks
    # delay_s only then: for any other request it would answer 0.
    delays: bool
    windows: bool
    lag: tuple[float, float, float]  # the lagging copy's lag law (stale_reads.lag_law)
    latency_sigma: float  # of the network time's lognormal
    indexes: tuple[tuple[str, str], ...] = ()  # (name, partition key attribute) of each GSI: index_capacity.py


class AwsLike(SingleItemPass):
    """State of the model; every method is called with the server's request lock held, except `delay_s`."""

    def __init__(self, default: ProfileSpec, seed: int | None = None) -> None:
        self.default = default  # for tables without a ddblab:profile tag
        self._random = random.Random(seed)
        self._tables: dict[Ref, _Table | None] = {}
        self._holds = Holds()
        self._buckets = Buckets()
        self._stale = StaleReads(self._random)
        self.stats: dict[str, Counter[str]] = {}  # per table name: what the model did

    # -- which tables it covers ---------------------------------------------------------------------------

    def table_changed(self, op: str) -> bool:
        """Forget cached profiles when tables or their tags change. True when `op` is such a change."""
        if op in _TABLE_CHANGES:
            self._tables.clear()
            return True
        return False

    def profile(self, op: str, params: dict[str, Any], region: str) -> _Table | None:
        """The table a data request goes to, when its profile is aws-like; None otherwise."""
        name = table_name(op, params)
        if not name:
            return None
        ref = (region, name)
        if ref not in self._tables:
            self._tables[ref] = self._load(region, name)
        return self._tables[ref]

    def _load(self, region: str, name: str) -> _Table | None:
        table = moto_table(region, name)
        if table is None:
            return None
        spec = self.default
        for tag in table.tags or []:
            if tag.get("Key") == PROFILE_TAG:
                try:
                    spec = ProfileSpec.from_tag(str(tag.get("Value", "")))
                except Exception:
                    spec = self.default
        if not spec.simulated:
            return None
        counts = self.stats.setdefault(name, Counter())
        stale = spec.stale_ms > 0 and spec.stale_share > 0
        windows = max(spec.commit_ms, spec.abort_ms, spec.write_ms, spec.read_ms) > 0
        sigma = math.log(max(spec.latency_p99_ms, spec.latency_ms) / spec.latency_ms) / Z99 if spec.latency_ms else 0.0
        return _Table(
            table,
            spec,
            (region, name),
            counts,
            table.hash_key_attr,
            table.range_key_attr,
            stale,
            spec.latency_ms > 0,
            windows,
            lag_law(spec),
            sigma,
            index_partitions(table),
        )

    # -- one request ----------------------------------------------------------------------------------------

    # begin (single_item.SingleItemPass) takes a GetItem, PutItem, UpdateItem or DeleteItem of a plain key itself.

    def begin_general(self, op: str, params: dict[str, Any], table: _Table) -> Modelled | None:
        """begin for every other request: the same contract."""
        holds = self._holds
        now = time.monotonic()
        spec = table.profile
        ref = table.ref
        counts = table.counts
        counts["requests"] += 1
        keys = request_keys(op, params, table.moto)
        eventual = not consistent_read(op, params, ref[1])
        try:
            self._buckets.admit(op, params, ref, keys, spec, now, counts, eventual)
            holds.check(op, ref, keys, now, counts)
            if table.indexes and op in _INDEXED_WRITES:
                charge(op, params, table, table.indexes, self._buckets, spec, now, counts)
        except Refused as refused:
            if op == "TransactWriteItems":
                self._release_later(ref, keys, refused.extra.get("CancellationReasons"), spec, now, counts)
            raise
        result = Modelled(table, op, ref, keys, now, counts)
        if op == "BatchWriteItem":
            params = split_batch(params, ref, table.moto, spec, now, counts, result, holds, self._buckets)
        if holds.watched and (op in _WRITES or op == "BatchWriteItem"):
            for _, key in keys if op in _WRITES else _kept_keys(result, params, table):
                holds.landed(ref, key, now)
        elif op == "TransactGetItems":
            # Under way for its own window, and a single write for its window before it applies (holds.py).
            window = draw_ms(self._random, spec.read_ms, spec.window_spread) + draw_ms(
                self._random, spec.write_ms, spec.window_spread
            )
            if window > 0:
                holds.window = window
                result.watch = holds.watch(ref, keys, now + window)
        if op in _READS and eventual and not params.get("IndexName"):
            counts["eventual_reads"] += 1
            result.restore = self._stale.swap_in(op, ref, keys, table.moto, spec, now, counts)
        else:
            result.captured = self._stale.capture(op, params, table.moto, spec, keys)
        return result

    def _release_later(
        self, ref: Ref, keys: Any, reasons: Any, spec: ProfileSpec, now: float, counts: Counter[str]
    ) -> None:
        """A cancelled TransactWriteItems: the items it had prepared (reason None: every item but those that
        cancelled it) stay marked until its release, its abort window; its answer waits that window too."""
        window = draw_ms(self._random, spec.abort_ms, spec.window_spread)
        if window <= 0 or not isinstance(reasons, list) or len(reasons) != len(keys):
            return
        prepared = [named for named, why in zip(keys, reasons) if isinstance(why, dict) and why.get("Code") == "None"]
        self._holds.hold(ref, prepared, now + window)
        self._holds.window = window
        counts["transactions_released"] += 1

    # end (single_item.SingleItemPass) takes the single-item requests' records itself.

    def end_general(self, result: Modelled) -> None:
        """After the moto call `begin` started: a read's swapped images put back; a transaction holds its items
        (committed: its commit window; cancelled by moto, e.g. a condition: its abort window); a write that
        succeeded leaves its images for stale reads."""
        if result.restore is not None:
            if result.restore:
                self._stale.swap_back(result.target.moto, result.restore)
            return
        spec = result.target.profile
        if not result.ok:
            if result.op == "TransactWriteItems" and result.answer:
                try:
                    reasons = json.loads(result.answer).get("CancellationReasons")
                except (ValueError, AttributeError):
                    reasons = None
                self._release_later(result.ref, result.keys, reasons, spec, result.now, result.counts)
            return
        if result.op == "TransactWriteItems":
            if self._holds.watched:
                for _, key in result.keys:
                    self._holds.landed(result.ref, key, result.now)
            window = draw_ms(self._random, spec.commit_ms, spec.window_spread)
            if window > 0:
                self._holds.hold(result.ref, result.keys, result.now + window)
                self._holds.window = window
                result.counts["transactions_held"] += 1
        self._stale.remember(result.ref, result.captured, spec, result.now)

    def delay_s(self, table: _Table) -> float:
        """How long the answer of the request just modelled waits before it leaves: network time, plus the
        window it holds its items for (a transaction's commit or abort window, a single write's window), so
        its client never meets its own marks. Called under the request lock, right after the request."""
        delay = self._holds.window
        self._holds.window = 0.0
        if table.delays:
            delay += table.profile.latency_ms * math.exp(table.latency_sigma * self._random.gauss(0.0, 1.0)) / 1000.0
        return min(delay, 10.0)

    def cancelled_late(self, result: Modelled) -> Refused | None:
        """When a TransactGetItems' answer is due: its cancellation, if a write landed on one of its items while
        it was under way (its answer leaves in place of the items it read); None otherwise."""
        reasons = result.watch.reasons() if result.watch is not None else None
        if reasons is None:
            return None
        result.counts["transaction_conflicts"] += 1
        return cancelled(reasons)

    def table_stats(self, name: str) -> dict[str, int]:
        return dict(self.stats.get(name, Counter()))


def _kept_keys(result: Modelled, params: dict[str, Any], table: _Table) -> list[tuple[str, Any]]:
    """The items of a BatchWriteItem's writes on this table that go on to moto (those the model left out for
    UnprocessedItems are not being written)."""
    requests = result.kept if result.kept is not None else (params.get("RequestItems") or {}).get(table.moto.name)
    out = []
    for request in requests or []:
        key = item_key(table.moto, batch_attrs(request))
        if key is not None:
            out.append(("write", key))
    return out
