"""27 · Idempotency keys: exactly-once charges for retried requests, against charging on every delivery.

Each client thread is a caller and, inline, the payment API's handler. A logical request (a charge of an amount
under a request id) can reach the handler more than once: the caller resends it when the reply is lost, the
queue delivers a copy to a second worker, and the caller of a crashed worker retries it on another. Lost
responses of DynamoDB writes (botocore retries them) come on top.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

import pandas as pd

from engine.calls import Ambiguous, CallError, ClientContext, ConditionFailed
from engine.history import History
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant, rows
from engine.tables import Table, TableSpec

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
ONE_CHARGE = "exactly-one-charge-per-logical-request"
SAME_REPLY = "every-reply-to-a-key-is-the-same"
REUSE_REFUSED = "a-key-reused-with-another-payload-is-refused"

# What the dashboard's view reads: the calls of one logical request and the details that tell their story.
CLAIM = "claim"
CHARGE_CARD = "charge"
READ_RECORD = "read-record"
RECLAIM = "reclaim"
DETAIL_REQUEST = "request"
DETAIL_REUSE = "reuse"
DETAIL_ATTEMPT = "attempt"
DETAIL_CHARGE = "charge"
DETAIL_RECORD = "record"
DETAIL_REPLY = "reply"
DETAIL_TOLD = "told"

RECORD = "RECORD"
CHARGE = "CHARGE"
IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"
REFUSED = "refused"  # the reply to a key reused with another payload
DAY_S = 24 * 3600
MAX_SENDS = 200  # a caller's sends of one request, "retry later" answers included
CLAIM_CONDITION = "attribute_not_exists(PK) OR expiresAt < :now"  # an expired record counts as absent


def record_key(request_id: str) -> dict[str, str]:
    return {"PK": f"IDEMPOTENCY#{request_id}", "SK": RECORD}


def charge_key(charge_id: str) -> dict[str, str]:
    return {"PK": f"CHARGE#{charge_id}", "SK": CHARGE}


def payload_hash(amount: int) -> str:
    return hashlib.sha256(f'{{"amount": {amount}}}'.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Request:
    """One logical request as the caller sends it."""

    request_id: str
    amount: int
    reuse: bool = False  # a buggy caller reusing an answered key for another amount: must be refused

    def detail(self, attempt: int) -> dict[str, Any]:
        return {
            "request": self.request_id,
            "amount": self.amount,
            "attempt": attempt,
            **({"reuse": True} if self.reuse else {}),
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the handler makes of the record it read after its claim was refused (or its outcome unknown)."""

    action: str  # "claim" (absent or expired), "proceed" (the claim is ours), "reclaim" (stuck), "reply", "wait"
    record: str  # what the record was: absent, expired, ours, stuck, in-progress, completed, other-payload, ...
    reply: str | None = None  # a stored charge id, or REFUSED
    charge: str | None = None  # the charge id the record names, when we are to charge it

    @property
    def detail(self) -> dict[str, Any]:
        return {"record": self.record, **({"reply": self.reply} if self.reply else {"told": self.action})}


def judge(record: dict[str, Any] | None, token: str, digest: str, now: float) -> Verdict:
    if record is None:
        return Verdict("claim", "absent")
    if record["expiresAt"] < int(now):
        return Verdict("claim", "expired")  # TTL deletes late; an expired record counts as absent
    if record.get("owner") == token:
        return Verdict("proceed", "ours", charge=record["chargeId"])  # our claim applied; its answer was lost
    if record.get("payloadHash") != digest:
        return Verdict("reply", "other-payload", REFUSED)
    if record["status"] == COMPLETED:
        return Verdict("reply", "completed", str(record["response"]["chargeId"]))
    if record["inProgressExpiry"] < int(now * 1000):
        return Verdict("reclaim", "stuck", charge=record["chargeId"])  # its holder is gone, or too slow
    return Verdict("wait", "in-progress")


class _Mailbox:
    """What the workers of one run share: extra deliveries, answered requests, charge ids, who is busy."""

    def __init__(self, workers: int) -> None:
        self._lock = threading.Lock()
        self._pending: deque[Request] = deque()
        self._answered: dict[str, Request] = {}
        self._busy = workers  # workers still sending their own requests
        self._delivering = 0
        self._charge_ids = itertools.count(1)
        self._tokens = itertools.count(1)

    def post(self, request: Request) -> None:
        with self._lock:
            self._pending.append(request)

    def take(self) -> Request | None:
        with self._lock:
            if not self._pending:
                return None
            self._delivering += 1
            return self._pending.popleft()

    def delivered(self) -> None:
        with self._lock:
            self._delivering -= 1

    def own_requests_done(self) -> None:
        with self._lock:
            self._busy -= 1

    def idle(self) -> bool:
        """Nobody can post any more: every worker is past its own requests and nothing is in the queue."""
        with self._lock:
            return self._busy == 0 and self._delivering == 0 and not self._pending

    def answered(self, request: Request) -> None:
        with self._lock:
            self._answered.setdefault(request.request_id, request)

    def an_answered(self, rng: Random) -> Request | None:
        with self._lock:
            return rng.choice(list(self._answered.values())) if self._answered else None

    def charge_id(self) -> str:
        return f"ch_{next(self._charge_ids)}"  # the provider charges once per id, so each id is new

    def token(self, client_id: int) -> str:
        return f"w{client_id}-{next(self._tokens)}"


class IdempotencyKeys(Pattern):
    name = "idempotency-keys"
    seed = 27
    harm = Harm("extra or missing charges", (ONE_CHARGE,))  # the sweep counts these per 1,000 ops
    title = "Idempotency keys"
    problem = (
        "Networks fail after the work is done but before the response arrives, and clients, SDKs, queues "
        "and Lambda all retry. Without protection, a retried 'charge card' charges the card twice."
    )
    solution = (
        "The caller sends a unique key with each logical request. The handler claims it with a "
        "conditional PutItem (IN_PROGRESS, attribute_not_exists(PK) OR expiresAt < :now), does the side "
        "effect once, and stores the response as COMPLETED; a retry gets the stored response back, a "
        "concurrent duplicate is told to retry later, and a claim past its in-progress expiry (a crashed "
        "handler's) is taken over. The claim names the charge id up front, so a takeover charges under "
        "the same id and the card is charged once even if the old holder was only slow."
    )
    process_pool = False  # duplicate requests are handed between clients through an in-memory mailbox
    variants = {
        "with-key": Variant(
            "with-key",
            True,
            "claim the key (naming the charge id), charge, store the reply; "
            "retries replay it, in-flight duplicates wait, stuck claims are taken over",
        ),
        "without-key": Variant("without-key", False, "charge on every delivery: each retry charges the card again"),
    }
    options = {
        "resend_share": Option(
            "resend_share", 0.2, "share of answered requests the caller sends again, as if the reply was lost", 0, 1
        ),
        "duplicate_share": Option(
            "duplicate_share",
            0.2,
            "share of requests the queue also delivers to a second worker at the same time",
            0,
            1,
        ),
        "reuse_share": Option(
            "reuse_share",
            0.05,
            "share of requests that reuse an answered key for another amount (a caller's bug): they must be refused",
            0,
            1,
        ),
        "crash_share": Option(
            "crash_share",
            0.01,
            "share of handlers that crash after the claim, before charging; the caller retries on another worker",
            0,
            1,
        ),
        "effect_ms": Option("effect_ms", 50, "how long the payment provider takes to charge", 0, 10_000),
        "in_progress_timeout_ms": Option(
            "in_progress_timeout_ms",
            1000,
            "with-key: how long a claim holds before "
            "another worker may take it over (a crashed handler's request waits this "
            "long)",
            1,
            600_000,
        ),
        "record_ttl_s": Option(
            "record_ttl_s",
            DAY_S,
            "with-key: records expire this long after the claim (expiresAt); a retry after that is a new request",
            1,
            30 * DAY_S,
        ),
    }
    default_ops = 6
    lost_response_default = 0.2

    def table_spec(self, options: RunOptions) -> TableSpec:
        return TableSpec(ttl_attribute="expiresAt")

    def setup(self, table: Table, options: RunOptions) -> None:
        pass  # the table starts empty: no records, no charges

    def client(self, ctx: ClientContext) -> None:
        box: _Mailbox = ctx.shared.setdefault("idempotency", _Mailbox(ctx.threads))
        try:
            for op in ctx.ops():
                self._deliver_one(ctx, box)
                self._send(ctx, box, self._new_request(ctx, box, op))
        finally:
            box.own_requests_done()
        # Stay until nobody can post: a crashed worker's caller retries on one of us.
        while not ctx.stopped and not box.idle():
            if not self._deliver_one(ctx, box):
                ctx.sleep(0.005)

    @staticmethod
    def _new_request(ctx: ClientContext, box: _Mailbox, op: int) -> Request:
        if ctx.rng.random() < ctx.options["reuse_share"] and (old := box.an_answered(ctx.rng)) is not None:
            return Request(old.request_id, old.amount + 5 * ctx.rng.randint(1, 10), reuse=True)
        request = Request(f"req-{ctx.client_id + 1}-{op + 1}", 5 * ctx.rng.randint(1, 40))
        if ctx.rng.random() < ctx.options["duplicate_share"]:
            box.post(request)
        return request

    def _deliver_one(self, ctx: ClientContext, box: _Mailbox) -> bool:
        request = box.take()
        if request is None:
            return False
        try:
            self._send(ctx, box, request)
        finally:
            box.delivered()
        return True

    def _send(self, ctx: ClientContext, box: _Mailbox, request: Request) -> None:
        """The caller: send until answered; retry later when told to; resend once if the reply is 'lost'."""
        handle = self._with_key if ctx.variant == "with-key" else self._without_key
        resent = False
        for attempt in range(MAX_SENDS):
            if ctx.stopped:
                return
            try:
                reply = handle(ctx, box, request, attempt)
            except Ambiguous:
                reply = None  # no answer (the charge timed out): send it again, same key
            if reply is None:
                ctx.backoff(attempt, base_s=0.01, cap_s=0.2)
                continue
            if reply != REFUSED and not request.reuse:
                box.answered(request)
            if not resent and ctx.rng.random() < ctx.options["resend_share"]:
                resent = True
                continue
            return

    @staticmethod
    def _with_key(ctx: ClientContext, box: _Mailbox, request: Request, attempt: int) -> str | None:
        """One run of the handler: the reply (a charge id or REFUSED), or None for 'retry later'."""
        key = record_key(request.request_id)
        token, digest = box.token(ctx.client_id), payload_hash(request.amount)
        detail = request.detail(attempt)
        verdict = _claim(ctx, box, request, key, token, digest, detail)
        if verdict.action != "proceed":
            return verdict.reply
        charge_id = str(verdict.charge)
        if ctx.rng.random() < ctx.options["crash_share"]:
            box.post(request)  # the caller never hears back and retries, on another worker
            ctx.crash(f"after claiming {request.request_id}")
        _charge(ctx, request, charge_id, detail)
        try:
            ctx.call(
                "complete",
                "UpdateItem",
                key=request.request_id,
                detail={**detail, "reply": charge_id},
                TableName=ctx.table.name,
                Key=key,
                UpdateExpression="SET #s = :done, #r = :response",
                ConditionExpression="chargeId = :charge",
                ExpressionAttributeNames={"#s": "status", "#r": "response"},
                ExpressionAttributeValues={
                    ":done": COMPLETED,
                    ":charge": charge_id,
                    ":response": {"chargeId": charge_id, "amount": request.amount},
                },
            )
        except CallError:
            pass  # the record moved on (expired, claimed anew): this request's charge is charge_id all the same
        return charge_id

    @staticmethod
    def _without_key(ctx: ClientContext, box: _Mailbox, request: Request, attempt: int) -> str:
        if ctx.rng.random() < ctx.options["crash_share"]:
            box.post(request)
            ctx.crash(f"before charging {request.request_id}")
        charge_id = box.charge_id()
        # A timeout goes back to the caller, who sends the whole request again: a new charge.
        _charge(ctx, request, charge_id, request.detail(attempt), last=True)
        return charge_id

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        items = table.scan_all()
        charges = [i for i in items if i["SK"] == CHARGE]
        stuck = sum(1 for i in items if i["SK"] == RECORD and i["status"] == IN_PROGRESS)
        frame = history.snapshot(detail=True)
        detail = frame["detail"]
        mine = [bool(d.get("request")) for d in detail]
        calls = frame[mine]
        reuse = pd.Series([bool(d.get("reuse")) for d in calls["detail"]], index=calls.index, dtype=bool)
        original = {d["request"]: d["amount"] for d in calls.loc[~reuse, "detail"]}
        replied = pd.Series(["reply" in d for d in calls["detail"]], index=calls.index, dtype=bool)
        replies = calls[replied]
        return [
            _one_charge_each(original, charges, replies, reuse[replied], calls, stuck),
            _same_reply(replies, reuse[replied]),
            _reuse_refused(original, charges, replies, reuse[replied]),
        ]

    def walkthrough(self, walk: Any) -> None:
        charge_ids = itertools.count(1)

        def charge_card(request_id: str, amount: int) -> dict[str, Any]:
            """The seed's wrapped handler; the charge is a real item instead of a Python list."""
            key = record_key(request_id)
            claim = walk.call(
                "PutItem",
                Item={**key, "status": IN_PROGRESS, "expiresAt": int(time.time()) + DAY_S},
                ConditionExpression="attribute_not_exists(PK)",
            )
            if isinstance(claim, ConditionFailed):
                record = walk.call("GetItem", Key=key, ConsistentRead=True)["Item"]
                if record["status"] == COMPLETED:
                    return _response(record["response"])
                raise RuntimeError("request already in progress - retry later")
            charge_id = f"ch_{next(charge_ids)}"
            walk.call("PutItem", show=False, Item={**charge_key(charge_id), "requestId": request_id, "amount": amount})
            response = {"chargeId": charge_id, "amount": amount}
            walk.call(
                "UpdateItem",
                Key=key,
                UpdateExpression="SET #s = :done, #r = :response",
                ExpressionAttributeNames={"#s": "status", "#r": "response"},
                ExpressionAttributeValues={":done": COMPLETED, ":response": response},
            )
            return response

        walk.result("First call", charge_card("req-123", 50))
        walk.result("Client retries same key", charge_card("req-123", 50))
        walk.result("New key", charge_card("req-456", 20))
        charges = walk.call(
            "Scan", show=False, FilterExpression="SK = :charge", ExpressionAttributeValues={":charge": CHARGE}
        )["Items"]
        walk.result(
            "Card was actually charged",
            [int(c["amount"]) for c in sorted(charges, key=lambda c: int(c["PK"].rsplit("_", 1)[1]))],
        )


def _claim(
    ctx: ClientContext,
    box: _Mailbox,
    request: Request,
    key: dict[str, str],
    token: str,
    digest: str,
    detail: dict[str, Any],
) -> Verdict:
    """Claim the key, naming the charge id up front; when refused (or unsure), the record decides."""
    charge_id = box.charge_id()
    for _ in range(4):  # the record can expire, or its holder stall, between our claim and our read
        now = time.time()
        try:
            ctx.call(
                CLAIM,
                "PutItem",
                key=request.request_id,
                detail=detail,
                TableName=ctx.table.name,
                Item={
                    **key,
                    "status": IN_PROGRESS,
                    "payloadHash": digest,
                    "chargeId": charge_id,
                    "owner": token,
                    "inProgressExpiry": int(now * 1000) + ctx.options["in_progress_timeout_ms"],
                    "expiresAt": int(now) + ctx.options["record_ttl_s"],
                },
                ConditionExpression=CLAIM_CONDITION,
                ExpressionAttributeValues={":now": int(now)},
            )
            return Verdict("proceed", "claimed", charge=charge_id)
        except (ConditionFailed, Ambiguous):
            pass  # held by someone, or our own claim applied and only its answer was lost
        verdict = _read(ctx, request, key, token, digest, detail)
        if verdict.action == "reclaim":
            verdict = _reclaim(ctx, request, key, token, str(verdict.charge), detail)
        if verdict.action != "claim":
            return verdict
    return Verdict("wait", "contended")


def _reclaim(
    ctx: ClientContext, request: Request, key: dict[str, str], token: str, charge_id: str, detail: dict[str, Any]
) -> Verdict:
    """Take over a claim past its in-progress expiry, keeping its charge id.

    The old holder may have charged already, or be about to: both of us charge under the same id, and a put of
    the same charge item applies once. So taking over is safe however slow, not only dead, the holder was.
    """
    now_ms = int(time.time() * 1000)
    try:
        ctx.call(
            RECLAIM,
            "UpdateItem",
            key=request.request_id,
            detail=detail,
            TableName=ctx.table.name,
            Key=key,
            UpdateExpression="SET #o = :me, inProgressExpiry = :later",
            ConditionExpression="#s = :running AND inProgressExpiry < :now_ms AND chargeId = :charge",
            ExpressionAttributeNames={"#o": "owner", "#s": "status"},
            ExpressionAttributeValues={
                ":me": token,
                ":later": now_ms + ctx.options["in_progress_timeout_ms"],
                ":running": IN_PROGRESS,
                ":now_ms": now_ms,
                ":charge": charge_id,
            },
        )
        return Verdict("proceed", "reclaimed", charge=charge_id)
    except (ConditionFailed, Ambiguous):
        return Verdict("claim", "reclaim-refused")  # someone else got there first (or we did): read again


def _read(
    ctx: ClientContext, request: Request, key: dict[str, str], token: str, digest: str, detail: dict[str, Any]
) -> Verdict:
    seen: list[Verdict] = []
    ctx.call(
        READ_RECORD,
        "GetItem",
        key=request.request_id,
        detail=detail,
        observe=_judging(seen, token, digest),
        TableName=ctx.table.name,
        Key=key,
        ConsistentRead=True,
    )
    return seen[0]


def _charge(
    ctx: ClientContext, request: Request, charge_id: str, detail: dict[str, Any], *, last: bool = False
) -> None:
    """The side effect: the payment provider charges the card once per charge id (a charge item).

    With the key, a timed-out charge is sent again under the same id. Without it (`last`: this call ends the
    handler, so it carries the reply), the timeout goes back to the caller.
    """
    ctx.sleep(ctx.options["effect_ms"] / 1000)
    while True:
        try:
            ctx.call(
                CHARGE_CARD,
                "PutItem",
                key=request.request_id,
                detail={**detail, "charge": charge_id},
                observe=(lambda _: {"reply": charge_id}) if last else None,
                TableName=ctx.table.name,
                Item={**charge_key(charge_id), "requestId": request.request_id, "amount": request.amount},
            )
            return
        except Ambiguous:
            if last or ctx.stopped:
                raise


def _judging(seen: list[Verdict], token: str, digest: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An observe hook: judge the record read, keep the verdict for the handler and its reply in the history."""

    def observe(response: dict[str, Any]) -> dict[str, Any]:
        seen.append(judge(response.get("Item"), token, digest, time.time()))
        return seen[-1].detail

    return observe


def _response(stored: dict[str, Any]) -> dict[str, Any]:
    return {"chargeId": stored["chargeId"], "amount": stored["amount"]}


def _one_charge_each(
    original: dict[str, int],
    charges: list[dict[str, Any]],
    replies: pd.DataFrame,
    reuse: pd.Series,
    calls: pd.DataFrame,
    stuck: int,
) -> Invariant:
    # Charges of another amount under a key belong to its reuse: the third invariant counts those.
    per_request = Counter(str(c["requestId"]) for c in charges if original.get(str(c["requestId"])) == c["amount"])
    answered = {d["request"] for d in replies.loc[~reuse, "detail"] if d["reply"] != REFUSED}
    doubled = {r for r, n in per_request.items() if n > 1}
    extra = sum(per_request[r] - 1 for r in doubled)
    uncharged = sorted(r for r in answered if per_request[r] == 0)
    unanswered = sum(1 for r in original if r not in answered and per_request[r] == 0)
    reclaimed = int(((calls["action"] == "reclaim") & (calls["outcome"] == "ok")).sum())
    n = len(original)
    notes = [
        f"{len(doubled)} requests were charged more than once ({extra} extra charges): a retry or a duplicate "
        "delivery ran the charge again"
        if extra
        else f"every one of {n} requests was charged once, however often it was sent"
    ]
    if uncharged:
        notes.append(f"{len(uncharged)} answered requests have no charge ({', '.join(uncharged[:3])})")
    if reclaimed:
        notes.append(f"{reclaimed} claims past their in-progress expiry were taken over under their charge id")
    if unanswered:
        notes.append(f"{unanswered} requests were still unanswered and uncharged when the run ended")
    if stuck:
        notes.append(f"{stuck} records were left IN_PROGRESS")
    evidence = rows(
        calls, [a == "charge" and d["request"] in doubled for a, d in zip(calls["action"], calls["detail"])]
    )
    return Invariant(
        name="exactly one charge per logical request",
        key=ONE_CHARGE,
        holds=extra == 0 and not uncharged,
        expected=f"{n} requests, {n} charges",
        observed=f"{len(per_request)} charged, {extra} extra charges"
        + (f", {len(uncharged)} answered but uncharged" if uncharged else ""),
        violations=extra + len(uncharged),
        calls=evidence,
        explanation="; ".join(notes),
    )


def _same_reply(replies: pd.DataFrame, reuse: pd.Series) -> Invariant:
    originals = replies[~reuse]
    seen: dict[str, set[str]] = defaultdict(set)
    for d in originals["detail"]:
        seen[d["request"]].add(d["reply"])
    differing = {r for r, answers in seen.items() if len(answers) > 1}
    extra = sum(len(seen[r]) - 1 for r in differing)
    evidence = rows(originals, [d["request"] in differing for d in originals["detail"]])
    sample = next(iter(sorted(differing)), None)
    return Invariant(
        name="every reply to a key is the same",
        key=SAME_REPLY,
        holds=not differing,
        expected=0,
        observed=f"{len(differing)} keys got differing replies" if differing else 0,
        violations=extra,
        calls=evidence,
        explanation=(
            f"{len(differing)} requests were answered with different charges (e.g. {sample}: "
            f"{', '.join(sorted(seen[sample]))})"
            if sample is not None
            else f"{len(originals)} replies to {len(seen)} keys: each key always got its first reply back"
        ),
    )


def _reuse_refused(
    original: dict[str, int], charges: list[dict[str, Any]], replies: pd.DataFrame, reuse: pd.Series
) -> Invariant:
    wrong = [c for c in charges if original.get(str(c["requestId"])) != c["amount"]]
    reused = replies[reuse]
    attempts = len(reused)
    evidence = rows(reused, [d["reply"] != REFUSED for d in reused["detail"]])
    return Invariant(
        name="a key reused with another payload is refused",
        key=REUSE_REFUSED,
        holds=not wrong,
        expected=0,
        observed=len(wrong),
        violations=len(wrong),
        calls=evidence,
        explanation=(
            f"{len(wrong)} charges were made for a reused key with another amount"
            if wrong
            else f"all {attempts} sends that reused a key for another amount were refused (payload hash)"
        ),
    )
