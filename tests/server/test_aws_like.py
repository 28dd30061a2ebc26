"""The aws-like profile's simulated contention, each behaviour with its knobs at their extremes.

Tables opt in through their ddblab:profile tag; the exact profile's tables on the same server are untouched.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.host.process import table_stats
from engine.server.profile import ProfileSpec

# No network time, and every window and lag exactly its median: each test picks its instants.
NO_NETWORK = {"latency_ms": 0, "latency_p99_ms": 0, "window_spread": 1, "stale_spread": 1}


def _table(backend: Backend, gsi: bool = False, **knobs: float) -> Any:
    spec = ProfileSpec.parse("aws-like", {**NO_NETWORK, **knobs})
    client = backend.client(threads=8, retry=RetryPolicy("standard", 1))  # one attempt: throttling shows
    return open_table(client, "aws-like", TableSpec(gsi=gsi, profile_tag=spec.tag_value()))


@pytest.fixture
def tables(embedded: Backend):
    made: list[Any] = []

    def make(gsi: bool = False, **knobs: float) -> Any:
        made.append(_table(embedded, gsi, **knobs))
        return made[-1]

    yield make
    for table in made:
        drop_table(table)


def _code(e: pytest.ExceptionInfo[ClientError]) -> str:
    return str(e.value.response["Error"]["Code"])


def _transfer(table: Any, *pks: str) -> dict[str, Any]:
    return dict(
        TransactItems=[
            {
                "Update": {
                    "TableName": table.name,
                    "Key": {"PK": pk, "SK": "S"},
                    "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": 1},
                }
            }
            for pk in pks
        ]
    )


def _applied(table: Any, pk: str = "A") -> None:
    """Until the committer's transfer is applied (its ADD shows; a read outside a transaction never waits for a
    hold): the window then runs a full second from about now, whatever the machine's load."""
    deadline = time.monotonic() + 30
    while (table.get(pk, "S") or {}).get("n", 0) < 1:
        assert time.monotonic() < deadline, "the committing transaction was never applied"
        time.sleep(0.01)


def test_a_committing_transaction_holds_its_items_for_the_window(tables) -> None:
    table = tables(commit_ms=1000)
    table.put({"PK": "A", "SK": "S", "n": 0})
    committer = threading.Thread(target=table.client.transact_write_items, kwargs=_transfer(table, "A", "B"))
    started = time.monotonic()
    committer.start()
    _applied(table)  # the transaction is applied, its answer waits out the commit window
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
    table.client.transact_write_items(**_transfer(table, "C", "B"))  # after the window: no conflict
    stats = table_stats(table.client.meta.endpoint_url, table.name)
    assert stats["transaction_conflicts"] == 3


def test_exact_tables_never_conflict(tables, embedded: Backend) -> None:
    client = embedded.client(threads=8, retry=RetryPolicy("standard", 1))
    table = open_table(client, "exact", TableSpec())
    try:
        errors: list[str] = []

        def worker() -> None:
            for _ in range(20):
                try:
                    client.transact_write_items(**_transfer(table, "A", "B"))
                except ClientError as e:
                    errors.append(e.response["Error"]["Code"])

        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        item = table.get("A", "S")
        assert errors == [] and item is not None and item["n"] == 120
    finally:
        drop_table(table)


# The stale window is a second: a read right after a write lands inside it even on a loaded machine.
def test_reads_without_consistent_read_are_stale_inside_the_window_only(tables) -> None:
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1})
    time.sleep(1.05)
    table.put({"PK": "A", "SK": "S", "v": 2})
    assert table.get("A", "S", consistent=False)["v"] == 1  # always stale inside the window
    assert table.get("A", "S", consistent=True)["v"] == 2  # never with ConsistentRead
    assert [i["v"] for i in table.scan_all(consistent=False)] == [1]
    time.sleep(1.05)
    assert table.get("A", "S", consistent=False)["v"] == 2  # never after it
    table.put({"PK": "NEW", "SK": "S", "v": 1})
    assert table.get("NEW", "S", consistent=False) is None  # a new item: not there yet on the lagging copy


def test_an_updated_or_deleted_item_reads_as_it_was_before_the_write_inside_the_window(tables) -> None:
    # Single-item requests take their own pass through the model (single_item.py): an UpdateItem changes its item
    # in place and is copied before, a PutItem or DeleteItem replaces or unlinks it; each shows its old image.
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1, "tags": ["x"]})
    time.sleep(1.05)
    table.client.update_item(
        TableName=table.name,
        Key={"PK": "A", "SK": "S"},
        UpdateExpression="ADD v :one SET tags[0] = :y",
        ExpressionAttributeValues={":one": 1, ":y": "y"},
    )
    assert table.get("A", "S", consistent=False) == {"PK": "A", "SK": "S", "v": 1, "tags": ["x"]}
    assert table.get("A", "S", consistent=True) == {"PK": "A", "SK": "S", "v": 2, "tags": ["y"]}
    time.sleep(1.05)
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "S"})
    assert table.get("A", "S", consistent=False)["v"] == 2  # deleted, still on the lagging copy
    assert table.get("A", "S", consistent=True) is None


def test_single_writes_and_transactions_on_one_key_draw_from_one_bucket(tables) -> None:
    table = tables(write_units=1)  # a bucket of one unit, one a second: the next write within a second is refused
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
    time.sleep(1.1)  # full again
    table.client.transact_write_items(**_transfer(table, "HOT"))  # 2 units from a full bucket of 1: in debt
    with pytest.raises(ClientError) as throttled:
        table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    assert _code(throttled) == "ThrottlingException"


def test_a_batch_get_is_stale_or_consistent_as_its_table_asks(tables) -> None:
    table = tables(stale_ms=1000, stale_share=1.0)
    table.put({"PK": "A", "SK": "S", "v": 1})
    time.sleep(1.05)
    table.put({"PK": "A", "SK": "S", "v": 2})

    def batch_get(**asked: bool) -> int:
        keys = {"Keys": [{"PK": "A", "SK": "S"}], **asked}
        [item] = table.client.batch_get_item(RequestItems={table.name: keys})["Responses"][table.name]
        return int(item["v"])

    assert batch_get() == 1 and batch_get(ConsistentRead=False) == 1  # always stale inside the window
    assert batch_get(ConsistentRead=True) == 2  # a BatchGetItem asks for ConsistentRead per table: never stale


def test_no_stale_reads_when_the_share_is_zero(tables) -> None:
    table = tables(stale_ms=1000, stale_share=0.0)
    for v in range(20):
        table.put({"PK": "A", "SK": "S", "v": v})
        assert table.get("A", "S", consistent=False)["v"] == v


def test_a_hot_key_is_throttled_and_spread_keys_are_not(tables) -> None:
    table = tables(write_units=1)  # 40 puts with none refused would take 39 s at one a second
    hot: list[str] = []
    for i in range(40):
        try:
            table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S", "i": i})
            hot.append("ok")
        except ClientError as e:
            hot.append(e.response["Error"]["Code"])
    assert "ThrottlingException" in hot
    for i in range(40):
        table.client.put_item(TableName=table.name, Item={"PK": f"K{i}", "SK": "S"})  # one write per key: fine


def _put(pk: str, sk: str = "S", **attrs: Any) -> dict[str, Any]:
    return {"PutRequest": {"Item": {"PK": pk, "SK": sk, **attrs}}}


def _unprocessed(answer: dict[str, Any], table: Any) -> list[Any]:
    return list(answer.get("UnprocessedItems", {}).get(table.name, []))


def test_a_batch_write_leaves_the_items_a_transaction_holds_unprocessed_and_applies_the_rest(tables) -> None:
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
    again = table.client.batch_write_item(RequestItems={table.name: held})  # after the window: applied
    assert _unprocessed(again, table) == []
    assert table.get("A", "S")["n"] == 99 and table.get("B", "S") is None
    assert table_stats(table.client.meta.endpoint_url, table.name)["transaction_conflicts"] == 4


def test_a_batch_write_dynamodb_refuses_whole_is_refused_whole_even_on_held_items(tables) -> None:
    table = tables(commit_ms=1000)
    committer = threading.Thread(target=table.client.transact_write_items, kwargs=_transfer(table, "A"))
    committer.start()
    _applied(table)  # A is held
    with pytest.raises(ClientError) as refused:  # the same key twice: invalid, so nothing is left unprocessed
        table.client.batch_write_item(RequestItems={table.name: [_put("A", n=1), _put("A", n=2), _put("C")]})
    committer.join()
    assert _code(refused) == "ValidationException"
    assert table.get("C", "S") is None and table.get("A", "S")["n"] == 1


def test_a_batch_write_is_never_held_with_a_zero_commit_window(tables) -> None:
    table = tables(commit_ms=0)
    for n in range(5):
        table.client.transact_write_items(**_transfer(table, "A", "B"))
        answer = table.client.batch_write_item(RequestItems={table.name: [_put("A", n=n), _put("B", n=n)]})
        assert _unprocessed(answer, table) == []
    assert table_stats(table.client.meta.endpoint_url, table.name).get("transaction_conflicts", 0) == 0


def test_a_batch_write_past_a_keys_ceiling_leaves_that_keys_writes_unprocessed(tables) -> None:
    table = tables(write_units=1)  # the lowest ceiling: one write per second per partition key
    batch = [_put("HOT", "1"), _put("HOT", "2"), _put("K1"), _put("HOT", "3"), _put("K2")]
    answer = table.client.batch_write_item(RequestItems={table.name: batch})
    assert _unprocessed(answer, table) == [batch[1], batch[3]]  # the first write on HOT fits its bucket
    assert sorted(item["PK"] + item["SK"] for item in table.scan_all()) == ["HOT1", "K1S", "K2S"]
    with pytest.raises(ClientError) as refused:  # none could be processed, all for throughput: refused whole
        table.client.batch_write_item(RequestItems={table.name: [batch[1], batch[3]]})
    assert _code(refused) == "ThrottlingException"
    time.sleep(1.1)  # one second refills one write
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "2"})


def test_a_batch_write_at_the_highest_ceiling_is_never_throttled(tables) -> None:
    table = tables(write_units=100_000)
    for round_ in range(4):
        batch = [_put("HOT", f"{round_}-{i}") for i in range(25)]
        assert _unprocessed(table.client.batch_write_item(RequestItems={table.name: batch}), table) == []
    assert len(table.scan_all()) == 100


def test_a_slow_ceiling_still_lets_one_write_a_second_through(tables) -> None:
    table = tables(write_units=1)
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    with pytest.raises(ClientError) as throttled:
        table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    assert _code(throttled) == "ThrottlingException"
    time.sleep(1.1)
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})


def _query(table: Any, pk: str, consistent: bool = True, index: str = "") -> dict[str, Any]:
    attr = "GSI1PK" if index else "PK"
    kwargs: dict[str, Any] = {"IndexName": index} if index else {"ConsistentRead": consistent}
    return dict(
        table.client.query(
            TableName=table.name,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": attr},
            ExpressionAttributeValues={":pk": pk},
            **kwargs,
        )
    )


def test_a_query_takes_its_read_units_from_the_partition_it_reads(tables) -> None:
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
    time.sleep(1.1)
    assert _query(table, "HOT", consistent=False)["Count"] == 1  # half a unit without ConsistentRead
    assert _query(table, "HOT", consistent=False)["Count"] == 1
    with pytest.raises(ClientError):
        _query(table, "HOT", consistent=False)


def test_queries_at_the_highest_read_ceiling_are_never_throttled(tables) -> None:
    table = tables(read_units=100_000)
    table.put({"PK": "HOT", "SK": "S"})
    assert all(_query(table, "HOT")["Count"] == 1 for _ in range(60))


def test_a_key_of_the_wrong_type_is_refused_as_dynamodb_refuses_it_not_a_server_error(tables) -> None:
    table = tables()
    for call in (
        lambda: table.client.put_item(TableName=table.name, Item={"PK": {"S": "A"}, "SK": "S"}),
        lambda: table.client.batch_write_item(RequestItems={table.name: [_put({"S": "A"})]}),  # type: ignore[arg-type]
    ):
        with pytest.raises(ClientError) as refused:
            call()
        assert _code(refused) == "ValidationException"  # a map as a key: the model must not crash on it


# -- a whole run under each profile ------------------------------------------------------------------------------


def _run(backend: Backend, profile: ProfileSpec, pattern: str = "transactions", variant: str = "transact") -> Any:
    from engine.run.runner import RunConfig, run_pattern
    from engine.run.summary import summary

    run = run_pattern(
        RunConfig(pattern=pattern, variant=variant, threads=16, ops_per_client=6, profile=profile, seed=7), backend
    )
    return summary(run)


def test_transactions_conflict_under_aws_like_and_keep_their_invariants(embedded: Backend) -> None:
    from engine.run.runner import RunConfig, run_pattern
    from engine.run.summary import summary
    from engine.run.sweep import sweep_row
    from tests.lockstep import Lockstep

    # The 4 first orders are sent together (lockstep) and the one committed first holds the stock 500 ms: the
    # other three meet it unless each is delayed half a second past the same moment.
    profile = ProfileSpec.parse("aws-like", {"latency_ms": 1, "latency_p99_ms": 3, "stale_share": 1, "commit_ms": 500})
    lockstep = Lockstep(embedded, clients=4, rounds=1)
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


def test_the_exact_profile_shows_no_transaction_conflict(embedded: Backend) -> None:
    data = _run(embedded, ProfileSpec())
    assert data["conflicts_by_cause"]["transaction_conflict"] == 0 and data["simulated"] == {}
    assert data["profile"] == {"name": "exact", "simulated": False}
    assert all(inv["holds"] for inv in data["invariants"])


@pytest.mark.parametrize(
    ("name", "knobs", "words"),
    [
        ("aws", None, "unknown server profile"),
        ("aws-like", {"commit_ms": "nan"}, "out of range"),
        ("aws-like", {"commit_ms": "fast"}, "not a number"),
        ("aws-like", {"stale_share": "2"}, "out of range"),
        ("aws-like", {"no_such": "1"}, "unknown profile knob"),
        ("aws-like", {"latency_ms": "10", "latency_p99_ms": "5"}, "below"),
        ("exact", {"commit_ms": "5"}, "exact profile"),
    ],
)
def test_bad_profile_input_is_one_line_with_a_fix(name: str, knobs: Any, words: str) -> None:
    from engine.errors import BadInput

    with pytest.raises(BadInput) as e:
        ProfileSpec.parse(name, knobs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_profile_tag_round_trips_and_fits_dynamodbs_tag_limit() -> None:
    spec = ProfileSpec.parse("aws-like", {"commit_ms": "25", "write_units": "50"})
    assert ProfileSpec.from_tag(spec.tag_value()) == spec
    assert len(spec.tag_value()) <= 256
    assert "SIMULATED" in spec.describe() and "SIMULATED" not in ProfileSpec().describe()
