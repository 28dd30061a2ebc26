"""UpdateItem with ReturnValues UPDATED_NEW / UPDATED_OLD answers the paths the update names, whether or not their
value changed: an invoice counter that ADDs 0, or a lease renewed by its own owner, still reads its value back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench import shared as bench_client
from engine.backends.backend import Backend
from engine.server.faithful.moto_fixes.updated_values import project


@pytest.fixture
def table(embedded: Backend) -> Iterator[tuple[Any, str]]:
    client = bench_client.client(str(embedded.endpoint_url))  # the wire's types: Backend.client would serialize them
    name = "updated-values"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(
        TableName=name,
        Item={
            "pk": {"S": "a"},
            "n": {"N": "5"},
            "owner": {"S": "me"},
            "m": {"M": {"a": {"N": "1"}, "keep": {"S": "k"}}},
            "l": {"L": [{"M": {"x": {"S": "x0"}, "y": {"S": "y0"}}}, {"S": "l1"}, {"S": "l2"}]},
        },
    )
    yield client, name
    client.delete_table(TableName=name)


def update(client: Any, name: str, expression: str, returns: str, **values: Any) -> dict[str, Any] | None:
    extra = {"ExpressionAttributeValues": {f":{k}": v for k, v in values.items()}} if values else {}
    answer = client.update_item(
        TableName=name, Key={"pk": {"S": "a"}}, UpdateExpression=expression, ReturnValues=returns, **extra
    )
    attributes: dict[str, Any] | None = answer.get("Attributes")
    return attributes


def test_an_attribute_set_to_the_value_it_had_is_still_returned(table: tuple[Any, str]) -> None:
    client, name = table
    assert update(client, name, "ADD n :z", "UPDATED_NEW", z={"N": "0"}) == {"n": {"N": "5"}}
    renewed = client.update_item(
        TableName=name,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET #o = :me ADD n :one",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":me": {"S": "me"}, ":one": {"N": "1"}},
        ReturnValues="UPDATED_OLD",
    )
    assert renewed["Attributes"] == {"owner": {"S": "me"}, "n": {"N": "5"}}


def test_a_nested_update_answers_only_its_fragment(table: tuple[Any, str]) -> None:
    client, name = table
    assert update(client, name, "SET m.a = :v", "UPDATED_NEW", v={"N": "2"}) == {"m": {"M": {"a": {"N": "2"}}}}
    assert update(client, name, "SET m.a = :v", "UPDATED_OLD", v={"N": "3"}) == {"m": {"M": {"a": {"N": "2"}}}}
    assert update(client, name, "SET l[0].y = :v, l[2] = :w", "UPDATED_NEW", v={"S": "Y"}, w={"S": "L2"}) == {
        "l": {"L": [{"M": {"y": {"S": "Y"}}}, {"S": "L2"}]}
    }


def test_nothing_to_answer_means_no_attributes(table: tuple[Any, str]) -> None:
    client, name = table
    assert update(client, name, "REMOVE m", "UPDATED_NEW") is None  # removed: nothing as it is after
    assert update(client, name, "REMOVE n", "UPDATED_OLD") == {"n": {"N": "5"}}  # ...but as it was before
    assert update(client, name, "SET fresh = :v", "UPDATED_OLD", v={"S": "f"}) is None  # it was not there
    assert update(client, name, "SET l[9] = :v", "UPDATED_NEW", v={"S": "end"}) is None  # appended at index 3


def test_an_upsert_answers_the_updated_attributes_without_the_key(table: tuple[Any, str]) -> None:
    client, name = table
    created = client.update_item(
        TableName=name,
        Key={"pk": {"S": "new"}},
        UpdateExpression="ADD invoice :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    assert created["Attributes"] == {"invoice": {"N": "1"}}
    legacy = client.update_item(
        TableName=name,
        Key={"pk": {"S": "new"}},
        AttributeUpdates={"invoice": {"Action": "ADD", "Value": {"N": "0"}}},
        ReturnValues="UPDATED_NEW",
    )
    assert legacy["Attributes"] == {"invoice": {"N": "1"}}


def test_a_projection_keeps_list_elements_in_index_order() -> None:
    item = {"l": {"L": [{"S": "0"}, {"S": "1"}, {"S": "2"}]}, "m": {"M": {"b": {"N": "1"}}}}
    assert project(item, (("l", 2), ("l", 0), ("m", "b"), ("m", "missing"), ("gone",))) == {
        "l": {"L": [{"S": "0"}, {"S": "2"}]},
        "m": {"M": {"b": {"N": "1"}}},
    }
