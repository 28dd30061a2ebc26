"""22 · Conditional writes: create-only, update-if-exists, a credit rule and a state machine under many clients."""

from __future__ import annotations

import pytest

from engine.backends.backend import Backend
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.record.calls import Caller, ConditionFailed
from engine.record.history import History
from engine.run.runner import Run, RunConfig, RunState, run_pattern
from engine.run.walkthrough import run_walkthrough
from engine.server.profile import ProfileSpec
from engine.words import plural
from tests.lockstep import Lockstep

ALL = (
    "one winner per new user",
    "balance never below zero",
    "spends add up to credits taken",
    "update-if-exists creates no ghost",
    "PENDING → PAID exactly once",
    "refusals return the item as it was",
    "no spend lands on a suspended user",
)


@pytest.fixture(scope="module")
def item_on_refusal(backend: Backend, client) -> None:
    """Skip where the server ignores ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x). The embedded
    server never skips: there a missing item is our bug."""
    if backend.embedded:
        return
    table = open_table(client, "probe-all-old", TableSpec())
    try:
        table.put({"PK": "P", "SK": "S"})
        try:
            Caller(client, History(), 0).call(
                "probe",
                "PutItem",
                key="P",
                TableName=table.name,
                Item={"PK": "P", "SK": "S"},
                ConditionExpression="attribute_not_exists(PK)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as refused:
            if refused.item is None:
                pytest.skip("this server ignores ReturnValuesOnConditionCheckFailure (DynamoDB Local 1.x)")
    finally:
        drop_table(table)


USER_0_SUSPENDERS = (0, 28, 38, 43, 50, 52)  # seed 11's draws: the clients that suspend user 0 in their first op


@pytest.fixture(scope="module")
def guarded(backend: Backend) -> Run:
    # Seed 11's first op: client 0 suspends user 0 and client 1 spends on it; client 2 closes member 2 and client 3
    # renames it. Forced order: client 1's spend after client 0's suspend (refused by the status), client 3's
    # rename after client 2's close (refused: no ghost). User 0's suspends (clients 0, 28, 38, 43, 50, 52) also
    # wait for client 2's spend on it, so a spend lands for certain (it, or the ones that drained the credits
    # before it); free, a run now and then had every spend come after a suspend. The other clients run free.
    suspends_after_a_spend = {(c, 2): (2, 2) for c in USER_0_SUSPENDERS}
    lockstep = Lockstep(backend, clients=64, rounds=0, order={(1, 2): (0, 2), (3, 3): (2, 3), **suspends_after_a_spend})
    run = run_pattern(
        RunConfig(
            pattern="conditional-writes",
            variant="guarded",
            threads=64,
            ops_per_client=2,
            options={"members": 4, "close_share": 0.5},
            seed=11,
        ),
        lockstep,
    )
    lockstep.check()
    return run


@pytest.fixture(scope="module")
def unguarded(backend: Backend) -> Run:
    # 16 clients on 6 users, 6 orders and 2 members, every race forced. The first op's six calls in lockstep for
    # 15 clients (seed 0: none suspends then): all create user 0, all read its 10 credits before any spends 1-5
    # (15 spends overdraw it), all read order 0 pending before any pays it (paid 15 times), and a member one of
    # them closes is renamed in a later op (seed 0), a ghost. Client 1 starts only after client 0's six calls:
    # its create of user 0 resets credits client 0 has spent, so the spends no longer add up.
    lockstep = Lockstep(backend, clients=16, rounds=6, order={(1, 1): (0, 6)})
    run = run_pattern(
        RunConfig(
            pattern="conditional-writes",
            variant="unguarded",
            threads=16,
            ops_per_client=6,
            options={"members": 2, "close_share": 0.5},
            seed=0,
        ),
        lockstep,
    )
    lockstep.check()
    return run


def test_guarded_writes_keep_every_invariant_at_64_threads(guarded: Run, item_on_refusal: None) -> None:
    assert guarded.state is RunState.DONE
    assert set(guarded.invariants_by_name()) == set(ALL)
    assert all(inv.holds for inv in guarded.invariants), [i.as_dict() for i in guarded.invariants if not i.holds]


def test_many_clients_create_the_same_user_and_exactly_one_wins(guarded: Run) -> None:
    frame = guarded.history.snapshot()
    creates = frame[frame["action"] == "create-user"]
    per_user = creates.groupby("key", observed=True)["outcome"].agg(lambda o: (o == "ok").sum())
    assert len(per_user) == 2 and (per_user == 1).all()
    losers = creates[creates["outcome"] == "fail"]
    assert len(losers) == 2 * 63 and set(losers["error"]) == {"ConditionalCheckFailedException"}


def test_spends_never_overdraw_and_add_up_to_the_credits_taken(guarded: Run, item_on_refusal: None) -> None:
    inv = guarded.invariants_by_name()
    assert inv["balance never below zero"].observed >= 0
    ledger = inv["spends add up to credits taken"]
    frame = guarded.history.snapshot(detail=True)
    suspends = frame[frame["action"] == "suspend"]
    assert sorted(suspends.loc[suspends["key"].astype(str) == "USER#u0", "client"]) == list(USER_0_SUSPENDERS)
    assert ledger.expected == ledger.observed > 0  # ... so each waited for a spend (the fixture): one landed
    refused = frame[(frame["action"] == "spend") & (frame["outcome"] == "fail")]
    assert len(refused) > 0
    # Each was refused by a half of the guard: too few credits, or a user another client had suspended.
    assert all(d["old_item"]["credits"] < d["amount"] or d["old_item"]["status"] != "active" for d in refused["detail"])


def test_a_refused_write_keeps_the_item_as_it_was(guarded: Run, item_on_refusal: None) -> None:
    frame = guarded.history.snapshot(detail=True, requests=True)
    refused = frame[frame["error"] == "ConditionalCheckFailedException"]
    assert refused["request"].str.contains("ReturnValuesOnConditionCheckFailure: ALL_OLD").all()
    taken = refused[refused["action"] == "create-user"]
    assert all(d["old_item"]["PK"] == key for d, key in zip(taken["detail"], taken["key"]))
    inv = guarded.invariants_by_name()["refusals return the item as it was"]
    assert inv.expected == inv.observed == len(refused)


def test_renaming_a_closed_member_creates_no_ghost(guarded: Run) -> None:
    frame = guarded.history.snapshot(detail=True)
    renames = frame[frame["action"] == "rename"]
    assert (renames["outcome"] == "fail").any()  # some renames came after the member was closed
    assert all(d.get("old_item") is None for d in renames.loc[renames["outcome"] == "fail", "detail"])
    assert guarded.invariants_by_name()["update-if-exists creates no ghost"].observed == 0


def test_each_order_goes_from_pending_to_paid_exactly_once(guarded: Run) -> None:
    frame = guarded.history.snapshot(detail=True)
    pays = frame[(frame["action"] == "pay") & (frame["outcome"] == "ok")]
    assert sorted(pays["key"].astype(str)) == ["ORDER#o0", "ORDER#o1"]
    assert all(d["from"] == "PENDING" for d in pays["detail"])


def test_unguarded_creates_overwrite_each_other_and_are_counted(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["one winner per new user"]
    # Each of the 6 users is created by all 16 clients: 15 overwrites each, every one listed (not the first 40).
    assert not inv.holds and inv.violations == 6 * 15 and len(inv.calls) == inv.calls_total == 90


def test_unguarded_spends_overdraw_after_checking_in_code(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["balance never below zero"]
    assert not inv.holds and inv.observed < 0 and inv.violations > 0
    frame = unguarded.history.snapshot(detail=True)
    assert all(d["credits_after"] < 0 for d in frame.loc[frame["seq"].isin(inv.calls), "detail"])


def test_unguarded_overwrites_reset_credits_so_spends_no_longer_add_up(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["spends add up to credits taken"]
    assert not inv.holds and inv.violations > 0 and "overwrote the user" in inv.explanation


def test_unguarded_updates_of_closed_members_create_ghosts(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["update-if-exists creates no ghost"]
    assert not inv.holds and inv.violations > 0


def test_unguarded_orders_are_paid_more_than_once(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["PENDING → PAID exactly once"]
    assert not inv.holds and inv.violations > 0


def test_unguarded_refuses_nothing_so_refusals_returning_the_item_is_not_applicable(unguarded: Run) -> None:
    inv = unguarded.invariants_by_name()["refusals return the item as it was"]
    # Not applicable is not held: a racy run's "1 of 6 hold" was this card.
    assert inv.holds is None and inv.expected == 0 and inv.explanation.startswith("not applicable")


def test_one_guarded_client_making_one_change_is_refused_nothing_and_credits_no_guard(backend: Backend) -> None:
    run = run_pattern(RunConfig(pattern="conditional-writes", variant="guarded", threads=1, ops_per_client=1), backend)
    inv = run.invariants_by_name()
    refusals = inv["refusals return the item as it was"]
    assert (
        refusals.holds is None and refusals.explanation == "nothing to judge: no guarded write was refused in this run"
    )
    # Nothing raced, so no guard said no: the PASSes say the case never came up, not that a guard refused it.
    assert "never had to refuse one" in inv["balance never below zero"].explanation
    assert "the others got" not in inv["one winner per new user"].explanation


def test_one_unguarded_client_passes_without_crediting_a_condition_it_never_sent(backend: Backend) -> None:
    run = run_pattern(
        RunConfig(pattern="conditional-writes", variant="unguarded", threads=1, ops_per_client=1), backend
    )
    for name in ALL[:2] + ALL[3:5]:
        inv = run.invariants_by_name()[name]
        assert inv.holds and "the unguarded writes send no condition" in inv.explanation, inv.as_dict()
        assert "refused" not in inv.explanation.split(":")[0], inv.explanation


def test_walkthrough_create_twice_update_bob_spend_7_twice_and_all_old_shows_3_credits(
    backend: Backend, item_on_refusal: None
) -> None:
    text, history = run_walkthrough(22, backend)
    create = (
        "    item:       {PK: 'USER#alice', SK: 'PROFILE', name: 'Alice', credits: 10, status: 'active'}\n"
        "    condition:  attribute_not_exists(PK)\n\n"
    )
    assert create + '=== Create alice (first time) ===\n"OK"' in text
    assert create + '=== Create alice again (would overwrite) ===\n"ConditionalCheckFailedException"' in text
    assert (
        "    key:        {PK: 'USER#bob', SK: 'PROFILE'}\n    condition:  attribute_exists(PK)\n"
        "    update:     SET name = 'Bob'\n\n=== Update bob (doesn't exist) ===\n"
        '"ConditionalCheckFailedException"'
    ) in text
    spend = "    condition:  credits >= 7 AND status = 'active'\n    update:     SET credits = credits - 7\n\n"
    assert spend + '=== Spend 7 credits ===\n"OK"' in text
    assert spend + '=== Spend 7 more (only 3 left) ===\n"ConditionalCheckFailedException"' in text
    assert (
        "    condition:  credits >= 7\n    update:     SET credits = credits - 7\n"
        "    ReturnValuesOnConditionCheckFailure: ALL_OLD\n\n=== Item at failure time ===\n{"
    ) in text
    assert text.count(">>> ") == 6
    tail = text[text.index("=== Item at failure time ===") :]
    for line in ('"credits": 3', '"SK": "PROFILE"', '"name": "Alice"', '"PK": "USER#alice"', '"status": "active"'):
        assert line in tail
    assert history.call(len(history) - 1).detail["old_item"]["credits"] == 3


@pytest.fixture(scope="module")
def unguarded_suspends(backend: Backend) -> Run:
    # Credits enough for every spend, so the status read in code is the only thing that can stop one; half the
    # clients' turns suspend the user the others are spending on. Seed 0: client 0 spends on user 0 and client 1
    # suspends it. Forced order: client 0 creates it and reads it active, then client 1 creates and suspends it,
    # then client 0's spend lands on the suspended user.
    lockstep = Lockstep(backend, clients=2, rounds=0, order={(1, 1): (0, 2), (0, 3): (1, 2)})
    run = run_pattern(
        RunConfig(
            pattern="conditional-writes",
            variant="unguarded",
            threads=2,
            ops_per_client=6,
            options={"suspend_share": 0.5, "credits": 1000},
            seed=0,
        ),
        lockstep,
    )
    lockstep.check()
    return run


def test_unguarded_spends_land_on_users_suspended_between_the_read_and_the_write(unguarded_suspends: Run) -> None:
    inv = unguarded_suspends.invariants_by_name()["no spend lands on a suspended user"]
    assert inv.holds is False and inv.violations > 0 and "between the read and the write" in inv.explanation
    frame = unguarded_suspends.history.snapshot(detail=True)
    for seq in inv.calls:
        spend = frame[frame["seq"] == seq].iloc[0]
        assert spend["detail"]["status_after"] == "suspended"
        # The same client read the user just before and spent only because it was active then: the check went stale.
        reads = frame[
            (frame["action"] == "read-credits")
            & (frame["client"] == spend["client"])
            & (frame["key"] == spend["key"])
            & (frame["seq"] < seq)
        ]
        assert reads.iloc[-1]["outcome"] == "ok"


def test_guarded_spends_never_land_on_a_suspended_user_and_the_status_half_is_credited(
    guarded: Run, item_on_refusal: None
) -> None:
    inv = guarded.invariants_by_name()
    suspended = inv["no spend lands on a suspended user"]
    assert suspended.holds is True and suspended.violations == 0
    frame = guarded.history.snapshot(detail=True)
    spends = frame[frame["action"] == "spend"]
    assert all(d["status_after"] == "active" for d in spends.loc[spends["outcome"] == "ok", "detail"])
    refused = list(spends.loc[spends["outcome"] == "fail", "detail"])
    by_status = sum(d["old_item"]["status"] != "active" for d in refused)
    by_credits = sum(d["old_item"]["credits"] < d["amount"] for d in refused)
    assert by_status > 0  # 64 clients: suspends met spends
    # Each half is credited with the refusals its own half of the item broke, not every refused spend.
    assert suspended.explanation.startswith(f"#s = :active refused {plural(by_status, 'spend')} of a suspended user")
    # Whether a free client's spend outran the balance is the run's: 0 has its own sentence, and it is checked too.
    assert inv["balance never below zero"].explanation == (
        f"credits >= :a refused {plural(by_credits, 'spend')} the balance could not cover"
        if by_credits
        else "no spend exceeded the balance, so credits >= :a never had to refuse one"
    )


def test_a_user_is_suspended_once_and_later_suspends_get_the_suspended_user_back(
    guarded: Run, item_on_refusal: None
) -> None:
    frame = guarded.history.snapshot(detail=True)
    suspends = frame[frame["action"] == "suspend"]
    done = suspends[suspends["outcome"] == "ok"]
    assert len(done) > 0 and done["key"].is_unique  # #s = :active: active → suspended happens once per user
    assert all(d["from"] == "active" for d in done["detail"])
    refused = suspends[suspends["outcome"] == "fail"]
    assert set(refused["error"]) <= {"ConditionalCheckFailedException"}
    assert all(d["old_item"]["status"] == "suspended" for d in refused["detail"])


@pytest.mark.parametrize(("threads", "profile"), [(2, "exact"), (16, "exact"), (16, "aws-like")])
def test_guarded_spends_never_land_on_a_suspended_user_at_2_and_16_threads_and_aws_like(
    backend: Backend, threads: int, profile: str
) -> None:
    if profile != "exact" and not backend.embedded:
        pytest.skip("server profiles are the embedded server's")
    run = run_pattern(
        RunConfig(
            pattern="conditional-writes",
            variant="guarded",
            threads=threads,
            ops_per_client=8,
            options={"suspend_share": 0.5, "credits": 1000},
            profile=ProfileSpec.parse(profile),
            seed=0,  # client 1 suspends in its first op: the verdict has a suspend to judge (not "cannot judge")
        ),
        backend,
    )
    assert run.state is RunState.DONE, run.error
    inv = run.invariants_by_name()["no spend lands on a suspended user"]
    assert inv.holds is True and inv.violations == 0, inv.as_dict()


def test_without_suspends_spends_ask_for_what_they_always_did_and_the_status_half_cannot_be_judged(
    backend: Backend,
) -> None:
    run = run_pattern(
        RunConfig(
            pattern="conditional-writes",
            variant="guarded",
            threads=4,
            ops_per_client=4,
            options={"suspend_share": 0},
        ),
        backend,
    )
    frame = run.history.snapshot(requests=True)
    assert not (frame["action"] == "suspend").any()
    spends = frame[frame["action"] == "spend"]
    assert len(spends) == 16 and spends["request"].str.contains("ReturnValues: UPDATED_NEW").all()
    inv = run.invariants_by_name()["no spend lands on a suspended user"]
    assert inv.holds is None and inv.explanation == "cannot judge: nobody was suspended in this run (suspend_share = 0)"
