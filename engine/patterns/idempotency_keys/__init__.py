"""27 · Idempotency keys: exactly-once charges for retried requests, against charging on every delivery.

Each client thread is a caller and, inline, the payment API's handler. A logical request (a charge of an amount
under a request id) can reach the handler more than once: the caller resends it when the reply is lost, the
queue delivers a copy to a second worker, and the caller of a crashed worker retries it on another. Lost
responses of DynamoDB writes (botocore retries them) come on top.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.backends.tables import Table, TableSpec
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.patterns.idempotency_keys.invariants import ONE_CHARGE, REUSE_REFUSED, SAME_REPLY, verdicts
from engine.patterns.idempotency_keys.mailbox import Mailbox, Request
from engine.patterns.idempotency_keys.shared import (
    CHARGE,
    CHARGE_CARD,
    CLAIM,
    COMPLETED,
    DAY_S,
    DETAIL_ATTEMPT,
    DETAIL_CHARGE,
    DETAIL_RECORD,
    DETAIL_REPLY,
    DETAIL_REQUEST,
    DETAIL_REUSE,
    DETAIL_TOLD,
    IN_PROGRESS,
    READ_RECORD,
    RECLAIM,
    RECORD,
    REFUSED,
    charge_key,
    record_key,
)
from engine.patterns.idempotency_keys.walkthrough import in_practice
from engine.record.calls import Ambiguous, CallError, ClientContext, ConditionFailed
from engine.record.history import History

# What the dashboard's view and the tests read: the invariant keys, the names of calls and details, the judge.
__all__ = [
    "CHARGE",
    "CHARGE_CARD",
    "CLAIM",
    "CLAIM_CONDITION",
    "COMPLETED",
    "DETAIL_ATTEMPT",
    "DETAIL_CHARGE",
    "DETAIL_RECORD",
    "DETAIL_REPLY",
    "DETAIL_REQUEST",
    "DETAIL_REUSE",
    "DETAIL_TOLD",
    "IN_PROGRESS",
    "ONE_CHARGE",
    "READ_RECORD",
    "RECLAIM",
    "RECORD",
    "REFUSED",
    "REUSE_REFUSED",
    "SAME_REPLY",
    "IdempotencyKeys",
    "judge",
    "payload_hash",
    "record_key",
]

MAX_SENDS = 200  # a caller's sends of one request, "retry later" answers included
CLAIM_CONDITION = "attribute_not_exists(PK) OR expiresAt < :now"  # an expired record counts as absent


def payload_hash(amount: int) -> str:
    return hashlib.sha256(f'{{"amount": {amount}}}'.encode()).hexdigest()[:16]


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
        box: Mailbox = ctx.shared.setdefault("idempotency", Mailbox(ctx.threads))
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
    def _new_request(ctx: ClientContext, box: Mailbox, op: int) -> Request:
        if ctx.rng.random() < ctx.options["reuse_share"] and (old := box.an_answered(ctx.rng)) is not None:
            return Request(old.request_id, old.amount + 5 * ctx.rng.randint(1, 10), reuse=True)
        # Named by the client that first sends it, numbered as the timeline numbers clients: req-3-1 is client 3's
        # first request (another client may handle a resend of it).
        request = Request(f"req-{ctx.client_id}-{op + 1}", 5 * ctx.rng.randint(1, 40))
        if ctx.rng.random() < ctx.options["duplicate_share"]:
            box.post(request)
        return request

    def _deliver_one(self, ctx: ClientContext, box: Mailbox) -> bool:
        request = box.take()
        if request is None:
            return False
        try:
            self._send(ctx, box, request)
        finally:
            box.delivered()
        return True

    def _send(self, ctx: ClientContext, box: Mailbox, request: Request) -> None:
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
    def _with_key(ctx: ClientContext, box: Mailbox, request: Request, attempt: int) -> str | None:
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
    def _without_key(ctx: ClientContext, box: Mailbox, request: Request, attempt: int) -> str:
        if ctx.rng.random() < ctx.options["crash_share"]:
            box.post(request)
            ctx.crash(f"before charging {request.request_id}")
        charge_id = box.charge_id()
        # A timeout goes back to the caller, who sends the whole request again: a new charge.
        _charge(ctx, request, charge_id, request.detail(attempt), last=True)
        return charge_id

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        return verdicts(table, history, keyed=options.variant == "with-key")

    def walkthrough(self, walk: Any) -> None:
        in_practice(walk)


def _claim(
    ctx: ClientContext,
    box: Mailbox,
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
