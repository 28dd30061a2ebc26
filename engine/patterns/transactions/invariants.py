"""The invariants of transactions: stock never negative, orders = stock taken = orderCount, no order item left
by a cancelled or unfinished placement, a resent order applied once; one function each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import Invariant, RunCalls, RunOptions, call_rows
from engine.patterns.transactions.shared import PROFILE, STOCK, STOCK_ACTION
from engine.record.history import History
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
STOCK_NEVER_NEGATIVE = "stock-never-negative"
COUNTS_AGREE = "orders-written-stock-taken-ordercount"
NO_ORPHAN_ORDER = "no-order-item-from-a-cancelled-or-unfinished-placement"
RESEND_APPLIES_ONCE = "a-resent-order-applies-once"


def verdicts(table: Table, history: History, options: RunOptions) -> list[Invariant]:
    """Every invariant of the run, read from the table after it and from its history."""
    orders = _Orders.of(history, table, options)
    return [
        _stock_never_negative(orders),
        _counts_agree(orders),
        _no_orphan_order(orders),
        _resend_applies_once(orders),
    ]


@dataclass(frozen=True)
class _Orders(RunCalls):
    """The calls and the final items the invariants read, picked out of the history and the table once."""

    stock: int  # at the start
    final_stock: int
    orders: dict[str, int]  # order items in the table at the end: qty by customer/order
    counts: dict[str, int]  # orderCount by customer
    transact: bool

    @classmethod
    def of(cls, history: History, table: Table, options: RunOptions) -> _Orders:
        items = table.scan_all()
        return cls(
            calls=call_rows(history),
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

    def puts(self) -> dict[str, int]:
        """The separate writes' acknowledged order puts: the (last) put's seq by order."""
        return {_order_of(r.detail): r.seq for r in self.acked("put-order")}


def _order_of(d: dict[str, Any]) -> str:
    return f"{d['customer']}/{d['order']}"


def _stock_never_negative(o: _Orders) -> Invariant:
    takes, snapshots = o.acked("take-stock"), o.acked("snapshot")
    neg_writes = [r.seq for r in takes if r.detail.get("stock_after", 0) < 0]
    neg_snaps = [r.seq for r in snapshots if r.detail.get("stock", 0) < 0]
    lowest = min(
        [o.final_stock]
        + [r.detail["stock_after"] for r in takes if "stock_after" in r.detail]
        + [r.detail["stock"] for r in snapshots if "stock" in r.detail]
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
            else _stock_refusals(o)
            if o.transact
            else "the stock happened not to go below zero in this run"
        ),
    )


def _stock_refusals(o: _Orders) -> str:
    """What `stock >= :q` did in a transact run, as far as the history shows: it refused n orders, or none was
    ever short of stock (the guard was never put to the test)."""
    refused = sum(
        1
        for c in o.calls
        if c.action in ("place-order", "resend-order")
        and c.error == "TransactionCanceledException"
        and len(c.detail.get("reasons") or ()) > 1
        and c.detail["reasons"][STOCK_ACTION] == "ConditionalCheckFailed"  # the stock item's condition
    )
    if refused:
        return f"stock >= :q inside the transaction refused {plural(refused, 'order')} the stock could not cover"
    return (
        f"no order was short of stock ({o.final_stock} left at the end), so stock >= :q inside the transaction "
        "never had to refuse one"
    )


def _counts_agree(o: _Orders) -> Invariant:
    taken = o.stock - o.final_stock
    units = sum(o.orders.values())
    per_customer = Counter(name.split("/")[0] for name in o.orders)
    count_off = sum(abs(o.counts.get(c, 0) - per_customer.get(c, 0)) for c in o.counts.keys() | per_customer.keys())
    # Per order, what the separate writes did (the transaction does all three or none, so it has no rows here).
    takes = Counter(_order_of(r.detail) for r in o.acked("take-stock"))
    puts = o.puts()
    no_take = [order for order in o.orders if order in puts and takes[order] == 0]
    allowed = {order: 1 if order in o.orders else 0 for order in takes}
    extra = sum(max(0, n - allowed[order]) for order, n in takes.items())
    extra_rows = [r.seq for r in o.acked("take-stock") if takes[_order_of(r.detail)] > allowed[_order_of(r.detail)]]
    balanced = taken == units and count_off == 0
    unbalanced = [
        part
        for part in (
            f"{len(no_take)} order{'s' * (len(no_take) != 1)} without stock taken" if no_take else "",
            f"{extra} stock take{'s' * (extra != 1)} beyond one per order" if extra else "",
            f"orderCount off by {count_off}" if count_off else "",
            f"stock taken {taken} ≠ {units} units ordered" if taken != units and not (no_take or extra) else "",
        )
        if part
    ]
    return Invariant(
        name="orders written = stock taken = orderCount",
        key=COUNTS_AGREE,
        holds=balanced,
        expected=f"{plural(units, 'unit')} in {plural(len(o.orders), 'order')}",
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
    finished = {_order_of(r.detail) for r in o.acked("count-order")}
    placed = {_order_of(r.detail) for r in o.acked("place-order") + o.acked("resend-order")}
    cancelled = [
        (r.seq, _order_of(r.detail), tuple(r.detail.get("reasons", ())))
        for r in o.calls
        if r.action == "place-order" and r.error == "TransactionCanceledException"
    ]
    leaked = [seq for seq, order, _ in cancelled if order in o.orders and order not in placed]
    unfinished = [puts[order] for order in o.orders if order in puts and order not in finished]
    seen_leaks = [
        r.seq for r in o.acked("snapshot") if r.detail.get("placed") is False and r.detail.get("order_present")
    ]
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
            f"{plural(len(unfinished), 'order')} {agree(len(unfinished), 'was', 'were')} written by clients that died "
            "before finishing, "
            "left without their stock or count"
            if unfinished
            else f"{plural(len(leaked) + len(seen_leaks), 'cancelled order')} left an order item"
            if leaked or seen_leaks
            else f"{plural(len(cancelled), 'transaction')} {agree(len(cancelled), 'was', 'were')} cancelled (reasons "
            f"{', '.join(f'{list(r)} ×{n}' for r, n in reasons.items())}) and none left an item; "
            "snapshots showed their orders as null"
            if cancelled
            else "no placement was cancelled or left half-done"
        ),
    )


def _resend_applies_once(o: _Orders) -> Invariant:
    resent = {
        _order_of(r.detail)
        for r in o.calls
        if r.action == "resend-order" or (r.action == "put-order" and r.detail.get("resend"))
    }
    doubled = [
        r.seq
        for r in o.acked("snapshot")
        if r.detail.get("expected_count") is not None and r.detail.get("orderCount") != r.detail["expected_count"]
    ]
    return Invariant(
        name="a resent order applies once",
        key=RESEND_APPLIES_ONCE,
        holds=False if doubled else True if resent else None,  # nothing resent: nothing to judge, not a PASS
        expected=f"{plural(len(resent), 'resent order')} counted once",
        observed=f"{len(resent) - len(doubled)} once, {len(doubled)} twice",
        violations=len(doubled),
        calls=tuple(doubled),
        explanation=(
            f"{plural(len(doubled), 'resend')} {agree(len(doubled), 'was', 'were')} applied again: the snapshot "
            "after the resend shows orderCount one higher than the orders the client placed"
            if doubled
            else "nothing to judge: no order was resent in this run"
            if not resent
            else "the resent transactions carried the same ClientRequestToken, so DynamoDB answered "
            "without applying them again"
            if o.transact
            else "no resend was applied twice in this run"
        ),
    )
