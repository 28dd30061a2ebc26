"""The call-log format must match the DynamoDB patterns guide (seed 000) byte for byte.

The expected blocks (seed_blocks.py) are copied verbatim from the seed; the params are the
boto3 keyword arguments the seed's code would pass to produce them.
"""

import enum
import io
from decimal import Decimal

import pytest

from engine.record.calllog import NO_RESULT, CallLog, format_request, format_result, format_value, inline_expression
from tests.calllog.seed_blocks import CASES, T28, acquire


@pytest.mark.parametrize("name", CASES)
def test_format_request_reproduces_seed_block(name):
    op, params, expected = CASES[name]
    assert format_request(op, params) == expected


def test_query_with_boto3_key_condition_object():
    conditions = pytest.importorskip("boto3.dynamodb.conditions")
    params = dict(TableName=T28, IndexName="GSI1", KeyConditionExpression=conditions.Key("GSI1PK").eq("EMAIL#a@x.com"))
    assert format_request("Query", params) == CASES["28-query-gsi"][2]


def test_query_extras_scan_filter_and_batches():
    params = dict(
        TableName="t",
        KeyConditionExpression="PK = :p AND begins_with(SK, :s)",
        Limit=5,
        ScanIndexForward=False,
        FilterExpression="#st <> :x",
        ProjectionExpression="PK, #st",
        ExpressionAttributeNames={"#st": "status"},
        ExpressionAttributeValues={":p": "U#1", ":s": "O#", ":x": "gone"},
    )
    assert (
        format_request("Query", params)
        == """\
>>> Query t
    key:        PK = 'U#1' AND begins_with(SK, 'O#')
    filter:     status <> 'gone'
    projection: PK, status
    ScanIndexForward: False
    Limit:      5"""
    )
    assert format_request("Query", {**params, "ScanIndexForward": True, "Limit": None}).count("\n") == 3
    assert (
        format_request(
            "BatchWriteItem",
            dict(
                RequestItems={
                    "t": [{"PutRequest": {"Item": {"PK": "a", "n": 1}}}, {"DeleteRequest": {"Key": {"PK": "b"}}}]
                }
            ),
        )
        == """\
>>> BatchWriteItem
    - Put t
        item:       {PK: 'a', n: 1}
    - Delete t
        key:        {PK: 'b'}"""
    )
    assert (
        format_request(
            "BatchGetItem", dict(RequestItems={"t": {"Keys": [{"PK": "a"}, {"PK": "b"}], "ConsistentRead": True}})
        )
        == """\
>>> BatchGetItem
    - Get t
        key:        {PK: 'a'}
        key:        {PK: 'b'}
        ConsistentRead: True"""
    )


def test_format_value():
    assert format_value(Decimal("10")) == "10"
    assert format_value(Decimal("10.00")) == "10"
    assert format_value(Decimal("1.50")) == "1.5"
    assert format_value(Decimal("-1")) == "-1"
    assert format_value(Decimal("1E+2")) == "100"
    assert format_value(True) == "True" and format_value(None) == "None"
    assert format_value("it's") == "'it\\'s'"
    assert (
        format_value({"PK": "USER#alice", "meta": {"tags": ["a", Decimal("1")], "ok": False}, "n": None})
        == "{PK: 'USER#alice', meta: {tags: ['a', 1], ok: False}, n: None}"
    )
    assert format_value({"b", "a", "c"}) == "['a', 'b', 'c']"
    assert format_value({Decimal("10"), Decimal("9")}) == "[9, 10]"
    assert format_value(b"\x00x") == "b'\\x00x'"


def test_inline_expression_is_token_aware():
    assert (
        inline_expression("credits >= :a AND #s = :active", {"#s": "status"}, {":a": 7, ":active": "active"})
        == "credits >= 7 AND status = 'active'"
    )
    # the longer placeholder must win regardless of mapping order
    assert inline_expression(":active = :a", None, {":a": 1, ":active": 2}) == "2 = 1"
    assert inline_expression("ADD #v :one", {"#v": "views"}, {":one": 1}) == "ADD views 1"
    # substituted text is not re-scanned, unknown placeholders stay put
    assert inline_expression("PK = :pk AND #x = :y", {"#x": "x"}, {":pk": "USER#v :y"}) == "PK = 'USER#v :y' AND x = :y"

    # an expression without placeholders comes back as plain text, even from a str subclass (an Enum's value)
    class Condition(str, enum.Enum):  # noqa: UP042 - not StrEnum: its str() is the value, this one's is not
        EXISTS = "attribute_exists(PK)"

    condition = Condition.EXISTS
    assert (
        format_request("PutItem", {"TableName": "t", "ConditionExpression": condition})
        == ">>> PutItem t\n    condition:  attribute_exists(PK)"
    )


def test_format_result():
    assert format_result("Create alice (first time)", "OK") == '=== Create alice (first time) ===\n"OK"'
    assert format_result("Ticket sale 1: sold") == "=== Ticket sale 1: sold ==="
    assert format_result("Ticket sale 1: sold", NO_RESULT) == "=== Ticket sale 1: sold ==="
    assert format_result("worker-A acquires", True) == "=== worker-A acquires ===\ntrue"
    assert (
        format_result(
            "Item at failure time",
            {"credits": Decimal("3"), "SK": "PROFILE", "name": "Alice", "PK": "USER#alice", "status": "active"},
        )
        == """\
=== Item at failure time ===
{
  "credits": 3,
  "SK": "PROFILE",
  "name": "Alice",
  "PK": "USER#alice",
  "status": "active"
}"""
    )
    assert (
        format_result(
            "TransactGetItems: stock, profile, ORDER#o2",
            [
                {"SK": "STOCK", "stock": Decimal("1"), "PK": "PRODUCT#widget"},
                {"SK": "PROFILE", "orderCount": Decimal("1"), "PK": "USER#alice"},
                None,
            ],
        )
        == """\
=== TransactGetItems: stock, profile, ORDER#o2 ===
[
  {
    "SK": "STOCK",
    "stock": 1,
    "PK": "PRODUCT#widget"
  },
  {
    "SK": "PROFILE",
    "orderCount": 1,
    "PK": "USER#alice"
  },
  null
]"""
    )
    assert (
        format_result("x", {"p": Decimal("1.5"), "s": {"b", "a"}, "b": b"hi"})
        == '=== x ===\n{\n  "p": 1.5,\n  "s": [\n    "a",\n    "b"\n  ],\n  "b": "aGk="\n}'
    )


def test_calllog_streams_seed_text_with_elided_line():
    # seed pattern 24: the ADD block with its elision line, then (skipping the racy section) the ticket floor
    stream = io.StringIO()
    log = CallLog(stream)
    log.request("UpdateItem", CASES["24-add"][1])
    log.elided("... (+47 more UpdateItem calls not shown)")
    log.result("After 50 concurrent increments", {"SK": "STATS", "views": Decimal("50"), "PK": "POST#hello-world"})
    log.request(*CASES["24-ticket-floor"][:2])
    log.result("Ticket sale 1: sold")
    expected = """\
>>> UpdateItem p24-atomic-counters
    key:        {PK: 'POST#hello-world', SK: 'STATS'}
    update:     ADD views 1
    ... (+47 more UpdateItem calls not shown)

=== After 50 concurrent increments ===
{
  "SK": "STATS",
  "views": 50,
  "PK": "POST#hello-world"
}

>>> UpdateItem p24-atomic-counters
    key:        {PK: 'TICKETS#gig', SK: 'COUNTER'}
    condition:  remaining > 0
    update:     ADD remaining -1

=== Ticket sale 1: sold ===
"""
    assert stream.getvalue() == expected
    assert log.text() == expected + "\n"


def test_calllog_note_between_blocks():
    log = CallLog()
    assert log.text() == ""
    log.result("worker-B acquires after release", True)
    log.note("... worker-B crashes, waiting 3s for the lease to expire ...")
    log.request("PutItem", acquire("worker-C", 1792496918, 1792496916))
    log.result("worker-C takes over the expired lock", True)
    assert (
        log.text()
        == """\
=== worker-B acquires after release ===
true

... worker-B crashes, waiting 3s for the lease to expire ...

>>> PutItem p29-distributed-locking
    item:       {PK: 'LOCK#invoice-run', SK: 'LOCK', owner: 'worker-C', expiresAt: 1792496918}
    condition:  attribute_not_exists(PK) OR expiresAt < 1792496916

=== worker-C takes over the expired lock ===
true

"""
    )
