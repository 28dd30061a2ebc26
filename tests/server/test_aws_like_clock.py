"""The aws-like profile's windows that a test needs several calls inside: the stale window after a write, a
partition key's one-second bucket, a committed transaction's hold. The model reads a clock the test moves by hand
(tests/server/hand_clock.py, its fixtures in tests/server/conftest.py), so the calls land inside the window however slow the machine, and the window ends
exactly when the test moves the clock past it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend
from engine.backends.tables import drop_table
from engine.server.faithful.app import FaithfulDynamoDB
from engine.server.host.process import table_stats
from engine.server.profile import ProfileSpec
from tests.server.hand_clock import HandClock
from tests.server.test_aws_like import _applied, _code, _put, _query, _table, _transfer, _unprocessed


@pytest.fixture
def tables(lab: tuple[Backend, FaithfulDynamoDB], clock: HandClock):
    made: list[Any] = []

    def make(gsi: bool = False, **knobs: float) -> Any:
        made.append(_table(lab[0], gsi, **knobs))
        return made[-1]

    yield make
    for table in made:
        drop_table(table)


def test_reads_without_consistent_read_are_stale_inside_the_window_only(tables, clock: HandClock) -> None:
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1})
    clock.later(1.05)
    table.put({"PK": "A", "SK": "S", "v": 2})
    assert table.get("A", "S", consistent=False)["v"] == 1  # always stale inside the window
    assert table.get("A", "S", consistent=True)["v"] == 2  # never with ConsistentRead
    assert [i["v"] for i in table.scan_all(consistent=False)] == [1]
    clock.later(1.05)
    assert table.get("A", "S", consistent=False)["v"] == 2  # never after it
    table.put({"PK": "NEW", "SK": "S", "v": 1})
    assert table.get("NEW", "S", consistent=False) is None  # a new item: not there yet on the lagging copy


def test_an_updated_or_deleted_item_reads_as_it_was_before_the_write_inside_the_window(tables, clock) -> None:
    # Single-item requests take their own pass through the model (single_item.py): an UpdateItem changes its item
    # in place and is copied before, a PutItem or DeleteItem replaces or unlinks it; each shows its old image.
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1, "tags": ["x"]})
    clock.later(1.05)
    table.client.update_item(
        TableName=table.name,
        Key={"PK": "A", "SK": "S"},
        UpdateExpression="ADD v :one SET tags[0] = :y",
        ExpressionAttributeValues={":one": 1, ":y": "y"},
    )
    assert table.get("A", "S", consistent=False) == {"PK": "A", "SK": "S", "v": 1, "tags": ["x"]}
    assert table.get("A", "S", consistent=True) == {"PK": "A", "SK": "S", "v": 2, "tags": ["y"]}
    clock.later(1.05)
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "S"})
    assert table.get("A", "S", consistent=False)["v"] == 2  # deleted, still on the lagging copy
    assert table.get("A", "S", consistent=True) is None


def test_a_batch_get_is_stale_or_consistent_as_its_table_asks(tables, clock: HandClock) -> None:
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1})
    clock.later(1.05)
    table.put({"PK": "A", "SK": "S", "v": 2})

    def batch_get(**asked: bool) -> int:
        keys = {"Keys": [{"PK": "A", "SK": "S"}], **asked}
        [item] = table.client.batch_get_item(RequestItems={table.name: keys})["Responses"][table.name]
        return int(item["v"])

    assert batch_get() == 1 and batch_get(ConsistentRead=False) == 1  # always stale inside the window
    assert batch_get(ConsistentRead=True) == 2  # a BatchGetItem asks for ConsistentRead per table: never stale


def test_single_writes_and_transactions_on_one_key_draw_from_one_bucket(tables, clock: HandClock) -> None:
    table = tables(write_units=1)  # a bucket of one unit, one a second: the next write in the same second is refused
    table.client.update_item(
        TableName=table.name,
        Key={"PK": "HOT", "SK": "S"},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": 1},
    )
    with pytest.raises(ClientError) as refused:
        table.client.transact_write_items(**_transfer(table, "HOT"))
    assert _code(refused) == "TransactionCanceledException"
    assert refused.value.response["CancellationReasons"][0]["Code"] == "ThrottlingError"
    clock.later(1.1)  # full again
    table.client.transact_write_items(**_transfer(table, "HOT"))  # 2 units from a full bucket of 1: in debt
    with pytest.raises(ClientError) as throttled:
        table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    assert _code(throttled) == "ThrottlingException"


def test_a_hot_key_is_throttled_and_spread_keys_are_not(tables) -> None:
    table = tables(write_units=1)  # the clock stands still: the first put takes the one unit, none comes back
    hot: list[str] = []
    for i in range(4):
        try:
            table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S", "i": i})
            hot.append("ok")
        except ClientError as e:
            hot.append(e.response["Error"]["Code"])
    assert hot == ["ok"] + ["ThrottlingException"] * 3
    for i in range(40):
        table.client.put_item(TableName=table.name, Item={"PK": f"K{i}", "SK": "S"})  # one write per key: fine


def test_a_slow_ceiling_still_lets_one_write_a_second_through(tables, clock: HandClock) -> None:
    table = tables(write_units=1)
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    with pytest.raises(ClientError) as throttled:
        table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    assert _code(throttled) == "ThrottlingException"
    clock.later(1.1)
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})


def test_a_batch_write_past_a_keys_ceiling_leaves_that_keys_writes_unprocessed(tables, clock: HandClock) -> None:
    table = tables(write_units=1)  # the lowest ceiling: one write per second per partition key
    batch = [_put("HOT", "1"), _put("HOT", "2"), _put("K1"), _put("HOT", "3"), _put("K2")]
    answer = table.client.batch_write_item(RequestItems={table.name: batch})
    assert _unprocessed(answer, table) == [batch[1], batch[3]]  # the first write on HOT fits its bucket
    assert sorted(item["PK"] + item["SK"] for item in table.scan_all()) == ["HOT1", "K1S", "K2S"]
    with pytest.raises(ClientError) as refused:  # none could be processed, all for throughput: refused whole
        table.client.batch_write_item(RequestItems={table.name: [batch[1], batch[3]]})
    assert _code(refused) == "ThrottlingException"
    clock.later(1.1)  # one second refills one write
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "2"})


def test_a_query_takes_its_read_units_from_the_partition_it_reads(tables, clock: HandClock) -> None:
    table = tables(gsi=True, read_units=1, gsi_lag_ms=0)  # one consistent read a second per key; index at once
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S", "GSI1PK": "G", "GSI1SK": "1"})
    assert _query(table, "HOT")["Count"] == 1
    with pytest.raises(ClientError) as throttled:
        _query(table, "HOT")
    assert _code(throttled) == "ThrottlingException"
    with pytest.raises(ClientError):  # a GetItem on the same partition key shares its bucket
        table.client.get_item(TableName=table.name, Key={"PK": "HOT", "SK": "S"}, ConsistentRead=True)
    assert _query(table, "COLD")["Count"] == 0  # another partition key: its own bucket
    assert _query(table, "G", index="GSI1")["Count"] == 1  # a global index's partition: its own bucket
    assert len(table.scan_all()) == 1  # a Scan is charged to no key (contention/buckets.py)
    clock.later(1.1)
    assert _query(table, "HOT", consistent=False)["Count"] == 1  # half a unit without ConsistentRead
    assert _query(table, "HOT", consistent=False)["Count"] == 1
    with pytest.raises(ClientError):
        _query(table, "HOT", consistent=False)


def test_a_committing_transaction_holds_its_items_for_the_window(tables, clock: HandClock) -> None:
    table = tables(commit_ms=1000)
    table.put({"PK": "A", "SK": "S", "n": 0})
    committer = threading.Thread(target=table.client.transact_write_items, kwargs=_transfer(table, "A", "B"))
    started = time.monotonic()
    committer.start()
    _applied(table)  # the transaction is applied, its answer waits out the commit window (in real time)
    with pytest.raises(ClientError) as single:
        table.client.put_item(TableName=table.name, Item={"PK": "A", "SK": "S", "n": 99})
    with pytest.raises(ClientError) as other:
        table.client.transact_write_items(**_transfer(table, "C", "B"))
    with pytest.raises(ClientError) as read:
        table.client.transact_get_items(
            TransactItems=[{"Get": {"TableName": table.name, "Key": {"PK": "A", "SK": "S"}}}]
        )
    table.client.put_item(TableName=table.name, Item={"PK": "D", "SK": "S"})  # an item it does not hold
    committer.join()
    assert time.monotonic() - started >= 1.0  # the committer's answer came after the window
    assert _code(single) == "TransactionConflictException"
    assert _code(other) == "TransactionCanceledException"
    assert [r["Code"] for r in other.value.response["CancellationReasons"]] == ["None", "TransactionConflict"]
    assert [r["Code"] for r in read.value.response["CancellationReasons"]] == ["TransactionConflict"]
    assert table.get("A", "S")["n"] == 1 and table.get("C", "S") is None  # nothing refused was half-applied
    clock.later(1.01)
    table.client.transact_write_items(**_transfer(table, "C", "B"))  # after the window: no conflict
    stats = table_stats(table.client.meta.endpoint_url, table.name)
    assert stats["transaction_conflicts"] == 3


def test_a_batch_write_leaves_the_items_a_transaction_holds_unprocessed_and_applies_the_rest(tables, clock) -> None:
    table = tables(commit_ms=1000)
    table.put({"PK": "A", "SK": "S", "n": 0})
    committer = threading.Thread(target=table.client.transact_write_items, kwargs=_transfer(table, "A", "B"))
    committer.start()
    _applied(table)  # the transaction is applied and holds A and B
    held = [_put("A", n=99), {"DeleteRequest": {"Key": {"PK": "B", "SK": "S"}}}]
    answer = table.client.batch_write_item(RequestItems={table.name: [held[0], _put("C", n=1), held[1]]})
    assert _unprocessed(answer, table) == held  # each put or delete is an item-level write of its own
    assert table.get("C", "S") == {"PK": "C", "SK": "S", "n": 1}
    assert table.get("A", "S")["n"] == 1 and table.get("B", "S")["n"] == 1  # the transaction's, untouched
    everything_held = table.client.batch_write_item(RequestItems={table.name: held})  # nothing to apply
    assert _unprocessed(everything_held, table) == held
    committer.join()
    clock.later(1.01)
    again = table.client.batch_write_item(RequestItems={table.name: held})  # after the window: applied
    assert _unprocessed(again, table) == []
    assert table.get("A", "S")["n"] == 99 and table.get("B", "S") is None
    assert table_stats(table.client.meta.endpoint_url, table.name)["transaction_conflicts"] == 4


def test_transactions_conflict_under_aws_like_and_keep_their_invariants(
    lab: tuple[Backend, FaithfulDynamoDB], clock: HandClock
) -> None:
    from engine.run.runner import RunConfig, run_pattern
    from engine.run.summary import summary
    from engine.run.sweep import sweep_row
    from tests.lockstep import Lockstep

    # The 4 first orders are sent together (lockstep) and the one committed first holds the stock for 500 ms of a
    # clock that stands still until the server has counted a conflict: the other three meet the hold however late
    # they arrive. Then the clock runs with real time, and the run goes on as it would.
    backend, app = lab

    def conflicts() -> int:  # on every table of this module's server: the earlier tests' are counted too
        return sum(c["transaction_conflicts"] for c in app.model.stats.values())

    before = conflicts()
    clock.stand_still_until(lambda: conflicts() > before)
    profile = ProfileSpec.parse("aws-like", {"latency_ms": 1, "latency_p99_ms": 3, "stale_share": 1, "commit_ms": 500})
    lockstep = Lockstep(backend, clients=4, rounds=1)
    run = run_pattern(
        RunConfig(
            pattern="transactions",
            variant="transact",
            threads=4,
            ops_per_client=2,
            options={"resend_share": 1.0},  # every placed order resent: that rule is judged too, never left open
            profile=profile,
            seed=7,
        ),
        lockstep,
    )
    lockstep.check()
    data = summary(run)
    row = sweep_row(run)
    assert row["profile"] == "aws-like" and float(str(row["transaction_conflict_share"])) > 0
    assert 0 <= float(str(row["stale_read_share"])) <= 1
    assert data["state"] == "done"
    assert data["conflicts_by_cause"]["transaction_conflict"] > 0
    assert data["simulated"]["transaction_conflicts"] > 0
    assert data["profile"] == {"name": "aws-like", "simulated": True, "knobs": data["profile"]["knobs"]}
    assert all(inv["holds"] for inv in data["invariants"]), data["invariants"]
