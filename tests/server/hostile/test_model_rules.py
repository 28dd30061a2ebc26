"""Requests DynamoDB's model or rules refuse: each refused with nothing applied."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.hostile.raw import KEY, _refused, _send, _still_serving

# -- requests DynamoDB's model or rules refuse ------------------------------------------------------------


def test_a_condition_check_without_its_condition_is_refused_and_nothing_is_applied(server: Any, table: Any) -> None:
    put = {"Put": {"TableName": table.name, "Item": {"PK": {"S": "TX"}, "SK": {"S": "1"}}}}
    for check in (
        {"TableName": table.name, "Key": KEY},
        {"TableName": table.name, "Key": KEY, "ConditionExpression": None},
    ):
        answer = _send(server.port, {"TransactItems": [put, {"ConditionCheck": check}]}, "TransactWriteItems")
        message = _refused(answer, "ValidationException")
        assert "transactItems.2.member.conditionCheck.conditionExpression" in message, message
    update = {"Update": {"TableName": table.name, "Key": KEY}}  # no UpdateExpression: the model requires one
    message = _refused(_send(server.port, {"TransactItems": [update]}, "TransactWriteItems"), "ValidationException")
    assert "transactItems.1.member.update.updateExpression" in message, message
    assert table.get("TX", "1") is None
    _still_serving(table, server)


@pytest.mark.parametrize(
    "entry",
    [
        {"PutRequest": {"Item": {"PK": {"S": "BW"}, "SK": {"S": "1"}}}, "DeleteRequest": {"Key": KEY}},
        {},
        {"PutRequest": None, "DeleteRequest": None},
        {"PutRequest": {}},
    ],
)
def test_a_batch_write_entry_must_be_one_put_or_one_delete(entry: dict[str, Any], server: Any, table: Any) -> None:
    good = {"PutRequest": {"Item": {"PK": {"S": "BW"}, "SK": {"S": "2"}}}}
    answer = _send(server.port, {"RequestItems": {table.name: [good, entry]}}, "BatchWriteItem")
    _refused(answer, "ValidationException")
    assert table.get("BW", "1") is None and table.get("BW", "2") is None
    _still_serving(table, server)


LARGEST = "9.9999999999999999999999999999999999999E+125"
OUT_OF_RANGE = {
    "ADD past the largest": ("ADD big :v", {":v": {"N": "1E+125"}}, "overflow"),
    "ADD past the most negative": ("ADD neg :v", {":v": {"N": "-1E+125"}}, "overflow"),
    "an integer ADD past the largest": ("ADD whole :v", {":v": {"N": "1" + "0" * 88}}, "overflow"),
    "SET arithmetic past the largest": ("SET big = big + :v", {":v": {"N": "1E+125"}}, "overflow"),
    "SET subtraction past the most negative": ("SET neg = neg - :v", {":v": {"N": "1E+125"}}, "overflow"),
    "SET arithmetic under the smallest": ("SET tiny = tiny - :v", {":v": {"N": "1E-130"}}, "underflow"),
    "a refused ADD after a SET": ("SET s = :s ADD big :v", {":s": {"S": "changed"}, ":v": {"N": "1E+125"}}, "overflow"),
    "a refused ADD after changes inside a map and a set": (
        "SET m.a = :s ADD tags :t, big :v",
        {":s": {"S": "changed"}, ":t": {"SS": ["new"]}, ":v": {"N": "1E+125"}},
        "overflow",
    ),
    "a refused SET after an ADD": (
        "ADD n :one SET big = big + :v",
        {":one": {"N": "1"}, ":v": {"N": "1E+125"}},
        "overflow",
    ),
}


@pytest.mark.parametrize("name", list(OUT_OF_RANGE))
def test_a_sum_outside_dynamodbs_number_range_is_refused_and_changes_nothing(
    name: str, server: Any, table: Any
) -> None:
    key = {"PK": {"S": "NUM"}, "SK": {"S": "1"}}
    item = {
        **key,
        "big": {"N": LARGEST},
        "neg": {"N": "-" + LARGEST},
        "whole": {"N": "9" * 38 + "0" * 88},  # the largest integer with 38 significant digits, 126 digits long
        "tiny": {"N": "1.1E-130"},
        "s": {"S": "text"},
        "n": {"N": "1"},
        "m": {"M": {"a": {"S": "kept"}}},
        "tags": {"SS": ["old"]},
    }
    assert _send(server.port, {"TableName": table.name, "Item": item}, "PutItem")[0] == 200
    expression, values, kind = OUT_OF_RANGE[name]
    for returned in ("NONE", "ALL_NEW"):
        update = {
            "TableName": table.name,
            "Key": key,
            "UpdateExpression": expression,
            "ExpressionAttributeValues": values,
            "ReturnValues": returned,
        }
        message = _refused(_send(server.port, update, "UpdateItem"), "ValidationException")
        assert message.startswith(f"Number {kind}. Attempting to store a number with magnitude"), message
    status, body = _send(server.port, {"TableName": table.name, "Key": key}, "GetItem")
    assert status == 200 and body["Item"] == item, body  # not even the other action of the expression
    _still_serving(table, server)


def test_sums_at_the_edge_of_the_range_are_stored(server: Any, table: Any) -> None:
    key = {"PK": {"S": "EDGE"}, "SK": {"S": "1"}}
    item = {**key, "big": {"N": "9.9E+125"}, "whole": {"N": "9" * 37 + "8" + "0" * 88}}
    assert _send(server.port, {"TableName": table.name, "Item": item}, "PutItem")[0] == 200
    update = {
        "TableName": table.name,
        "Key": key,
        "UpdateExpression": "ADD big :small, whole :step",
        "ExpressionAttributeValues": {":small": {"N": "9E+123"}, ":step": {"N": "1" + "0" * 88}},
        "ReturnValues": "ALL_NEW",
    }
    status, body = _send(server.port, update, "UpdateItem")
    assert status == 200, body
    assert body["Attributes"]["whole"] == {"N": "9" * 38 + "0" * 88}
    assert float(body["Attributes"]["big"]["N"]) == 9.99e125
    _still_serving(table, server)
