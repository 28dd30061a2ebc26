"""The embedded server's simulated GSI lag (engine/server/simulated/gsi_lag.py), on a clock the test moves by hand.

The server runs in this process behind the same HTTP server as in production, so the test can stop time:
`clock.now` is what the lag code reads as time.monotonic(). One end-to-end test at the bottom uses the real
clock and the session's embedded server process.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import GSI_LAG_TAG, TableSpec, drop_table, open_table
from engine.server.faithful.app import FaithfulDynamoDB
from engine.server.simulated import gsi_lag
from tests.server.hand_clock import serve

LAG_S = 0.5
_names = itertools.count()


class Clock:
    """Stands in for the `time` module inside gsi_lag."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@dataclass
class Lab:
    client: Any
    app: FaithfulDynamoDB
    clock: Clock
    tables: list[str] = field(default_factory=list)

    def table(self, lag_ms: float | None = LAG_S * 1000, *, name: str | None = None, lsi: bool = False) -> str:
        name = name or f"gsi-lag-{next(_names)}"
        attributes = ["PK", "SK", "GSI1PK", "GSI1SK"] + (["LSI1SK"] if lsi else [])
        kwargs: dict[str, Any] = dict(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in attributes],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "GSI1",
                    "Projection": {"ProjectionType": "ALL"},
                    "KeySchema": [
                        {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                        {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                    ],
                }
            ],
            Tags=[{"Key": GSI_LAG_TAG, "Value": str(lag_ms)}] if lag_ms is not None else [],
        )
        if lsi:
            kwargs["LocalSecondaryIndexes"] = [
                {
                    "IndexName": "LSI1",
                    "Projection": {"ProjectionType": "ALL"},
                    "KeySchema": [
                        {"AttributeName": "PK", "KeyType": "HASH"},
                        {"AttributeName": "LSI1SK", "KeyType": "RANGE"},
                    ],
                }
            ]
        self.client.create_table(**kwargs)
        self.tables.append(name)
        return name

    def put(self, table: str, pk: str, email: str, **more: Any) -> None:
        self.client.put_item(TableName=table, Item={"PK": pk, "SK": "PROFILE", "GSI1PK": email, "GSI1SK": pk, **more})

    def by_email(self, table: str, email: str) -> list[str]:
        items = self.client.query(
            TableName=table,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :e",
            ExpressionAttributeValues={":e": email},
        )["Items"]
        return [item["PK"] for item in items]

    def index_scan(self, table: str) -> list[tuple[str, str]]:
        return sorted((i["PK"], i["GSI1PK"]) for i in self.client.scan(TableName=table, IndexName="GSI1")["Items"])

    def get(self, table: str, pk: str) -> dict[str, Any] | None:
        return self.client.get_item(TableName=table, Key={"PK": pk, "SK": "PROFILE"}, ConsistentRead=True).get("Item")

    def later(self, seconds: float) -> None:
        self.clock.now += seconds


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Any, FaithfulDynamoDB]]:
    """The production server in this process (tests/server/hand_clock.serve), and a client at it that never retries."""
    for backend, app in serve():
        yield backend.client(retry=RetryPolicy("standard", 1)), app


@pytest.fixture
def lab(server: tuple[Any, FaithfulDynamoDB], monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    clock = Clock()
    monkeypatch.setattr(gsi_lag, "time", clock)
    lab = Lab(server[0], server[1], clock)
    yield lab
    for name in lab.tables:
        try:
            lab.client.delete_table(TableName=name)
        except ClientError:
            pass  # a test deleted it already


def test_a_new_item_is_missing_from_the_index_until_the_lag_has_passed(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#a@x.com")
    assert lab.by_email(t, "EMAIL#a@x.com") == []
    assert lab.get(t, "USER#1") is not None  # the base table has it at once
    base_query = lab.client.query(
        TableName=t, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": "USER#1"}
    )["Items"]
    assert [i["PK"] for i in base_query] == ["USER#1"]
    lab.later(LAG_S - 0.01)
    assert lab.by_email(t, "EMAIL#a@x.com") == []
    lab.later(0.02)
    assert lab.by_email(t, "EMAIL#a@x.com") == ["USER#1"]


def test_a_changed_email_stays_under_the_old_one_until_the_lag_has_passed(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#old@x.com")
    lab.later(LAG_S + 0.01)
    lab.client.update_item(
        TableName=t,
        Key={"PK": "USER#1", "SK": "PROFILE"},
        UpdateExpression="SET GSI1PK = :e",
        ExpressionAttributeValues={":e": "EMAIL#new@x.com"},
    )
    assert lab.by_email(t, "EMAIL#old@x.com") == ["USER#1"]
    assert lab.by_email(t, "EMAIL#new@x.com") == []
    assert (lab.get(t, "USER#1") or {})["GSI1PK"] == "EMAIL#new@x.com"
    lab.later(LAG_S + 0.01)
    assert lab.by_email(t, "EMAIL#old@x.com") == []
    assert lab.by_email(t, "EMAIL#new@x.com") == ["USER#1"]


def test_a_deleted_item_stays_in_the_index_until_the_lag_has_passed(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#a@x.com")
    lab.later(LAG_S + 0.01)
    lab.client.delete_item(TableName=t, Key={"PK": "USER#1", "SK": "PROFILE"})
    assert lab.get(t, "USER#1") is None
    assert lab.by_email(t, "EMAIL#a@x.com") == ["USER#1"]
    lab.later(LAG_S + 0.01)
    assert lab.by_email(t, "EMAIL#a@x.com") == []


def test_the_index_shows_writes_in_order_one_lag_behind_each(lab: Lab) -> None:
    t = lab.table()
    for version in (1, 2, 3):  # written at 0, 0.1 and 0.2 s
        lab.put(t, "USER#1", "EMAIL#a@x.com", version=version)
        lab.later(0.1)
    seen = []
    for at in (0.25, 0.55, 0.65, 0.75):
        lab.clock.now = 1000.0 + at
        items = lab.client.query(
            TableName=t,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :e",
            ExpressionAttributeValues={":e": "EMAIL#a@x.com"},
        )["Items"]
        seen.append([int(i["version"]) for i in items])
    assert seen == [[], [1], [2], [3]]


def test_a_refused_write_leaves_the_index_as_it_was(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#a@x.com")
    lab.later(LAG_S + 0.01)
    with pytest.raises(ClientError):
        lab.client.put_item(
            TableName=t,
            Item={"PK": "USER#1", "SK": "PROFILE", "GSI1PK": "EMAIL#b@x.com", "GSI1SK": "USER#1"},
            ConditionExpression="attribute_not_exists(PK)",
        )
    assert lab.by_email(t, "EMAIL#a@x.com") == ["USER#1"]
    assert lab.app.gsi._pending.get(("us-east-1", t), {}) == {}


def test_transactions_and_batch_writes_lag_too(lab: Lab) -> None:
    t = lab.table()
    lab.client.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": t,
                    "Item": {"PK": "USER#1", "SK": "PROFILE", "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "USER#1"},
                }
            },
            {"Put": {"TableName": t, "Item": {"PK": "UNIQUE#a@x.com", "SK": "EMAIL"}}},
        ]
    )
    lab.client.batch_write_item(
        RequestItems={
            t: [
                {
                    "PutRequest": {
                        "Item": {"PK": "USER#2", "SK": "PROFILE", "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "USER#2"}
                    }
                }
            ]
        }
    )
    assert lab.by_email(t, "EMAIL#a@x.com") == []
    lab.later(LAG_S + 0.01)
    assert lab.by_email(t, "EMAIL#a@x.com") == ["USER#1", "USER#2"]


def test_a_scan_of_the_index_lags_but_a_scan_of_the_table_does_not(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#a@x.com")
    assert lab.index_scan(t) == []
    assert [i["PK"] for i in lab.client.scan(TableName=t)["Items"]] == ["USER#1"]
    lab.later(LAG_S + 0.01)
    assert lab.index_scan(t) == [("USER#1", "EMAIL#a@x.com")]


def test_tables_without_the_tag_and_local_indexes_are_instant(lab: Lab) -> None:
    plain = lab.table(lag_ms=None)
    lab.put(plain, "USER#1", "EMAIL#a@x.com")
    assert lab.by_email(plain, "EMAIL#a@x.com") == ["USER#1"]
    zero = lab.table(lag_ms=0)
    lab.put(zero, "USER#1", "EMAIL#a@x.com")
    assert lab.by_email(zero, "EMAIL#a@x.com") == ["USER#1"]
    with_lsi = lab.table(lsi=True)
    lab.put(with_lsi, "USER#1", "EMAIL#a@x.com", LSI1SK="x")
    local = lab.client.query(
        TableName=with_lsi,
        IndexName="LSI1",
        KeyConditionExpression="PK = :p",
        ExpressionAttributeValues={":p": "USER#1"},
        ConsistentRead=True,
    )["Items"]
    assert [i["PK"] for i in local] == ["USER#1"]
    assert lab.by_email(with_lsi, "EMAIL#a@x.com") == []


def test_a_consistent_read_on_a_gsi_is_refused_with_dynamodbs_message(lab: Lab) -> None:
    t = lab.table()
    with pytest.raises(ClientError) as e:
        lab.client.query(
            TableName=t,
            IndexName="GSI1",
            ConsistentRead=True,
            KeyConditionExpression="GSI1PK = :e",
            ExpressionAttributeValues={":e": "EMAIL#a@x.com"},
        )
    assert e.value.response["Error"]["Code"] == "ValidationException"
    assert e.value.response["Error"]["Message"] == "Consistent reads are not supported on global secondary indexes"


def test_a_table_recreated_under_the_same_name_starts_with_nothing_pending(lab: Lab) -> None:
    t = lab.table()
    lab.put(t, "USER#1", "EMAIL#gone@x.com")
    lab.later(LAG_S + 0.01)
    lab.put(t, "USER#1", "EMAIL#old@x.com")  # pending: the index would still show EMAIL#gone
    lab.client.delete_table(TableName=t)
    lab.table(name=t)
    lab.put(t, "USER#1", "EMAIL#new@x.com")
    lab.later(0.1)
    assert lab.by_email(t, "EMAIL#gone@x.com") == []  # nothing of the old table comes back


def test_an_item_the_ttl_sweeper_deletes_leaves_the_index_and_its_neighbours_keep_their_lag(lab: Lab) -> None:
    t = lab.table()
    past = int(time.time()) - 10
    lab.client.update_time_to_live(TableName=t, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"})
    lab.put(t, "USER#1", "EMAIL#a@x.com")
    lab.client.put_item(
        TableName=t, Item={"PK": "USER#1", "SK": "SESSION", "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "SESSION"}
    )
    lab.later(LAG_S + 0.01)
    lab.put(t, "USER#1", "EMAIL#b@x.com", expiresAt=past)  # expired already; pending under EMAIL#a
    lab.client.update_item(
        TableName=t,
        Key={"PK": "USER#1", "SK": "SESSION"},
        UpdateExpression="SET GSI1PK = :e",
        ExpressionAttributeValues={":e": "EMAIL#b@x.com"},
    )
    assert lab.app.sweep_ttl() == 1
    # The profile is gone from the index at once; the session (same partition) still shows its old email.
    assert lab.index_scan(t) == [("USER#1", "EMAIL#a@x.com")]
    assert [i["SK"] for i in lab.client.scan(TableName=t, IndexName="GSI1")["Items"]] == ["SESSION"]


def test_pending_images_are_dropped_once_the_index_has_caught_up(lab: Lab) -> None:
    t = lab.table()
    for i in range(50):
        lab.put(t, "USER#1", f"EMAIL#{i}@x.com")
        lab.later(0.1)
    pending = lab.app.gsi._pending[("us-east-1", t)]
    assert sum(len(q) for q in pending.values()) <= LAG_S / 0.1 + 1  # not 50: written often, never read
    lab.later(LAG_S)
    lab.by_email(t, "EMAIL#49@x.com")
    assert pending == {}


def test_a_lab_table_with_gsi_lag_ms_lags_on_the_embedded_server(embedded: Backend) -> None:
    client = embedded.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, "gsi-lag-e2e", TableSpec(gsi=True, gsi_lag_ms=1000))
    try:
        written = time.monotonic()
        table.put({"PK": "USER#1", "SK": "PROFILE", "GSI1PK": "EMAIL#a@x.com", "GSI1SK": "USER#1"})
        acked = time.monotonic()
        query = dict(
            TableName=table.name,
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :e",
            ExpressionAttributeValues={":e": "EMAIL#a@x.com"},
        )
        if time.monotonic() - written < 0.3:  # on a badly overloaded machine the first read may come too late
            assert client.query(**query)["Items"] == []
        while not client.query(**query)["Items"]:
            assert time.monotonic() - acked < 5
            time.sleep(0.02)
        assert time.monotonic() - written >= 1.0
    finally:
        drop_table(table)
