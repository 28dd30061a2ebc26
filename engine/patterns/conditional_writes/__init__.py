"""22 · Conditional writes: create-only, update-if-exists, business rules and a state machine, checked on the
server by a ConditionExpression, against the unguarded writes that overwrite, upsert and overdraw."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.conditional_writes.invariants import (
    BALANCE_NEVER_NEGATIVE,
    NO_GHOST,
    ONE_WINNER,
    PAID_ONCE,
    REFUSAL_RETURNS_ITEM,
    SPENDS_ADD_UP,
    SPENDS_ONLY_WHILE_ACTIVE,
    verdicts,
)
from engine.patterns.conditional_writes.shared import ACTIVE, PROFILE, SUSPENDED
from engine.patterns.conditional_writes.walkthrough import in_practice
from engine.record.calls import Ambiguous, ClientContext, ConditionFailed
from engine.record.history import History

# What the dashboard's view and the tests read: the invariant keys.
__all__ = [
    "BALANCE_NEVER_NEGATIVE",
    "NO_GHOST",
    "ONE_WINNER",
    "PAID_ONCE",
    "REFUSAL_RETURNS_ITEM",
    "SPENDS_ADD_UP",
    "SPENDS_ONLY_WHILE_ACTIVE",
    "ConditionalWrites",
]

DURATION_ORDERS = 100  # orders seeded for a run limited by time rather than by an op count


def user_pk(op: int) -> str:
    return f"USER#u{op}"


def member_pk(i: int) -> str:
    return f"USER#m{i}"


def order_pk(i: int) -> str:
    return f"ORDER#o{i}"


def order_count(options: RunOptions) -> int:
    return options.ops_per_client or DURATION_ORDERS


class ConditionalWrites(Pattern):
    name = "conditional-writes"
    seed = 22
    harm = Harm(
        "overwritten users, overdrafts, ghosts and double payments",
        (ONE_WINNER, BALANCE_NEVER_NEGATIVE, NO_GHOST, PAID_ONCE),
    )  # the sweep counts these per 1,000 ops
    title = "Conditional writes"
    problem = (
        "PutItem replaces whatever is there and UpdateItem creates a missing item (an upsert). Without "
        "guards we get accidental overwrites, 'ghost' items made by updates that should have failed, and "
        "broken business rules such as negative balances or orders paid twice."
    )
    solution = (
        "Put a ConditionExpression on the write; DynamoDB checks it atomically on the server and refuses "
        "with ConditionalCheckFailed: attribute_not_exists(PK) to create only, attribute_exists(PK) to "
        "update only, credits >= :a AND #s = :active for a rule, #s = :from for a state transition. "
        "ReturnValuesOnConditionCheckFailure=ALL_OLD hands back the item that said no."
    )
    variants = {
        "guarded": Variant("guarded", True, "every write carries its condition; refusals return the item (ALL_OLD)"),
        "unguarded": Variant(
            "unguarded",
            False,
            "plain PutItem/UpdateItem; the credit and state rules are checked in code after a "
            "read, so another client can change the item in between",
        ),
    }
    options = {
        "credits": Option("credits", 10, "credits each new user starts with (the seed's Alice has 10)", 0, 10**9),
        "max_spend": Option("max_spend", 5, "each spend takes 1..max_spend credits", 1, 10**6),
        "members": Option(
            "members", 20, "existing users that clients rename or close (fewer = more ghosts)", 1, 100_000
        ),
        "close_share": Option(
            "close_share", 0.2, "share of member ops that close (delete) instead of rename", 0.0, 1.0
        ),
        "suspend_share": Option(
            "suspend_share",
            0.1,
            "share of new users a client suspends instead of spending on them (0 = nobody is suspended)",
            0.0,
            1.0,
        ),
    }
    default_ops = 8

    def setup(self, table: Table, options: RunOptions) -> None:
        for i in range(options["members"]):
            table.put(
                {
                    "PK": member_pk(i),
                    "SK": PROFILE,
                    "name": f"member-{i}",
                    "credits": options["credits"],
                    "status": ACTIVE,
                }
            )
        for i in range(order_count(options)):
            table.put({"PK": order_pk(i), "SK": "ORDER", "status": "PENDING"})

    def client(self, ctx: ClientContext) -> None:
        guarded = ctx.variant == "guarded"
        orders = ctx.ops_per_client or DURATION_ORDERS
        for op in ctx.ops():
            scenes: list[tuple[Callable[[ClientContext, bool, int], None], int]] = [
                (self._create, op),
                (self._suspend_or_spend, op),
                (self._rename_or_close, op),
                (self._pay, op % orders),
            ]
            for scene, arg in scenes:
                if ctx.stopped:
                    return
                try:
                    scene(ctx, guarded, arg)
                except ConditionFailed:
                    pass  # the guard said no; verify reads the refusal and its ALL_OLD item from the history
                except Ambiguous:
                    pass  # outcome unknown (response lost): recorded as info, hedged by verify

    @staticmethod
    def _guard(params: dict[str, Any], guarded: bool, condition: str) -> dict[str, Any]:
        if guarded:
            params["ConditionExpression"] = condition
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return params

    def _create(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        """Every client tries to sign up the same new user: only the first may succeed."""
        pk = user_pk(op)
        item = {
            "PK": pk,
            "SK": PROFILE,
            "name": f"client-{ctx.client_id}",
            "credits": ctx.options["credits"],
            "status": ACTIVE,
        }
        params = self._guard(
            {"TableName": ctx.table.name, "Item": item, "ReturnValues": "ALL_OLD"}, guarded, "attribute_not_exists(PK)"
        )
        # ReturnValues=ALL_OLD on a put that succeeded says whether it replaced someone: the overwrite evidence.
        ctx.call(
            "create-user",
            "PutItem",
            key=pk,
            detail={"op": op},
            observe=_replaced,
            **params,
        )

    def _suspend_or_spend(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        """Now and then a client suspends the user the others are spending on, so suspends meet spends."""
        share = ctx.options["suspend_share"]
        # A share of 0 draws no random number, so the clients' choices are those of the runs before suspends.
        if share and ctx.rng.random() < share:
            self._suspend(ctx, guarded, op)
        else:
            self._spend(ctx, guarded, op)

    def _suspend(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        """active → suspended as a state change: guarded, only a user still active is suspended."""
        pk = user_pk(op)
        params: dict[str, Any] = {
            "TableName": ctx.table.name,
            "Key": {"PK": pk, "SK": PROFILE},
            "UpdateExpression": "SET #s = :suspended",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":suspended": SUSPENDED},
            "ReturnValues": "ALL_OLD",
        }
        if guarded:
            params["ExpressionAttributeValues"][":active"] = ACTIVE
            self._guard(params, True, "#s = :active")
        ctx.call(
            "suspend", "UpdateItem", key=pk, observe=lambda r: {"from": r.get("Attributes", {}).get("status")}, **params
        )

    def _spend(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        pk = user_pk(op)
        amount = ctx.rng.randint(1, ctx.options["max_spend"])
        params: dict[str, Any] = {
            "TableName": ctx.table.name,
            "Key": {"PK": pk, "SK": PROFILE},
            "UpdateExpression": "SET credits = credits - :a",
            "ExpressionAttributeValues": {":a": amount},
            # The status the spend landed on is the evidence that it met no suspend; without suspends the
            # request stays the one it always was.
            "ReturnValues": "ALL_NEW" if ctx.options["suspend_share"] else "UPDATED_NEW",
        }
        if guarded:
            params["ExpressionAttributeNames"] = {"#s": "status"}
            params["ExpressionAttributeValues"][":active"] = ACTIVE
            self._guard(params, True, "credits >= :a AND #s = :active")
        else:
            # The rule checked in code: right when read, possibly wrong by the time the write lands.
            item = ctx.call(
                "read-credits",
                "GetItem",
                key=pk,
                TableName=ctx.table.name,
                Key={"PK": pk, "SK": PROFILE},
                ConsistentRead=True,
            ).get("Item")
            if item is None or item["credits"] < amount or item.get("status") != ACTIVE:
                return
        ctx.call(
            "spend",
            "UpdateItem",
            key=pk,
            detail={"amount": amount},
            observe=_spent,
            **params,
        )

    def _rename_or_close(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        pk = member_pk(ctx.rng.randrange(ctx.options["members"]))
        key = {"PK": pk, "SK": PROFILE}
        if ctx.rng.random() < ctx.options["close_share"]:
            ctx.call("close", "DeleteItem", key=pk, TableName=ctx.table.name, Key=key)
            return
        params = self._guard(
            {
                "TableName": ctx.table.name,
                "Key": key,
                "UpdateExpression": "SET #n = :n",
                "ExpressionAttributeNames": {"#n": "name"},
                "ExpressionAttributeValues": {":n": f"renamed-by-{ctx.client_id}"},
                "ReturnValues": "ALL_OLD",
            },
            guarded,
            "attribute_exists(PK)",
        )
        # No old attributes back from a successful update means it created the item: a ghost.
        ctx.call("rename", "UpdateItem", key=pk, observe=lambda r: {"created": "Attributes" not in r}, **params)

    def _pay(self, ctx: ClientContext, guarded: bool, i: int) -> None:
        pk = order_pk(i)
        key = {"PK": pk, "SK": "ORDER"}
        params: dict[str, Any] = {
            "TableName": ctx.table.name,
            "Key": key,
            "UpdateExpression": "SET #s = :to, paidBy = :me",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":to": "PAID", ":me": ctx.client_id},
            "ReturnValues": "ALL_OLD",
        }
        if guarded:
            params["ExpressionAttributeValues"][":from"] = "PENDING"
            self._guard(params, True, "#s = :from")
        else:
            item = ctx.call(
                "read-order", "GetItem", key=pk, TableName=ctx.table.name, Key=key, ConsistentRead=True
            ).get("Item")
            if item is None or item.get("status") != "PENDING":
                return
        ctx.call(
            "pay", "UpdateItem", key=pk, observe=lambda r: {"from": r.get("Attributes", {}).get("status")}, **params
        )

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        return verdicts(table, history, options)

    def walkthrough(self, walk: Any) -> None:
        in_practice(walk)


def _spent(response: dict[str, Any]) -> dict[str, Any]:
    """The balance a spend left, and the status it landed on when the response carries it (ALL_NEW)."""
    new = response["Attributes"]
    return {"credits_after": int(new["credits"])} | ({"status_after": new["status"]} if "status" in new else {})


def _replaced(answer: dict[str, Any]) -> dict[str, Any]:
    """Whether a create replaced a user, and the credits the replaced user had left: fewer than a new user's
    prove a spend had landed on the item this create wiped, however the two calls overlapped in time."""
    old = answer.get("Attributes")
    if old is None:
        return {"overwrote": False}
    return {"overwrote": True, **({"old_credits": int(old["credits"])} if "credits" in old else {})}
