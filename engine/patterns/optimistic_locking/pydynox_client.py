"""Seed 004's library in the lab: clients that are pydynox models with a `VersionAttribute`.

pydynox (a Rust core) does not go through botocore, so none of botocore's hooks see its calls: each get and
save is recorded here, as one Call at the place it is made (op GetItem, or UpdateItem/PutItem as pydynox chose, the outcome, the
DynamoDB error code, the version read and written in the detail), in the same History as every other call.
It talks to the run's backend: the endpoint, region and credentials of the run's boto3 client.

What does not reach it: botocore's retry policy (pydynox is told to make one attempt per call, so every
attempt is a recorded call) and the injected latency (a botocore hook). So a call refused for load (throttled)
is sent again here after a backoff, as AWS advises and as ClientContext.call does for botocore's calls: each
attempt recorded. A lost response is injected here the
same way as for botocore: the save is sent and applied, its answer is dropped, and the call is unknown (INFO).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydynox import DynamoDBClient, Model, ModelConfig
from pydynox.attributes import NumberAttribute, StringAttribute, VersionAttribute
from pydynox.exceptions import ConditionalCheckFailedException, ConnectionException, PydynoxException

from engine.patterns.base import LAST_ATTEMPT
from engine.record.calllog import format_request
from engine.record.calls import (
    CONTENTION_CODES,
    CONTENTION_RETRIES,
    Ambiguous,
    CallError,
    ClientContext,
    ConditionFailed,
    Refused,
)
from engine.record.history import Call, Outcome

T = TypeVar("T")
VIA = "pydynox"
# pydynox warns on every call slower than 100 ms; the lab records every call's latency itself, and a loaded
# machine would otherwise print thousands of lines. A NullHandler keeps them off stderr unless the
# application configures logging.
logging.getLogger("pydynox").addHandler(logging.NullHandler())
# A botocore call is tried 3 times by botocore's retry policy inside each of ClientContext.call's resends for
# throttling; pydynox makes one attempt per call, so it gets as many resends as that makes in all.
THROTTLE_RESENDS = 3 * (CONTENTION_RETRIES + 1)
_LOCK = threading.Lock()  # one pydynox client and model class per run, made by the first client thread


def pydynox_client(ctx: ClientContext, account_pk: Callable[[int], str], sk: str) -> None:
    """Seed 004's `increment_with_retry`, as a balance change: get, change, sync_save; on
    ConditionalCheckFailedException reload and retry with backoff."""
    account = account_model(ctx)
    for op in ctx.ops():
        pk = account_pk(ctx.rng.randrange(ctx.options["accounts"]))
        amount = ctx.rng.choice((1, -1)) * ctx.rng.randint(1, 50)
        action = "deposit" if amount > 0 else "withdraw"
        for attempt in range(ctx.options["max_attempts"]):
            if ctx.stopped:
                return
            current = get(ctx, account, pk, sk)
            if current is None:
                raise LookupError(f"{pk} is gone: nothing in this pattern deletes an account")
            current.balance = int(current.balance) + amount
            try:
                last = attempt + 1 == ctx.options["max_attempts"]
                save(ctx, current, action, pk, {"amount": amount, "attempt": attempt + 1, "op": op, LAST_ATTEMPT: last})
                break
            except ConditionFailed:
                ctx.backoff(attempt)
            except Ambiguous:
                break  # counted as unknown by verify; a retry could apply the change twice


def account_model(ctx: ClientContext) -> type[Model]:
    """The run's pydynox model of an account item, bound to its table and backend (one per run and process)."""
    with _LOCK:
        model = ctx.shared.get("_pydynox_model")
        if model is None:
            model = ctx.shared["_pydynox_model"] = make_account_model(ctx.client, ctx.table.name)
    return model


def make_account_model(boto_client: Any, table_name: str) -> type[Model]:
    """class Account(Model) with PK, SK, balance and `version = VersionAttribute()`, on `table_name`, reaching
    the same server with the same credentials as `boto_client`."""

    class Account(Model):
        model_config = ModelConfig(table=table_name, client=pydynox_connection(boto_client))
        PK = StringAttribute(partition_key=True)
        SK = StringAttribute(sort_key=True)
        balance = NumberAttribute()
        version = VersionAttribute()

    return Account


def pydynox_connection(boto_client: Any) -> DynamoDBClient:
    """A pydynox DynamoDBClient for the backend `boto_client` reaches (embedded, endpoint URL or AWS)."""
    # botocore keeps the resolved credentials on the client's signer: the same ones its calls are signed with
    # (a profile, SSO, environment keys on AWS; the lab's dummy key elsewhere).
    credentials = boto_client._request_signer._credentials
    frozen = credentials.get_frozen_credentials() if credentials is not None else None
    return DynamoDBClient(
        region=boto_client.meta.region_name,
        access_key=frozen.access_key if frozen else None,
        secret_key=frozen.secret_key if frozen else None,
        session_token=frozen.token if frozen else None,
        endpoint_url=boto_client.meta.endpoint_url,
        connect_timeout=5.0,
        read_timeout=10.0,
        max_retries=0,  # one attempt per call: a retry hidden inside the library could not be recorded
    )


def get(ctx: ClientContext, model: type[Model], pk: str, sk: str) -> Any:
    """`Model.sync_get` with ConsistentRead, recorded as one GetItem."""
    params = {"TableName": ctx.table.name, "Key": {"PK": pk, "SK": sk}, "ConsistentRead": True}

    def read() -> Any:
        return model.sync_get(consistent_read=True, PK=pk, SK=sk)

    def seen(item: Any) -> Mapping[str, Any]:
        return {"version": item.version} if item is not None else {"missing": True}

    return record(ctx, "read", "GetItem", pk, params, read, {"via": VIA}, observe=seen)


def save(ctx: ClientContext, item: Any, action: str, key: str, detail: Mapping[str, Any]) -> None:
    """`item.sync_save()`, recorded as the one call it makes, with the version it held and the one it writes.

    pydynox saves an item it loaded and changed with UpdateItem (the changed fields and the new version),
    anything else with PutItem; the recorded op and request say which, with its version condition."""
    held = item.version
    written = 1 if held is None else int(held) + 1
    fields = item.to_dict()
    balance = int(fields["balance"])
    # pydynox's own rule (prepare_smart_save): loaded from the table and changed -> UpdateItem.
    smart = item.is_dirty and getattr(item, "_original", None) is not None
    params: dict[str, Any] = {"TableName": ctx.table.name}
    if smart:
        params["Key"] = {"PK": fields["PK"], "SK": fields["SK"]}
        params["UpdateExpression"] = "SET balance = :b, version = :nv"
        values: dict[str, Any] = {":b": balance, ":nv": written}
    else:
        params["Item"] = {**fields, "version": written}
        values = {}
    params["ConditionExpression"] = "attribute_not_exists(version)" if held is None else "version = :v"
    if held is not None:
        values[":v"] = int(held)
    if values:
        params["ExpressionAttributeValues"] = values
    full = {"read_version": held, "version": written, "balance": balance, "via": VIA, **detail}
    lose = ctx.lost_response_share > 0 and ctx.rng.random() < ctx.lost_response_share

    def send() -> None:
        # pydynox advances item.version before it sends and keeps it when the call fails: a throttled save
        # resent as is would check the next version, and overwrite whoever wrote that one (a lost update).
        item.version = held
        item.sync_save()

    record(ctx, action, "UpdateItem" if smart else "PutItem", key, params, send, full, lose_response=lose)


def record(
    ctx: ClientContext,
    action: str,
    op: str,
    key: str,
    params: Mapping[str, Any],
    do: Callable[[], T],
    detail: Mapping[str, Any],
    *,
    observe: Callable[[T], Mapping[str, Any]] | None = None,
    lose_response: bool = False,
) -> T:
    """Make one pydynox call and record it like engine.record.calls.ClientContext does a boto3 call: OK when it
    returned, FAIL when DynamoDB said no, INFO when the answer was lost (the connection failed, or a lost
    response was injected after the call was applied). Raises the same CallError subclasses. Refused for load
    (throttled), it is sent again after a backoff, each attempt recorded: with max_retries=0 nothing else
    would, and the client would stop half-way on the first throttled call."""
    for attempt in itertools.count():
        try:
            return _record_once(ctx, action, op, key, params, do, detail, observe=observe, lose_response=lose_response)
        except Refused as e:
            if e.code not in CONTENTION_CODES or attempt >= THROTTLE_RESENDS or not ctx.backoff(attempt, 0.005, 0.5):
                raise
    raise AssertionError("unreachable")


def _record_once(
    ctx: ClientContext,
    action: str,
    op: str,
    key: str,
    params: Mapping[str, Any],
    do: Callable[[], T],
    detail: Mapping[str, Any],
    *,
    observe: Callable[[T], Mapping[str, Any]] | None,
    lose_response: bool,
) -> T:
    request = format_request(op, params) if ctx.record_requests else None
    full = dict(detail)
    code: str | None = None
    result: T | None = None
    invoke = time.monotonic_ns()
    try:
        result = do()
    except ConditionalCheckFailedException:
        code = "ConditionalCheckFailedException"
    except ConnectionException:
        code = "ConnectionException"
    except PydynoxException as e:
        code = type(e).__name__
    finally:
        complete = time.monotonic_ns()
    outcome = Outcome.OK if code is None else Outcome.FAIL
    if code == "ConnectionException":
        outcome = Outcome.INFO  # the request may have left and been applied
    if lose_response:
        # The request reached the server either way; its answer (applied or refused) never reaches the client.
        outcome, code = Outcome.INFO, "ReadTimeoutError"
        full["lost_response"] = True
    if observe is not None and outcome is Outcome.OK:
        full.update(observe(result))  # type: ignore[arg-type]
    call = Call(
        client=ctx.client_id,
        action=action,
        op=op,
        key=key,
        invoke_ns=invoke,
        complete_ns=complete,
        outcome=outcome,
        error=code,
        detail=full,
        request=request,
    )
    ctx.history.append(call)
    ctx.count_cpu()
    if outcome is Outcome.OK:
        return result  # type: ignore[return-value]
    raise _error(outcome, code or "", call)


def _error(outcome: Outcome, code: str, call: Call) -> CallError:
    if outcome is Outcome.INFO:
        return Ambiguous(code, call)
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(code, call)
    return Refused(code, call)
