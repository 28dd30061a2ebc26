"""Bodies no client should send: strings that are no valid Unicode, and bodies nested deeply."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from engine.server.control import TOKEN_HEADER
from tests.server.hostile.raw import KEY, _refused, _send, _still_serving

# -- strings that are no valid Unicode -----------------------------------------------------------------------


def _put_body(table: Any, item_json: str) -> bytes:
    return f'{{"TableName": "{table.name}", "Item": {item_json}}}'.encode()


LONE_SURROGATES = {
    "in the partition key": '{"PK": {"S": "\\ud800"}, "SK": {"S": "1"}}',
    "in the sort key": '{"PK": {"S": "SUR"}, "SK": {"S": "a\\udc00"}}',
    "in a value": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"S": "\\uDBFF"}}',
    "in a set": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"SS": ["a", "\\ud800b"]}}',
    "in an attribute name": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "\\ud800": {"S": "x"}}',
    "in a map's name": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "m": {"M": {"\\udfff": {"N": "1"}}}}',
    "a pair reversed": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"S": "\\ude00\\ud83d"}}',
}


@pytest.mark.parametrize("name", list(LONE_SURROGATES))
def test_a_lone_surrogate_is_refused_and_nothing_is_stored(name: str, server: Any, table: Any) -> None:
    _refused(_send(server.port, _put_body(table, LONE_SURROGATES[name]), "PutItem"), "SerializationException")
    # As raw UTF-8-encoded surrogate bytes (no valid UTF-8) too.
    raw = _put_body(table, LONE_SURROGATES[name].replace("\\ud800", "\\u00e9")).replace(b"\\u00e9", b"\xed\xa0\x80")
    if b"\xed" in raw:
        _refused(_send(server.port, raw, "PutItem"), "SerializationException")
    # In a UTF-16 body (json.loads takes one), escaped and as raw UTF-16 code units.
    utf16 = _put_body(table, LONE_SURROGATES[name]).decode("ascii").encode("utf-16-le")
    _refused(_send(server.port, utf16, "PutItem"), "SerializationException")
    unescaped = json.loads(_put_body(table, LONE_SURROGATES[name]))
    raw16 = json.dumps(unescaped, ensure_ascii=False).encode("utf-16-le", "surrogatepass")
    _refused(_send(server.port, raw16, "PutItem"), "SerializationException")
    update = {
        "TableName": table.name,
        "Key": {"PK": {"S": "SUR"}, "SK": {"S": "1"}},
        "UpdateExpression": "SET v = :v",
        "ExpressionAttributeValues": {":v": {"S": "x"}},
    }
    body = json.dumps(update).replace('"x"', '"\\ud800"').encode()
    _refused(_send(server.port, body, "UpdateItem"), "SerializationException")
    status, scanned = _send(server.port, {"TableName": table.name}, "Scan")
    assert status == 200 and all(item["PK"]["S"] != "SUR" for item in scanned["Items"]), scanned
    _still_serving(table, server)


def test_a_surrogate_pair_is_one_character_and_is_stored(server: Any, table: Any) -> None:
    item = '{"PK": {"S": "PAIR"}, "SK": {"S": "1"}, "v": {"S": "\\ud83d\\ude00"}}'
    assert _send(server.port, _put_body(table, item), "PutItem")[0] == 200
    status, body = _send(
        server.port, {"TableName": table.name, "Key": {"PK": {"S": "PAIR"}, "SK": {"S": "1"}}}, "GetItem"
    )
    assert status == 200 and body["Item"]["v"] == {"S": "\U0001f600"}, body
    assert table.get("PAIR", "1")["v"] == "\U0001f600"


# -- bodies nested deeply ----------------------------------------------------------------------------------


def _nested_list(depth: int) -> bytes:
    return b'{"L": [' * depth + b'{"S": "x"}' + b"]}" * depth


DEEP_BODIES = {
    "a legacy ScanFilter": (
        "Scan",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "ScanFilter": {{"v": {{"ComparisonOperator": "EQ", '
            f'"AttributeValueList": ['.encode()
            + _nested_list(d // 2)
            + b"]}}}"
        ),
    ),
    "a legacy Expected": (
        "PutItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Item": {{"PK": {{"S": "DEEP"}}, "SK": {{"S": "1"}}}}, '
            f'"Expected": {{"v": {{"Value": '.encode()
            + _nested_list(d // 2)
            + b"}}}"
        ),
    ),
    "an item's value": (
        "PutItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Item": {{"PK": {{"S": "DEEP"}}, "SK": {{"S": "1"}}, "v": '.encode()
            + _nested_list(d // 2)
            + b"}}"
        ),
    ),
    "a member the API does not know": (
        "GetItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Key": {json.dumps(KEY)}, "Bogus": '.encode() + b"[" * d + b"]" * d + b"}"
        ),
    ),
}


@pytest.mark.parametrize("where", list(DEEP_BODIES))
@pytest.mark.parametrize("depth", [900, 1600, 2000, 10_000])
def test_a_body_nested_far_past_any_request_is_refused(where: str, depth: int, server: Any, table: Any) -> None:
    op, body = DEEP_BODIES[where]
    status, answer = _send(server.port, body(table, depth), op)
    if where == "a member the API does not know" and status == 200:
        pass  # a member DynamoDB does not know is left alone, however deep, when the body parses
    else:
        _refused((status, answer), "SerializationException", "ValidationException")
    assert table.get("DEEP", "1") is None
    _still_serving(table, server)


@pytest.mark.parametrize("depth", [2_000, 30_000, 100_000])
def test_a_lab_config_body_nested_deeply_is_refused(depth: int, server: Any, table: Any) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {
            "Content-Type": "application/json",
            TOKEN_HEADER: server.lab_token,
            "Host": f"127.0.0.1:{server.port}",
        }
        conn.request("POST", "/_lab/config", b"[" * depth + b"]" * depth, headers)
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    if 2 * depth <= 65536:
        assert response.status == 400 and "nests too deeply" in answer["error"], answer
    else:  # past the control endpoint's 64 KB, refused from its length before it is parsed
        assert response.status == 413 and "at most 65536 bytes" in answer["error"], answer
    _still_serving(table, server)
