"""23 · Optimistic locking: version checks and a retry loop, against blind read-modify-write."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.backends.tables import Table
from engine.errors import BadInput
from engine.patterns.base import LAST_ATTEMPT, GiveUp, Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.optimistic_locking.invariants import (  # the keys: what the dashboard's view finds them by
    BALANCE_ADDS_UP as BALANCE_ADDS_UP,
)
from engine.patterns.optimistic_locking.invariants import (
    NO_LOST_UPDATE as NO_LOST_UPDATE,
)
from engine.patterns.optimistic_locking.invariants import (
    SK,
    account_pk,
    verdicts,
)
from engine.patterns.optimistic_locking.invariants import (
    VERSION_COUNTS_WRITES as VERSION_COUNTS_WRITES,
)
from engine.patterns.versioning import VersionedStore
from engine.record.calls import Ambiguous, CallError, ClientContext, ConditionFailed
from engine.record.history import History

# What the dashboard's view reads: each versioned write's detail carries the version it wrote and the one it read.
DETAIL_VERSION = "version"
DETAIL_READ_VERSION = "read_version"


class OptimisticLocking(Pattern):
    name = "optimistic-locking"
    seed = 23
    harm = Harm("lost updates", (NO_LOST_UPDATE,))  # the sweep counts these per 1,000 ops
    gives_up = GiveUp(
        "changes",
        "each refused for a newer version on every one of its {max_attempts} attempts, max_attempts",
        lambda action, code, detail: code == "ConditionalCheckFailedException",
    )
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
        # Seed 004: the same change through a version attribute (first save sets 1 and checks the item does
        # not exist, each save increments, delete checks the version, user conditions are ANDed).
        "version-attribute": Variant(
            "version-attribute", True, "seed 004's version attribute: get, save if version = held, retry with backoff"
        ),
        "pydynox": Variant(
            "pydynox",
            True,
            "seed 004's library: pydynox models with VersionAttribute, retry with backoff; "
            "recorded at each call (not botocore: its retries and latency do not apply)",
        ),
        "version-check-eventual": Variant(
            "version-check-eventual",
            True,
            "version-check reading without ConsistentRead: still safe; a stale read costs a refused put",
        ),
    }
    options = {
        "accounts": Option(
            "accounts", 1, "how many account items the clients share (fewer = more contention)", 1, 10_000
        ),
        "initial_balance": Option("initial_balance", 1000, "starting balance of each account", 0, 10**12),
        "max_attempts": Option("max_attempts", 50, "safe variants: attempts per change before giving up", 1, 1000),
    }

    @classmethod
    def check_run(cls, variant: str, config: Any) -> None:
        if variant == "pydynox" and config.latency_ms:
            raise BadInput(
                "--latency-ms is added by a botocore hook, and pydynox's calls do not go through botocore",
                "leave out --latency-ms for the pydynox variant, or use version-attribute",
            )

    def setup(self, table: Table, options: RunOptions) -> None:
        for i in range(options["accounts"]):
            table.put({"PK": account_pk(i), "SK": SK, "balance": options["initial_balance"], "version": 1})

    def client(self, ctx: ClientContext) -> None:
        if ctx.variant == "version-attribute":
            return self._version_attribute_client(ctx)
        if ctx.variant == "pydynox":
            from engine.patterns.optimistic_locking.pydynox_client import pydynox_client

            return pydynox_client(ctx, account_pk, SK)
        accounts = ctx.options["accounts"]
        safe = ctx.variant in ("version-check", "version-check-eventual")
        # The seed re-reads with ConsistentRead=True; the eventual variant leaves it out (DynamoDB's default).
        consistent = {} if ctx.variant == "version-check-eventual" else {"ConsistentRead": True}
        for op in ctx.ops():
            pk = account_pk(ctx.rng.randrange(accounts))
            amount = ctx.rng.choice((1, -1)) * ctx.rng.randint(1, 50)
            action = "deposit" if amount > 0 else "withdraw"
            for attempt in range(ctx.options["max_attempts"] if safe else 1):
                if ctx.stopped:
                    return
                item = ctx.read_item("read", key=pk, TableName=ctx.table.name, Key={"PK": pk, "SK": SK}, **consistent)
                if item is None:
                    return  # stopped
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
                            LAST_ATTEMPT: safe and attempt + 1 == ctx.options["max_attempts"],
                        },
                        **params,
                    )
                    break
                except ConditionFailed:
                    ctx.backoff(attempt)
                except Ambiguous:
                    break  # counted as unknown by verify; a retry could apply the change twice

    def _version_attribute_client(self, ctx: ClientContext) -> None:
        """Seed 004's loop: get, change, save (version = the one held, incremented); on a conflict reload and
        retry with backoff. The store records each save with the version read and written."""
        store = VersionedStore(ctx, ctx.table.name)
        for op in ctx.ops():
            pk = account_pk(ctx.rng.randrange(ctx.options["accounts"]))
            amount = ctx.rng.choice((1, -1)) * ctx.rng.randint(1, 50)
            for attempt in range(ctx.options["max_attempts"]):
                if ctx.stopped:
                    return
                item = store.get({"PK": pk, "SK": SK}, action="read", key_text=pk)
                if item is None:
                    raise LookupError(f"{pk} is gone: nothing in this pattern deletes an account")
                balance = int(item["balance"]) + amount
                try:
                    store.save(
                        {**item, "balance": balance},
                        action="deposit" if amount > 0 else "withdraw",
                        key_text=pk,
                        detail={
                            "amount": amount,
                            "balance": balance,
                            "attempt": attempt + 1,
                            "op": op,
                            LAST_ATTEMPT: attempt + 1 == ctx.options["max_attempts"],
                        },
                    )
                    break
                except ConditionFailed:
                    ctx.backoff(attempt)
                except Ambiguous:
                    break  # counted as unknown by verify; a retry could apply the change twice

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        return verdicts(table, history, options)

    def walkthrough(self, walk: Any) -> None:
        key = {"PK": "ACCOUNT#a1", "SK": "META"}
        walk.put({"PK": "ACCOUNT#a1", "SK": "META", "balance": 100, "version": 1})
        a = walk.read("GetItem", show=False, Key=key, ConsistentRead=True)["Item"]
        b = walk.read("GetItem", show=False, Key=key, ConsistentRead=True, client_id=1)["Item"]

        def save(item: dict[str, Any], balance: int, client_id: int) -> Any:
            return walk.call(
                "PutItem",
                client_id=client_id,
                Item={"SK": "META", "PK": "ACCOUNT#a1", "balance": balance, "version": int(item["version"]) + 1},
                ConditionExpression="version = :v",
                ExpressionAttributeValues={":v": int(item["version"])},
            )

        save(a, int(a["balance"]) + 50, 0)
        walk.result("A deposited 50", walk.read("GetItem", Key=key)["Item"])
        rejected = save(b, int(b["balance"]) - 30, 1)
        walk.result("B rejected", _outcome(rejected))
        fresh = walk.read("GetItem", Key=key, ConsistentRead=True, client_id=1)["Item"]
        save(fresh, int(fresh["balance"]) - 30, 1)
        walk.note("...")
        walk.result("B retried on fresh data", walk.read("GetItem", show=False, Key=key, ConsistentRead=True)["Item"])

    def walkthrough_for(self, variant: str | None) -> Callable[[Any], None]:
        return self.walkthrough_version_attribute if variant == "version-attribute" else self.walkthrough

    def walkthrough_version_attribute(self, walk: Any) -> None:
        """Seed 004's scenes with the version-attribute store: first save sets 1, each save increments, a stale
        save is refused, 10 concurrent increments with retry end at count 10, version 11, a delete with a stale
        version is refused, and a user condition is ANDed with the version check."""
        store = VersionedStore(_Printed(walk), walk.name)
        new_doc = {"PK": "DOC#VERSION", "SK": "DOC", "content": "Hello"}
        walk.result("Before the first save the version is None", new_doc.get("version"))
        doc = store.save(new_doc)
        walk.result("First save sets version 1", doc)
        try:
            store.save(new_doc)
            walk.result("Created the same document twice", "OK")
        except CallError as e:
            walk.result("Creating the same document twice fails", e.code)
        doc = store.save({**doc, "content": "Hello World"})
        walk.result("Each save increments the version", doc)
        walk.result("Loaded from the table: version preserved", store.get({"PK": "DOC#VERSION", "SK": "DOC"}))
        # The seed: update() sets attributes directly, with no version condition and no increment.
        walk.call(
            "UpdateItem",
            Key={"PK": "DOC#VERSION", "SK": "DOC"},
            UpdateExpression="SET content = :c",
            ExpressionAttributeValues={":c": "Updated without a version check"},
        )
        updated = store.get({"PK": "DOC#VERSION", "SK": "DOC"})
        assert updated is not None
        walk.result(f"update() does not use versioning: the version stays {updated['version']}", updated)

        original = store.save({"PK": "DOC#CONCURRENT", "SK": "DOC", "content": "Original"})
        key = {"PK": "DOC#CONCURRENT", "SK": "DOC"}
        quiet = VersionedStore(_Printed(walk, show=False), walk.name)
        process_a, process_b = (
            quiet.get(key),
            VersionedStore(_Printed(walk, show=False, client_id=1), walk.name).get(key),
        )
        walk.note(f"... A and B both load the document at version {original['version']}")
        assert process_a is not None and process_b is not None
        walk.result("Process A updates first", store.save({**process_a, "content": "Updated by A"}))
        try:
            VersionedStore(_Printed(walk, client_id=1), walk.name).save({**process_b, "content": "Updated by B"})
            walk.result("Process B saved a stale copy", "OK")
        except CallError as e:
            walk.result("Conflict! Someone else updated the document", e.code)
            walk.note(
                "... seed 004 catches pydynox's ConditionCheckFailedError: pydynox 1.8 names it "
                "ConditionalCheckFailedException, DynamoDB's own code"
            )

        final, gave_up = _ten_increments(walk)
        value, version = (final or {}).get("value"), (final or {}).get("version")
        walk.result(f"10 increments with retry end at count {value}, version {version}", final)
        if gave_up:
            walk.note(
                f"... {gave_up} of the 10 clients gave up after {INCREMENT_ATTEMPTS} attempts (the seed raises "
                "RuntimeError('gave up after retries')): their increments are not in the count"
            )

        doc = store.save({"PK": "DOC#DELETE", "SK": "DOC", "content": "Hello"})
        doc = store.save({**doc, "content": "Updated"})
        stale = quiet.get({"PK": "DOC#DELETE", "SK": "DOC"})
        assert stale is not None
        doc = store.save({**doc, "content": "Updated again"})
        walk.note(f"... a stale copy was loaded at version {stale['version']}; the document is now at {doc['version']}")
        try:
            store.delete(stale)
            walk.result("Deleted with a stale version", "OK")
        except CallError as e:
            walk.result("Can't delete - version mismatch", e.code)
        store.delete(doc)
        walk.result("Delete with current version - succeeds", "OK")

        draft: dict[str, Any] = {"condition": "#s = :draft", "names": {"#s": "status"}, "values": {":draft": "draft"}}
        doc = store.save({"PK": "DOC#CONDITION", "SK": "DOC", "status": "draft", "content": "Hello"})
        doc = store.save({**doc, "content": "Updated content"}, **draft)
        walk.result("Updated! (status = draft AND version = 1)", doc)
        doc = store.save({**doc, "status": "published"})
        walk.result("Published!", doc)
        try:
            store.save({**doc, "content": "Another update"}, **draft)
            walk.result("Updated a published document", "OK")
        except CallError as e:
            walk.result("Can't update - not a draft", e.code)


class _Printed:
    """A Recorder for VersionedStore that goes through a walkthrough: printed (unless show=False), recorded,
    and raising CallError like a Caller."""

    def __init__(self, walk: Any, *, show: bool = True, client_id: int = 0) -> None:
        self.walk = walk
        self.show = show
        self.client_id = client_id

    def call(
        self, action: str, op: str, *, key: str, detail: Mapping[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]:
        response = self.walk.call(op, action=action, key=key, show=self.show, client_id=self.client_id, **params)
        if isinstance(response, CallError):
            raise response
        return response


INCREMENT_ATTEMPTS = 20  # per client; the seed's loop makes 5, which here leaves 1 to 4 of 10 clients short


def _ten_increments(walk: Any, clients: int = 10) -> tuple[dict[str, Any] | None, int]:
    """Seed 004's async example with threads: COUNTER#1 starts at "0" (version 1); 10 clients each increment
    it with the retry loop (reload on conflict, back off, try again). The log shows one increment's GetItem and
    PutItem; the clients' own calls run unprinted. Returns the counter at the end and how many clients gave up."""
    key = {"PK": "COUNTER#1", "SK": "COUNTER"}
    VersionedStore(_Printed(walk), walk.name).save({**key, "value": "0"})
    barrier = threading.Barrier(clients)
    refused = [0] * clients

    def increment(i: int) -> bool:
        """True when the increment was saved; False when the client gave up after its attempts."""
        store = VersionedStore(_Printed(walk, show=False, client_id=i), walk.name)
        barrier.wait()
        for attempt in range(INCREMENT_ATTEMPTS):
            counter = store.get(key)
            assert counter is not None
            try:
                store.save({**counter, "value": str(int(counter["value"]) + 1)})
                return True
            except ConditionFailed:
                refused[i] += 1
                time.sleep(random.uniform(0, 0.001 * 2**attempt))
        return False  # the seed: raise RuntimeError("gave up after retries"); counted and said instead

    first = {**key, "value": "1", "version": 2}
    walk.log.request("GetItem", {"TableName": walk.name, "Key": key, "ConsistentRead": True})
    walk.log.request(
        "PutItem",
        {
            "TableName": walk.name,
            "Item": first,
            "ConditionExpression": "version = :held_version",
            "ExpressionAttributeValues": {":held_version": 1},
        },
    )
    with ThreadPoolExecutor(clients) as pool:
        saved = list(pool.map(increment, range(clients)))
    walk.log.elided(
        f"... 10 clients like this one, at the same time: {sum(saved) + sum(refused)} saves, {sum(refused)} refused "
        f"(ConditionalCheckFailedException) and retried on a fresh read, up to {INCREMENT_ATTEMPTS} attempts each "
        "with exponential backoff and jitter (the seed's loop: 5 attempts, 10 ms × attempt)"
    )
    return VersionedStore(_Printed(walk, show=False), walk.name).get(key), saved.count(False)


# -- the invariants, one function each ---------------------------------------------------------------------------


def _outcome(response: Any) -> str:
    from engine.record.calls import outcome

    return outcome(response)
