"""The aws-like model's one object: which tables it covers (by their profile tag), and each request on them
through its parts in order: throttling (buckets.py), transaction holds (holds.py), BatchWriteItem's left-out
writes (batch.py), stale reads (stale_reads.py), then the answer's network time."""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.server.moto_store import moto_table
from engine.server.profile import PROFILE_TAG, ProfileSpec
from engine.server.simulated.batch import Modelled, split_batch
from engine.server.simulated.buckets import Buckets
from engine.server.simulated.holds import Holds
from engine.server.simulated.item_keys import Ref, consistent_read, request_keys, table_name
from engine.server.simulated.single_item import SINGLE_ITEM, begin_single, single_key
from engine.server.simulated.stale_reads import StaleReads

_READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan"})
_TABLE_CHANGES = frozenset({"CreateTable", "DeleteTable", "TagResource", "UntagResource"})
_Z99 = 2.3263478740408408  # the standard normal's 99th percentile


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
    delays: bool  # answers wait (network time, or a transaction's commit window): delay_s has work to do


class AwsLike:
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
        delays = spec.latency_ms > 0 or spec.commit_ms > 0
        return _Table(table, spec, (region, name), counts, table.hash_key_attr, table.range_key_attr, stale, delays)

    # -- one request ----------------------------------------------------------------------------------------

    def begin(self, op: str, params: dict[str, Any], table: _Table) -> Modelled | None:
        """Before one moto call on an aws-like table: Refused (throttled, conflict), or the request's pass through
        the model, with stale images swapped in for an eventually consistent read. The caller sets `ok`, calls
        moto (through `send` when `kept` is not None: a BatchWriteItem may lose some of its writes to
        UnprocessedItems), then calls `end`, also when the call raised. None: the request passed and `end` would
        have nothing to do (single_item.py), so the caller calls moto as for an exact table."""
        if op in SINGLE_ITEM:
            key = single_key(params, table)
            if key is not None:
                return begin_single(op, params, key, table, self._buckets, self._holds, self._stale)
        now = time.monotonic()
        spec = table.profile
        ref = table.ref
        counts = table.counts
        counts["requests"] += 1
        keys = request_keys(op, params, table.moto)
        eventual = not consistent_read(op, params, ref[1])
        self._buckets.admit(op, params, ref, keys, spec, now, counts, eventual)
        self._holds.check(op, ref, keys, now, counts)
        result = Modelled(table, op, ref, keys, now, counts)
        if op == "BatchWriteItem":
            params = split_batch(params, ref, table.moto, spec, now, counts, result, self._holds, self._buckets)
        if op in _READS and eventual and not params.get("IndexName"):
            counts["eventual_reads"] += 1
            result.restore = self._stale.swap_in(op, ref, keys, table.moto, spec, now, counts)
        else:
            result.captured = self._stale.capture(op, params, table.moto, spec, keys)
        return result

    def end(self, result: Modelled) -> None:
        """After the moto call `begin` started: a read's swapped images put back; a write that succeeded leaves
        its holds (a transaction) and its images for stale reads."""
        if result.restore is not None:
            if result.restore:
                self._stale.swap_back(result.target.moto, result.restore)
            return
        if not result.ok:
            return
        spec = result.target.profile
        if result.op == "TransactWriteItems" and spec.commit_ms > 0:
            self._holds.hold(result.ref, result.keys, result.now + spec.commit_ms / 1000.0)
            result.counts["transactions_held"] += 1
        self._stale.remember(result.ref, result.captured, spec, result.now)

    def delay_s(self, op: str, table: _Table, ok: bool) -> float:
        """How long the answer waits before it leaves: network time, plus the commit window of a committed
        transaction."""
        spec = table.profile
        delay = 0.0
        if spec.latency_ms > 0:
            sigma = math.log(max(spec.latency_p99_ms, spec.latency_ms) / spec.latency_ms) / _Z99
            delay = spec.latency_ms * math.exp(sigma * self._random.gauss(0.0, 1.0)) / 1000.0
        if op == "TransactWriteItems" and ok:
            delay += spec.commit_ms / 1000.0
        return min(delay, 10.0)

    def table_stats(self, name: str) -> dict[str, int]:
        return dict(self.stats.get(name, Counter()))
