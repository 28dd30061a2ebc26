"""27 · Idempotency keys: a claimed key charges once and replays its reply; without it every retry charges again."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.patterns import idempotency_keys
from engine.patterns.idempotency_keys import (
    CLAIM_CONDITION,
    COMPLETED,
    IN_PROGRESS,
    REFUSED,
    Verdict,
    judge,
    payload_hash,
    record_key,
)
from engine.run.runner import Run, RunConfig, RunState, run_pattern
from engine.run.walkthrough import run_walkthrough

ONCE = "exactly one charge per logical request"
SAME = "every reply to a key is the same"
REUSE = "a key reused with another payload is refused"


def _run(
    backend: Backend,
    variant: str,
    threads: int,
    ops: int,
    *,
    lost: float | None = None,
    seed: int | None = None,
    **options: float,
) -> Run:
    return run_pattern(
        RunConfig(
            pattern="idempotency-keys",
            variant=variant,
            threads=threads,
            ops_per_client=ops,
            options=options,
            lost_response_share=lost,
            seed=seed,
        ),
        backend,
    )


def _result(text: str, title: str) -> object:
    block = text.split(f"=== {title} ===\n", 1)[1].split("\n\n", 1)[0]
    return json.loads(block)


def _records(run: Run) -> list[str]:
    """What each read of the idempotency record found (absent, completed, in-progress, stuck, ours, ...)."""
    frame = run.history.snapshot(detail=True)
    return [d["record"] for d in frame.loc[frame["action"] == "read-record", "detail"]]


@pytest.fixture(scope="module")
def walk_text(backend: Backend) -> str:
    text, _ = run_walkthrough("idempotency-keys", backend)
    return text


@pytest.fixture(scope="module")
def with_key(backend: Backend) -> Run:
    # 64 workers, a fifth of the writes lose their response (the default); many requests are delivered twice,
    # resent, or reused with another amount. What the tests need, and the chance a run lacks it: a lost claim
    # (128 claims at 0.2: 0.8**128 < 1e-12), a reuse (each second op has an answered request to reuse, 64 draws at
    # 0.2: 0.8**64 < 1e-6), a replayed completed record (128 answers resent at 0.3: 0.7**128 < 1e-19).
    return _run(backend, "with-key", 64, 2, duplicate_share=0.3, resend_share=0.3, reuse_share=0.2)


def test_first_call_claims_req_123_and_charges_ch_1(walk_text: str) -> None:
    first = walk_text.split("=== First call ===")[0]
    assert re.search(
        r"item:       \{PK: 'IDEMPOTENCY#req-123', SK: 'RECORD', status: 'IN_PROGRESS', "
        r"expiresAt: \d+\}\n    condition:  attribute_not_exists\(PK\)",
        first,
    )
    assert "update:     SET status = 'COMPLETED', response = {chargeId: 'ch_1', amount: 50}" in first
    assert _result(walk_text, "First call") == {"chargeId": "ch_1", "amount": 50}


def test_expires_at_is_a_real_day_from_now(walk_text: str) -> None:
    stamps = {int(s) for s in re.findall(r"expiresAt: (\d+)", walk_text)}
    assert stamps and all(abs(s - (time.time() + 24 * 3600)) < 600 for s in stamps)


def test_the_retry_replays_ch_1_from_a_consistent_read(walk_text: str) -> None:
    retry = walk_text.split("=== First call ===")[1].split("=== Client retries same key ===")[0]
    assert ">>> PutItem" in retry and "UpdateItem" not in retry
    assert "key:        {PK: 'IDEMPOTENCY#req-123', SK: 'RECORD'}\n    ConsistentRead: True" in retry
    assert _result(walk_text, "Client retries same key") == {"chargeId": "ch_1", "amount": 50}


def test_a_new_key_charges_ch_2(walk_text: str) -> None:
    assert "IDEMPOTENCY#req-456" in walk_text
    assert _result(walk_text, "New key") == {"chargeId": "ch_2", "amount": 20}


def test_the_card_was_charged_50_and_20_only(walk_text: str) -> None:
    assert _result(walk_text, "Card was actually charged") == [50, 20]
    assert walk_text.rstrip().endswith("=== Card was actually charged ===\n[\n  50,\n  20\n]")


def test_with_key_keeps_every_invariant_at_64_threads(with_key: Run) -> None:
    assert with_key.state is RunState.DONE
    assert set(with_key.invariants_by_name()) == {ONCE, SAME, REUSE}
    assert all(inv.holds for inv in with_key.invariants), [i.as_dict() for i in with_key.invariants if not i.holds]


def test_a_lost_claim_response_is_resolved_by_reading_the_record(with_key: Run) -> None:
    frame = with_key.history.snapshot(detail=True)
    claims = frame[frame["action"] == "claim"]
    assert (claims["outcome"] == "info").sum() > 0  # applied, answer lost, botocore's retry refused
    assert "ours" in _records(with_key)  # the read shows our own claim: go on and charge


def test_retries_replay_and_reused_keys_are_refused(with_key: Run) -> None:
    records = _records(with_key)
    assert "completed" in records and "other-payload" in records
    frame = with_key.history.snapshot(detail=True)
    replies = [d["reply"] for d in frame["detail"] if d.get("reuse") and "reply" in d]
    assert replies and set(replies) == {REFUSED}


def test_without_a_key_retries_and_duplicates_charge_again(backend: Backend) -> None:
    # A reuse needs an answered request to reuse, and under load a client's first draws may come before any
    # answer: ops 2-6 always have one (the client's own), so a run with no reuse has chance 0.5**40 < 1e-12, and
    # one with no second charge (48 answers, each resent at 0.5) 0.5**48 < 1e-14.
    run = _run(backend, "without-key", 8, 6, seed=3, duplicate_share=0.5, resend_share=0.5, reuse_share=0.5)
    assert run.state is RunState.DONE
    verdicts = run.invariants_by_name()
    for name in (ONCE, SAME, REUSE):
        assert not verdicts[name].holds and verdicts[name].violations > 0, verdicts[name].as_dict()
    assert verdicts[ONCE].calls and "charged more than once" in verdicts[ONCE].explanation


class _HandlersClock:
    """The handlers' clock (the `time` module inside engine.patterns.idempotency_keys): the wall clock, moved on
    past every claim's in-progress expiry once a handler has been told a claim is in progress."""

    def __init__(self, jump_s: float) -> None:
        self.jump_s, self.ahead_s = jump_s, 0.0

    def time(self) -> float:
        return time.time() + self.ahead_s


def test_a_crashed_claim_waits_out_its_expiry_and_is_taken_over(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A claim holds for a minute, so the worker taking over the crashed one reads it in progress first, however
    # late it comes; then the handlers' clock moves on a minute and the next read finds it stuck: the wait is
    # seen and ended in every run, with no minute spent (seed 5 crashes a claim: the draws before the first crash
    # depend on nothing else).
    clock = _HandlersClock(jump_s=61.0)
    real_judge = idempotency_keys.judge

    def judge_then_move_on(*args: Any) -> Verdict:
        verdict = real_judge(*args)
        if verdict.action == "wait":
            clock.ahead_s += clock.jump_s
        return verdict

    monkeypatch.setattr(idempotency_keys, "time", clock)
    monkeypatch.setattr(idempotency_keys, "judge", judge_then_move_on)
    run = _run(
        backend,
        "with-key",
        6,
        3,
        lost=0.0,
        seed=5,
        crash_share=0.25,
        in_progress_timeout_ms=60_000,
        duplicate_share=0,
        resend_share=0,
        reuse_share=0,
    )
    assert run.state is RunState.DONE
    assert any(e["kind"] == "crash" for e in run.worker_errors)
    records = _records(run)
    assert "in-progress" in records and "stuck" in records  # told to retry later, then the claim had expired
    frame = run.history.snapshot()
    assert ((frame["action"] == "reclaim") & (frame["outcome"] == "ok")).sum() > 0
    # No key is reused here (reuse_share=0): that rule has nothing to judge (nor "every reply is the same" when no
    # key was answered twice); neither is a breach, and one charge per request holds.
    undecided = {i.name for i in run.invariants if i.holds is None}
    assert "a key reused with another payload is refused" in undecided
    assert undecided <= {"a key reused with another payload is refused", "every reply to a key is the same"}
    assert all(inv.holds is not False for inv in run.invariants), [i.as_dict() for i in run.invariants]


def test_an_expired_record_counts_as_absent_for_the_claim(client: Any) -> None:
    table = open_table(client, "idempotency-keys-expiry", TableSpec(ttl_attribute="expiresAt"))
    now = int(time.time())
    claim = dict(TableName=table.name, ConditionExpression=CLAIM_CONDITION, ExpressionAttributeValues={":now": now})
    try:
        table.put({**record_key("old"), "status": COMPLETED, "expiresAt": now - 10})
        table.put({**record_key("live"), "status": COMPLETED, "expiresAt": now + 3600})
        client.put_item(Item={**record_key("old"), "status": IN_PROGRESS, "expiresAt": now + 3600}, **claim)
        with pytest.raises(client.exceptions.ConditionalCheckFailedException):
            client.put_item(Item={**record_key("live"), "status": IN_PROGRESS, "expiresAt": now + 3600}, **claim)
    finally:
        drop_table(table)


def test_the_record_decides_replay_wait_takeover_or_refusal() -> None:
    now = time.time()
    digest = payload_hash(50)
    base = {
        "payloadHash": digest,
        "owner": "w1-1",
        "chargeId": "ch_7",
        "expiresAt": int(now) + 60,
        "inProgressExpiry": int(now * 1000) + 60_000,
        "status": IN_PROGRESS,
    }
    assert judge(None, "w2-1", digest, now).action == "claim"
    assert judge({**base, "expiresAt": int(now) - 1}, "w2-1", digest, now).record == "expired"
    assert judge(base, "w1-1", digest, now).action == "proceed"
    assert judge(base, "w2-1", digest, now).action == "wait"
    stuck = judge({**base, "inProgressExpiry": int(now * 1000) - 1}, "w2-1", digest, now)
    assert (stuck.action, stuck.charge) == ("reclaim", "ch_7")  # the takeover charges under the same id
    done = {**base, "status": COMPLETED, "response": {"chargeId": "ch_7", "amount": 50}}
    assert judge(done, "w2-1", digest, now).reply == "ch_7"
    assert judge(done, "w2-1", payload_hash(60), now).reply == REFUSED


@pytest.mark.parametrize("variant", ["with-key", "without-key"])
def test_one_request_reusing_no_key_leaves_the_reuse_rule_nothing_to_judge(backend: Backend, variant: str) -> None:
    run = run_pattern(RunConfig(pattern="idempotency-keys", variant=variant, threads=1, ops_per_client=1), backend)
    inv = run.invariants_by_name()["a key reused with another payload is refused"]
    assert inv.holds is None and inv.explanation.startswith("nothing to judge"), inv.as_dict()
    assert "payload hash" not in inv.explanation


def test_keys_each_answered_once_leave_the_same_reply_rule_nothing_to_judge(backend: Backend) -> None:
    # No duplicate delivery, no resend, no reuse: every key gets one reply, so none can differ.
    run = _run(backend, "with-key", 2, 2, lost=0.0, duplicate_share=0, resend_share=0, reuse_share=0, crash_share=0)
    same = run.invariants_by_name()["every reply to a key is the same"]
    assert same.holds is None and same.explanation.startswith("nothing to judge: each of the 4 keys"), same.as_dict()
