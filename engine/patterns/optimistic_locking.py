"""23 · Optimistic locking: version checks and a retry loop, against blind read-modify-write."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pandas as pd

from engine.calls import Ambiguous, ClientContext, ConditionFailed
from engine.history import History
from engine.patterns.base import Invariant, Option, Pattern, RunOptions, Variant
from engine.tables import Table

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
BALANCE_ADDS_UP = "balance-initial-acknowledged-changes"
VERSION_COUNTS_WRITES = "version-1-successful-writes"
NO_LOST_UPDATE = "no-lost-update"

# What the dashboard's view reads: each versioned write's detail carries the version it wrote and the one it read.
DETAIL_VERSION = "version"
DETAIL_READ_VERSION = "read_version"

SK = "META"


def account_pk(i: int) -> str:
    return f"ACCOUNT#a{i + 1}"


class OptimisticLocking(Pattern):
    name = "optimistic-locking"
    seed = 23
    title = "Optimistic locking"
    problem = (
        "Two clients read the same item, change it in memory and write it back: the second write "
        "silently overwrites the first. A lost update, and DynamoDB has no row locks to stop it."
    )
    solution = (
        "Keep a version number on the item. Every write says 'only if the version is still what I "
        "read' (version = :v) and increments it; on ConditionalCheckFailed, re-read with "
        "ConsistentRead and retry with backoff."
    )
    variants = {
        "version-check": Variant(
            "version-check", True, "read (ConsistentRead), put with version = :v, retry with backoff"
        ),
        "blind-write": Variant("blind-write", False, "read, change, put with no condition: loses updates"),
    }
    options = {
        "accounts": Option(
            "accounts", 1, "how many account items the clients share (fewer = more contention)", 1, 10_000
        ),
        "initial_balance": Option("initial_balance", 1000, "starting balance of each account", 0, 10**12),
        "max_attempts": Option("max_attempts", 50, "version-check: attempts per change before giving up", 1, 1000),
    }

    def setup(self, table: Table, options: RunOptions) -> None:
        for i in range(options["accounts"]):
            table.put({"PK": account_pk(i), "SK": SK, "balance": options["initial_balance"], "version": 1})

    def client(self, ctx: ClientContext) -> None:
        accounts = ctx.options["accounts"]
        safe = ctx.variant == "version-check"
        for op in ctx.ops():
            pk = account_pk(ctx.rng.randrange(accounts))
            amount = ctx.rng.choice((1, -1)) * ctx.rng.randint(1, 50)
            action = "deposit" if amount > 0 else "withdraw"
            for attempt in range(ctx.options["max_attempts"] if safe else 1):
                if ctx.stopped:
                    return
                item = ctx.call(
                    "read", "GetItem", key=pk, TableName=ctx.table.name, Key={"PK": pk, "SK": SK}, ConsistentRead=True
                )["Item"]
                version = int(item["version"])
                new = {"PK": pk, "SK": SK, "balance": item["balance"] + amount, "version": version + 1}
                params: dict[str, Any] = {"TableName": ctx.table.name, "Item": new}
                if safe:
                    params["ConditionExpression"] = "version = :v"
                    params["ExpressionAttributeValues"] = {":v": version}
                try:
                    ctx.call(
                        action,
                        "PutItem",
                        key=pk,
                        detail={
                            "amount": amount,
                            "read_version": version,
                            "version": version + 1,
                            "balance": int(new["balance"]),
                            "attempt": attempt + 1,
                            "op": op,
                        },
                        **params,
                    )
                    break
                except ConditionFailed:
                    ctx.backoff(attempt)
                except Ambiguous:
                    break  # counted as unknown by verify; a retry could apply the change twice

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        frame = history.snapshot(detail=True)
        writes = frame[frame["action"].isin(["deposit", "withdraw"])]
        ok = writes[writes["outcome"] == "ok"]
        unknown = writes[writes["outcome"] == "info"]
        amounts = pd.Series([d.get("amount", 0) for d in ok["detail"]], index=ok.index, dtype="int64")
        versions = pd.Series([d.get("version") for d in ok["detail"]], index=ok.index)
        final = {item["PK"]: item for item in table.scan_all()}
        expected_balance = observed_balance = expected_version = observed_version = 0
        lost_rows: list[int] = []
        lost = 0
        for i in range(options["accounts"]):
            pk = account_pk(i)
            mine = ok["key"] == pk
            item = final.get(pk, {"balance": Decimal(0), "version": Decimal(0)})
            expected_balance += options["initial_balance"] + int(amounts[mine].sum())
            observed_balance += int(item["balance"])
            expected_version += 1 + int(mine.sum())
            observed_version += int(item["version"])
            # Each version number may be written by one acknowledged write only; a repeat is a lost update.
            dup = versions[mine].duplicated(keep="last")
            lost += int(dup.sum())
            lost_rows += [int(s) for s in ok.loc[versions[mine][versions[mine].duplicated(keep=False)].index, "seq"]]
        n_unknown = len(unknown)
        hedge = f" ({n_unknown} writes had an unknown outcome)" if n_unknown else ""
        # A write whose response was lost may or may not have landed: the balance is right if some subset
        # of the unknown amounts accounts for the difference.
        balance_ok = (observed_balance - expected_balance) in _subset_sums(
            [d.get("amount", 0) for d in unknown["detail"]]
        )
        return [
            Invariant(
                name="balance = initial + acknowledged changes",
                key=BALANCE_ADDS_UP,
                holds=balance_ok,
                expected=expected_balance,
                observed=observed_balance,
                explanation="every change a client was told succeeded is in the final balance" + hedge,
                violations=0 if balance_ok else 1,
                calls=tuple(lost_rows[:40]),
            ),
            Invariant(
                name="version = 1 + successful writes",
                key=VERSION_COUNTS_WRITES,
                holds=expected_version <= observed_version <= expected_version + n_unknown,
                expected=expected_version,
                observed=observed_version,
                explanation="each acknowledged write moved the version by exactly one" + hedge,
                violations=max(0, expected_version - observed_version),
            ),
            Invariant(
                name="no lost update",
                key=NO_LOST_UPDATE,
                holds=lost == 0,
                expected=0,
                observed=lost,
                explanation=(
                    f"{lost} acknowledged writes were silently overwritten: two clients wrote the "
                    "same version and the later one erased the earlier"
                    if lost
                    else "every version number was written by exactly one acknowledged write"
                ),
                violations=lost,
                calls=tuple(lost_rows[:40]),
            ),
        ]

    def walkthrough(self, walk: Any) -> None:
        key = {"PK": "ACCOUNT#a1", "SK": "META"}
        walk.table.put({"PK": "ACCOUNT#a1", "SK": "META", "balance": 100, "version": 1})
        a = walk.call("GetItem", show=False, Key=key, ConsistentRead=True)["Item"]
        b = walk.call("GetItem", show=False, Key=key, ConsistentRead=True, client_id=1)["Item"]

        def save(item: dict[str, Any], balance: int, client_id: int) -> Any:
            return walk.call(
                "PutItem",
                client_id=client_id,
                Item={"SK": "META", "PK": "ACCOUNT#a1", "balance": balance, "version": int(item["version"]) + 1},
                ConditionExpression="version = :v",
                ExpressionAttributeValues={":v": int(item["version"])},
            )

        save(a, int(a["balance"]) + 50, 0)
        walk.result("A deposited 50", walk.call("GetItem", Key=key)["Item"])
        rejected = save(b, int(b["balance"]) - 30, 1)
        walk.result("B rejected", _outcome(rejected))
        fresh = walk.call("GetItem", Key=key, ConsistentRead=True, client_id=1)["Item"]
        save(fresh, int(fresh["balance"]) - 30, 1)
        walk.note("...")
        walk.result("B retried on fresh data", walk.call("GetItem", show=False, Key=key, ConsistentRead=True)["Item"])


def _subset_sums(amounts: list[int]) -> set[int]:
    sums = {0}
    for amount in amounts:
        sums |= {s + amount for s in sums}
    return sums


def _outcome(response: Any) -> str:
    from engine.calls import outcome

    return outcome(response)
