"""28 · GSIs are eventually consistent: read your own write from the base table, not from the index.

On the embedded server the index lag is SIMULATED (engine/server/simulated/gsi_lag.py): every write reaches GSI1
exactly `gsi_lag_ms` later. On AWS the lag is real (typically well under a second) and the option is only
the bound the invariants expect.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.backends.tables import GSI_LAG_TAG, Table, TableSpec
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant, rows
from engine.record.calls import Ambiguous, CallError, ClientContext
from engine.record.history import History
from engine.server.host.process import is_embedded
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
READ_YOUR_WRITES = "read-your-writes-every-read-after-an-acknowledged-write-sees-it"
VISIBLE_WITHIN_LAG = "every-write-is-visible-within-lag-margin"
GSI_CONVERGES = "the-gsi-converges-to-the-table-after-lag-margin"

# What the dashboard's view reads: acknowledged writes, the reads of them, which write (op) and whether stale.
WRITE = "write"
READ_BACK = "read-back"
DETAIL_OP = "op"
DETAIL_STALE = "stale"

SK = "PROFILE"
MARGIN_MS = 500  # slack on top of the lag: scheduling here, and AWS's "typically within a second"
SEED_BACKOFF_S = 0.05  # the seed's query_gsi_until_found sleeps 0.05 * 2**i
CONSISTENT_GSI_MESSAGE = "Consistent reads are not supported on global secondary indexes"


def user_pk(client: int) -> str:
    """The client's own user, numbered as the client is (client 3 writes USER#3)."""
    return f"USER#{client}"


def email_key(client: int, op: int) -> str:
    return f"EMAIL#u{client}-{op + 1}@x.com"


def query_gsi_until_found(
    query: Callable[[], list[dict[str, Any]]], sleep: Callable[[float], object], attempts: int = 5
) -> tuple[list[dict[str, Any]], int]:
    """The seed's retry with backoff: query the index until it returns something; (items, attempts used)."""
    for i in range(attempts):
        items = query()
        if items:
            return items, i + 1
        if i + 1 < attempts:
            sleep(SEED_BACKOFF_S * 2**i)
    return [], attempts


class GsiConsistency(Pattern):
    name = "gsi-consistency"
    seed = 28
    harm = Harm("stale reads", (READ_YOUR_WRITES,))  # the sweep counts these per 1,000 ops
    title = "GSIs are eventually consistent"
    problem = (
        "DynamoDB updates a GSI asynchronously, after the table write succeeded. A read through the "
        "index straight after a write can miss the new item or return its old version, and "
        "ConsistentRead=True is rejected on a GSI. A GSI enforces nothing: two users can share an email."
    )
    solution = (
        "Read your own writes from the base table by key with ConsistentRead=True (or return what you "
        "wrote); if you must read the index, retry with backoff; never decide invariants from a GSI."
    )
    variants = {
        "base-table-read": Variant(
            "base-table-read", True, "write, then GetItem by key with ConsistentRead=True: never stale"
        ),
        "gsi-read": Variant(
            "gsi-read",
            False,
            "write, then Query GSI1 by the new email, retrying with backoff until found: "
            "stale inside the lag window (simulated on the embedded server)",
        ),
    }
    options = {
        "gsi_lag_ms": Option(
            "gsi_lag_ms",
            300,
            "GSI propagation lag, SIMULATED on the embedded server "
            "(on AWS the lag is real; this is then the bound the invariants expect)",
            0,
            10_000,
        ),
        "read_attempts": Option(
            "read_attempts",
            5,
            "gsi-read: queries per write before giving up (the seed's query_gsi_until_found, backoff 50 ms × 2^i)",
            1,
            8,
        ),
    }
    default_ops = 5

    def table_spec(self, options: RunOptions) -> TableSpec:
        return TableSpec(gsi=True, gsi_lag_ms=int(options["gsi_lag_ms"]))

    def setup(self, table: Table, options: RunOptions) -> None:
        pass  # each client creates its own user with its first write

    def client(self, ctx: ClientContext) -> None:
        pk = user_pk(ctx.client_id)
        for op in ctx.ops():
            email = email_key(ctx.client_id, op)
            # Each op changes the user's email: the index keeps the old one until the lag has passed.
            try:
                ctx.call(
                    "write",
                    "PutItem",
                    key=pk,
                    detail={"op": op, "version": op + 1},
                    TableName=ctx.table.name,
                    Item={"PK": pk, "SK": SK, "GSI1PK": email, "GSI1SK": pk, "version": op + 1},
                )
            except Ambiguous:
                continue  # recorded as unknown; there is no acknowledged write to read back
            acked = time.monotonic_ns()
            if ctx.variant == "base-table-read":
                self._read_base(ctx, pk, op, acked)
            else:
                self._read_index(ctx, email, op, acked)

    @staticmethod
    def _read_base(ctx: ClientContext, pk: str, op: int, acked: int) -> None:
        ctx.call(
            "read-back",
            "GetItem",
            key=pk,
            detail=_read_detail(op, 1, acked),
            observe=lambda r: {"stale": int(r.get("Item", {}).get("version", 0)) < op + 1},
            TableName=ctx.table.name,
            Key={"PK": pk, "SK": SK},
            ConsistentRead=True,
        )

    @staticmethod
    def _read_index(ctx: ClientContext, email: str, op: int, acked: int) -> None:
        attempts = iter(range(1, ctx.options["read_attempts"] + 1))

        def query() -> list[dict[str, Any]]:
            return ctx.call(
                "read-back",
                "Query",
                key=email,
                detail=_read_detail(op, next(attempts), acked),
                observe=lambda r: {"stale": not r.get("Items")},
                TableName=ctx.table.name,
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :e",
                ExpressionAttributeValues={":e": email},
            )["Items"]

        query_gsi_until_found(query, ctx.sleep, ctx.options["read_attempts"])

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        reads = _ReadBacks.of(history, options)
        return [_read_your_writes(reads), _visible_within_lag(reads), _gsi_converges(table, reads, history.t0_ns)]

    def walkthrough(self, walk: Any) -> None:
        key = {"PK": "USER#1", "SK": "PROFILE"}
        email = {":v": "EMAIL#a@x.com"}
        by_email = dict(IndexName="GSI1", KeyConditionExpression="GSI1PK = :v", ExpressionAttributeValues=email)
        lag_ms = _simulated_lag(walk) if is_embedded(walk.client.meta.endpoint_url) else 0
        if lag_ms:
            _set_simulated_lag(walk, 0)  # first the seed's scene, on an instant index like DynamoDB Local's

        refused = walk.call("Query", ConsistentRead=True, **by_email)
        walk.result("ConsistentRead=True on a GSI", _message(refused))

        walk.call("PutItem", Item={**key, "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "USER#1"})
        walk.result(
            "Immediate GSI read after write (Local is instant; AWS may return 0)",
            _count(walk.call("Query", **by_email)),
        )
        walk.result(
            "Strongly consistent read from the base table", walk.read("GetItem", Key=key, ConsistentRead=True)["Item"]
        )
        items, attempts = _retry(walk, by_email)
        walk.result(f"GSI read with retry (found after {attempts} attempt(s))", items)

        if lag_ms:
            _set_simulated_lag(walk, lag_ms)
            walk.note(f"... the same on an index that lags {lag_ms} ms (simulated by the embedded server) ...")
            lagged = {":v": "EMAIL#b@x.com"}
            walk.call("PutItem", Item={"PK": "USER#3", "SK": "PROFILE", "GSI1PK": "EMAIL#b@x.com", "GSI1SK": "USER#3"})
            walk.result(
                f"Immediate GSI read after write ({lag_ms} ms lag, simulated)",
                _count(walk.call("Query", **{**by_email, "ExpressionAttributeValues": lagged})),
            )
            items, attempts = _retry(walk, {**by_email, "ExpressionAttributeValues": lagged})
            walk.result(f"GSI read with retry (found after {attempts} attempt(s))", items)
            _set_simulated_lag(walk, 0)

        walk.call("PutItem", Item={"PK": "USER#2", "SK": "PROFILE", "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "USER#2"})
        walk.result("Two users with the same email in the GSI", _owners(walk.call("Query", **by_email)))


def _read_detail(op: int, attempt: int, acked: int) -> dict[str, Any]:
    """Which write a read checks, and how long after its acknowledgement the read was sent."""
    return {"op": op, "attempt": attempt, "since_write_ms": round((time.monotonic_ns() - acked) / 1e6, 1)}


# -- the invariants, one function each ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReadBacks:
    """The acknowledged writes and the reads of them, picked out of the history once, with how they were read."""

    writes: pd.DataFrame  # acknowledged writes
    reads: pd.DataFrame  # answered read-backs
    stale: np.ndarray  # per read: it missed the write it checked
    since_ms: np.ndarray  # per read: ms from the write's acknowledgement to the read being sent
    bound_ms: int  # lag + margin: by then every write must be visible
    via: str  # what the reads went through, in words
    lag: str  # the simulated lag, in words
    wanted: int  # reads a client meant to make per write

    @classmethod
    def of(cls, history: History, options: RunOptions) -> _ReadBacks:
        frame = history.snapshot(detail=True)
        ok = frame["outcome"] == "ok"
        # Acknowledged writes: ok, and those answered after a retry whose first attempt's answer was lost (info:
        # applied once or twice). The client reads back both.
        answered = ok | pd.Series([bool(d.get("ambiguous_retry")) for d in frame["detail"]], index=frame.index)
        reads = frame[(frame["action"] == "read-back") & ok]
        lag_ms = int(options["gsi_lag_ms"])
        gsi = options.variant == "gsi-read"
        return cls(
            writes=frame[(frame["action"] == "write") & answered],
            reads=reads,
            stale=np.array([bool(d.get("stale")) for d in reads["detail"]], dtype=bool),
            since_ms=np.array([float(d["since_write_ms"]) for d in reads["detail"]], dtype=float),
            bound_ms=lag_ms + MARGIN_MS,
            via="GSI1" if gsi else "the base table (ConsistentRead)",
            lag=f"lag {lag_ms} ms, simulated on the embedded server" if lag_ms else "no simulated lag",
            wanted=options["read_attempts"] if gsi else 1,
        )


def _read_your_writes(r: _ReadBacks) -> Invariant:
    n_stale = int(r.stale.sum())
    return Invariant(
        name="read-your-writes: every read after an acknowledged write sees it",
        key=READ_YOUR_WRITES,
        holds=n_stale == 0,
        expected="0 stale reads",
        observed=f"{n_stale} stale of {plural(len(r.reads), 'read')}",
        violations=n_stale,
        calls=rows(r.reads, r.stale),
        explanation=(
            f"{plural(n_stale, 'read')} through {r.via} right after an acknowledged write missed it: the index "
            f"had not caught up yet ({r.lag})"
            if n_stale
            else f"every one of {plural(len(r.reads), 'read')} through {r.via} saw the write just acknowledged"
        ),
    )


def _visible_within_lag(r: _ReadBacks) -> Invariant:
    late = r.stale & (r.since_ms > r.bound_ms)
    # Time from a write's acknowledgement to the first read (as sent) that saw it: an upper bound on
    # the real lag, as coarse as the retry's backoff.
    first_seen: dict[tuple[int, int], float] = {}
    missed_late: set[tuple[int, int]] = set()  # writes a read sent after lag + margin still missed
    for c, d, ms, s, lt in zip(r.reads["client"], r.reads["detail"], r.since_ms, r.stale, late):
        if not s:
            first_seen.setdefault((int(c), int(d["op"])), float(ms))
        elif lt:
            missed_late.add((int(c), int(d["op"])))
    # Only a read sent after lag + margin that missed the write breaks the rule. A write never seen by reads all
    # sent before then (few attempts, a short backoff, a long lag), or whose reads were refused or never sent
    # (the run stopped), proves nothing either way: it cannot be judged, which is not a breach.
    written = {(int(c), int(d["op"])) for c, d in zip(r.writes["client"], r.writes["detail"])}
    never_seen = written - first_seen.keys()
    unseen = len(never_seen & missed_late)
    undecided = len(never_seen - missed_late)
    n_late = int(late.sum())
    return Invariant(
        name="every write is visible within lag + margin",
        key=VISIBLE_WITHIN_LAG,
        holds=False if n_late else None if undecided else True,
        expected=f"≤ {r.bound_ms} ms",
        observed=_percentiles(list(first_seen.values()))
        + (f"; {unseen} never seen" if unseen else "")
        + (f"; {undecided} not judged" if undecided else ""),
        violations=n_late,
        calls=rows(r.reads, late),
        explanation=(
            f"write → first read that saw it, over {plural(len(first_seen), 'write')} read through {r.via}"
            + (
                f"; {plural(n_late, 'read')} sent more than {r.bound_ms} ms after the write still missed it"
                if n_late
                else ""
            )
            + (f", {unseen} of those writes {agree(unseen, 'was', 'were')} never seen" if unseen else "")
            + ("; none took longer than the lag + margin" if not n_late and not undecided else "")
            + (
                f"; {plural(undecided, 'write')} cannot be judged: no read of {agree(undecided, 'it', 'them')} "
                f"was sent after {r.bound_ms} ms (all "
                f"{r.wanted} attempts came sooner, or were refused or never sent), which proves nothing about "
                "visibility"
                if undecided
                else ""
            )
        ),
    )


def _gsi_converges(table: Table, r: _ReadBacks, t0_ns: int) -> Invariant:
    """Waits until lag + margin after the last acknowledged write, then compares the index with the table."""
    if len(r.writes):
        time.sleep(max(0.0, (t0_ns + int(r.writes["complete_ns"].max())) / 1e9 + r.bound_ms / 1000 - time.monotonic()))
    wrong, evidence = _index_mismatches(table)
    return Invariant(
        name="the GSI converges to the table after lag + margin",
        key=GSI_CONVERGES,
        holds=wrong == 0,
        expected="index = table",
        observed=f"{plural(wrong, 'entry', 'entries')} differ" if wrong else "index = table",
        violations=wrong,
        explanation=(
            f"{r.bound_ms} ms after the last write, {plural(wrong, 'index entry', 'index entries')} still "
            f"{agree(wrong, 'differs', 'differ')} from the table ({', '.join(evidence[:3])})"
            if wrong
            else f"{r.bound_ms} ms after the last write, GSI1 lists every user under its latest email and no old one"
        ),
    )


def _percentiles(values: list[float]) -> str:
    if not values:
        return "no write seen"
    p50, p95 = np.percentile(values, [50, 95])
    return f"p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {max(values):.0f} ms"


def _index_mismatches(table: Table) -> tuple[int, list[str]]:
    """Entries where GSI1 differs from the base table: a user missing, on an old email, or an old version."""
    expected = {(item["PK"], item["GSI1PK"], int(item["version"])) for item in table.scan_all() if "GSI1PK" in item}
    listed: set[tuple[str, str, int]] = set()
    kwargs: dict[str, Any] = {"TableName": table.name, "IndexName": "GSI1"}
    while True:
        page = table.client.scan(**kwargs)
        listed |= {(item["PK"], item["GSI1PK"], int(item["version"])) for item in page.get("Items", [])}
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    differ = sorted(expected ^ listed)
    return len(differ), [f"{pk} {email}" for pk, email, _ in differ]


def _items(response: Any) -> list[dict[str, Any]]:
    return [] if isinstance(response, CallError) else response["Items"]


# A failed Query is shown as its error code: read as 0 items it would pass for an index that had not caught up.
def _count(response: Any) -> int | str:
    return response.code if isinstance(response, CallError) else len(response["Items"])


def _owners(response: Any) -> list[str] | str:
    return response.code if isinstance(response, CallError) else [item["PK"] for item in response["Items"]]


def _message(response: Any) -> str:
    """The seed prints the error's message; a backend that accepts the read is worth saying so."""
    if isinstance(response, CallError):
        return response.response.get("Error", {}).get("Message", response.code)
    return f"accepted by this backend (DynamoDB refuses it: {CONSISTENT_GSI_MESSAGE})"


def _retry(walk: Any, params: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The seed's helper; its first Query is printed, the retries are summarised on one line."""
    shown = [False]
    failed: Counter[str] = Counter()

    def query() -> list[dict[str, Any]]:
        response = walk.call("Query", show=not shown[0], **params)
        shown[0] = True
        if isinstance(response, CallError):
            failed[response.code] += 1
        return _items(response)

    items, attempts = query_gsi_until_found(query, time.sleep)
    if attempts > 1:
        walk.log.elided(f"... (+{attempts - 1} more Query calls with backoff not shown)")
    if failed:
        codes = ", ".join(f"{code} ×{n}" for code, n in failed.items())
        walk.note(f"... {sum(failed.values())} of those Query calls failed ({codes}): not an index still catching up")
    return items, attempts


def _table_arn(walk: Any) -> str:
    return walk.client.describe_table(TableName=walk.name)["Table"]["TableArn"]


def _simulated_lag(walk: Any) -> int:
    tags = walk.client.list_tags_of_resource(ResourceArn=_table_arn(walk)).get("Tags", [])
    return next((int(float(t["Value"])) for t in tags if t["Key"] == GSI_LAG_TAG), 0)


def _set_simulated_lag(walk: Any, lag_ms: int) -> None:
    """The embedded server reads the lag from the table's tag on every call, so it can change mid-scene."""
    arn = _table_arn(walk)
    walk.client.untag_resource(ResourceArn=arn, TagKeys=[GSI_LAG_TAG])
    if lag_ms:
        walk.client.tag_resource(ResourceArn=arn, Tags=[{"Key": GSI_LAG_TAG, "Value": str(lag_ms)}])
