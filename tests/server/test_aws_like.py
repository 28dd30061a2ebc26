"""The aws-like profile's simulated contention, each behaviour with its knobs at their extremes.

Tables opt in through their ddblab:profile tag; the exact profile's tables on the same server are untouched. The
behaviours a test needs several calls inside one window for (stale reads, a bucket's second, a commit's hold) are
in test_aws_like_clock.py, on a clock the test moves by hand.
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


def test_no_stale_reads_when_the_share_is_zero(tables) -> None:
    table = tables(stale_ms=1000, stale_share=0.0)
    for v in range(20):
        table.put({"PK": "A", "SK": "S", "v": v})
        assert table.get("A", "S", consistent=False)["v"] == v


def _put(pk: str, sk: str = "S", **attrs: Any) -> dict[str, Any]:
    return {"PutRequest": {"Item": {"PK": pk, "SK": sk, **attrs}}}


def _unprocessed(answer: dict[str, Any], table: Any) -> list[Any]:
    return list(answer.get("UnprocessedItems", {}).get(table.name, []))


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


def test_a_batch_write_at_the_highest_ceiling_is_never_throttled(tables) -> None:
    table = tables(write_units=100_000)
    for round_ in range(4):
        batch = [_put("HOT", f"{round_}-{i}") for i in range(25)]
        assert _unprocessed(table.client.batch_write_item(RequestItems={table.name: batch}), table) == []
    assert len(table.scan_all()) == 100


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
