"""A request that names one item twice is refused whole, as DynamoDB (and DynamoDB Local) refuse it, under either
profile: moto alone would apply both of a BatchWriteItem's writes to one key and read a TransactGetItems' item
twice."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.profile import ProfileSpec

BATCH = "Provided list of item keys contains duplicates"
TRANSACTION = "Transaction request cannot include multiple operations on one item"


def _key(pk: str) -> dict[str, Any]:  # plain values: the lab's client serializes them
    return {"PK": pk, "SK": "A"}


def _requests(name: str) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    def put(pk: str, v: int) -> dict[str, Any]:
        return {"PutRequest": {"Item": {**_key(pk), "v": v}}}

    return {
        "a batch of two puts on one key": (
            BATCH,
            lambda c: c.batch_write_item(RequestItems={name: [put("dup", 1), put("dup", 2)]}),
        ),
        "a batch putting and deleting one key": (
            BATCH,
            lambda c: c.batch_write_item(
                RequestItems={name: [put("dup", 1), put("other", 1), {"DeleteRequest": {"Key": _key("dup")}}]}
            ),
        ),
        "a batch reading one key twice": (
            BATCH,
            lambda c: c.batch_get_item(RequestItems={name: {"Keys": [_key("seed"), _key("seed")]}}),
        ),
        "a transaction writing one item twice": (
            TRANSACTION,
            lambda c: c.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": name, "Item": _key("dup")}},
                    {"Delete": {"TableName": name, "Key": _key("dup")}},
                ]
            ),
        ),
        "a transaction reading one item twice": (
            TRANSACTION,
            lambda c: c.transact_get_items(
                TransactItems=[{"Get": {"TableName": name, "Key": _key("seed")}} for _ in range(2)]
            ),
        ),
    }


CASES = list(_requests("-"))


@pytest.fixture(scope="module", params=["exact", "aws-like"])
def table(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Any]:
    tag = ""
    if request.param == "aws-like":
        if not backend.embedded:
            pytest.skip("the aws-like profile is the embedded server's")
        tag = ProfileSpec.parse("aws-like", {"latency_ms": 0, "latency_p99_ms": 0}).tag_value()
    table = open_table(backend.client(retry=RetryPolicy("standard", 1)), "duplicate-keys", TableSpec(profile_tag=tag))
    table.put({"PK": "seed", "SK": "A", "v": 0})
    yield table
    drop_table(table)


@pytest.mark.parametrize("case", CASES)
def test_a_request_naming_one_item_twice_is_refused_whole(case: str, table: Any) -> None:
    message, send = _requests(table.name)[case]
    with pytest.raises(ClientError) as refused:
        send(table.client)
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("ValidationException", message)
    assert [(item["PK"], item["v"]) for item in table.scan_all()] == [("seed", 0)]  # nothing applied, not in part
