"""One recorded boto3 call: time it, classify its outcome, keep it in the History, map errors to ours.

The record is written in a `finally` (after Locust), so a call that raised is recorded too.
Outcome rules (DESIGN.md):
- OK when the call returned.
- FAIL when DynamoDB said no (condition failed, transaction cancelled, validation, throttled to the end)
  and no earlier attempt of the same call might have been applied.
- INFO when the answer is unknown: the response was lost (timeout, connection closed) or botocore retried
  after such a loss, so a final ConditionalCheckFailed may be our own earlier attempt's doing.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from engine.backends.faults import flags
from engine.errors import LabError
from engine.record.calllog import format_request
from engine.record.codes import AMBIGUOUS, READS, THROTTLED
from engine.record.history import Call, Outcome

_SNAKE = {
    "PutItem": "put_item",
    "UpdateItem": "update_item",
    "DeleteItem": "delete_item",
    "GetItem": "get_item",
    "Query": "query",
    "Scan": "scan",
    "TransactWriteItems": "transact_write_items",
    "TransactGetItems": "transact_get_items",
    "BatchWriteItem": "batch_write_item",
    "BatchGetItem": "batch_get_item",
}


class CallError(Exception):
    """A recorded call did not succeed; `code` is the DynamoDB (or botocore) error code."""

    def __init__(self, code: str, call: Call, response: Mapping[str, Any] | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.call = call
        self.response = dict(response or {})

    @property
    def item(self) -> dict[str, Any] | None:
        """The item as it was when a condition failed (ReturnValuesOnConditionCheckFailure=ALL_OLD)."""
        return self.response.get("Item")


def outcome(response: Mapping[str, Any] | CallError) -> str:
    """What the seed prints for a call: "OK" or the exception's name."""
    return response.code if isinstance(response, CallError) else "OK"


class ConditionFailed(CallError):
    """ConditionalCheckFailedException: definitely not applied."""


class TransactionCanceled(CallError):
    """TransactionCanceledException; `reasons` has one code per action ("None" where the action was fine)."""

    @property
    def reasons(self) -> list[str]:
        return [r.get("Code", "None") for r in self.response.get("CancellationReasons", [])]


class Ambiguous(CallError):
    """The call may or may not have been applied (INFO): the pattern has to find out."""


class Refused(CallError):
    """Any other error DynamoDB or the network returned (validation, throttling to the end, refused)."""


class ClientCrash(Exception):
    """Raised inside a pattern to simulate the client process dying at that point."""


class Recorder(Protocol):
    """Where calls are recorded: the run's History, or a client process's outbox (engine/clients/processes.py)."""

    def append(self, call: Call) -> None: ...

    def __len__(self) -> int: ...


class Caller:
    """Records every call one client thread makes. Not shared between threads."""

    def __init__(
        self,
        client: Any,
        history: Recorder,
        client_id: int,
        *,
        rng: random.Random | None = None,
        lost_response_share: float = 0.0,
        record_requests: bool = True,
    ) -> None:
        self.client = client
        self.history = history
        self.client_id = client_id
        self.rng = rng or random.Random(client_id)
        self.lost_response_share = lost_response_share
        self.record_requests = record_requests

    def call(
        self,
        action: str,
        op: str,
        *,
        key: str,
        detail: Mapping[str, Any] | None = None,
        lose_response: bool | None = None,
        observe: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """Make one DynamoDB call and record it; raises a CallError subclass unless it succeeded.

        `observe` picks facts from a successful response into the recorded detail (a number handed out
        by UPDATED_NEW, a fencing token), so verify can read them from the history.
        """
        method = getattr(self.client, _SNAKE.get(op) or _snake(op))
        if lose_response is None:
            lose_response = (
                op not in READS and self.lost_response_share > 0 and self.rng.random() < self.lost_response_share
            )
        flags.lose_next = lose_response
        attempts: list[str] = []
        flags.attempts = attempts
        request = format_request(op, params) if self.record_requests else None
        response: dict[str, Any] | None = None
        code: str | None = None
        outcome = Outcome.OK
        error_response: dict[str, Any] = {}
        invoke = time.monotonic_ns()
        try:
            response = method(**params)
        except ClientError as e:
            error_response = e.response
            code = e.response.get("Error", {}).get("Code") or "ClientError"
        except BotoCoreError as e:
            code = type(e).__name__
        finally:
            complete = time.monotonic_ns()
            flags.lose_next = False
            flags.attempts = None
        meta = (response or error_response).get("ResponseMetadata", {})
        retries = int(meta.get("RetryAttempts", max(0, len(attempts) - (0 if response is not None else 1))))
        full_detail = dict(detail or {})
        if lose_response:
            full_detail["lost_response"] = True
        if observe is not None and response is not None:
            full_detail.update(observe(response))
        if response is not None and op not in READS and any(_ambiguous(a) for a in attempts):
            # Applied, but an earlier attempt may have been applied too: once or twice is unknown.
            outcome = Outcome.INFO
            full_detail["ambiguous_retry"] = True
            full_detail["attempts"] = attempts
        if code is not None:
            status = int(error_response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            ambiguous_before = any(_ambiguous(a) for a in attempts[:-1] if a)
            if _ambiguous(code) or status >= 500 or (ambiguous_before and op not in READS):
                outcome = Outcome.INFO
            else:
                outcome = Outcome.FAIL
            if attempts[:-1]:
                full_detail["attempts"] = attempts
            if "CancellationReasons" in error_response:
                full_detail["reasons"] = [r.get("Code", "None") for r in error_response["CancellationReasons"]]
            if "Item" in error_response:
                # Error bodies skip the resource layer's deserializer: convert like a normal response.
                error_response = {**error_response, "Item": _plain(error_response["Item"])}
                full_detail["old_item"] = error_response["Item"]
        call = Call(
            client=self.client_id,
            action=action,
            op=op,
            key=key,
            invoke_ns=invoke,
            complete_ns=complete,
            outcome=outcome,
            error=code,
            retries=retries,
            detail=full_detail,
            request=request,
        )
        self.history.append(call)
        if code is None:
            assert response is not None
            return response
        # Raised straight from the helper's result: an exception held in a local of this frame would reference
        # its own traceback, and that cycle (frame, request, response) would wait for the garbage collector. With
        # a conflict on most calls, it made collections run 2.5 times as often as boto3's own calls cause.
        raise _call_error(outcome, code, call, error_response)


def _call_error(outcome: Outcome, code: str, call: Call, response: Mapping[str, Any]) -> CallError:
    if outcome is Outcome.INFO:
        return Ambiguous(code, call, response)
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(code, call, response)
    if code == "TransactionCanceledException":
        return TransactionCanceled(code, call, response)
    return Refused(code, call, response)


class ClientContext(Caller):
    """What one worker thread of a run sees: its id, the table, the run's knobs, limits and stop signal."""

    def __init__(
        self,
        *,
        client: Any,
        history: Recorder,
        client_id: int,
        table: Any,
        options: Any,  # RunOptions (patterns read ctx.options[name]; a plain mapping in unit tests)
        variant: str,
        threads: int,
        ops_per_client: int | None,
        deadline: float | None,
        stop: threading.Event,
        shared: dict[str, Any],
        rng: random.Random,
        lost_response_share: float = 0.0,
        record_requests: bool = True,
        max_calls: int | None = None,
    ) -> None:
        super().__init__(
            client,
            history,
            client_id,
            rng=rng,
            lost_response_share=lost_response_share,
            record_requests=record_requests,
        )
        self.max_calls = max_calls
        self.table = table
        self.options = options
        self.variant = variant
        self.threads = threads
        self.ops_per_client = ops_per_client
        self.deadline = deadline
        self.stop_event = stop
        self.shared = shared  # per-run state a pattern wants all its clients to see (under its own lock)
        self.ops_done = 0
        self.cpu_s = 0.0  # CPU this client's thread has used so far (time.thread_time), kept current per call
        self._cpu_from: float | None = None

    @property
    def stopped(self) -> bool:
        return (
            self.stop_event.is_set()
            or (self.deadline is not None and time.monotonic() >= self.deadline)
            or (self.max_calls is not None and len(self.history) >= self.max_calls)
        )

    def ops(self) -> Iterator[int]:
        """Op indices until the op count, the time limit or a stop, whichever comes first."""
        i = 0
        while not self.stopped and (self.ops_per_client is None or i < self.ops_per_client):
            yield i
            i += 1
            self.ops_done = i

    def call(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """One recorded call; refused for contention (another transaction holds the item, the key's throughput
        is used up, after botocore's own retries), it is made again after a backoff, as AWS advises: each
        attempt is recorded. A failed condition is never retried here: that is the pattern's business."""
        attempt = 0
        while True:
            try:
                return super().call(*args, **kwargs)
            except (Refused, TransactionCanceled) as e:
                if not _contention(e) or attempt >= CONTENTION_RETRIES or not self.backoff(attempt, 0.005, 0.5):
                    raise
                attempt += 1
            finally:
                self.count_cpu()

    def count_cpu(self) -> None:
        """Bring `cpu_s` up to date; called on the client's own thread (the first call starts the count)."""
        now = time.thread_time()
        if self._cpu_from is None:
            self._cpu_from = now
        self.cpu_s = now - self._cpu_from

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopped; True when the full sleep happened. Never past the run's time limit."""
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left < seconds:
                self.stop_event.wait(max(0.0, left))
                return False
        return not self.stop_event.wait(max(0.0, seconds))

    def read_item(self, action: str, *, key: str, **params: Any) -> dict[str, Any] | None:
        """GetItem of an item that exists (the run's setup wrote it). A read without ConsistentRead may not see it
        yet (DynamoDB serves it from a replica that has not caught up; the aws-like profile simulates that), so it
        is read again after a backoff, each read recorded. None only when the run is stopped meanwhile."""
        for attempt in itertools.count():
            item = self.call(action, "GetItem", key=key, **params).get("Item")
            if item is not None:
                return item
            if attempt >= NOT_YET_VISIBLE_READS or not self.backoff(attempt, 0.01, 0.25):
                if self.stopped:
                    return None
                raise LabError(
                    f"{key} was still not visible after {attempt + 1} reads",
                    "the item the run's setup wrote is missing: check the table, and run again",
                )
        raise AssertionError("unreachable")

    def backoff(self, attempt: int, base_s: float = 0.002, cap_s: float = 0.1) -> bool:
        """Exponential backoff with full jitter (the seed's "retry with backoff")."""
        return self.sleep(jittered(self.rng, attempt, base_s, cap_s))

    def crash(self, where: str) -> None:
        raise ClientCrash(where)


def jittered(rng: random.Random, attempt: int, base_s: float, cap_s: float) -> float:
    """Seconds to wait after send `attempt` (from 0): exponential backoff with full jitter."""
    return rng.uniform(0, min(cap_s, base_s * 2**attempt))


# Refused only for contention: the same request may simply be sent again after a backoff. A client that gave
# up half-way through an operation would leave the run incomplete (Run.incomplete), so unjudgeable.
CONTENTION_CODES = THROTTLED | {"TransactionConflictException"}
CONTENTION_RETRIES = 8
NOT_YET_VISIBLE_READS = 20  # an eventually consistent read re-read until it sees an item: seconds, at most


def _contention(e: CallError) -> bool:
    """Refused only because of contention, so the same request may simply be sent again."""
    if isinstance(e, TransactionCanceled):
        # Throttled alone. A cancellation for TransactionConflict is the pattern's to retry: it records attempts.
        return "ThrottlingError" in e.reasons and all(r in ("None", "ThrottlingError") for r in e.reasons)
    return e.code in CONTENTION_CODES


def _ambiguous(code: str) -> bool:
    # A 5xx (botocore reports the status as the code when the body has none) may have been applied.
    return code in AMBIGUOUS or (code.isdigit() and int(code) >= 500)


def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    try:
        return {k: deserializer.deserialize(v) for k, v in item.items()}
    except (TypeError, ValueError, AttributeError):
        return dict(item)  # already plain


def _snake(op: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in op).lstrip("_")
