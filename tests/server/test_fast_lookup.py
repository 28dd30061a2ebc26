"""The server's shortcuts give what the code they stand in for gives: moto's backend lookup (also after a
reset of moto's backends), DynamoType's hash and equality, a number's size, and the JSON parse of a body."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

import pytest
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType

from engine.server.faithful import app, limits, mistakes
from engine.server.faithful.attribute_values import BadValue, _number, _number_size, value_size
from engine.server.fast import lookup as fast_lookup
from engine.server.moto_store import KeyValue, region_backend


def _moto_hash(value: DynamoType) -> int:
    return hash((value.type, value.cast_value))


def _moto_eq(a: DynamoType, b: Any) -> bool:
    return bool(a.type == b.type and a.cast_value == b.cast_value)


VALUES: list[dict[str, Any]] = [
    {"S": "a"},
    {"S": ""},
    {"S": "1"},
    {"N": "1"},
    {"N": "1.0"},
    {"N": "01"},
    {"B": b"a"},
    {"B": "YQ=="},
    {"BOOL": True},
    {"NULL": True},
    {"L": [{"S": "a"}]},
    {"M": {"a": {"N": "1"}}},
]


def test_dynamo_types_hash_and_compare_as_motos_do() -> None:
    fast_lookup.install()
    values = [DynamoType(v) for v in VALUES] + [DynamoType(dict(v)) for v in VALUES]
    values += [KeyValue("S", "a", "a"), KeyValue("N", "1", Decimal("1"))]
    for a in values:
        if a.type not in ("L", "M"):  # moto's cast value of a list or map is unhashable, in both
            assert hash(a) == _moto_hash(a), a
        for b in values:
            assert (a == b) == _moto_eq(a, b), (a, b)
    with pytest.raises(AttributeError):  # as moto's: no type to compare
        _ = DynamoType({"S": "a"}) == "a"


def test_the_backend_read_from_the_dicts_is_motos_and_a_reset_leaves_none_stale() -> None:
    account = "000000000777"  # an account of its own: other tests' tables in this process stay
    first = region_backend(account, "eu-west-3")
    assert first is dynamodb_backends[account]["eu-west-3"]
    assert region_backend(account, "eu-west-3") is first
    dict.pop(dynamodb_backends, account)  # what BackendDict.reset does to every account (backend.clear())
    fresh = region_backend(account, "eu-west-3")
    assert fresh is dynamodb_backends[account]["eu-west-3"]
    assert fresh is not first


def test_a_plain_integers_size_is_the_one_the_full_check_gives() -> None:
    rnd = random.Random(7)
    texts = ["0", "00", "", "7", "100", "007", "0" * 50, "1" * 38, "1" * 39, "1" + "0" * 130, "²", "١"]
    texts += ["".join(rnd.choice("000123456789") for _ in range(rnd.randint(0, 45))) for _ in range(3000)]
    for text in texts:
        try:
            expected: Any = _number_size(_number(text))
        except BadValue as bad:
            expected = bad.message
        try:
            got: Any = value_size({"N": text})
        except BadValue as bad:
            got = bad.message
        assert got == expected, text


@pytest.mark.parametrize(
    "body",
    [
        b'{"TableName": "t"}',
        '{"TableName": "\u00e9"}'.encode(),
        b'{"a": "\xed\xa0\x80"}',  # a lone surrogate in UTF-8: json.loads takes it, DynamoDB does not
        b"\xef\xbb\xbf{}",
        '{"a": 1}'.encode("utf-16"),
        b"[1]",
        b" {}",
        b"{} x",
        b'{"a": "\xff"}',
        b"",
    ],
)
def test_a_body_parses_as_json_loads_parses_it(body: bytes) -> None:
    try:
        expected: Any = json.loads(body) if body else {}
    except ValueError:
        expected = "refused"
    if expected != "refused" and mistakes.lone_surrogate(expected):
        expected = "refused"  # a string that is no valid Unicode: refused as DynamoDB refuses it
    try:
        got: Any = app._parse(body)
    except limits.Refused as refused:
        assert refused.code == "SerializationException"
        got = "refused"
    assert got == expected


def test_a_request_without_expressions_is_still_checked_whole() -> None:
    with pytest.raises(limits.Refused, match="TableName must be a string"):
        limits.check("PutItem", {"TableName": 1, "Item": {"pk": {"S": "a"}}})
    with pytest.raises(limits.Refused, match="IndexName must be a string"):
        limits.check("Query", {"TableName": "t", "IndexName": 2})
    with pytest.raises(limits.Refused, match="exactly one datatype"):
        limits.check("GetItem", {"TableName": "t", "Key": {"pk": {"S": "a", "N": "1"}}})
    with pytest.raises(limits.Refused, match="ConditionExpression must be a string"):
        limits.check("PutItem", {"TableName": "t", "Item": {}, "ConditionExpression": 3})
    with pytest.raises(limits.Refused, match="unused in expressions"):
        limits.check("PutItem", {"TableName": "t", "Item": {}, "ExpressionAttributeValues": {":v": {"N": "1"}}})
    limits.check("PutItem", {"TableName": "t", "Item": {"pk": {"S": "a"}, "n": {"N": "12"}}})
