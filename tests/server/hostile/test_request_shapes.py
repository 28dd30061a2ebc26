"""Every top-level parameter that breaks the API model's input shape gets a 400 (SerializationException or
ValidationException), never a 500 or a 200, on tables of both profiles; the server keeps serving after.

Started from the probe's findings (branch `probe`): fifteen requests moto answered 500 or 200. Then, for every
operation the server routes and every top-level member of its input shape, a dozen wrong values.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.faithful import limits, shapes
from engine.server.profile import ProfileSpec
from tests.server.hostile.test_bad_requests import _AUTH, _code, _send, _still_serving

KEY = {"PK": {"S": "probe"}, "SK": {"S": "x"}}
WRONG: list[Any] = ["x", 7, -1, 0, "", [], {}, [1], {"a": 1}, True, None, "x" * 10_000]
# DynamoDB (and DynamoDB Local) ignore a null member: it is absent. Only a required one is refused.
# Where a request of the right shapes still crashes moto, it is a gap of moto's (e.g. ListExports reads a TableArn
# the model calls optional); these operations must answer every request without a 500, shape-valid or not.
ITEM_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "DeleteItem", "UpdateItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem"}
    | {"TransactGetItems", "TransactWriteItems", "DescribeTable"}
)
PROFILES = {"exact": None, "aws-like": ProfileSpec.parse("aws-like", {"latency_ms": 0, "latency_p99_ms": 0})}


@pytest.fixture(scope="module", params=list(PROFILES))
def table(request: Any, backend: Backend, server: Any) -> Iterator[Any]:
    spec = PROFILES[request.param]
    tag = spec.tag_value() if spec is not None else ""
    client = backend.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, f"shapes-{request.param}", TableSpec(profile_tag=tag))
    table.put({"PK": "probe", "SK": "x", "n": 1})  # a Scan from a bad start key on a table with items crashed moto
    yield table
    drop_table(table)


def _probe_cases(name: str) -> list[tuple[str, str, dict[str, Any]]]:
    query = {"TableName": name, "KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "a"}}}
    put = {"Put": {"TableName": name, "Item": KEY}}
    return [
        ("Query Limit 'x'", "Query", {**query, "Limit": "x"}),
        ("Query Limit 0", "Query", {**query, "Limit": 0}),
        ("Scan Limit 'x'", "Scan", {"TableName": name, "Limit": "x"}),
        ("Scan ExclusiveStartKey {}", "Scan", {"TableName": name, "ExclusiveStartKey": {}}),
        ("Scan ExclusiveStartKey without SK", "Scan", {"TableName": name, "ExclusiveStartKey": {"PK": {"S": "a"}}}),
        ("Scan Segment 'x'", "Scan", {"TableName": name, "Segment": "x", "TotalSegments": 2}),
        ("PutItem Expected 'x'", "PutItem", {"TableName": name, "Item": KEY, "Expected": "x"}),
        ("UpdateItem ReturnValues []", "UpdateItem", {"TableName": name, "Key": KEY, "ReturnValues": []}),
        ("GetItem AttributesToGet -1", "GetItem", {"TableName": name, "Key": KEY, "AttributesToGet": -1}),
        ("Query KeyConditions 'x'", "Query", {"TableName": name, "KeyConditions": "x"}),
        ("TransactWriteItems token {}", "TransactWriteItems", {"ClientRequestToken": {"a": 1}, "TransactItems": [put]}),
        ("TransactWriteItems token [1]", "TransactWriteItems", {"ClientRequestToken": [1], "TransactItems": [put]}),
        (
            "TransactWriteItems token 37 chars",
            "TransactWriteItems",
            {"ClientRequestToken": "t" * 37, "TransactItems": [put]},
        ),
        ("BatchWriteItem RequestItems {}", "BatchWriteItem", {"RequestItems": {}}),
        ("BatchWriteItem empty list", "BatchWriteItem", {"RequestItems": {name: []}}),
    ]


def _post(server: Any, op: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return _send(server.port, json.dumps(params).encode(), f"DynamoDB_20120810.{op}")


@pytest.mark.parametrize("index", range(15))
def test_the_probes_requests_are_400s(index: int, server: Any, table: Any) -> None:
    label, op, params = _probe_cases(table.name)[index]
    status, answer = _post(server, op, params)
    assert status == 400, f"{label}: {status} {answer}"
    assert _code(answer) in {"ValidationException", "SerializationException"}, f"{label}: {answer}"
    assert answer["message"] and "\n" not in answer["message"]


def test_messages_are_dynamodbs(server: Any, table: Any) -> None:
    status, answer = _post(server, "Scan", {"TableName": table.name, "Limit": 0})
    assert (status, _code(answer)) == (400, "ValidationException")
    assert answer["message"] == (
        "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1"
    )
    status, answer = _post(server, "Scan", {"TableName": table.name, "Limit": 0, "Select": "NOPE"})
    assert answer["message"].startswith("2 validation errors detected: ") and "'select'" in answer["message"]
    status, answer = _post(server, "Scan", {"TableName": table.name, "Limit": "x"})
    assert (status, _code(answer)) == (400, "SerializationException") and "Limit" in answer["message"]
    status, answer = _post(server, "Scan", {"TableName": table.name, "ExclusiveStartKey": {"PK": {"S": "a"}}})
    assert answer["message"] == "Exclusive Start Key must have same size as table's key schema"  # DynamoDB Local's
    start = {"PK": {"S": "a"}, "other": {"S": "b"}}
    status, answer = _post(server, "Scan", {"TableName": table.name, "ExclusiveStartKey": start})
    assert answer["message"].startswith("The provided starting key is invalid")


def test_unknown_members_and_nulls_are_ignored_and_good_start_keys_served(server: Any, table: Any) -> None:
    status, answer = _post(
        server,
        "GetItem",
        {"TableName": table.name, "Key": KEY, "Bogus": 1, "AttributesToGet": None, "ConsistentRead": True},
    )
    assert status == 200 and answer["Item"]["n"] == {"N": "1"}, answer
    status, answer = _post(server, "Scan", {"TableName": table.name, "ExclusiveStartKey": KEY, "Limit": 1})
    assert status == 200, answer


def _kept(conn: http.client.HTTPConnection, op: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = {"X-Amz-Target": f"DynamoDB_20120810.{op}", "Content-Type": "application/x-amz-json-1.0"}
    conn.request("POST", "/", json.dumps(params).encode(), {**headers, "Authorization": _AUTH})
    response = conn.getresponse()
    data = response.read()
    return response.status, (json.loads(data) if data else {})


def _wrong_values() -> Iterator[tuple[str, str, Any]]:
    for op, spec in sorted(shapes.OPERATIONS.items()):
        if op not in limits.OPERATIONS:
            continue  # not routed: UnknownOperationException
        for member in spec.members:
            for value in WRONG:
                yield op, member, value


def _refused(member: shapes.Member, value: Any) -> bool:
    """Whether shapes.check must refuse `value` by type or bounds alone (others may pass the top level)."""
    if value is None:
        return False
    if type(value) not in member.types:
        return True
    return member.bounded and shapes._out_of_bounds(value, member) is not None


def test_every_top_level_member_with_a_dozen_wrong_values_is_never_a_500(server: Any, table: Any) -> None:
    """Each operation's good request with one member replaced: a 400 whenever the value breaks the member's type
    or bounds, never a 500 for an item operation, nor for any operation when the value breaks the model. Requests on tables go to this profile's table. One kept-alive connection: about
    6,000 requests a profile."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    crashed: list[tuple[str, str, Any]] = []
    seen = 0
    for op, name, value in _wrong_values():
        spec = shapes.OPERATIONS[op]
        params = _good(op, table.name)
        params[name] = value
        status, answer = _kept(conn, op, params)
        if (status == 500 or _code(answer) == "InternalServerError") and (
            op in ITEM_OPERATIONS or _refused(spec.members[name], value)
        ):
            crashed.append((op, name, value))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            continue
        if _refused(spec.members[name], value):
            assert status == 400, (op, name, value, answer)
            assert _code(answer) in {"SerializationException", "ValidationException"}, (op, name, value, answer)
        seen += 1
    conn.close()
    assert crashed == [], f"{len(crashed)} 500s: {sorted({(o, n, str(v)[:12]) for o, n, v in crashed})}"
    assert seen > 1000
    _still_serving(table, server)


def _good(op: str, name: str) -> dict[str, Any]:
    """A request of `op` on table `name` that passes the top-level checks (most of them succeed)."""
    put = {"Put": {"TableName": name, "Item": KEY}}
    known: dict[str, dict[str, Any]] = {
        "GetItem": {"TableName": name, "Key": KEY},
        "PutItem": {"TableName": name, "Item": KEY},
        "DeleteItem": {"TableName": name, "Key": {"PK": {"S": "gone"}, "SK": {"S": "x"}}},
        "UpdateItem": {
            "TableName": name,
            "Key": KEY,
            "UpdateExpression": "SET n = :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        },
        "Query": {
            "TableName": name,
            "KeyConditionExpression": "PK = :p",
            "ExpressionAttributeValues": {":p": {"S": "probe"}},
        },
        "Scan": {"TableName": name},
        "BatchGetItem": {"RequestItems": {name: {"Keys": [KEY]}}},
        "BatchWriteItem": {"RequestItems": {name: [{"PutRequest": {"Item": KEY}}]}},
        "TransactGetItems": {"TransactItems": [{"Get": {"TableName": name, "Key": KEY}}]},
        "TransactWriteItems": {"TransactItems": [put]},
        "DescribeTable": {"TableName": name},
        "DescribeTimeToLive": {"TableName": name},
    }
    return dict(known.get(op, {}))
