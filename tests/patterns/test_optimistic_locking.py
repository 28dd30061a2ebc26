"""23 · Optimistic locking, and the version-attribute semantics of the second seed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.cli import main
from engine.patterns.versioning import VersionedStore
from engine.record.calls import Caller, ConditionFailed
from engine.record.history import History
from engine.run.runner import RunConfig, RunState, run_pattern
from engine.run.walkthrough import run_walkthrough
from tests.lockstep import Lockstep
from tests.patterns.printed import printed_result


def test_version_checks_lose_no_update_at_64_threads(backend: Backend) -> None:
    # Every client reads before any writes (lockstep): 64 clients on 4 accounts, so some write meets a newer version.
    lockstep = Lockstep(backend, clients=64, rounds=2)
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking", variant="version-check", threads=64, ops_per_client=3, options={"accounts": 4}
        ),
        lockstep,
    )
    lockstep.check()
    assert run.state is RunState.DONE
    assert all(inv.holds for inv in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]
    assert run.history.counts()["errors"].get("ConditionalCheckFailedException", 0) > 0  # they did conflict


def test_blind_writes_lose_updates_and_say_how_many(backend: Backend) -> None:
    # All 16 read the one account before any writes it back (lockstep): 15 of the first 16 changes are lost.
    lockstep = Lockstep(backend, clients=16, rounds=2)
    run = run_pattern(
        RunConfig(pattern="optimistic-locking", variant="blind-write", threads=16, ops_per_client=10), lockstep
    )
    lockstep.check()
    lost = run.invariants_by_name()["no lost update"]
    assert not lost.holds and lost.violations > 0 and lost.calls
    version = run.invariants_by_name()["version = 1 + successful writes"]
    assert version.observed < version.expected


def test_walkthrough_a_wins_b_is_rejected_then_retries_to_120_at_version_3(backend: Backend) -> None:
    text, _ = run_walkthrough(23, backend)
    assert printed_result(text, "A deposited 50") == {"PK": "ACCOUNT#a1", "SK": "META", "balance": 150, "version": 2}
    assert (
        'balance: 70, version: 2}\n    condition:  version = 1\n\n=== B rejected ===\n"ConditionalCheckFailedException"'
        in text
    )
    assert "    ConsistentRead: True\n\n>>> PutItem" in text
    assert "balance: 120, version: 3}\n    condition:  version = 2" in text
    assert text.rstrip().endswith('"balance": 120,\n  "version": 3\n}')


# -- the version attribute (second seed) -----------------------------------------------------------------------


@pytest.fixture
def store(backend: Backend) -> Iterator[VersionedStore]:
    client = backend.client(retry=RetryPolicy())
    table = open_table(client, "versions", TableSpec())
    yield VersionedStore(Caller(client, History(), 0), table.name)
    drop_table(table)


def history(store: VersionedStore) -> History:
    assert isinstance(store.caller, Caller) and isinstance(store.caller.history, History)
    return store.caller.history


def found(item: dict[str, Any] | None) -> dict[str, Any]:
    assert item is not None, "the item is missing"
    return item


def test_first_save_sets_version_1_and_each_save_increments(store: VersionedStore) -> None:
    doc = {"PK": "DOC#VERSION", "SK": "DOC", "content": "Hello"}
    assert doc.get("version") is None
    doc = store.save(doc)
    assert doc["version"] == 1
    doc = store.save({**doc, "content": "Hello World"})
    assert doc["version"] == 2
    assert found(store.get({"PK": "DOC#VERSION", "SK": "DOC"}))["version"] == 2


def test_creating_the_same_item_twice_fails(store: VersionedStore) -> None:
    store.save({"PK": "DOC#NEW", "SK": "DOC"})
    with pytest.raises(ConditionFailed):
        store.save({"PK": "DOC#NEW", "SK": "DOC"})
    call = history(store).call(1)
    assert "attribute_not_exists(PK)" in str(call.request)


def test_process_b_saving_a_stale_copy_fails_and_keeps_its_local_version(store: VersionedStore) -> None:
    store.save({"PK": "DOC#CONCURRENT", "SK": "DOC", "content": "Original"})
    a = found(store.get({"PK": "DOC#CONCURRENT", "SK": "DOC"}))
    b = found(store.get({"PK": "DOC#CONCURRENT", "SK": "DOC"}))
    assert a["version"] == b["version"] == 1
    assert store.save({**a, "content": "Updated by A"})["version"] == 2
    with pytest.raises(ConditionFailed):
        store.save({**b, "content": "Updated by B"})
    assert b["version"] == 1  # unlike the seed's library, a failed save does not corrupt the local copy


def test_delete_checks_the_version(store: VersionedStore) -> None:
    doc = store.save({"PK": "DOC#DELETE", "SK": "DOC", "content": "Hello"})
    doc = store.save({**doc, "content": "Updated"})
    stale = found(store.get({"PK": "DOC#DELETE", "SK": "DOC"}))
    doc = store.save({**doc, "content": "Updated again"})
    assert doc["version"] == 3
    with pytest.raises(ConditionFailed):
        store.delete(stale)  # "Can't delete - version mismatch"
    store.delete(doc)
    assert store.get({"PK": "DOC#DELETE", "SK": "DOC"}) is None


def test_a_user_condition_is_anded_with_the_version_check(store: VersionedStore) -> None:
    draft: dict[str, Any] = {"names": {"#s": "status"}, "values": {":draft": "draft"}, "condition": "#s = :draft"}
    doc = store.save({"PK": "DOC#CONDITION", "SK": "DOC", "status": "draft", "content": "Hello"})
    doc = store.save({**doc, "content": "Updated content"}, **draft)
    assert doc["version"] == 2
    doc = store.save({**doc, "status": "published"})
    assert doc["version"] == 3
    with pytest.raises(ConditionFailed):
        store.save({**doc, "content": "Another update"}, **draft)  # "Can't update - not a draft"
    assert "(status = 'draft') AND version = 3" in str(history(store).call(len(history(store)) - 1).request)


def test_ten_concurrent_increments_with_retry_end_at_10_and_version_11(backend: Backend) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = backend.client(threads=10, retry=RetryPolicy())
    table = open_table(client, "versions", TableSpec())
    try:
        history = History()
        VersionedStore(Caller(client, history, 0), table.name).save({"PK": "COUNTER#1", "SK": "C", "value": "0"})

        def increment(i: int) -> None:
            store = VersionedStore(Caller(client, history, i), table.name)
            for _attempt in range(50):
                counter = found(store.get({"PK": "COUNTER#1", "SK": "C"}))
                try:
                    store.save({**counter, "value": str(int(counter["value"]) + 1)})
                    return
                except ConditionFailed:
                    pass
            raise AssertionError("gave up")

        with ThreadPoolExecutor(10) as pool:
            list(pool.map(increment, range(10)))
        final = found(table.get("COUNTER#1", "C"))
        assert (final["value"], final["version"]) == ("10", 11)
    finally:
        drop_table(table)


# -- seed 004 on screen: the version-attribute store, pydynox, and reads without ConsistentRead -------------------


def versioned_writes_hold(run: Any, *, conflicted: bool = True) -> None:
    """`conflicted`: the run was forced to meet a newer version (Lockstep); pydynox's calls cannot be (no botocore)."""
    assert run.state is RunState.DONE, run.error
    assert not run.worker_errors, run.worker_errors
    assert all(inv.holds for inv in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]
    frame = run.history.snapshot(detail=True)
    saves = frame[frame["action"].isin(["deposit", "withdraw"])]
    if conflicted:
        assert (saves["error"] == "ConditionalCheckFailedException").any()  # they did conflict
    # What the version history chart reads: each save's version read and written.
    assert all(d["version"] == int(d["read_version"]) + 1 for d in saves["detail"])


def test_the_version_attribute_store_loses_no_update_at_64_threads(backend: Backend) -> None:
    lockstep = Lockstep(backend, clients=64, rounds=2)  # all read first: 64 clients on 8 accounts must conflict
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking",
            variant="version-attribute",
            threads=64,
            ops_per_client=2,
            options={"accounts": 8},
        ),
        lockstep,
    )
    lockstep.check()
    versioned_writes_hold(run)
    requests = run.history.snapshot(requests=True)["request"].dropna().astype(str)
    assert requests.str.contains("condition:  version = ").any()


def test_pydynox_models_with_a_version_attribute_lose_no_update_and_each_save_is_a_recorded_call(
    backend: Backend,
) -> None:
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking", variant="pydynox", threads=16, ops_per_client=5, options={"accounts": 2}
        ),
        backend,
    )
    # No forced schedule reaches pydynox's Rust client (no botocore), so whether two saves met is left to the run:
    # what is asserted holds either way.
    versioned_writes_hold(run, conflicted=False)
    frame = run.history.snapshot(detail=True, requests=True)
    saves = frame[frame["action"].isin(["deposit", "withdraw"])]
    # pydynox saves an item it loaded and changed with UpdateItem; the record says so, and who made it.
    assert set(saves["op"]) == {"UpdateItem"} and all(d["via"] == "pydynox" for d in saves["detail"])
    assert set(frame.loc[frame["action"] == "read", "op"]) == {"GetItem"}
    assert saves["request"].astype(str).str.contains("version = ").all()
    ok = int((saves["outcome"] == "ok").sum())
    assert run.invariants_by_name()["version = 1 + successful writes"].observed == 2 + ok  # two accounts


def test_a_throttled_pydynox_call_is_sent_again_after_a_backoff_not_left_half_done(embedded: Backend) -> None:
    # Seed 004's loop on a busy table: AWS's advice is to resend a throttled call after a backoff; pydynox is told
    # to make one attempt, so the lab must. The server throttles a quarter of the clients' calls: the 8 clients
    # make at least 80 (a load and a save per op), so a run with none throttled has chance 0.75**80 < 1e-9; a call
    # is sent 28 times before the lab gives up, so one given up has chance 80 * 0.25**28 < 1e-15.
    assert embedded.server is not None
    embedded.server.configure(throttle_share=0.25)
    try:
        run = run_pattern(
            RunConfig(pattern="optimistic-locking", variant="pydynox", threads=8, ops_per_client=5, seed=3), embedded
        )
    finally:
        embedded.server.configure(throttle_share=0.0)
    assert run.state is RunState.DONE, run.error
    assert run.worker_errors == []  # no client stopped half-way on a throttled call
    # pydynox names every throttling error, ThrottlingException included, ProvisionedThroughputExceededException.
    throttled = run.history.counts()["errors"].get("ProvisionedThroughputExceededException", 0)
    assert throttled > 0  # it was throttled, and every throttled call was sent again
    assert all(inv.holds for inv in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]


def test_a_pydynox_save_whose_answer_is_lost_is_unknown_and_the_balance_allows_for_it(backend: Backend) -> None:
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking",
            variant="pydynox",
            threads=4,
            ops_per_client=10,
            lost_response_share=0.3,
            seed=1,
        ),
        backend,
    )
    assert run.state is RunState.DONE
    frame = run.history.snapshot(detail=True)
    # At least 40 saves, each losing its answer with chance 0.3: a run that lost none, 0.7**40 < 1e-6.
    lost = frame[frame["outcome"] == "info"]
    assert len(lost) > 0 and all(d.get("lost_response") for d in lost["detail"])
    assert all(inv.holds for inv in run.invariants), [i.as_dict() for i in run.invariants if not i.holds]


def test_version_checks_that_read_without_consistent_read_still_lose_no_update(backend: Backend) -> None:
    lockstep = Lockstep(backend, clients=16, rounds=2)  # all read first: 16 clients on 2 accounts must conflict
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking",
            variant="version-check-eventual",
            threads=16,
            ops_per_client=5,
            options={"accounts": 2},
        ),
        lockstep,
    )
    lockstep.check()
    versioned_writes_hold(run)
    reads = run.history.snapshot(requests=True)
    reads = reads[reads["op"] == "GetItem"]
    assert len(reads) and not reads["request"].astype(str).str.contains("ConsistentRead").any()


def test_walkthrough_of_seed_004_ten_increments_end_at_count_10_and_version_11(backend: Backend) -> None:
    text, calls = run_walkthrough(23, backend, variant="version-attribute")
    assert printed_result(text, "First save sets version 1")["version"] == 1
    assert printed_result(text, "Each save increments the version")["version"] == 2
    assert printed_result(text, "Conflict! Someone else updated the document") == "ConditionalCheckFailedException"
    final = printed_result(text, "10 increments with retry end at count 10, version 11")
    assert (final["value"], final["version"]) == ("10", 11)
    assert printed_result(text, "Can't delete - version mismatch") == "ConditionalCheckFailedException"
    assert printed_result(text, "Delete with current version - succeeds") == "OK"
    assert "condition:  (status = 'draft') AND version = 1" in text
    assert printed_result(text, "Can't update - not a draft") == "ConditionalCheckFailedException"
    assert "condition:  attribute_not_exists(PK)" in text
    saves = calls.snapshot()
    assert ((saves["op"] == "PutItem") & (saves["outcome"] == "ok")).sum() >= 10 + 8
    # Seed 004's other sub-cases: no version before the first save, creating twice fails, update() skips it.
    assert printed_result(text, "Before the first save the version is None") is None
    assert printed_result(text, "Creating the same document twice fails") == "ConditionalCheckFailedException"
    skipped = printed_result(text, "update() does not use versioning: the version stays 2")
    assert (skipped["content"], skipped["version"]) == ("Updated without a version check", 2)


def test_walkthrough_of_seed_004_titles_the_count_it_reached_and_says_who_gave_up(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.patterns import optimistic_locking

    # One attempt each, as if the retry budget ran out: the title must state the count reached, not "10".
    monkeypatch.setattr(optimistic_locking, "INCREMENT_ATTEMPTS", 1)
    text, _ = run_walkthrough(23, backend, variant="version-attribute")
    title = next(line for line in text.splitlines() if line.startswith("=== 10 increments with retry end at"))
    final = printed_result(text, title.strip("= "))
    assert title == f"=== 10 increments with retry end at count {final['value']}, version {final['version']} ==="
    gave_up = 10 - int(final["value"])  # ten clients at once, one attempt each: almost always some lose the race
    assert (f"{gave_up} of the 10 clients gave up after 1 attempts" in text) == (gave_up > 0)


def test_a_variant_scene_needs_one_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["walkthrough", "all", "--variant", "version-attribute"]) == 2
    assert main(["walkthrough", "23", "--variant", "nope"]) == 2
    assert "has no variant 'nope'" in capsys.readouterr().err


def test_pydynox_refuses_injected_latency_it_could_not_add() -> None:
    from engine.errors import BadInput

    with pytest.raises(BadInput, match="pydynox's calls do not go through botocore"):
        RunConfig(pattern="optimistic-locking", variant="pydynox", latency_ms=5).validated()
    RunConfig(pattern="optimistic-locking", variant="version-attribute", latency_ms=5).validated()


def test_changes_given_up_after_max_attempts_are_counted_next_to_the_verdicts(backend: Backend) -> None:
    from engine.run.summary import render_text, summary

    # One attempt per change: every change that meets a newer version is dropped, as the seed's loop raises
    # "gave up after retries". The verdicts still hold (nothing acknowledged was lost); the summary says how
    # many changes were never made. All 8 read the one account before any writes (lockstep): 7 are given up.
    lockstep = Lockstep(backend, clients=8, rounds=2)
    run = run_pattern(
        RunConfig(
            pattern="optimistic-locking",
            variant="version-check",
            threads=8,
            ops_per_client=10,
            options={"max_attempts": 1},
        ),
        lockstep,
    )
    lockstep.check()
    assert all(inv.holds for inv in run.invariants)
    applied = run.invariants_by_name()["version = 1 + successful writes"].observed - 1
    data = summary(run)
    assert data["gave_up"] == {
        "operations": 80 - applied,
        "what": "changes",
        "why": "each refused for a newer version on every one of its 1 attempts, max_attempts",
    }
    assert 80 - applied > 0
    assert f"gave up    {80 - applied} changes given up" in render_text(data)


def test_with_nothing_given_up_the_summary_says_zero_and_prints_no_line(backend: Backend) -> None:
    from engine.run.summary import render_text, summary

    run = run_pattern(
        RunConfig(pattern="optimistic-locking", variant="version-check", threads=1, ops_per_client=3), backend
    )
    data = summary(run)
    assert data["gave_up"]["operations"] == 0 and "gave up" not in render_text(data)
