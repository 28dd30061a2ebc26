"""26 · Unique constraints: email sentinels written in one transaction with the user, against check-a-GSI-then-write."""

from __future__ import annotations

import json
import re

import pytest

from engine.backends.backend import Backend
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.patterns.base import RunOptions
from engine.patterns.unique_constraints import UniqueConstraints
from engine.record.history import Call, History, Outcome
from engine.run.runner import Run, RunConfig, RunState, run_pattern
from engine.run.walkthrough import run_walkthrough
from tests.lockstep import Lockstep

SHARED = "no two users share an email"
SENTINEL = "one sentinel per user email"
ORPHAN = "no orphan sentinel"
REFUSED = "a refused change deletes nothing"


def _result(text: str, title: str) -> object:
    """The JSON printed under a result heading."""
    block = text.split(f"=== {title} ===\n", 1)[1].split("\n\n", 1)[0]
    return json.loads(block)


@pytest.fixture(scope="module")
def walk_text(backend: Backend) -> str:
    text, _ = run_walkthrough("unique-constraints", backend)
    return text


@pytest.fixture(scope="module")
def sentinel(backend: Backend) -> Run:
    # 64 users fight over 48 emails: sign-ups and changes collide all the time. 64 first sign-ups on 48 emails
    # collide for certain; about 35 owners then each change to one of 47 others, about 34 taken: that no change
    # meets a taken email has a chance near 0.28**35 < 1e-19, that none of ~105 succeeds 0.72**105 < 1e-14.
    return run_pattern(
        RunConfig(
            pattern="unique-constraints", variant="sentinel", threads=64, ops_per_client=4, options={"emails": 48}
        ),
        backend,
    )


def test_bob_cannot_take_alices_email_in_another_case(walk_text: str) -> None:
    assert "item:       {PK: 'USER#bob', SK: 'PROFILE', email: 'A@x.com'}" in walk_text
    assert "item:       {PK: 'EMAIL#a@x.com', SK: 'EMAIL', user_id: 'bob'}" in walk_text
    assert _result(walk_text, "bob tries A@x.com (same email, different case)") == {
        "error": "TransactionCanceledException",
        "reasons": ["None", "ConditionalCheckFailed"],
    }


def test_bob_cannot_change_to_a_taken_email_and_the_put_is_named(walk_text: str) -> None:
    block = walk_text.split("=== bob changes email to a@x.com (taken) ===")[0].rsplit(">>> TransactWriteItems", 1)[1]
    assert "- Delete" in block and "key:        {PK: 'EMAIL#b@x.com', SK: 'EMAIL'}" in block
    assert "condition:  email = 'b@x.com'" in block and "update:     SET email = 'a@x.com'" in block
    assert _result(walk_text, "bob changes email to a@x.com (taken)") == {
        "error": "TransactionCanceledException",
        "reasons": ["None", "ConditionalCheckFailed", "None"],
    }


def test_bob_changes_to_bob_at_x_and_owns_it(walk_text: str) -> None:
    assert _result(walk_text, "bob changes email to bob@x.com") == "OK"
    assert ">>> GetItem" in walk_text and "key:        {PK: 'EMAIL#bob@x.com', SK: 'EMAIL'}" in walk_text
    assert _result(walk_text, "Who owns bob@x.com?") == {"PK": "EMAIL#bob@x.com", "SK": "EMAIL", "user_id": "bob"}


def test_the_final_scan_is_the_seed_table_so_the_failed_change_deleted_nothing(walk_text: str) -> None:
    assert re.search(r">>> Scan \S+p26-unique-constraints\n", walk_text)
    assert _result(walk_text, "All items") == [
        "EMAIL#a@x.com | EMAIL",
        "EMAIL#bob@x.com | EMAIL",
        "USER#alice | PROFILE",
        "USER#bob | PROFILE",
    ]
    assert walk_text.rstrip().endswith('"USER#bob | PROFILE"\n]')


def test_sentinels_keep_every_invariant_at_64_threads(sentinel: Run) -> None:
    assert sentinel.state is RunState.DONE
    assert set(sentinel.invariants_by_name()) == {SHARED, SENTINEL, ORPHAN, REFUSED}
    assert all(inv.holds for inv in sentinel.invariants), [i.as_dict() for i in sentinel.invariants if not i.holds]
    users = sentinel.invariants_by_name()[SENTINEL].observed
    assert 0 < users <= 48  # never more users than emails


def test_colliding_sign_ups_and_changes_are_cancelled_on_the_sentinel(sentinel: Run) -> None:
    frame = sentinel.history.snapshot(detail=True)
    cancelled = frame[frame["error"] == "TransactionCanceledException"]
    reasons = {tuple(d["reasons"]) for d in cancelled["detail"]}
    assert ("None", "ConditionalCheckFailed") in reasons  # a sign-up lost the email
    assert ("None", "ConditionalCheckFailed", "None") in reasons  # a change lost the email
    changed = frame[(frame["action"] == "change-email") & (frame["outcome"] == "ok")]
    assert len(changed) > 0


def test_check_then_write_lets_two_users_share_an_email(backend: Backend) -> None:
    # 16 users, 8 emails: with the sentinel at most 8 could sign up. All 16 checks are answered before any
    # sign-up is written (lockstep), so all 16 find their email free and sign up: at least 8 share one.
    lockstep = Lockstep(backend, clients=16, rounds=2)
    run = run_pattern(
        RunConfig(
            pattern="unique-constraints",
            variant="check-then-write",
            threads=16,
            ops_per_client=3,
            options={"emails": 8, "gsi_lag_ms": 200},
        ),
        lockstep,
    )
    lockstep.check()
    assert run.state is RunState.DONE
    shared = run.invariants_by_name()[SHARED]
    assert not shared.holds and shared.violations >= 8
    assert shared.calls  # the sign-ups that took an email someone had
    assert f"{shared.violations} users took an email someone already had" in shared.explanation


def test_check_then_write_at_the_cli_defaults_is_caught_even_when_the_sharers_moved_on(embedded: Backend) -> None:
    """The seed's racy outcome at `python -m engine run 26 --variant check-then-write`'s defaults (8 users, 10 ops,
    40 emails): users change email every op, so two who shared one mid-run seldom still share it at the end; the
    history shows the moments they did. Seed 0 has users 4 and 5 pick the same first email, and both checks
    are answered before either sign-up is written (lockstep): they share it in every run."""
    lockstep = Lockstep(embedded, clients=8, rounds=2)
    run = run_pattern(RunConfig(pattern="unique-constraints", variant="check-then-write", seed=0), lockstep)
    lockstep.check()
    assert run.state is RunState.DONE
    shared = run.invariants_by_name()[SHARED]
    assert not shared.holds and shared.violations >= 1
    assert "during the run" in str(shared.observed) and shared.calls


def _write(seq: int, user: str, email: str, invoke: int, complete: int, outcome: Outcome = Outcome.OK) -> Call:
    action = "sign-up" if seq < 2 else "change-email"
    detail = {"user": user, "email": email, "op": seq}
    return Call(
        client=seq % 2,
        action=action,
        op="PutItem",
        key=f"USER#{user}",
        invoke_ns=invoke,
        complete_ns=complete,
        outcome=outcome,
        detail=detail,
    )


def _taken(*calls: Call) -> set[int]:
    from engine.patterns.unique_constraints import WRITES, _took_a_held_email

    history = History(t0_ns=0)
    for call in calls:
        history.append(call)
    frame = history.snapshot(detail=True)
    return _took_a_held_email(frame[frame["action"].isin(WRITES)])


def test_a_user_who_took_an_email_another_held_is_counted_only_when_both_surely_held_it() -> None:
    # ann holds a@x from her write's end (10) until her next write starts (100); bob's write ends at 30: both held it.
    assert _taken(
        _write(0, "ann", "a@x.com", 0, 10), _write(1, "bob", "A@x.com", 20, 30), _write(2, "ann", "c@x.com", 100, 110)
    ) == {1}
    # ann's next write started at 25, before bob's ended: she may have left a@x already, so nothing is claimed.
    assert (
        _taken(
            _write(0, "ann", "a@x.com", 0, 10),
            _write(1, "bob", "a@x.com", 20, 30),
            _write(2, "ann", "c@x.com", 25, 110),
        )
        == set()
    )
    # ... nor when that next write's outcome is unknown (it may have moved her), nor for a write that failed.
    unknown = _write(2, "ann", "c@x.com", 15, 16, Outcome.INFO)
    assert _taken(_write(0, "ann", "a@x.com", 0, 10), unknown, _write(3, "bob", "a@x.com", 20, 30)) == set()
    assert _taken(_write(0, "ann", "a@x.com", 0, 10), _write(1, "bob", "a@x.com", 20, 30, Outcome.FAIL)) == set()


def test_verify_catches_a_missing_an_orphan_and_a_deleted_sentinel(backend: Backend, client: object) -> None:
    table = open_table(client, "unique-constraints-verify", TableSpec())
    try:
        for item in (
            {"PK": "USER#ann", "SK": "PROFILE", "email": "Ann@x.com"},  # sentinel missing
            {"PK": "EMAIL#gone@x.com", "SK": "EMAIL", "user_id": "ann"},  # orphan
            {"PK": "USER#cy", "SK": "PROFILE", "email": "cy@x.com"},
            {"PK": "EMAIL#cy@x.com", "SK": "EMAIL", "user_id": "cy"},
        ):
            table.put(item)
        history = History(t0_ns=0)
        history.append(
            Call(
                client=0,
                action="sign-up",
                op="TransactWriteItems",
                key="USER#ann",
                invoke_ns=0,
                complete_ns=1,
                outcome=Outcome.OK,
                detail={"user": "ann", "email": "Ann@x.com"},
            )
        )
        history.append(
            Call(
                client=0,
                action="change-email",
                op="TransactWriteItems",
                key="USER#ann",
                invoke_ns=2,
                complete_ns=3,
                outcome=Outcome.FAIL,
                error="TransactionCanceledException",
                detail={"user": "ann", "email": "cy@x.com", "old": "Ann@x.com"},
            )
        )
        verdicts = {
            i.name: i
            for i in UniqueConstraints().verify(
                table, history, RunOptions("sentinel", 1, 1, {"emails": 4, "gsi_lag_ms": 0})
            )
        }
    finally:
        drop_table(table)
    assert verdicts[SHARED].holds
    assert not verdicts[SENTINEL].holds and verdicts[SENTINEL].violations == 1
    assert not verdicts[ORPHAN].holds and "gone@x.com" in verdicts[ORPHAN].explanation
    assert not verdicts[REFUSED].holds and verdicts[REFUSED].calls == (1,)


def test_the_sweeps_harm_names_takes_during_the_run_when_the_sharers_moved_on() -> None:
    # bob took ann's email while she held it, then moved on: nobody shares at the end, yet the harm counts 1, so its
    # name (the sweep's axis, "<harm> per 1,000 ops") must not say users sharing an email.
    from engine.patterns.unique_constraints import WRITES, _no_shared_email

    history = History(t0_ns=0)
    for call in (
        _write(0, "ann", "a@x.com", 0, 10),
        _write(1, "bob", "a@x.com", 20, 30),
        _write(2, "bob", "b@x", 40, 50),
    ):
        history.append(call)
    frame = history.snapshot(detail=True)
    verdict = _no_shared_email({"ann": "a@x.com", "bob": "b@x"}, frame[frame["action"].isin(WRITES)])
    harm = UniqueConstraints.harm
    assert harm.count([verdict]) == 1 and "none at the end" in str(verdict.observed)
    assert "takes (run)" in harm.name and "sharing" not in harm.name


def test_one_sign_up_refused_nothing_so_a_refused_change_has_nothing_to_judge(backend: Backend) -> None:
    run = run_pattern(RunConfig(pattern="unique-constraints", variant="sentinel", threads=1, ops_per_client=1), backend)
    inv = run.invariants_by_name()["a refused change deletes nothing"]
    assert inv.holds is None and inv.explanation.startswith("nothing to judge"), inv.as_dict()
