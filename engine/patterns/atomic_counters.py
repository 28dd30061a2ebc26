"""24 · Atomic counters: ADD on the server vs read-then-put in the client; sequences and a ticket floor."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from engine.backends.tables import Table
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant, rows
from engine.record.calls import Ambiguous, CallError, ClientContext, ConditionFailed
from engine.record.history import History
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
FINAL_COUNT = "final-count-acknowledged-increments"
SEQUENCE_GAP_FREE = "sequence-numbers-unique-and-gap-free"
NEVER_OVERSOLD = "tickets-never-oversold"
REMAINING_ADDS_UP = "remaining-initial-sold"

# What the dashboard's view reads: the counter's increment calls and the value each read before writing.
INCREMENT = "increment"
DETAIL_READ = "read"

VIEWS = {"PK": "POST#hello-world", "SK": "STATS"}
SEQUENCE = {"PK": "SEQUENCE#invoice", "SK": "COUNTER"}
TICKETS = {"PK": "TICKETS#gig", "SK": "COUNTER"}


class AtomicCounters(Pattern):
    name = "atomic-counters"
    seed = 24
    harm = Harm(
        "lost increments, duplicate numbers and oversold tickets",
        (FINAL_COUNT, SEQUENCE_GAP_FREE, NEVER_OVERSOLD),
    )  # the sweep counts these per 1,000 ops
    title = "Atomic counters"
    problem = (
        "Page views, stock levels and sequence numbers all need increments. Reading the value, adding "
        "one in code and writing it back loses updates whenever two clients do it at once."
    )
    solution = (
        "Let DynamoDB do the arithmetic: UpdateItem ADD #v :one (ReturnValues=UPDATED_NEW hands out "
        "sequence numbers), and a condition such as remaining > 0 keeps a floor."
    )
    variants = {
        "add": Variant("add", True, "UpdateItem ADD on the server; ticket sales guarded by remaining > 0"),
        "read-then-put": Variant("read-then-put", False, "GetItem, +1 in Python, PutItem: the seed's racy increment"),
    }
    business_refusals = {"buy-ticket": "ConditionalCheckFailedException"}  # remaining > 0: sold out
    options = {
        "tickets": Option("tickets", 100, "tickets on sale at the start (the floor is 0)", 0, 10**9),
        "sequence": Option("sequence", 1, "also take a sequence number on each op (1) or not (0)", 0, 1),
    }

    def setup(self, table: Table, options: RunOptions) -> None:
        table.put({**VIEWS, "views": 0})
        table.put({**SEQUENCE, "next": 0})
        table.put({**TICKETS, "remaining": options["tickets"]})

    def client(self, ctx: ClientContext) -> None:
        racy = ctx.variant == "read-then-put"
        name = ctx.table.name
        for op in ctx.ops():
            try:
                self._increment(ctx, name, racy, op)
                if ctx.options["sequence"]:
                    self._next_number(ctx, name, racy, op)
                self._buy_ticket(ctx, name, racy, op)
            except Ambiguous:
                continue  # an unknown outcome is recorded as info and accounted for by verify

    @staticmethod
    def _increment(ctx: ClientContext, name: str, racy: bool, op: int) -> None:
        if racy:
            read = ctx.read_item("read-views", key="views", TableName=name, Key=VIEWS)
            if read is None:
                return  # stopped
            views = read["views"]
            ctx.call(
                INCREMENT,
                "PutItem",
                key="views",
                detail={"op": op, "read": int(views)},
                TableName=name,
                Item={**VIEWS, "views": views + 1},
            )
        else:
            ctx.call(
                INCREMENT,
                "UpdateItem",
                key="views",
                detail={"op": op},
                TableName=name,
                Key=VIEWS,
                UpdateExpression="ADD #v :one",
                ExpressionAttributeNames={"#v": "views"},
                ExpressionAttributeValues={":one": 1},
            )

    @staticmethod
    def _next_number(ctx: ClientContext, name: str, racy: bool, op: int) -> None:
        if racy:
            read = ctx.read_item("read-sequence", key="sequence", TableName=name, Key=SEQUENCE)
            if read is None:
                return  # stopped
            current = read["next"]
            number = int(current) + 1
            ctx.call(
                "next-number",
                "PutItem",
                key="sequence",
                detail={"op": op, "number": number},
                TableName=name,
                Item={**SEQUENCE, "next": number},
            )
        else:
            ctx.call(
                "next-number",
                "UpdateItem",
                key="sequence",
                detail={"op": op},
                observe=lambda r: {"number": int(r["Attributes"]["next"])},
                TableName=name,
                Key=SEQUENCE,
                UpdateExpression="ADD #n :one",
                ExpressionAttributeNames={"#n": "next"},
                ExpressionAttributeValues={":one": 1},
                ReturnValues="UPDATED_NEW",
            )

    @staticmethod
    def _buy_ticket(ctx: ClientContext, name: str, racy: bool, op: int) -> None:
        if racy:
            read = ctx.read_item("read-tickets", key="tickets", TableName=name, Key=TICKETS)
            if read is None:
                return  # stopped
            remaining = read["remaining"]
            if remaining > 0:
                ctx.call(
                    "buy-ticket",
                    "PutItem",
                    key="tickets",
                    detail={"op": op, "read": int(remaining)},
                    TableName=name,
                    Item={**TICKETS, "remaining": remaining - 1},
                )
            return
        try:
            ctx.call(
                "buy-ticket",
                "UpdateItem",
                key="tickets",
                detail={"op": op},
                TableName=name,
                Key=TICKETS,
                UpdateExpression="ADD remaining :minus",
                ConditionExpression="remaining > :zero",
                ExpressionAttributeValues={":minus": -1, ":zero": 0},
            )
        except ConditionFailed:
            pass  # sold out: the floor held

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        frame = history.snapshot(detail=True)
        final = {item["PK"]: item for item in table.scan_all()}
        remaining = int(final[TICKETS["PK"]]["remaining"])
        return [
            _final_count(frame, int(final[VIEWS["PK"]]["views"])),
            *([_sequence_gap_free(frame)] if options["sequence"] else []),
            _never_oversold(frame, remaining, options["tickets"], guarded=options.variant == "add"),
            _remaining_adds_up(frame, remaining, options["tickets"]),
        ]

    def walkthrough(self, walk: Any) -> None:
        name = walk.name
        walk.put({**VIEWS, "views": 0})
        add = dict(
            Key=VIEWS,
            UpdateExpression="ADD #v :one",
            ExpressionAttributeNames={"#v": "views"},
            ExpressionAttributeValues={":one": 1},
        )
        walk.log.request("UpdateItem", {"TableName": name, **add})
        with ThreadPoolExecutor(10) as pool:
            adds = list(pool.map(lambda i: walk.call("UpdateItem", show=False, client_id=i % 10, **add), range(50)))
        walk.log.elided("... (+49 more UpdateItem calls not shown)")
        _say_failed(walk, adds, "ADD")
        walk.result("After 50 concurrent increments", walk.read("GetItem", show=False, Key=VIEWS)["Item"])

        walk.put({**VIEWS, "views": 0})
        puts: list[dict[str, Any]] = []
        lock = threading.Lock()

        def racy_increment(i: int) -> CallError | None:
            read = walk.call("GetItem", show=False, client_id=i % 10, Key=VIEWS)
            if isinstance(read, CallError):
                return read
            params = {"TableName": name, "Item": {**VIEWS, "views": read["Item"]["views"] + 1}}
            put = walk.call("PutItem", show=False, client_id=i % 10, **params)
            with lock:
                puts.append(params)
            return put if isinstance(put, CallError) else None

        with ThreadPoolExecutor(10) as pool:
            racy = list(pool.map(racy_increment, range(50)))
        for params in puts[:2]:
            walk.log.request("PutItem", params)
        walk.note("...")
        for params in puts[-2:]:
            walk.log.request("PutItem", params)
        _say_failed(walk, [r for r in racy if r is not None], "read or put")
        walk.result(
            "Racy read-modify-write after 50 'increments' (expect < 50)",
            walk.read("GetItem", show=False, Key=VIEWS)["Item"],
        )

        walk.put({**SEQUENCE, "next": 0})
        response = walk.call(
            "UpdateItem",
            Key=SEQUENCE,
            UpdateExpression="ADD #n :one",
            ExpressionAttributeNames={"#n": "next"},
            ExpressionAttributeValues={":one": 1},
            ReturnValues="UPDATED_NEW",
        )
        walk.result("Next invoice number", response.code if isinstance(response, CallError) else response["Attributes"])

        walk.put({**TICKETS, "remaining": 1})
        for sale in (1, 2):
            response = walk.call(
                "UpdateItem",
                Key=TICKETS,
                UpdateExpression="ADD remaining :minus",
                ConditionExpression="remaining > :zero",
                ExpressionAttributeValues={":minus": -1, ":zero": 0},
            )
            # Only the floor's refusal means sold out; any other error (throttled, say) is shown as what it is.
            what = (
                "sold out"
                if isinstance(response, ConditionFailed)
                else f"not sold, the call failed: {response.code}"
                if isinstance(response, CallError)
                else "sold"
            )
            walk.result(f"Ticket sale {sale}: {what}")


def _say_failed(walk: Any, responses: list[Any], what: str) -> None:
    """A line saying how many of the scene's concurrent calls failed and why: the count printed next is short by
    them, and the seed's figure would otherwise read wrong with no hint."""
    failed = Counter(r.code for r in responses if isinstance(r, CallError))
    if failed:
        codes = ", ".join(f"{code} ×{n}" for code, n in failed.items())
        walk.note(f"... {sum(failed.values())} of the 50 {what} calls failed ({codes}): the count below misses them")


# -- the invariants, one function each ---------------------------------------------------------------------------


def _attempts_unknown(frame: pd.DataFrame, mask: Any) -> int:
    # A call with an unknown outcome applied at most once per attempt it made.
    return int((frame.loc[mask & (frame["outcome"] == "info"), "retries"] + 1).sum())


def _final_count(frame: pd.DataFrame, views: int) -> Invariant:
    ok = frame["outcome"] == "ok"
    inc = frame["action"] == INCREMENT
    acked, unknown = int((inc & ok).sum()), _attempts_unknown(frame, inc)
    lost = max(0, acked - views)
    extra = max(0, views - acked - unknown)
    hedge = f"; up to {unknown} more from calls with an unknown outcome" if unknown else ""
    return Invariant(
        name="final count = acknowledged increments",
        key=FINAL_COUNT,
        holds=acked <= views <= acked + unknown,
        expected=acked,
        observed=views,
        violations=lost + extra,
        calls=_repeated_reads(frame, inc & ok),
        explanation=(
            f"{lost} of {acked} acknowledged increments were lost: clients read the same value and "
            "wrote the same +1 over each other"
            if lost
            else f"the count is {extra} above every increment that could have landed"
            if extra
            else "every acknowledged increment is in the final count"
        )
        + hedge,
    )


def _sequence_gap_free(frame: pd.DataFrame) -> Invariant:
    ok, info = frame["outcome"] == "ok", frame["outcome"] == "info"
    seq = frame["action"] == "next-number"
    numbers = [d["number"] for d in frame.loc[seq & (ok | info), "detail"] if "number" in d]
    counts = Counter(numbers)
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    gaps = len(set(range(1, max(numbers, default=0) + 1)) - set(numbers))
    allowed_gaps = _attempts_unknown(frame, seq)  # numbers handed to calls whose reply was lost
    broken_gaps = max(0, gaps - allowed_gaps)
    return Invariant(
        name="sequence numbers unique and gap-free",
        key=SEQUENCE_GAP_FREE,
        holds=duplicates == 0 and broken_gaps == 0,
        expected=f"{len(numbers)} distinct numbers 1..{len(numbers)}",
        observed=f"{len(counts)} distinct, {plural(duplicates, 'duplicate')}, {plural(gaps, 'gap')}",
        violations=duplicates + broken_gaps,
        calls=_duplicate_numbers(frame, seq & ok),
        explanation=(
            "two invoices got the same number"
            if duplicates
            else f"{plural(broken_gaps, 'number')} {agree(broken_gaps, 'was', 'were')} skipped"
            if broken_gaps
            else "every client got its own number"
            + (
                f"; {plural(gaps, 'hole')} {agree(gaps, 'belongs', 'belong')} to {agree(gaps, 'a reply', 'replies')} "
                f"that {agree(gaps, 'was', 'were')} lost"
                if gaps
                else ", with no holes"
            )
        ),
    )


def _floor_held(frame: pd.DataFrame, buy: pd.Series, remaining: int, guarded: bool) -> str:
    """Why no ticket was oversold, crediting the server's floor only when it was sent and said no."""
    refused = int((buy & (frame["error"] == "ConditionalCheckFailedException")).sum())
    if not guarded:
        return (
            f"no sale went past the last ticket in this run ({remaining} left): the read-then-put sales check "
            "the stock in code, and nothing on the server would have refused one"
        )
    if refused:
        return f"the remaining > 0 floor refused {plural(refused, 'sale')} past the last ticket"
    return f"no sale reached the last ticket ({remaining} left), so the remaining > 0 floor never had to refuse one"


def _never_oversold(frame: pd.DataFrame, remaining: int, tickets: int, *, guarded: bool) -> Invariant:
    ok = frame["outcome"] == "ok"
    buy = frame["action"] == "buy-ticket"
    sold = int((buy & ok).sum())
    oversold = max(0, sold - tickets)
    return Invariant(
        name="tickets never oversold",
        key=NEVER_OVERSOLD,
        holds=sold <= tickets and remaining >= 0,
        expected=f"sold ≤ {tickets}",
        observed=f"sold {sold}, remaining {remaining}",
        violations=oversold,
        calls=rows(frame, buy & ok) if oversold else (),
        explanation=(
            f"{oversold} more tickets were sold than existed"
            if oversold
            else _floor_held(frame, buy, remaining, guarded)
        ),
    )


def _remaining_adds_up(frame: pd.DataFrame, remaining: int, tickets: int) -> Invariant:
    buy = frame["action"] == "buy-ticket"
    sold = int((buy & (frame["outcome"] == "ok")).sum())
    maybe_sold = _attempts_unknown(frame, buy)
    expected_remaining = tickets - sold
    remaining_ok = expected_remaining - maybe_sold <= remaining <= expected_remaining
    return Invariant(
        name="remaining = initial − sold",
        key=REMAINING_ADDS_UP,
        holds=remaining_ok,
        expected=expected_remaining,
        observed=remaining,
        violations=0 if remaining_ok else abs(remaining - expected_remaining),
        explanation=(
            "each acknowledged sale took exactly one ticket off the counter"
            if remaining_ok
            else "the counter and the acknowledged sales disagree: sales were lost or invented"
        )
        + (f"; up to {plural(maybe_sold, 'sale')} had an unknown outcome" if maybe_sold else ""),
    )


def _repeated_reads(frame: Any, mask: Any) -> tuple[int, ...]:
    """Increments that wrote a value some other increment also wrote: the lost ones and their winners."""
    sub = frame[mask]
    reads = [d.get("read") for d in sub["detail"]]
    if all(r is None for r in reads):
        return ()
    counts = Counter(reads)
    return tuple(int(s) for s, r in zip(sub["seq"], reads) if counts[r] > 1)


def _duplicate_numbers(frame: Any, mask: Any) -> tuple[int, ...]:
    sub = frame[mask]
    numbers = [d.get("number") for d in sub["detail"]]
    counts = Counter(numbers)
    return tuple(int(s) for s, n in zip(sub["seq"], numbers) if n is not None and counts[n] > 1)
