"""22 · Conditional writes: create-only, update-if-exists, business rules and a state machine, checked on the
server by a ConditionExpression, against the unguarded writes that overwrite, upsert and overdraw."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.calls import Ambiguous, ClientContext, ConditionFailed
from engine.history import History
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.tables import Table

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_WINNER = "one-winner-per-new-user"
BALANCE_NEVER_NEGATIVE = "balance-never-below-zero"
SPENDS_ADD_UP = "spends-add-up-to-credits-taken"
NO_GHOST = "update-if-exists-creates-no-ghost"
PAID_ONCE = "pending-paid-exactly-once"
REFUSAL_RETURNS_ITEM = "refusals-return-the-item-as-it-was"

PROFILE = "PROFILE"
ACTIVE = "active"
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
                (self._spend, op),
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
            observe=lambda r: {"overwrote": "Attributes" in r},
            **params,
        )

    def _spend(self, ctx: ClientContext, guarded: bool, op: int) -> None:
        pk = user_pk(op)
        amount = ctx.rng.randint(1, ctx.options["max_spend"])
        params: dict[str, Any] = {
            "TableName": ctx.table.name,
            "Key": {"PK": pk, "SK": PROFILE},
            "UpdateExpression": "SET credits = credits - :a",
            "ExpressionAttributeValues": {":a": amount},
            "ReturnValues": "UPDATED_NEW",
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
            observe=lambda r: {"credits_after": int(r["Attributes"]["credits"])},
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
        calls = _Calls.of(history, table, options)
        return [
            _one_winner(calls),
            _balance_never_negative(calls),
            _spends_add_up(calls),
            _no_ghost(calls),
            _paid_once(calls),
            _refusal_returns_item(calls),
        ]

    def walkthrough(self, walk: Any) -> None:
        from engine.calls import outcome

        alice = {"PK": "USER#alice", "SK": PROFILE}
        create = {
            "Item": {**alice, "name": "Alice", "credits": 10, "status": ACTIVE},
            "ConditionExpression": "attribute_not_exists(PK)",
        }
        walk.result("Create alice (first time)", outcome(walk.call("PutItem", **create)))
        walk.result("Create alice again (would overwrite)", outcome(walk.call("PutItem", **create)))
        bob = walk.call(
            "UpdateItem",
            Key={"PK": "USER#bob", "SK": PROFILE},
            ConditionExpression="attribute_exists(PK)",
            UpdateExpression="SET #n = :n",
            ExpressionAttributeNames={"#n": "name"},
            ExpressionAttributeValues={":n": "Bob"},
        )
        walk.result("Update bob (doesn't exist)", outcome(bob))

        def spend(amount: int) -> Any:
            return walk.call(
                "UpdateItem",
                Key=alice,
                UpdateExpression="SET credits = credits - :a",
                ConditionExpression="credits >= :a AND #s = :active",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":a": amount, ":active": ACTIVE},
            )

        walk.result("Spend 7 credits", outcome(spend(7)))
        walk.result("Spend 7 more (only 3 left)", outcome(spend(7)))
        failed = walk.call(
            "UpdateItem",
            Key=alice,
            UpdateExpression="SET credits = credits - :a",
            ConditionExpression="credits >= :a",
            ExpressionAttributeValues={":a": 7},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        walk.result("Item at failure time", failed.item)
        if failed.item is None:
            walk.note(
                "(this server returned no item: it ignores ReturnValuesOnConditionCheckFailure, as DynamoDB "
                "Local 1.x does; AWS returns the item as it was)"
            )


# -- the invariants, one function each ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Calls:
    """The calls and the final items the invariants read, picked out of the history and the table once."""

    calls: list[tuple[int, str, str, str, str, dict[str, Any]]]  # (seq, action, key, outcome, error, detail)
    attempts: dict[int, int]  # attempts each call made, by seq
    final: dict[str, dict[str, Any]]  # the items at the end, by PK
    credits: int  # each new user's starting credits

    @classmethod
    def of(cls, history: History, table: Table, options: RunOptions) -> _Calls:
        frame = history.snapshot(detail=True)
        return cls(
            calls=list(
                zip(
                    frame["seq"].astype(int),
                    frame["action"].astype(str),
                    frame["key"].astype(str),
                    frame["outcome"].astype(str),
                    frame["error"].astype(str),
                    frame["detail"],
                )
            ),
            attempts=dict(zip(frame["seq"].astype(int), frame["retries"].astype(int) + 1)),
            final={item["PK"]: item for item in table.scan_all()},
            credits=options["credits"],
        )

    def acked(self, name: str) -> list[tuple[int, str, dict[str, Any]]]:
        return [(seq, key, d) for seq, a, key, outcome, _, d in self.calls if a == name and outcome == "ok"]

    def overwrites(self) -> list[int]:
        """Acknowledged creates that replaced a user (their ALL_OLD came back)."""
        return [seq for seq, _, d in self.acked("create-user") if d.get("overwrote")]

    def user_items(self) -> dict[str, dict[str, Any]]:
        """The users the clients created (not the members set up before the run)."""
        return {pk: item for pk, item in self.final.items() if pk.startswith("USER#u")}


def _one_winner(c: _Calls) -> Invariant:
    creates = c.acked("create-user")
    users = {key for _, a, key, *_ in c.calls if a == "create-user"}
    overwrites = c.overwrites()
    return Invariant(
        name="one winner per new user",
        key=ONE_WINNER,
        holds=not overwrites,
        expected=f"{len(users)} users, one create each",
        observed=f"{len(creates)} creates acknowledged",
        violations=len(overwrites),
        calls=tuple(overwrites),
        explanation=(
            f"{len(overwrites)} acknowledged creates replaced a user another client had already created"
            if overwrites
            else "attribute_not_exists(PK) let exactly one create per user through; the others got "
            "ConditionalCheckFailed"
        ),
    )


def _balance_never_negative(c: _Calls) -> Invariant:
    spends = c.acked("spend")
    negative = [seq for seq, _, d in spends if d.get("credits_after", 0) < 0]
    lowest = min(
        [int(i["credits"]) for i in c.user_items().values()]
        + [d["credits_after"] for *_, d in spends if "credits_after" in d],
        default=c.credits,
    )
    return Invariant(
        name="balance never below zero",
        key=BALANCE_NEVER_NEGATIVE,
        holds=lowest >= 0,
        expected="≥ 0",
        observed=lowest,
        violations=len(negative),
        calls=tuple(negative),
        explanation=(
            f"{len(negative)} spends left a balance below zero: the credits were checked in code, "
            "and other spends landed between the read and the write"
            if lowest < 0
            else "credits >= :a refused every spend the balance could not cover"
        ),
    )


def _spends_add_up(c: _Calls) -> Invariant:
    spends = c.acked("spend")
    user_items = c.user_items()
    spent: Counter[str] = Counter()
    for _, key, d in spends:
        spent[key] += d["amount"]
    maybe: Counter[str] = Counter()  # lost-response spends: applied up to once per attempt, we cannot tell
    for seq, a, key, outcome, _, d in c.calls:
        if a == "spend" and outcome == "info":
            maybe[key] += d["amount"] * c.attempts[seq]
    off_users = {
        pk for pk, item in user_items.items() if not 0 <= c.credits - int(item["credits"]) - spent[pk] <= maybe[pk]
    }
    unknown_spends = sum(1 for _, a, _, outcome, *_ in c.calls if a == "spend" and outcome == "info")
    hedge = f"; {unknown_spends} spends had an unknown outcome" if unknown_spends else ""
    return Invariant(
        name="spends add up to credits taken",
        key=SPENDS_ADD_UP,
        holds=not off_users,
        expected=sum(spent.values()),
        observed=sum(c.credits - int(i["credits"]) for i in user_items.values()),
        violations=len(off_users),
        calls=tuple(seq for seq, key, _ in spends if key in off_users),
        explanation=(
            f"on {len(off_users)} users the final balance disagrees with the spends that won"
            + (": a later create overwrote the user and reset its credits" if c.overwrites() else "")
            if off_users
            else "for every user, initial credits minus the final balance is exactly what the acknowledged spends took"
        )
        + hedge,
    )


def _no_ghost(c: _Calls) -> Invariant:
    ghost_writes = [seq for seq, _, d in c.acked("rename") if d.get("created")]
    ghosts = [pk for pk, item in c.final.items() if pk.startswith("USER#m") and "status" not in item]
    return Invariant(
        name="update-if-exists creates no ghost",
        key=NO_GHOST,
        holds=not ghost_writes and not ghosts,
        expected=0,
        observed=len(ghosts),
        violations=len(ghost_writes),
        calls=tuple(ghost_writes),
        explanation=(
            f"{len(ghost_writes)} renames of closed users created half-empty items; {len(ghosts)} "
            "are left in the table with a name but no credits or status"
            if ghost_writes or ghosts
            else "attribute_exists(PK) refused every rename of a closed user"
        ),
    )


def _paid_once(c: _Calls) -> Invariant:
    pays = c.acked("pay")
    double = [seq for seq, _, d in pays if d.get("from") == "PAID"]
    paid = sum(1 for pk, item in c.final.items() if pk.startswith("ORDER#") and item["status"] == "PAID")
    return Invariant(
        name="PENDING → PAID exactly once",
        key=PAID_ONCE,
        holds=not double,
        expected=f"{paid} payments (one per order paid)",
        observed=f"{len(pays)} payments acknowledged",
        violations=len(double),
        calls=tuple(double),
        explanation=(
            f"{len(double)} payments went to orders that were already PAID: both clients read "
            "PENDING before either wrote"
            if double
            else "#s = :from let exactly one payment per order through"
        ),
    )


def _refusal_returns_item(c: _Calls) -> Invariant:
    refusals = [
        (seq, a, d)
        for seq, a, _, outcome, error, d in c.calls
        if outcome == "fail" and error == "ConditionalCheckFailedException"
    ]
    unexplained = [seq for seq, a, d in refusals if not _refusal_explained(a, d)]
    # A server that ignores ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x) refuses correctly but
    # hands back no item; say so rather than blame the condition.
    itemless = sum(1 for _, a, d in refusals if a in ("create-user", "spend", "pay") and d.get("old_item") is None)
    return Invariant(
        name="refusals return the item as it was",
        key=REFUSAL_RETURNS_ITEM,
        holds=not unexplained,
        expected=len(refusals),
        observed=len(refusals) - len(unexplained),
        violations=len(unexplained),
        calls=tuple(unexplained),
        explanation=(
            "no write was refused: nothing was guarded"
            if not refusals
            else f"{itemless} refusals came back without the item: this server ignores "
            "ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x does; AWS and DynamoDB Local "
            "2.x return it)"
            if itemless == len(unexplained) and itemless
            else f"{len(unexplained)} refusals came back with an item that meets the condition"
            if unexplained
            else f"each of the {len(refusals)} refused writes carries its ALL_OLD item, and that item "
            "breaks the condition (user taken, member closed, too few credits, already paid)"
        ),
    )


def _refusal_explained(action: str, detail: dict[str, Any]) -> bool:
    """Whether the ALL_OLD item a refused call returned really breaks that call's condition."""
    old = detail.get("old_item")
    if action == "create-user":
        return old is not None
    if action == "rename":
        return old is None  # the member was closed: there is no old item to return
    if action == "spend":
        return old is not None and (old["credits"] < detail["amount"] or old.get("status") != ACTIVE)
    if action == "pay":
        return old is not None and old.get("status") != "PENDING"
    return True
