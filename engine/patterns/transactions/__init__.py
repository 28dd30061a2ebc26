"""25 · Transactions: an order is three writes (order, stock, order count) made all-or-nothing with
TransactWriteItems and a ClientRequestToken, against the same three writes sent one by one."""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.calls import Ambiguous, ClientContext, ConditionFailed, TransactionCanceled
from engine.history import History
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.tables import Table

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
STOCK_NEVER_NEGATIVE = "stock-never-negative"
COUNTS_AGREE = "orders-written-stock-taken-ordercount"
NO_ORPHAN_ORDER = "no-order-item-from-a-cancelled-or-unfinished-placement"
RESEND_APPLIES_ONCE = "a-resent-order-applies-once"

STOCK = {"PK": "PRODUCT#widget", "SK": "STOCK"}
PROFILE = "PROFILE"
MAX_ATTEMPTS = 5  # per transaction, for conflicts and unknown outcomes; the token makes resending safe


def customer_pk(client_id: int) -> str:
    return f"USER#c{client_id}"


def place_order_items(table: str, customer: str, order: str, qty: int) -> list[dict[str, Any]]:
    """The seed's three actions: create the order, take the stock if there is enough, count the order."""
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": customer, "SK": f"ORDER#{order}", "qty": qty},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": STOCK,
                "UpdateExpression": "SET stock = stock - :q",
                "ConditionExpression": "stock >= :q",
                "ExpressionAttributeValues": {":q": qty},
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": {"PK": customer, "SK": PROFILE},
                "UpdateExpression": "ADD orderCount :one",
                "ExpressionAttributeValues": {":one": 1},
            }
        },
    ]


def snapshot_items(table: str, customer: str, order: str) -> list[dict[str, Any]]:
    keys = (STOCK, {"PK": customer, "SK": PROFILE}, {"PK": customer, "SK": f"ORDER#{order}"})
    return [{"Get": {"TableName": table, "Key": key}} for key in keys]


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
        for attempt in range(MAX_ATTEMPTS):
            if ctx.stopped:
                return None
            try:
                ctx.call(
                    action,
                    "TransactWriteItems",
                    key=ref.name,
                    detail={"customer": ref.customer, "order": ref.order, "qty": ref.qty, "attempt": attempt + 1},
                    **params,
                )
            except TransactionCanceled as e:
                if "TransactionConflict" not in e.reasons:
                    return False  # a condition failed; e.reasons (recorded) names which action
                ctx.backoff(attempt)
                continue
            except Ambiguous:
                continue  # did it apply? the same token answers without applying twice
            self._crash_here(ctx, ref, crash, "after the transaction")
            return True
        return None

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
        orders = _Orders.of(history, table, options)
        return [
            _stock_never_negative(orders),
            _counts_agree(orders),
            _no_orphan_order(orders),
            _resend_applies_once(orders),
        ]

    def walkthrough(self, walk: Any) -> None:
        walk.table.put({**STOCK, "stock": 3})
        walk.table.put({"PK": "USER#alice", "SK": PROFILE, "orderCount": 0})
        # A fresh token per replay: a replay on the same server within 10 minutes must not hit the old one.
        suffix = uuid.uuid4().hex[:8]
        for order, qty in (("o1", 2), ("o2", 5)):
            response = walk.call(
                "TransactWriteItems",
                TransactItems=place_order_items(walk.name, "USER#alice", order, qty),
                ClientRequestToken=f"place-order-{order}-{suffix}",
            )
            if isinstance(response, TransactionCanceled):
                walk.result(f"Order {order} (qty {qty}) cancelled - per-item reasons", response.reasons)
            else:
                walk.result(f"Order {order} (qty {qty}) succeeded")
        snapshot = walk.call("TransactGetItems", TransactItems=snapshot_items(walk.name, "USER#alice", "o2"))
        walk.result("TransactGetItems: stock, profile, ORDER#o2", [r.get("Item") for r in snapshot["Responses"]])


# -- the invariants, one function each ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Orders:
    """The calls and the final items the invariants read, picked out of the history and the table once."""

    calls: list[tuple[int, str, str, str, dict[str, Any]]]  # (seq, action, outcome, error, detail) per call
    stock: int  # at the start
    final_stock: int
    orders: dict[str, int]  # order items in the table at the end: qty by customer/order
    counts: dict[str, int]  # orderCount by customer
    transact: bool

    @classmethod
    def of(cls, history: History, table: Table, options: RunOptions) -> _Orders:
        frame = history.snapshot(detail=True)
        items = table.scan_all()
        return cls(
            calls=list(
                zip(
                    frame["seq"].astype(int),
                    frame["action"].astype(str),
                    frame["outcome"].astype(str),
                    frame["error"].astype(str),
                    frame["detail"],
                )
            ),
            stock=options["stock"],
            final_stock=int(next(i["stock"] for i in items if i["PK"] == STOCK["PK"])),
            orders={
                f"{i['PK']}/{i['SK'].removeprefix('ORDER#')}": int(i["qty"])
                for i in items
                if i["SK"].startswith("ORDER#")
            },
            counts={i["PK"]: int(i.get("orderCount", 0)) for i in items if i["SK"] == PROFILE},
            transact=options.variant == "transact",
        )

    def acked(self, action: str) -> list[tuple[int, dict[str, Any]]]:
        return [(seq, d) for seq, a, outcome, _, d in self.calls if a == action and outcome == "ok"]

    def puts(self) -> dict[str, int]:
        """The separate writes' acknowledged order puts: the (last) put's seq by order."""
        return {_order_of(d): seq for seq, d in self.acked("put-order")}


def _order_of(d: dict[str, Any]) -> str:
    return f"{d['customer']}/{d['order']}"


def _stock_never_negative(o: _Orders) -> Invariant:
    takes, snapshots = o.acked("take-stock"), o.acked("snapshot")
    neg_writes = [seq for seq, d in takes if d.get("stock_after", 0) < 0]
    neg_snaps = [seq for seq, d in snapshots if d.get("stock", 0) < 0]
    lowest = min(
        [o.final_stock]
        + [d["stock_after"] for _, d in takes if "stock_after" in d]
        + [d["stock"] for _, d in snapshots if "stock" in d]
    )
    return Invariant(
        name="stock never negative",
        key=STOCK_NEVER_NEGATIVE,
        holds=lowest >= 0,
        expected="≥ 0",
        observed=lowest,
        violations=len(neg_writes) or len(neg_snaps) or int(o.final_stock < 0),
        calls=tuple(neg_writes or neg_snaps),
        explanation=(
            f"{len(neg_writes)} stock takes drove the stock below zero: clients checked it in "
            "code, then other orders took it before their write landed"
            if lowest < 0
            else "stock >= :q inside the transaction refused every order the stock could not cover"
            if o.transact
            else "the stock happened not to go below zero in this run"
        ),
    )


def _counts_agree(o: _Orders) -> Invariant:
    taken = o.stock - o.final_stock
    units = sum(o.orders.values())
    per_customer = Counter(name.split("/")[0] for name in o.orders)
    count_off = sum(abs(o.counts.get(c, 0) - per_customer.get(c, 0)) for c in o.counts.keys() | per_customer.keys())
    # Per order, what the separate writes did (the transaction does all three or none, so it has no rows here).
    takes = Counter(_order_of(d) for _, d in o.acked("take-stock"))
    puts = o.puts()
    no_take = [order for order in o.orders if order in puts and takes[order] == 0]
    allowed = {order: 1 if order in o.orders else 0 for order in takes}
    extra = sum(max(0, n - allowed[order]) for order, n in takes.items())
    extra_rows = [seq for seq, d in o.acked("take-stock") if takes[_order_of(d)] > allowed[_order_of(d)]]
    balanced = taken == units and count_off == 0
    unbalanced = [
        part
        for part in (
            f"{len(no_take)} orders without stock taken" if no_take else "",
            f"{extra} stock takes beyond one per order" if extra else "",
            f"orderCount off by {count_off}" if count_off else "",
            f"stock taken {taken} ≠ {units} units ordered" if taken != units and not (no_take or extra) else "",
        )
        if part
    ]
    return Invariant(
        name="orders written = stock taken = orderCount",
        key=COUNTS_AGREE,
        holds=balanced,
        expected=f"{units} units in {len(o.orders)} orders",
        observed=f"stock taken {taken}, orderCount {sum(o.counts.values())}",
        violations=(len(no_take) + extra or int(taken != units)) + count_off,
        calls=tuple([puts[order] for order in no_take] + extra_rows),
        explanation=(
            "; ".join(unbalanced)
            if unbalanced
            else "every order took its stock and counted once, and nothing else moved"
        ),
    )


def _no_orphan_order(o: _Orders) -> Invariant:
    puts = o.puts()
    finished = {_order_of(d) for _, d in o.acked("count-order")}
    placed = {_order_of(d) for _, d in o.acked("place-order") + o.acked("resend-order")}
    cancelled = [
        (seq, _order_of(d), tuple(d.get("reasons", ())))
        for seq, a, outcome, error, d in o.calls
        if a == "place-order" and error == "TransactionCanceledException"
    ]
    leaked = [seq for seq, order, _ in cancelled if order in o.orders and order not in placed]
    unfinished = [puts[order] for order in o.orders if order in puts and order not in finished]
    seen_leaks = [seq for seq, d in o.acked("snapshot") if d.get("placed") is False and d.get("order_present")]
    reasons = Counter(r for *_, r in cancelled)
    return Invariant(
        name="no order item from a cancelled or unfinished placement",
        key=NO_ORPHAN_ORDER,
        holds=not leaked and not unfinished and not seen_leaks,
        expected=0,
        observed=len(leaked) + len(unfinished),
        violations=len(leaked) + len(unfinished) + len(seen_leaks),
        calls=tuple(leaked + unfinished + seen_leaks),
        explanation=(
            f"{len(unfinished)} orders were written by clients that died before finishing, "
            "left without their stock or count"
            if unfinished
            else f"{len(leaked) + len(seen_leaks)} cancelled orders left an order item"
            if leaked or seen_leaks
            else f"{len(cancelled)} transactions were cancelled (reasons "
            f"{', '.join(f'{list(r)} ×{n}' for r, n in reasons.items())}) and none left an item; "
            "snapshots showed their orders as null"
            if cancelled
            else "no placement was cancelled or left half-done"
        ),
    )


def _resend_applies_once(o: _Orders) -> Invariant:
    resent = {
        _order_of(d) for _, a, _, _, d in o.calls if a == "resend-order" or (a == "put-order" and d.get("resend"))
    }
    doubled = [
        seq
        for seq, d in o.acked("snapshot")
        if d.get("expected_count") is not None and d.get("orderCount") != d["expected_count"]
    ]
    return Invariant(
        name="a resent order applies once",
        key=RESEND_APPLIES_ONCE,
        holds=not doubled,
        expected=f"{len(resent)} resent orders counted once",
        observed=f"{len(resent) - len(doubled)} once, {len(doubled)} twice",
        violations=len(doubled),
        calls=tuple(doubled),
        explanation=(
            f"{len(doubled)} resends were applied again: the snapshot after the resend shows "
            "orderCount one higher than the orders the client placed"
            if doubled
            else "no order was resent in this run"
            if not resent
            else "the resent transactions carried the same ClientRequestToken, so DynamoDB answered "
            "without applying them again"
            if o.transact
            else "no resend was applied twice in this run"
        ),
    )
