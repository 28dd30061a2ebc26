"""The invariants of conditional writes: one winner per new user, balances never below zero, spends adding up,
no ghost items, PENDING → PAID once, no spend on a suspended user, refusals returning the item that said no; one
function each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.backends.tables import Table
from engine.patterns.base import Invariant, RunCalls, RunOptions, call_rows
from engine.patterns.conditional_writes.shared import ACTIVE
from engine.record.history import History
from engine.words import agree, plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_WINNER = "one-winner-per-new-user"
BALANCE_NEVER_NEGATIVE = "balance-never-below-zero"
SPENDS_ADD_UP = "spends-add-up-to-credits-taken"
NO_GHOST = "update-if-exists-creates-no-ghost"
PAID_ONCE = "pending-paid-exactly-once"
REFUSAL_RETURNS_ITEM = "refusals-return-the-item-as-it-was"
SPENDS_ONLY_WHILE_ACTIVE = "no-spend-lands-on-a-suspended-user"


def verdicts(table: Table, history: History, options: RunOptions) -> list[Invariant]:
    """Every invariant of the run, read from the table after it and from its history."""
    calls = _Calls.of(history, table, options)
    return [
        _one_winner(calls),
        _balance_never_negative(calls),
        _spends_add_up(calls),
        _no_ghost(calls),
        _paid_once(calls),
        _no_spend_on_suspended(calls),
        _refusal_returns_item(calls),
    ]


@dataclass(frozen=True)
class _Calls(RunCalls):
    """The calls and the final items the invariants read, picked out of the history and the table once."""

    final: dict[str, dict[str, Any]]  # the items at the end, by PK
    credits: int  # each new user's starting credits
    guarded: bool  # the variant sends the conditions (the unguarded one sends none)
    suspend_share: float  # how often a client suspends a user instead of spending

    @classmethod
    def of(cls, history: History, table: Table, options: RunOptions) -> _Calls:
        return cls(
            calls=call_rows(history),
            final={item["PK"]: item for item in table.scan_all()},
            credits=options["credits"],
            guarded=options.variant == "guarded",
            suspend_share=options["suspend_share"],
        )

    def refused(self, action: str) -> int:
        """How many calls of one action the server refused on their condition."""
        return sum(1 for r in self.calls if r.action == action and r.error == "ConditionalCheckFailedException")

    def held_because(
        self, action: str, guard: str, refusals: tuple[str, str], no_case: str, n: int | None = None, unknown: int = 0
    ) -> str:
        """Why a rule held, crediting the guard only when it was sent and said no: e.g. "credits >= :a refused
        3 spends the balance could not cover"; with no refusal, that no case came up (`no_case`); unguarded,
        that nothing stopped it and it just did not happen. `n` is how many refusals were this guard's (default:
        every refusal of the action); `unknown` how many came back without the item that would say whose. `refusals`
        is the noun, counted, and what follows it: ("spend", "the balance could not cover")."""
        noun, rest = refusals
        n = self.refused(action) if n is None else n
        if not self.guarded:
            return f"{no_case} in this run: the unguarded writes send no condition, so nothing would have stopped it"
        if unknown:
            return (
                f"{guard} refused {plural(n, noun)} {rest} by the item each refusal returned; {unknown} more came "
                f"back without the item, so which half of the guard refused {agree(unknown, 'it', 'them')} is unknown"
            )
        if n:
            return f"{guard} refused {plural(n, noun)} {rest}"
        return f"{no_case}, so {guard} never had to refuse one"

    def spend_refusals(self) -> tuple[int, int, int]:
        """The refused spends credited to each half of `credits >= :a AND #s = :active`, by the item the refusal
        returned: (too few credits, not active, no item returned). Both halves count when both broke."""
        credits = status = itemless = 0
        for r in self.calls:
            if r.action != "spend" or r.error != "ConditionalCheckFailedException":
                continue
            old = r.detail.get("old_item")
            if old is None:
                itemless += 1
                continue
            credits += old.get("credits", 0) < r.detail["amount"]
            status += old.get("status") != ACTIVE
        return credits, status, itemless

    def overwrites(self) -> list[int]:
        """Acknowledged creates that replaced a user (their ALL_OLD came back)."""
        return [r.seq for r in self.acked("create-user") if r.detail.get("overwrote")]

    def user_items(self) -> dict[str, dict[str, Any]]:
        """The users the clients created (not the members set up before the run)."""
        return {pk: item for pk, item in self.final.items() if pk.startswith("USER#u")}


def _one_winner(c: _Calls) -> Invariant:
    creates = c.acked("create-user")
    users = {r.key for r in c.calls if r.action == "create-user"}
    overwrites = c.overwrites()
    return Invariant(
        name="one winner per new user",
        key=ONE_WINNER,
        holds=not overwrites,
        expected=f"{plural(len(users), 'user')}, one create each",
        observed=f"{plural(len(creates), 'create')} acknowledged",
        violations=len(overwrites),
        calls=tuple(overwrites),
        explanation=(
            f"{plural(len(overwrites), 'acknowledged create')} replaced a user another client had already created"
            if overwrites
            else c.held_because(
                "create-user",
                "attribute_not_exists(PK)",
                ("create", "of a user another client had already created (ConditionalCheckFailed)"),
                "no two clients raced to create the same user",
            )
        ),
    )


def _balance_never_negative(c: _Calls) -> Invariant:
    spends = c.acked("spend")
    by_credits, _, itemless = c.spend_refusals()
    negative = [r.seq for r in spends if r.detail.get("credits_after", 0) < 0]
    lowest = min(
        [int(i["credits"]) for i in c.user_items().values()]
        + [r.detail["credits_after"] for r in spends if "credits_after" in r.detail],
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
            f"{plural(len(negative), 'spend')} left a balance below zero: the credits were checked in code, "
            "and other spends landed between the read and the write"
            if lowest < 0
            else c.held_because(
                "spend",
                "credits >= :a",
                ("spend", "the balance could not cover"),
                "no spend exceeded the balance",
                by_credits,
                itemless,
            )
        ),
    )


def _spends_add_up(c: _Calls) -> Invariant:
    spends = c.acked("spend")
    user_items = c.user_items()
    spent: Counter[str] = Counter()
    for r in spends:
        spent[r.key] += r.detail["amount"]
    maybe: Counter[str] = Counter()  # lost-response spends: applied up to once per attempt, we cannot tell
    for r in c.calls:
        if r.action == "spend" and r.outcome == "info":
            maybe[r.key] += r.detail["amount"] * r.attempts
    off_users = {
        pk for pk, item in user_items.items() if not 0 <= c.credits - int(item["credits"]) - spent[pk] <= maybe[pk]
    }
    unknown_spends = sum(1 for r in c.calls if r.action == "spend" and r.outcome == "info")
    hedge = f"; {plural(unknown_spends, 'spend')} had an unknown outcome" if unknown_spends else ""
    return Invariant(
        name="spends add up to credits taken",
        key=SPENDS_ADD_UP,
        holds=not off_users,
        expected=sum(spent.values()),
        observed=sum(c.credits - int(i["credits"]) for i in user_items.values()),
        violations=len(off_users),
        calls=tuple(r.seq for r in spends if r.key in off_users),
        explanation=(
            f"on {plural(len(off_users), 'user')} the final balance disagrees with the spends that won"
            + (": a later create overwrote the user and reset its credits" if c.overwrites() else "")
            if off_users
            else "for every user, initial credits minus the final balance is exactly what the acknowledged spends took"
        )
        + hedge,
    )


def _no_ghost(c: _Calls) -> Invariant:
    ghost_writes = [r.seq for r in c.acked("rename") if r.detail.get("created")]
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
            f"{plural(len(ghost_writes), 'rename')} of closed users created half-empty items; {len(ghosts)} "
            f"{agree(len(ghosts), 'is', 'are')} left in the table with a name but no credits or status"
            if ghost_writes or ghosts
            else c.held_because(
                "rename", "attribute_exists(PK)", ("rename", "of a closed user"), "no rename reached a closed user"
            )
        ),
    )


def _paid_once(c: _Calls) -> Invariant:
    pays = c.acked("pay")
    double = [r.seq for r in pays if r.detail.get("from") == "PAID"]
    paid = sum(1 for pk, item in c.final.items() if pk.startswith("ORDER#") and item["status"] == "PAID")
    return Invariant(
        name="PENDING → PAID exactly once",
        key=PAID_ONCE,
        holds=not double,
        expected=f"{plural(paid, 'payment')} (one per order paid)",
        observed=f"{plural(len(pays), 'payment')} acknowledged",
        violations=len(double),
        calls=tuple(double),
        explanation=(
            f"{plural(len(double), 'payment')} went to orders that were already PAID: both clients read "
            "PENDING before either wrote"
            if double
            else c.held_because(
                "pay",
                "#s = :from",
                ("payment", "of an order already paid: one per order went through"),
                "no two payments of one order met",
            )
        ),
    )


def _no_spend_on_suspended(c: _Calls) -> Invariant:
    suspends = c.acked("suspend")
    landed = [r.seq for r in c.acked("spend") if r.detail.get("status_after", ACTIVE) != ACTIVE]
    _, by_status, itemless = c.spend_refusals()
    if landed:
        why = (
            f"{plural(len(landed), 'spend')} landed on a suspended user: the status was checked in code, and a suspend "
            "landed between the read and the write"
        )
    elif suspends:
        why = c.held_because(
            "spend",
            "#s = :active",
            ("spend", "of a suspended user"),
            "no spend met a suspended user",
            by_status,
            itemless,
        )
        why += f" ({plural(len(suspends), 'suspend')} went through)"
    else:
        why = f"cannot judge: nobody was suspended in this run (suspend_share = {c.suspend_share:g})"
    return Invariant(
        name="no spend lands on a suspended user",
        key=SPENDS_ONLY_WHILE_ACTIVE,
        # Nobody suspended, nothing to judge: the status half of the guard had no case to refuse.
        holds=not landed if suspends or landed else None,
        expected=0,
        observed=len(landed),
        violations=len(landed),
        calls=tuple(landed),
        explanation=why,
    )


def _refusal_returns_item(c: _Calls) -> Invariant:
    refusals = [r for r in c.calls if r.outcome == "fail" and r.error == "ConditionalCheckFailedException"]
    unexplained = [r.seq for r in refusals if not _refusal_explained(r.action, r.detail)]
    # A server that ignores ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x) refuses correctly but
    # hands back no item; say so rather than blame the condition.
    itemless = sum(
        1
        for r in refusals
        if r.action in ("create-user", "spend", "suspend", "pay") and r.detail.get("old_item") is None
    )
    return Invariant(
        name="refusals return the item as it was",
        key=REFUSAL_RETURNS_ITEM,
        # No refusal, nothing to judge: not applicable is not held (unguarded writes are never refused).
        holds=False if unexplained else True if refusals else None,
        expected=len(refusals),
        observed=len(refusals) - len(unexplained),
        violations=len(unexplained),
        calls=tuple(unexplained),
        explanation=(
            (
                "not applicable: the unguarded writes send no condition, so no write was refused"
                if not c.guarded
                else "nothing to judge: no guarded write was refused in this run"
            )
            if not refusals
            else f"{plural(itemless, 'refusal')} came back without the item: this server ignores "
            "ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x does; AWS and DynamoDB Local "
            "2.x return it)"
            if itemless == len(unexplained) and itemless
            else f"{plural(len(unexplained), 'refusal')} came back with an item that meets the condition"
            if unexplained
            else f"each of the {plural(len(refusals), 'refused write')} carries its ALL_OLD item, and that item "
            "breaks the condition (user taken, member closed, too few credits, user suspended, already paid)"
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
    if action == "suspend":
        return old is not None and old.get("status") != ACTIVE
    return True
