"""26 · Unique constraints on non-key attributes: sentinel items in a transaction, against check-a-GSI-then-write."""

from __future__ import annotations

from typing import Any

from engine.backends.tables import Table, TableSpec
from engine.patterns.base import LAST_ATTEMPT, GiveUp, Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.unique_constraints.invariants import (
    NO_ORPHAN_SENTINEL,
    NO_SHARED_EMAIL,
    ONE_SENTINEL_PER_EMAIL,
    REFUSED_CHANGE_DELETES_NOTHING,
    _every_email_has_sentinel,
    _no_orphan_sentinel,
    _no_shared_email,
    _refused_change_changes_nothing,
    _took_a_held_email,
    shared_counts,
)
from engine.record.calls import Ambiguous, ClientContext, ConditionFailed, TransactionCanceled
from engine.record.history import History

# What the dashboard's view and the tests read: the invariant keys, the verdict's counts, and the oracle's parts.
__all__ = [
    "NO_ORPHAN_SENTINEL",
    "NO_SHARED_EMAIL",
    "ONE_SENTINEL_PER_EMAIL",
    "REFUSED_CHANGE_DELETES_NOTHING",
    "UniqueConstraints",
    "_no_shared_email",
    "_took_a_held_email",
    "shared_counts",
]

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.

# What the dashboard's view reads: the claiming writes, the GSI check and what it said.
SIGN_UP = "sign-up"
CHANGE_EMAIL = "change-email"
CHECK_EMAIL = "check-email"
DETAIL_TAKEN = "taken"
SENTINEL_ITEM = 1  # the sentinel Put's position in both transactions: its cancellation reason says "taken"

CONFLICT_ATTEMPTS = 8  # sentinel: sends of one transaction while it collides with others (aws-like, AWS)

PROFILE = "PROFILE"
SENTINEL = "EMAIL"
WRITES = (SIGN_UP, CHANGE_EMAIL)


def user_pk(user: str) -> str:
    return f"USER#{user}"


def sentinel_pk(email: str) -> str:
    # Lower-cased so A@x.com and a@x.com claim the same key.
    return f"EMAIL#{email.lower()}"


def sign_up_items(table: str, user: str, email: str) -> list[dict[str, Any]]:
    """The seed's two-item transaction: the profile and the email's sentinel, both create-only."""
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": user_pk(user), "SK": PROFILE, "email": email},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": sentinel_pk(email), "SK": SENTINEL, "user_id": user},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
    ]


def change_items(table: str, user: str, old: str, new: str) -> list[dict[str, Any]]:
    """Release the old sentinel, claim the new one, and move the profile, all or nothing."""
    return [
        {"Delete": {"TableName": table, "Key": {"PK": sentinel_pk(old), "SK": SENTINEL}}},
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": sentinel_pk(new), "SK": SENTINEL, "user_id": user},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": {"PK": user_pk(user), "SK": PROFILE},
                "UpdateExpression": "SET email = :new",
                "ConditionExpression": "email = :old",
                "ExpressionAttributeValues": {":old": old, ":new": new},
            }
        },
    ]


class UniqueConstraints(Pattern):
    name = "unique-constraints"
    seed = 26
    # The sweep counts these per 1,000 ops: the verdict's violations, the larger of takes during the run and extra
    # users sharing an email at the end, so the name says both.
    harm = Harm("held-email takes (run) or sharers (end)", (NO_SHARED_EMAIL,))
    gives_up = GiveUp(
        "sign-ups and email changes",
        f"each cancelled for a colliding transaction (TransactionConflict) on every one of its {CONFLICT_ATTEMPTS} "
        "sends",
        lambda action, code, detail: (
            code == "TransactionCanceledException"
            and "TransactionConflict" in (detail.get("reasons") or ())
            and "ConditionalCheckFailed" not in (detail.get("reasons") or ())
        ),
    )
    title = "Unique constraints on non-key attributes"
    problem = (
        "DynamoDB only enforces uniqueness on the primary key. 'Email must be unique across users' "
        "needs more: email is not the key, and a GSI does not enforce uniqueness."
    )
    solution = (
        "Write a sentinel item whose key is the (lower-cased) email, in the same transaction as the "
        "user, with attribute_not_exists(PK) on both. Changing the email deletes the old sentinel, puts "
        "the new one and updates the profile (email = :old) in one transaction."
    )
    variants = {
        "sentinel": Variant(
            "sentinel", True, "TransactWriteItems: profile + EMAIL#<lower> sentinel, both attribute_not_exists(PK)"
        ),
        "check-then-write": Variant(
            "check-then-write",
            False,
            "Query the GSI on the email, write the user if nobody has it: two requests, "
            "so two clients can both see it free",
        ),
    }
    options = {
        "emails": Option(
            "emails", 40, "size of the email pool the clients draw from (smaller = more collisions)", 2, 100_000
        ),
        "gsi_lag_ms": Option(
            "gsi_lag_ms",
            300,
            "check-then-write: simulated GSI lag in ms (embedded server only; "
            "DynamoDB's is typically under a second): the check reads an even staler index",
            0,
            10_000,
        ),
    }
    default_ops = 10

    def table_spec(self, options: RunOptions) -> TableSpec:
        # Only the racy variant looks emails up in an index; the sentinel is its own lookup.
        if options.variant == "check-then-write":
            return TableSpec(gsi=True, gsi_lag_ms=int(options["gsi_lag_ms"]))
        return TableSpec()

    def setup(self, table: Table, options: RunOptions) -> None:
        pass  # every user signs up during the run

    def client(self, ctx: ClientContext) -> None:
        user = f"user{ctx.client_id}"  # the client's own user, numbered as the client is
        email: str | None = None  # this client's user's email, as far as the client knows
        sentinel = ctx.variant == "sentinel"
        for op in ctx.ops():
            new = _pick_email(ctx, avoid=email)
            try:
                if sentinel:
                    self._sentinel_write(ctx, user, email, new, op)
                elif not self._checked_write(ctx, user, email, new, op):
                    continue
                email = new
            except (ConditionFailed, TransactionCanceled):
                pass  # the email (or the user) is taken: try another one on the next op
            except Ambiguous:
                email = _current_email(ctx, user)

    @classmethod
    def _sentinel_write(cls, ctx: ClientContext, user: str, old: str | None, new: str, op: int) -> None:
        """The transaction, sent again after a backoff while it collides with another one (TransactionConflict,
        as AWS advises); a failed condition (the email is taken) ends it."""
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                cls._sentinel_once(ctx, user, old, new, op, last=attempt + 1 == CONFLICT_ATTEMPTS)
                return
            except TransactionCanceled as e:
                collided = "TransactionConflict" in e.reasons and "ConditionalCheckFailed" not in e.reasons
                if not collided or attempt == CONFLICT_ATTEMPTS - 1 or not ctx.backoff(attempt, 0.005, 0.5):
                    raise

    @staticmethod
    def _sentinel_once(ctx: ClientContext, user: str, old: str | None, new: str, op: int, *, last: bool) -> None:
        name = ctx.table.name
        if old is None:
            ctx.call(
                SIGN_UP,
                "TransactWriteItems",
                key=user_pk(user),
                detail={"user": user, "email": new, "op": op, LAST_ATTEMPT: last},
                TransactItems=sign_up_items(name, user, new),
            )
        else:
            ctx.call(
                CHANGE_EMAIL,
                "TransactWriteItems",
                key=user_pk(user),
                detail={"user": user, "email": new, "old": old, "op": op, LAST_ATTEMPT: last},
                TransactItems=change_items(name, user, old, new),
            )

    @staticmethod
    def _checked_write(ctx: ClientContext, user: str, old: str | None, new: str, op: int) -> bool:
        """Query the index, then write if nobody had the email. False when the check found it taken."""
        name = ctx.table.name
        found = ctx.call(
            CHECK_EMAIL,
            "Query",
            key=sentinel_pk(new),
            detail={"user": user, "email": new, "op": op},
            observe=lambda r: {"taken": int(r["Count"])},
            TableName=name,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :e",
            ExpressionAttributeValues={":e": sentinel_pk(new)},
            Select="COUNT",
        )["Count"]
        if found:
            return False
        index = {"GSI1PK": sentinel_pk(new), "GSI1SK": user_pk(user)}
        if old is None:
            ctx.call(
                SIGN_UP,
                "PutItem",
                key=user_pk(user),
                detail={"user": user, "email": new, "op": op},
                TableName=name,
                Item={"PK": user_pk(user), "SK": PROFILE, "email": new, **index},
                ConditionExpression="attribute_not_exists(PK)",
            )
        else:
            ctx.call(
                CHANGE_EMAIL,
                "UpdateItem",
                key=user_pk(user),
                detail={"user": user, "email": new, "old": old, "op": op},
                TableName=name,
                Key={"PK": user_pk(user), "SK": PROFILE},
                UpdateExpression="SET email = :new, GSI1PK = :pk",
                ConditionExpression="email = :old",
                ExpressionAttributeValues={":old": old, ":new": new, ":pk": index["GSI1PK"]},
            )
        return True

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        items = table.scan_all()
        profiles = {i["PK"].removeprefix("USER#"): str(i["email"]) for i in items if i["SK"] == PROFILE}
        sentinels = {i["PK"].removeprefix("EMAIL#"): str(i["user_id"]) for i in items if i["SK"] == SENTINEL}
        frame = history.snapshot(detail=True)
        writes = frame[frame["action"].isin(WRITES)]
        invariants = [_no_shared_email(profiles, writes)]
        if options.variant == "sentinel":
            invariants += [
                _every_email_has_sentinel(profiles, sentinels),
                _no_orphan_sentinel(profiles, sentinels),
                _refused_change_changes_nothing(profiles, sentinels, writes),
            ]
        return invariants

    def walkthrough(self, walk: Any) -> None:
        name = walk.name
        walk.setup("TransactWriteItems", TransactItems=sign_up_items(name, "alice", "a@x.com"))
        taken = walk.call("TransactWriteItems", TransactItems=sign_up_items(name, "bob", "A@x.com"))
        walk.result("bob tries A@x.com (same email, different case)", _cancelled(taken))
        walk.setup("TransactWriteItems", TransactItems=sign_up_items(name, "bob", "b@x.com"))
        refused = walk.call("TransactWriteItems", TransactItems=change_items(name, "bob", "b@x.com", "a@x.com"))
        walk.result("bob changes email to a@x.com (taken)", _cancelled(refused))
        changed = walk.call("TransactWriteItems", TransactItems=change_items(name, "bob", "b@x.com", "bob@x.com"))
        walk.result("bob changes email to bob@x.com", _outcome(changed))
        owner = walk.read("GetItem", Key={"PK": sentinel_pk("bob@x.com"), "SK": SENTINEL})
        walk.result("Who owns bob@x.com?", owner.get("Item"))
        scan = walk.read("Scan")
        walk.result("All items", sorted(f"{i['PK']} | {i['SK']}" for i in scan["Items"]))


def _pick_email(ctx: ClientContext, avoid: str | None) -> str:
    """An email from the pool, in a random mix of cases, never the current one in another case."""
    pool = ctx.options["emails"]
    while True:
        base = f"u{ctx.rng.randrange(pool)}@x.com"
        if avoid is None or base != avoid.lower():
            return "".join(c.upper() if ctx.rng.random() < 0.3 else c for c in base)


def _current_email(ctx: ClientContext, user: str) -> str | None:
    """After an unknown outcome, the profile says which email the user really has."""
    item = ctx.call(
        "read-profile",
        "GetItem",
        key=user_pk(user),
        TableName=ctx.table.name,
        Key={"PK": user_pk(user), "SK": PROFILE},
        ConsistentRead=True,
    ).get("Item")
    return str(item["email"]) if item else None


def _cancelled(response: Any) -> Any:
    if isinstance(response, TransactionCanceled):
        return {"error": response.code, "reasons": response.reasons}
    return _outcome(response)


def _outcome(response: Any) -> str:
    from engine.record.calls import outcome

    return outcome(response)
