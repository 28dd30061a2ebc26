"""Client mistakes get DynamoDB's 4xx answer and one-line message; the server keeps answering everyone else.

Raw HTTP, because boto3 would refuse most of these before sending them. Each test ends by checking that a
well-formed call on another connection still works and that the server wrote no traceback.
"""

from __future__ import annotations

import http.client
import json
import math
from typing import Any

import pytest

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.control import TOKEN_HEADER
from engine.server.faithful import limits

_AUTH = "AWS4-HMAC-SHA256 Credential=ddblab/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"


@pytest.fixture(scope="module")
def table(backend: Backend, server: Any) -> Any:
    table = open_table(backend.client(retry=RetryPolicy("standard", 1)), "bad-requests", TableSpec())
    yield table
    drop_table(table)


def _send(
    port: int, body: bytes, target: str = "DynamoDB_20120810.PutItem", **headers: str
) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(
            "POST",
            "/",
            body,
            {"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.0", "Authorization": _AUTH, **headers},
        )
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    return response.status, (json.loads(data) if data else {})


def _code(answer: dict[str, Any]) -> str:
    return str(answer.get("__type", "")).rpartition("#")[2]


def _still_serving(table: Any, server: Any) -> None:
    table.put({"PK": "ALIVE", "SK": "A", "n": 1})
    assert table.get("ALIVE", "A")["n"] == 1
    assert not [line for line in server._stderr_tail if "Traceback" in line]


def _put(table: Any, item: dict[str, Any], **extra: Any) -> bytes:
    return json.dumps({"TableName": table.name, "Item": item, **extra}).encode()


KEY = {"PK": {"S": "A"}, "SK": {"S": "B"}}

CASES = {
    "malformed JSON": (b'{"TableName": "t", "Item": {', "PutItem", "SerializationException"),
    "truncated body": (b'{"TableName": "t", "Ite', "PutItem", "SerializationException"),
    "not an object": (b"[1, 2]", "PutItem", "SerializationException"),
    "unknown target": (b"{}", "Nope", "UnknownOperationException"),
    "no service prefix": (b"{}", "PutItem!", "UnknownOperationException"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_broken_request_gets_dynamodbs_error_type(name: str, server: Any, table: Any) -> None:
    body, op, code = CASES[name]
    target = op if op.endswith("!") else f"DynamoDB_20120810.{op}"
    status, answer = _send(server.port, body, target.rstrip("!"))
    assert status == 400 and _code(answer) == code, answer
    assert answer["message"] and "\n" not in answer["message"]
    _still_serving(table, server)


def test_bad_expressions_and_values_are_validation_errors(server: Any, table: Any) -> None:
    cases = [
        _put(table, KEY, ConditionExpression="attribute_not_exists(PK) AND"),  # truncated expression
        _put(table, KEY, ConditionExpression="#missing = :v", ExpressionAttributeValues={":v": {"N": "1"}}),
        _put(table, KEY, ConditionExpression="n = :undefined"),
        _put(table, {**KEY, "x": {"Q": "1"}}),  # no such type
        _put(table, {**KEY, "x": {"S": "a", "N": "1"}}),  # two types
        _put(table, {"PK": "A", "SK": "B"}),  # plain values, not {type: value}
        json.dumps({"TableName": 5, "Item": KEY}).encode(),
        _put(table, KEY, ConditionExpression="size(" * 3000),  # over 4 KB
    ]
    for body in cases:
        status, answer = _send(server.port, body)
        assert status == 400 and _code(answer) in ("ValidationException", "SerializationException"), (body, answer)
    status, answer = _send(
        server.port,
        json.dumps(
            {"TableName": table.name, "Key": KEY, "UpdateExpression": "SET a = ", "ReturnValues": "ALL_NEW"}
        ).encode(),
        "DynamoDB_20120810.UpdateItem",
    )
    assert status == 400 and _code(answer) == "ValidationException", answer
    _still_serving(table, server)


def test_limits_are_dynamodbs(server: Any, table: Any) -> None:
    big = {**KEY, "blob": {"S": "x" * (limits.MAX_ITEM_BYTES - 9)}}  # one byte over, names counted
    status, answer = _send(server.port, _put(table, big))
    assert status == 400 and "Item size has exceeded" in answer["message"]
    nested: dict[str, Any] = {"S": "leaf"}
    for _ in range(40):
        nested = {"M": {"n": nested}}
    status, answer = _send(server.port, _put(table, {**KEY, "deep": nested}))
    assert status == 400 and "Nesting" in answer["message"]
    actions = [{"Put": {"TableName": table.name, "Item": {"PK": {"S": str(i)}, "SK": {"S": "T"}}}} for i in range(101)]
    status, answer = _send(
        server.port, json.dumps({"TransactItems": actions}).encode(), "DynamoDB_20120810.TransactWriteItems"
    )
    assert status == 400 and _code(answer) == "ValidationException" and "100" in answer["message"]
    requests = [{"PutRequest": {"Item": {"PK": {"S": str(i)}, "SK": {"S": "B"}}}} for i in range(26)]
    status, answer = _send(
        server.port, json.dumps({"RequestItems": {table.name: requests}}).encode(), "DynamoDB_20120810.BatchWriteItem"
    )
    assert status == 400 and "25" in answer["message"]
    assert [i for i in table.scan_all() if i["PK"] != "ALIVE"] == []  # none of it was applied, not even in part
    _still_serving(table, server)


UNSTORABLE = {
    "39 significant digits": {"N": "1" * 39},
    "over 1E+126": {"N": "1e126"},
    "under 1E-130": {"N": "1e-131"},
    "not a number": {"N": "0x10"},
    "an empty string set": {"SS": []},
    "an empty binary set": {"BS": []},
    "a set holding one string twice": {"SS": ["a", "a"]},
    "a set holding one number twice": {"NS": ["1", "1.0"]},
    "a number set with a word in it": {"NS": ["1", "one"]},
    "an empty set inside a list": {"L": [{"NS": []}]},
    "an exponent past any magnitude": {"N": "1e" + "9" * 5000},
    "a zero with an exponent past any": {"NS": ["1", "0e99999999999999999999"]},
    "a binary set holding one byte twice": {"BS": ["AA==", "AB=="]},
}
STORABLE = [{"N": "1" * 38}, {"N": "9.9e125"}, {"N": "1e-130"}, {"N": "-0.5"}, {"NS": ["1", "2"]}, {"SS": ["a", "b"]}]


@pytest.mark.parametrize("name", list(UNSTORABLE))
def test_a_value_dynamodb_cannot_store_is_refused_in_an_item_and_in_an_update(
    name: str, server: Any, table: Any
) -> None:
    """moto stored these when they came in ExpressionAttributeValues (even a number 'one'), and most of them in an
    Item too; DynamoDB refuses each with a ValidationException."""
    value = UNSTORABLE[name]
    status, answer = _send(server.port, _put(table, {**KEY, "v": value}))
    assert status == 400 and _code(answer) == "ValidationException", answer
    update = {
        "TableName": table.name,
        "Key": KEY,
        "UpdateExpression": "SET v = :v",
        "ExpressionAttributeValues": {":v": value},
    }
    status, answer = _send(server.port, json.dumps(update).encode(), "DynamoDB_20120810.UpdateItem")
    assert status == 400 and _code(answer) == "ValidationException", answer
    assert answer["message"].startswith("ExpressionAttributeValues contains invalid value: ")
    assert answer["message"].endswith(" for key :v")
    assert [i for i in table.scan_all() if i["PK"] != "ALIVE"] == []
    _still_serving(table, server)


def test_values_at_dynamodbs_limits_are_stored(server: Any, table: Any) -> None:
    for value in STORABLE:
        status, answer = _send(server.port, _put(table, {**KEY, "v": value}))
        assert status == 200, (value, answer)
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "B"})


def test_an_item_just_under_the_limit_is_stored(table: Any, server: Any) -> None:
    name_and_keys = len("blob") + len("PK") + 1 + len("SK") + 1
    table.put({"PK": "A", "SK": "B", "blob": "x" * (limits.MAX_ITEM_BYTES - name_and_keys)})
    assert len(table.get("A", "B")["blob"]) == limits.MAX_ITEM_BYTES - name_and_keys


def test_an_item_at_the_limit_as_dynamodb_counts_numbers_is_stored_and_one_byte_more_is_not(
    server: Any, table: Any
) -> None:
    """A 38-digit number is 20 bytes to DynamoDB (moto counted its 38 digits): an item of exactly 400 KB with one
    is stored, a byte more is refused, by a PutItem and by a BatchWriteItem put."""
    fixed = len("PK") + 1 + len("SK") + 1 + len("n") + 20 + len("blob")
    for extra, expected in ((0, 200), (1, 400)):
        item = {**KEY, "n": {"N": "1" * 38}, "blob": {"S": "x" * (limits.MAX_ITEM_BYTES - fixed + extra)}}
        assert limits.item_size(item) == limits.MAX_ITEM_BYTES + extra
        status, answer = _send(server.port, _put(table, item))
        assert status == expected, answer
        batch = {"RequestItems": {table.name: [{"PutRequest": {"Item": {**item, "SK": {"S": "C"}}}}]}}
        status, answer = _send(server.port, json.dumps(batch).encode(), "DynamoDB_20120810.BatchWriteItem")
        assert status == expected and not answer.get("UnprocessedItems"), answer
    assert {len(i["blob"]) for i in table.scan_all() if i["PK"] == "A"} == {limits.MAX_ITEM_BYTES - fixed}
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "B"})
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "C"})


def test_an_update_that_grows_an_item_past_the_limit_is_refused_and_leaves_it_as_it_was(
    server: Any, table: Any
) -> None:
    near = limits.MAX_ITEM_BYTES - 1000
    table.put({"PK": "A", "SK": "B", "blob": "x" * near})
    update = {
        "TableName": table.name,
        "Key": KEY,
        "UpdateExpression": "SET more = :more",
        "ExpressionAttributeValues": {":more": {"S": "y" * 2000}},
    }
    status, answer = _send(server.port, json.dumps(update).encode(), "DynamoDB_20120810.UpdateItem")
    assert status == 400 and "Item size" in answer["message"], answer
    assert table.get("A", "B") == {"PK": "A", "SK": "B", "blob": "x" * near}
    table.client.delete_item(TableName=table.name, Key={"PK": "A", "SK": "B"})
    _still_serving(table, server)


def test_an_oversize_body_is_refused_from_its_length_alone(server: Any, table: Any) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        head = (
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: DynamoDB_20120810.PutItem\r\n"
            f"Content-Length: {limits.MAX_BODY_BYTES + 1}\r\n\r\n"
        )
        sock.sendall(head.encode() + b"{")  # the body never comes: the answer must not wait for it
        answer = sock.recv(65536).decode()
    assert answer.startswith("HTTP/1.1 413") and "ValidationException" in answer
    _still_serving(table, server)


def test_a_request_that_arrives_in_pieces_is_answered_once_whole_and_the_next_one_after_it(
    server: Any, table: Any
) -> None:
    # urllib3 sends a head and its body in two sends; the server keeps the parsed head while the body arrives
    # (serve.py). Here: the head, half the body, the rest together with a whole second request.
    import socket
    import time

    def request(target: str, body: bytes) -> bytes:
        head = (
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: {target}\r\nAuthorization: {_AUTH}\r\n"
            f"Content-Type: application/x-amz-json-1.0\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    put = request("DynamoDB_20120810.PutItem", _put(table, {"PK": {"S": "PIECES"}, "SK": {"S": "A"}, "n": {"N": "7"}}))
    get_body = json.dumps({"TableName": table.name, "Key": {"PK": {"S": "PIECES"}, "SK": {"S": "A"}}}).encode()
    get = request("DynamoDB_20120810.GetItem", get_body)
    split = put.index(b"\r\n\r\n") + 4
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for piece in (put[:split], put[split : split + 10], put[split + 10 :] + get):
            sock.sendall(piece)
            time.sleep(0.05)  # each piece its own wake of the server's loop
        answers = b""
        while answers.count(b"HTTP/1.1 ") < 2 or not answers.rstrip().endswith(b"}"):
            answers += sock.recv(65536)
    first, second = answers.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200") and second.startswith(b"200"), answers
    assert b'"n": {"N": "7"}' in second
    _still_serving(table, server)


# -- the control endpoint ---------------------------------------------------------------------------------------


def _control(server: Any, body: Any, **headers: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", "/_lab/config", data, {"Content-Type": "text/plain", **headers})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _settings(server: Any) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/_lab/config")
    data = json.loads(conn.getresponse().read())
    conn.close()
    return {k: v for k, v in data.items() if k not in ("requests", "ttl_deleted")}


def test_control_refuses_cross_origin_wrong_host_no_token_and_bad_values(server: Any) -> None:
    before = _settings(server)
    token = {TOKEN_HEADER: server.lab_token}
    good_host = {"Host": f"127.0.0.1:{server.port}"}
    assert _control(server, {"latency_ms": 50}, Origin="https://evil.example", **good_host, **token) == 403
    assert _control(server, {"latency_ms": 50}, Host=f"evil.example:{server.port}", **token) == 403
    assert _control(server, {"latency_ms": 50}, Host="127.0.0.1:1", **token) == 403
    assert _control(server, {"latency_ms": 50}, **good_host) == 403  # a web page cannot know the token
    assert _control(server, {"latency_ms": 50}, **good_host, **{TOKEN_HEADER: "guess"}) == 403
    for bad in (
        b'{"latency_ms": Infinity}',
        b'{"latency_ms": NaN}',
        {"latency_ms": 1e12},  # threads asleep for days
        {"latency_ms": -1},
        {"throttle_share": 1.5},
        {"throttle_share": "lots"},
        {"ttl_interval_s": 0},
        {"throttle_code": "InternalServerError"},
        {"latency_ms": 5, "no_such_setting": 1},  # the good part is not applied either
        [1, 2],
    ):
        assert _control(server, bad, **good_host, **token) == 400, bad
    assert _control(server, b"x" * (1024 * 1024), **good_host, **token) == 413
    assert _settings(server) == before
    assert math.isfinite(before["latency_ms"])


def test_control_takes_a_good_change_from_the_lab(server: Any) -> None:
    assert server.configure(throttle_share=0.25)["throttle_share"] == 0.25
    assert server.configure(throttle_share=0)["throttle_share"] == 0.0


def test_empty_attribute_names_and_bad_table_names_are_refused_as_dynamodb_refuses_them(
    server: Any, table: Any
) -> None:
    # DynamoDB Local's words. The embedded server stored an attribute named "" (a GetItem then answered a flattened
    # item) and made a table called "h".
    for body in (_put(table, {**KEY, "": {"S": "x"}}), _put(table, {**KEY, "m": {"M": {"": {"S": "x"}}}})):
        status, answer = _send(server.port, body)
        assert (status, _code(answer), answer["message"]) == (400, "ValidationException", "Empty attribute name")
    update = {
        "TableName": table.name,
        "Key": KEY,
        "UpdateExpression": "SET #n = :v",
        "ExpressionAttributeNames": {"#n": ""},
        "ExpressionAttributeValues": {":v": {"S": "x"}},
    }
    status, answer = _send(server.port, json.dumps(update).encode(), "DynamoDB_20120810.UpdateItem")
    assert status == 400 and answer["message"].endswith("Empty attribute name for key #n"), answer
    for name in ("h", "no spaces", "x" * 256):
        create = {
            "TableName": name,
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        }
        status, answer = _send(server.port, json.dumps(create).encode(), "DynamoDB_20120810.CreateTable")
        assert status == 400 and answer["message"].startswith("Invalid table/index name."), (name, answer)
    _still_serving(table, server)
