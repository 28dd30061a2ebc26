"""The aws-like profile's windows, throttling errors and request tokens, as DynamoDB documents them: a cancelled
transaction keeps the items it prepared until its release; a TransactGetItems naming an item a single write is
writing is cancelled; a hot key is answered with the error of the table's capacity mode and its
ThrottlingReasons; a ClientRequestToken whose transaction is still in flight gets TransactionInProgressException.

The model reads a clock the test moves by hand (tests/server/hand_clock.py): a hold or a bucket's second lasts
until the test moves the clock past it, however slow the machine. Each window is exact (window_spread 1); an
answer still waits its window (600 ms) in real time, so the test acts once the server has taken the request that
opens it (the model's count of the table's requests says so)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.host.process import table_stats
from engine.server.profile import ProfileSpec, draw_ms
from tests.server.hand_clock import HandClock

EXACT_WINDOWS = {"latency_ms": 0, "latency_p99_ms": 0, "window_spread": 1, "stale_share": 0}


@pytest.fixture
def tables(lab: tuple[Backend, Any], clock: HandClock):
    made: list[Any] = []

    def make(gsi: bool = False, **knobs: float | str) -> Any:
        spec = ProfileSpec.parse("aws-like", {**EXACT_WINDOWS, **knobs})
        client = lab[0].client(threads=8, retry=RetryPolicy("standard", 1))  # one attempt: every refusal shows
        made.append(open_table(client, "aws-like", TableSpec(gsi=gsi, profile_tag=spec.tag_value())))
        return made[-1]

    yield make
    for table in made:
        drop_table(table)


def _code(e: pytest.ExceptionInfo[ClientError]) -> str:
    return str(e.value.response["Error"]["Code"])


def _requests(table: Any) -> int:
    """How many requests on the table the server's aws-like model has taken (read under the server's lock)."""
    return table_stats(str(table.client.meta.endpoint_url), table.name).get("requests", 0)


def _taken(table: Any, before: int) -> None:
    """Wait until the server has taken one more request on the table than `before`: its window is open."""
    deadline = time.monotonic() + 30
    while _requests(table) <= before:
        assert time.monotonic() < deadline, "the request in the background never reached the server"
        time.sleep(0.005)


def _in_background(table: Any, call: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call(**kwargs))
        except ClientError as e:
            outcome.append(e.response["Error"]["Code"])

    thread = threading.Thread(target=run)
    before = _requests(table)
    thread.start()
    _taken(table, before)  # the request is applied (or refused); its answer waits out its window
    return thread, outcome


def test_a_cancelled_transaction_holds_the_items_it_prepared_until_its_abort_window_ends(tables, clock) -> None:
    table = tables(abort_ms=600)
    table.put({"PK": "A", "SK": "S", "n": 0})
    cancelled_one = dict(
        TransactItems=[
            {
                "ConditionCheck": {
                    "TableName": table.name,
                    "Key": {"PK": "A", "SK": "S"},
                    "ConditionExpression": "n = :9",
                    "ExpressionAttributeValues": {":9": 9},
                }
            },
            {"Put": {"TableName": table.name, "Item": {"PK": "B", "SK": "S", "n": 1}}},
        ]
    )
    loser, outcome = _in_background(table, table.client.transact_write_items, **cancelled_one)
    with pytest.raises(ClientError) as inside:  # B was prepared, and stays marked until the release
        table.client.put_item(TableName=table.name, Item={"PK": "B", "SK": "S", "n": 2})
    table.client.put_item(TableName=table.name, Item={"PK": "A", "SK": "S", "n": 3})  # A cancelled it: not held
    loser.join()
    assert outcome == ["TransactionCanceledException"]
    assert _code(inside) == "TransactionConflictException"
    clock.later(0.61)
    table.client.put_item(TableName=table.name, Item={"PK": "B", "SK": "S", "n": 2})  # after the window: free
    assert table.get("B", "S")["n"] == 2


def test_a_transaction_cancelled_by_a_conflict_blocks_others_for_its_own_window(tables, clock) -> None:
    # The compounding AWS's prepare-time marks cause: the loser of a conflict holds its other items too.
    table = tables(commit_ms=1200, abort_ms=600)

    def transfer(*pks: str) -> dict[str, Any]:
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

    winner, won = _in_background(table, table.client.transact_write_items, **transfer("A"))
    loser, lost = _in_background(table, table.client.transact_write_items, **transfer("A", "C"))  # conflicts on A
    with pytest.raises(ClientError) as blocked:
        table.client.transact_write_items(**transfer("C"))  # C is the loser's, held for its abort window
    loser.join()
    winner.join()
    assert lost == ["TransactionCanceledException"] and len(won) == 1
    assert [r["Code"] for r in blocked.value.response["CancellationReasons"]] == ["TransactionConflict"]
    clock.later(1.21)
    table.client.transact_write_items(**transfer("C"))


def test_a_transact_get_during_a_single_write_is_cancelled_with_reason_transaction_conflict(tables) -> None:
    # A single write is under way for write_ms before it applies: a TransactGetItems of the item 200 ms before
    # the write applies overlaps it, and is cancelled; the write is not refused (writes never wait for reads).
    table = tables(write_ms=600, read_ms=0)
    table.put({"PK": "A", "SK": "S", "n": 0})
    get = dict(TransactItems=[{"Get": {"TableName": table.name, "Key": {"PK": "A", "SK": "S"}}}])
    reasons: list[str] = []

    def read() -> None:
        try:
            table.client.transact_get_items(**get)
        except ClientError as e:
            reasons.append(str(e.response["Error"]["Code"]))
            reasons.extend(r["Code"] for r in e.response["CancellationReasons"])

    reader = threading.Thread(target=read)
    started, before = time.monotonic(), _requests(table)
    reader.start()
    _taken(table, before)
    table.client.put_item(TableName=table.name, Item={"PK": "A", "SK": "S", "n": 1})
    reader.join()
    assert time.monotonic() - started >= 0.6  # the read's answer left when the window was over
    assert reasons == ["TransactionCanceledException", "TransactionConflict"]
    assert table.get("A", "S")["n"] == 1
    reader = threading.Thread(target=read)  # no write meanwhile: the same read answers
    reader.start()
    reader.join()
    assert len(reasons) == 2


def test_a_write_landing_while_a_transact_get_is_under_way_cancels_the_read_not_the_write(tables) -> None:
    table = tables(read_ms=600, write_ms=0)  # a TransactGetItems under way for 600 ms after it reads
    table.put({"PK": "A", "SK": "S", "n": 0})
    table.put({"PK": "B", "SK": "S", "n": 0})
    get = dict(
        TransactItems=[
            {"Get": {"TableName": table.name, "Key": {"PK": "A", "SK": "S"}}},
            {"Get": {"TableName": table.name, "Key": {"PK": "B", "SK": "S"}}},
        ]
    )
    reader, outcome = _in_background(table, table.client.transact_get_items, **get)
    table.client.put_item(TableName=table.name, Item={"PK": "B", "SK": "S", "n": 1})  # the write goes through
    reader.join()
    assert outcome == ["TransactionCanceledException"]
    untouched, clean = _in_background(table, table.client.transact_get_items, **get)  # nothing written meanwhile
    untouched.join()
    assert isinstance(clean[0], dict) and clean[0]["Responses"][1]["Item"]["n"] == 1
    assert table.client.transact_get_items(**get)["Responses"][1]["Item"]["n"] == 1


def test_a_cancelled_transact_get_names_the_item_written_under_it(tables) -> None:
    table = tables(read_ms=600, write_ms=0)
    get = dict(
        TransactItems=[
            {"Get": {"TableName": table.name, "Key": {"PK": "A", "SK": "S"}}},
            {"Get": {"TableName": table.name, "Key": {"PK": "B", "SK": "S"}}},
        ]
    )
    reasons: list[Any] = []

    def read() -> None:
        try:
            table.client.transact_get_items(**get)
        except ClientError as e:
            reasons.extend(r["Code"] for r in e.response["CancellationReasons"])

    reader = threading.Thread(target=read)
    before = _requests(table)
    reader.start()
    _taken(table, before)
    table.client.transact_write_items(
        TransactItems=[{"Put": {"TableName": table.name, "Item": {"PK": "B", "SK": "S"}}}]
    )
    reader.join()
    assert reasons == ["None", "TransactionConflict"]


@pytest.mark.parametrize(
    ("mode", "code", "member"),
    [
        ("on-demand", "ThrottlingException", "throttlingReasons"),
        ("provisioned", "ProvisionedThroughputExceededException", "ThrottlingReasons"),
    ],
)
def test_a_hot_key_is_throttled_with_its_modes_error_and_a_key_range_reason(tables, mode, code, member) -> None:
    table = tables(write_units=1, read_units=1, table_mode=mode, write_ms=0)
    table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    with pytest.raises(ClientError) as write:
        table.client.put_item(TableName=table.name, Item={"PK": "HOT", "SK": "S"})
    table.client.get_item(TableName=table.name, Key={"PK": "HOT", "SK": "S"}, ConsistentRead=True)
    with pytest.raises(ClientError) as read:  # reads have their own bucket: throttled separately
        table.client.get_item(TableName=table.name, Key={"PK": "HOT", "SK": "S"}, ConsistentRead=True)
    arn = f"arn:aws:dynamodb:{table.client.meta.region_name}:123456789012:table/{table.name}"
    for refused, kind in ((write, "Write"), (read, "Read")):
        assert _code(refused) == code
        assert refused.value.response[member] == [{"reason": f"Table{kind}KeyRangeThroughputExceeded", "resource": arn}]
    if mode == "on-demand":
        assert "DynamoDB is automatically scaling your table" in write.value.response["Error"]["Message"]
    else:
        assert "provisioned throughput for the table was exceeded" in write.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as transaction:  # inside a transaction: cancelled, reason ThrottlingError
        table.client.transact_write_items(
            TransactItems=[{"Put": {"TableName": table.name, "Item": {"PK": "HOT", "SK": "S"}}}]
        )
    assert _code(transaction) == "TransactionCanceledException"
    assert [r["Code"] for r in transaction.value.response["CancellationReasons"]] == ["ThrottlingError"]


def test_a_request_token_still_in_flight_gets_transaction_in_progress(tables, clock: HandClock) -> None:
    table = tables(commit_ms=600)
    call = dict(
        TransactItems=[{"Put": {"TableName": table.name, "Item": {"PK": "A", "SK": "S", "n": 1}}}],
        ClientRequestToken="token-1",
    )
    first, outcome = _in_background(table, table.client.transact_write_items, **call)
    with pytest.raises(ClientError) as again:
        table.client.transact_write_items(**call)
    first.join()
    assert _code(again) == "TransactionInProgressException" and outcome != ["TransactionInProgressException"]
    clock.later(0.61)
    table.client.transact_write_items(**call)  # answered: the same token now gets the stored answer
    assert table.get("A", "S")["n"] == 1


def test_stale_lags_fall_off_continuously_with_time_since_the_write_and_stop_at_the_cap() -> None:
    # The lagging copy's lag, drawn per write (median 20 ms, 99th percentile 200 ms, at most 1 s): the share of
    # writes still unseen falls at every step after the write, not at once after a fixed window.
    chance = random.Random(7)
    lags = [draw_ms(chance, 20.0, 10.0, 1000.0) * 1000 for _ in range(20_000)]
    unseen = [sum(lag > after for lag in lags) / len(lags) for after in (0, 5, 10, 20, 50, 100, 200, 1000)]
    assert unseen == sorted(unseen, reverse=True) and len(set(unseen)) == len(unseen)
    assert 0.45 < unseen[3] < 0.55  # half the writes are still unseen at the median
    assert 0.005 < unseen[6] < 0.02 and unseen[-1] == 0.0 and max(lags) <= 1000.0


def test_an_index_keys_write_capacity_throttles_base_table_writes_and_names_the_index(tables) -> None:
    # Two items with their own partition keys (their own base buckets) and one index key (one index bucket).
    table = tables(gsi=True, write_units=1, gsi_lag_ms=0)
    table.client.put_item(TableName=table.name, Item={"PK": "A", "SK": "S", "GSI1PK": "HOT", "GSI1SK": "1"})
    with pytest.raises(ClientError) as refused:
        table.client.put_item(TableName=table.name, Item={"PK": "B", "SK": "S", "GSI1PK": "HOT", "GSI1SK": "2"})
    table.client.put_item(TableName=table.name, Item={"PK": "C", "SK": "S", "GSI1PK": "COLD", "GSI1SK": "3"})
    arn = f"arn:aws:dynamodb:{table.client.meta.region_name}:123456789012:table/{table.name}/index/GSI1"
    assert _code(refused) == "ThrottlingException"
    assert refused.value.response["throttlingReasons"] == [
        {"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": arn}
    ]
    assert table.get("B", "S") is None  # refused whole: the base table did not take it either


def test_global_indexes_lag_by_default_under_aws_like(tables, clock: HandClock) -> None:
    # The tables have no ddblab:gsi-lag-ms tag of their own: their aws-like profile's gsi_lag_ms makes their index
    # lag. At 10 s (the knob's most), the read right after the write misses it; at 300 ms, a read 350 ms after the
    # write finds it (the index's lag reads the hand clock too).
    assert ProfileSpec.parse("aws-like").gsi_lag_ms > 0

    def listed(table: Any) -> int:
        answer = table.client.query(
            TableName=table.name,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :g",
            ExpressionAttributeValues={":g": "G"},
        )
        return int(answer["Count"])

    slow, short = tables(gsi=True, gsi_lag_ms=10_000), tables(gsi=True, gsi_lag_ms=300)
    for table in (slow, short):
        table.client.put_item(TableName=table.name, Item={"PK": "A", "SK": "S", "GSI1PK": "G", "GSI1SK": "1"})
    assert listed(slow) == 0  # not on the index yet
    clock.later(0.35)
    assert listed(short) == 1 and listed(slow) == 0
