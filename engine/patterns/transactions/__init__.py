"""25 · Transactions: an order is three writes (order, stock, order count) made all-or-nothing with
TransactWriteItems and a ClientRequestToken, against the same three writes sent one by one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import LAST_ATTEMPT, GiveUp, Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.transactions.invariants import (
    COUNTS_AGREE,
    NO_ORPHAN_ORDER,
    RESEND_APPLIES_ONCE,
    STOCK_NEVER_NEGATIVE,
    verdicts,
)
from engine.patterns.transactions.shared import PROFILE, STOCK, place_order_items, snapshot_items
from engine.patterns.transactions.walkthrough import in_practice
from engine.record.calls import Ambiguous, ClientContext, ConditionFailed, TransactionCanceled
from engine.record.history import History

# What the dashboard's view and the tests read: the invariant keys.
__all__ = [
    "COUNTS_AGREE",
    "MAX_ATTEMPTS",
    "NO_ORPHAN_ORDER",
    "RESEND_APPLIES_ONCE",
    "STOCK_NEVER_NEGATIVE",
    "Transactions",
]

MAX_ATTEMPTS = 8  # per transaction, for conflicts and unknown outcomes; the token makes resending safe


def customer_pk(client_id: int) -> str:
    return f"USER#c{client_id}"


@dataclass(frozen=True, slots=True)
class OrderRef:
    customer: str
    order: str
    qty: int

    @property
    def name(self) -> str:
        return f"{self.customer}/{self.order}"


class Transactions(Pattern):
    name = "transactions"
    seed = 25
    harm = Harm(
        "negative stock, unbalanced or leaked orders and double applies",
        (STOCK_NEVER_NEGATIVE, COUNTS_AGREE, NO_ORPHAN_ORDER, RESEND_APPLIES_ONCE),
    )  # the sweep counts these per 1,000 ops
    gives_up = GiveUp(
        "orders",
        f"each cancelled for a colliding transaction (TransactionConflict) on every one of its {MAX_ATTEMPTS} sends",
        lambda action, code, detail: (
            action in ("place-order", "resend-order")
            and code == "TransactionCanceledException"
            and "TransactionConflict" in (detail.get("reasons") or ())
        ),
    )
    title = "Transactions"
    problem = (
        "Placing an order touches three items: create the order, decrement the stock, bump the customer's "
        "order count. If one write succeeds and another fails (or the client dies in between), the data "
        "is left inconsistent: an order without stock taken, or stock taken without an order."
    )
    solution = (
        "TransactWriteItems makes the writes all-or-nothing, each with its own condition; a cancellation "
        "names the failing action in CancellationReasons. A ClientRequestToken makes a resend after a lost "
        "response apply once, and TransactGetItems reads several items as one consistent snapshot."
    )
    variants = {
        "transact": Variant(
            "transact", True, "one TransactWriteItems with a ClientRequestToken; resends reuse the token"
        ),
        "separate-writes": Variant(
            "separate-writes",
            False,
            "stock checked in code, then the three writes one by one; clients may crash "
            "between them, and a resend repeats the writes",
        ),
    }
    options = {
        "stock": Option("stock", 200, "widgets in stock at the start (a default run sells out part way)", 0, 10**9),
        "max_qty": Option("max_qty", 3, "each order asks for 1..max_qty widgets", 1, 10**6),
        "resend_share": Option(
            "resend_share", 0.2, "share of placed orders the client sends again, as after a lost response", 0.0, 1.0
        ),
        "crash_share": Option(
            "crash_share",
            0.0,
            "share of orders where the client crashes mid-placement: between the writes in "
            "separate-writes (0.05 there by default), after the transaction in transact",
            0.0,
            1.0,
        ),
    }
    default_ops = 8
    business_refusals = {
        "place-order": "TransactionCanceledException",  # stock >= :q: out of stock
        "resend-order": "TransactionCanceledException",
    }

    @classmethod
    def variant_default(cls, variant: str, option: str) -> Any:
        if variant == "separate-writes" and option == "crash_share":
            return 0.05
        return super().variant_default(variant, option)

    def setup(self, table: Table, options: RunOptions) -> None:
        table.put({**STOCK, "stock": options["stock"]})
        for i in range(options.threads):
            table.put({"PK": customer_pk(i), "SK": PROFILE, "orderCount": 0})

    def client(self, ctx: ClientContext) -> None:
        place = self._transact if ctx.variant == "transact" else self._separate
        last_count: int | None = 0
        for op in ctx.ops():
            ref = OrderRef(customer_pk(ctx.client_id), f"o{op}", ctx.rng.randint(1, ctx.options["max_qty"]))
            placed = place(ctx, ref, resend=False)
            if ctx.stopped:
                return
            if placed and ctx.rng.random() < ctx.options["resend_share"]:
                place(ctx, ref, resend=True)
            last_count = self._snapshot(ctx, ref, placed, last_count)

    @staticmethod
    def _crash_point(ctx: ClientContext, points: tuple[str, ...]) -> str | None:
        """Where this placement will crash, if it is one of the crash_share that do."""
        return ctx.rng.choice(points) if ctx.rng.random() < ctx.options["crash_share"] else None

    @staticmethod
    def _crash_here(ctx: ClientContext, ref: OrderRef, crash: str | None, where: str) -> None:
        if crash == where:
            ctx.crash(f"order {ref.name}: {where}")

    def _transact(self, ctx: ClientContext, ref: OrderRef, *, resend: bool) -> bool | None:
        """True placed, False cancelled, None unknown. Conflicts and lost responses resend the same token."""
        crash = self._crash_point(ctx, ("after the transaction",)) if not resend else None
        action = "resend-order" if resend else "place-order"
        # A token is remembered for 10 minutes across the account: this run's table name keeps it ours.
        nonce = hashlib.blake2b(ctx.table.name.encode(), digest_size=4).hexdigest()
        params = {
            "TransactItems": place_order_items(ctx.table.name, ref.customer, ref.order, ref.qty),
            "ClientRequestToken": f"{nonce}-{ref.customer.removeprefix('USER#')}-{ref.order}",
        }
        unknown = False  # a send whose answer was lost may have applied; one that was cancelled did not
        for attempt in range(MAX_ATTEMPTS):
            if ctx.stopped:
                return None
            try:
                ctx.call(
                    action,
                    "TransactWriteItems",
                    key=ref.name,
                    detail={
                        "customer": ref.customer,
                        "order": ref.order,
                        "qty": ref.qty,
                        "attempt": attempt + 1,
                        LAST_ATTEMPT: attempt + 1 == MAX_ATTEMPTS,
                    },
                    **params,
                )
            except TransactionCanceled as e:
                if "TransactionConflict" not in e.reasons:
                    return False  # a condition failed; e.reasons (recorded) names which action
                # As the sentinel's: a commit window is milliseconds long and the item stays hot, so 2-16 ms of
                # jitter gave up a third of the orders at 16 threads under aws-like. No sleep after the last send.
                if attempt + 1 < MAX_ATTEMPTS:
                    ctx.backoff(attempt, 0.005, 0.5)
                continue
            except Ambiguous:
                unknown = True
                continue  # did it apply? the same token answers without applying twice
            self._crash_here(ctx, ref, crash, "after the transaction")
            return True
        # Given up: every send was cancelled (known not to have applied), unless one's answer was lost.
        return None if unknown else False

    def _separate(self, ctx: ClientContext, ref: OrderRef, *, resend: bool) -> bool | None:
        """The three writes one by one; the stock rule is checked in code from a read."""
        crash = self._crash_point(ctx, ("after the order, before the stock", "after the stock, before the count"))
        name = ctx.table.name
        detail = {"customer": ref.customer, "order": ref.order, "qty": ref.qty, "resend": resend}
        try:
            stock = ctx.call("read-stock", "GetItem", key="stock", TableName=name, Key=STOCK, ConsistentRead=True)[
                "Item"
            ]["stock"]
            if stock < ref.qty:
                return False
            try:
                ctx.call(
                    "put-order",
                    "PutItem",
                    key=ref.name,
                    detail=detail,
                    TableName=name,
                    Item={"PK": ref.customer, "SK": f"ORDER#{ref.order}", "qty": ref.qty},
                    ConditionExpression="attribute_not_exists(PK)",
                )
            except ConditionFailed:
                if not resend:
                    return False
                # The usual retry bug: "the order is there, so my first try got that far; finish the rest".
            self._crash_here(ctx, ref, crash, "after the order, before the stock")
            ctx.call(
                "take-stock",
                "UpdateItem",
                key=ref.name,
                detail=detail,
                observe=lambda r: {"stock_after": int(r["Attributes"]["stock"])},
                TableName=name,
                Key=STOCK,
                UpdateExpression="SET stock = stock - :q",
                ExpressionAttributeValues={":q": ref.qty},
                ReturnValues="UPDATED_NEW",
            )
            self._crash_here(ctx, ref, crash, "after the stock, before the count")
            ctx.call(
                "count-order",
                "UpdateItem",
                key=ref.name,
                detail=detail,
                TableName=name,
                Key={"PK": ref.customer, "SK": PROFILE},
                UpdateExpression="ADD orderCount :one",
                ExpressionAttributeValues={":one": 1},
            )
        except Ambiguous:
            return None
        return True

    @staticmethod
    def _snapshot(ctx: ClientContext, ref: OrderRef, placed: bool | None, last_count: int | None) -> int | None:
        """Stock, this customer's profile and this order, read as one: does the count match what we were told?

        Returns the orderCount read, or None when none was (stopped, or still colliding after MAX_ATTEMPTS):
        the next snapshot then has no count to expect rather than a wrong one.
        """
        expected = None if placed is None or last_count is None else last_count + int(placed)

        def observe(response: dict[str, Any]) -> dict[str, Any]:
            stock, profile, order = (r.get("Item") for r in response["Responses"])
            return {
                "stock": int(stock["stock"]),
                "orderCount": int(profile["orderCount"]),
                "order_present": order is not None,
            }

        for attempt in range(MAX_ATTEMPTS):
            try:
                response = ctx.call(
                    "snapshot",
                    "TransactGetItems",
                    key=ref.name,
                    observe=observe,
                    detail={"order": ref.order, "placed": placed, "expected_count": expected, "attempt": attempt + 1},
                    TransactItems=snapshot_items(ctx.table.name, ref.customer, ref.order),
                )
            except TransactionCanceled as e:
                if "TransactionConflict" not in e.reasons:
                    raise
                # DynamoDB cancels a read that overlaps a transaction writing the same items (another client's
                # order takes the shared stock): nothing is wrong, the read is retried once that one is done.
                if not ctx.backoff(attempt):
                    return None
                continue
            return int(response["Responses"][1]["Item"]["orderCount"])
        return None

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        return verdicts(table, history, options)

    def walkthrough(self, walk: Any) -> None:
        in_practice(walk)
