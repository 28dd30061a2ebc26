"""26 · Unique constraints on non-key attributes: sentinel items in a transaction, against check-a-GSI-then-write."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from engine.calls import Ambiguous, ClientContext, ConditionFailed, TransactionCanceled
from engine.history import History
from engine.patterns.base import LAST_ATTEMPT, GiveUp, Harm, Invariant, Option, Pattern, RunOptions, Variant, rows
from engine.tables import Table, TableSpec

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
NO_SHARED_EMAIL = "no-two-users-share-an-email"
ONE_SENTINEL_PER_EMAIL = "one-sentinel-per-user-email"
NO_ORPHAN_SENTINEL = "no-orphan-sentinel"
REFUSED_CHANGE_DELETES_NOTHING = "a-refused-change-deletes-nothing"

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
        user = f"user{ctx.client_id + 1}"
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
        walk.call("TransactWriteItems", show=False, TransactItems=sign_up_items(name, "alice", "a@x.com"))
        taken = walk.call("TransactWriteItems", TransactItems=sign_up_items(name, "bob", "A@x.com"))
        walk.result("bob tries A@x.com (same email, different case)", _cancelled(taken))
        walk.call("TransactWriteItems", show=False, TransactItems=sign_up_items(name, "bob", "b@x.com"))
        refused = walk.call("TransactWriteItems", TransactItems=change_items(name, "bob", "b@x.com", "a@x.com"))
        walk.result("bob changes email to a@x.com (taken)", _cancelled(refused))
        changed = walk.call("TransactWriteItems", TransactItems=change_items(name, "bob", "b@x.com", "bob@x.com"))
        walk.result("bob changes email to bob@x.com", _outcome(changed))
        owner = walk.call("GetItem", Key={"PK": sentinel_pk("bob@x.com"), "SK": SENTINEL})
        walk.result("Who owns bob@x.com?", owner["Item"])
        scan = walk.call("Scan")
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


def _no_shared_email(profiles: dict[str, str], writes: pd.DataFrame) -> Invariant:
    owners: dict[str, list[str]] = defaultdict(list)
    for user, email in profiles.items():
        owners[email.lower()].append(user)
    shared = {email: users for email, users in owners.items() if len(users) > 1}
    extra = sum(len(users) - 1 for users in shared.values())
    # Users move on to other emails, so two that shared one mid-run may not share it at the end: the history shows
    # every time a user took an email another user held at that moment.
    taken = _took_a_held_email(writes)
    violations = max(extra, len(taken))
    # Evidence: the acknowledged writes that put a user on an email another user held.
    calls = rows(
        writes,
        [
            s in taken or (o == "ok" and d["user"] in shared.get(d["email"].lower(), ()))
            for s, o, d in zip(writes["seq"], writes["outcome"], writes["detail"])
        ],
    )
    sample = "; ".join(f"{e}: {', '.join(sorted(u))}" for e, u in sorted(shared.items())[:3])
    now = f"{extra} extra users on {len(shared)} emails at the end ({sample})" if extra else "none at the end"
    return Invariant(
        name="no two users share an email",
        key=NO_SHARED_EMAIL,
        holds=violations == 0,
        expected=0,
        observed=f"{len(taken)} takes of a held email during the run; {now}" if violations else 0,
        violations=violations,
        calls=calls,
        explanation=(
            f"{violations} users took an email someone already had: {len(taken)} times during the run a write "
            f"was acknowledged while another user held the email, {now}; the index check and the write are two "
            "requests, so two clients both saw the email free"
            if violations
            else f"each of the {len(profiles)} users' emails (lower-cased) belonged to that user alone, during the "
            "run and at the end"
        ),
    )


# How the shared-email verdict's observed text names its two counts; shared_counts reads them back.
_TAKES = re.compile(r"^(\d+) takes of a held email during the run\b")
_EXTRA = re.compile(r"(?:^|; )(\d+) extra users on \d+ emails\b")
_NONE_AT_END = re.compile(r"(?:^|; )none at the end$")


def shared_counts(verdict: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The shared-email verdict's two counts: (takes of a held email during the run, extra users sharing an email
    at the end). None for one the verdict does not give: a file recorded before takes were judged has only the
    end's ("M extra users on K emails"), and an observed text in no known wording gives neither."""
    if not verdict.get("violations") and verdict.get("holds"):
        return 0, 0
    text = str(verdict.get("observed") or "").split(" (", 1)[0]  # the emails and users in parentheses may be any
    takes = _TAKES.search(text)
    extra = _EXTRA.search(text)
    end = int(extra.group(1)) if extra else 0 if _NONE_AT_END.search(text) else None
    return (int(takes.group(1)) if takes else None), end


def _took_a_held_email(writes: pd.DataFrame) -> set[int]:
    """The acknowledged writes (seq) that put a user on an email another user certainly held at that moment.

    A user certainly holds an email from the end of its acknowledged write until the start of that user's next
    write of any outcome (only the user's own client writes its profile; an unknown outcome may have moved it
    already). A write is counted when, at its end, another user's such span on the same email was open: both held
    it at once. Spans are cut short, never stretched, so a write counted here did share the email."""
    spans: dict[str, list[tuple[int, int, str, int]]] = defaultdict(list)  # email -> (from, until, user, seq)
    ordered = writes.sort_values("invoke_ns")
    by_user: dict[str, list[tuple[int, int, str, str, int]]] = defaultdict(list)
    for seq, invoke, complete, outcome, d in zip(
        ordered["seq"], ordered["invoke_ns"], ordered["complete_ns"], ordered["outcome"], ordered["detail"]
    ):
        by_user[d["user"]].append((int(invoke), int(complete), str(outcome), d["email"].lower(), int(seq)))
    for user, calls in by_user.items():
        for i, (_, complete, outcome, email, seq) in enumerate(calls):
            if outcome == "ok":
                until = calls[i + 1][0] if i + 1 < len(calls) else 2**63 - 1
                spans[email].append((complete, until, user, seq))
    taken: set[int] = set()
    for held in spans.values():
        for start, _, user, seq in held:
            if any(other != user and begun < start < until for begun, until, other, _ in held):
                taken.add(seq)
    return taken


def _every_email_has_sentinel(profiles: dict[str, str], sentinels: dict[str, str]) -> Invariant:
    missing = sorted(u for u, e in profiles.items() if sentinels.get(e.lower()) != u)
    return Invariant(
        name="one sentinel per user email",
        key=ONE_SENTINEL_PER_EMAIL,
        holds=not missing,
        expected=len(profiles),
        observed=len(profiles) - len(missing),
        violations=len(missing),
        explanation=(
            f"users without their EMAIL#<lower-cased email> sentinel: {', '.join(missing[:5])}"
            if missing
            else "every user's lower-cased email has a sentinel pointing back at that user"
        ),
    )


def _no_orphan_sentinel(profiles: dict[str, str], sentinels: dict[str, str]) -> Invariant:
    orphans = sorted(e for e, u in sentinels.items() if profiles.get(u, "").lower() != e)
    return Invariant(
        name="no orphan sentinel",
        key=NO_ORPHAN_SENTINEL,
        holds=not orphans,
        expected=0,
        observed=len(orphans),
        violations=len(orphans),
        explanation=(
            f"sentinels whose user does not have that email: {', '.join(orphans[:5])}"
            if orphans
            else f"each of the {len(sentinels)} sentinels belongs to a user who has that email"
        ),
    )


def _refused_change_changes_nothing(
    profiles: dict[str, str], sentinels: dict[str, str], writes: pd.DataFrame
) -> Invariant:
    """Each user ends on the email of its last acknowledged write (or a later unknown one), sentinel intact."""
    expected: dict[str, set[str]] = {}
    refused: dict[str, list[int]] = defaultdict(list)
    for seq, outcome, d in zip(writes["seq"], writes["outcome"], writes["detail"]):
        user = d["user"]
        if outcome == "ok":
            expected[user] = {d["email"]}
        elif outcome == "info":
            expected.setdefault(user, set()).add(d["email"])
        else:
            refused[user].append(int(seq))
    broken = sorted(
        u
        for u in refused
        if u in profiles and (profiles[u] not in expected.get(u, set()) or sentinels.get(profiles[u].lower()) != u)
    )
    n_refused = sum(len(s) for s in refused.values())
    return Invariant(
        name="a refused change deletes nothing",
        key=REFUSED_CHANGE_DELETES_NOTHING,
        holds=False if broken else True if n_refused else None,  # no refusal: nothing to judge, not a PASS
        expected=0,
        observed=len(broken),
        violations=len(broken),
        calls=tuple(s for u in broken for s in refused[u]),
        explanation=(
            f"users whose refused change left them without their last acknowledged email and its "
            f"sentinel: {', '.join(broken[:5])}"
            if broken
            else "nothing to judge: no sign-up or change was refused in this run"
            if not n_refused
            else f"{n_refused} refused sign-ups and changes left every profile on its last acknowledged "
            "email, with its sentinel: a cancelled transaction writes and deletes nothing"
        ),
    )


def _cancelled(response: Any) -> Any:
    if isinstance(response, TransactionCanceled):
        return {"error": response.code, "reasons": response.reasons}
    return _outcome(response)


def _outcome(response: Any) -> str:
    from engine.calls import outcome

    return outcome(response)
