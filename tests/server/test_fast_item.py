"""PutItem and GetItem of plain items (fast_item.py) keep DynamoDB's semantics: a put replaces the whole item, a
failed condition changes nothing, and an item of other types next to plain ones reads back as it was written.
(Their bytes against moto's own: the equivalence corpus, tests/server/test_fastpath.py.)"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table


@pytest.fixture
def table(embedded: Backend):
    client = embedded.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, "fast-item-test", TableSpec())
    yield table
    drop_table(table)


def test_a_plain_put_replaces_the_whole_item_and_a_failed_condition_changes_nothing(table: Any) -> None:
    table.put({"PK": "doc", "SK": "a", "version": 1, "owner": "ann", "draft": True})
    table.put({"PK": "doc", "SK": "a", "version": 2, "title": "é✓"})
    assert table.get("doc", "a") == {"PK": "doc", "SK": "a", "version": 2, "title": "é✓"}

    with pytest.raises(ClientError) as refused:
        table.client.put_item(
            TableName=table.name,
            Item={"PK": "doc", "SK": "a", "version": 9},
            ConditionExpression="attribute_not_exists(PK) OR #v = :v",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":v": 1},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert refused.value.response["Item"]["version"] == {"N": "2"}
    assert table.get("doc", "a") == {"PK": "doc", "SK": "a", "version": 2, "title": "é✓"}


def test_items_of_sets_maps_and_long_numbers_read_back_as_written(table: Any) -> None:
    items: list[dict[str, Any]] = [
        {"PK": "t", "SK": "plain", "n": Decimal("12345678901234567890123456789012345678"), "ok": False},
        {"PK": "t", "SK": "set", "tags": {"b", "a"}, "n": Decimal("-0.5")},
        {"PK": "t", "SK": "map", "m": {"x": Decimal(1), "l": ["q", None]}, "b": b"\x00\xff"},
    ]
    for item in items:
        table.put(item)
    for item in items:
        assert table.get("t", item["SK"]) == item
    assert table.get("t", "none") is None


def test_one_condition_text_is_judged_with_each_requests_own_names(table: Any) -> None:
    # Parsed conditions are kept per (text, names, value names): "#a = :v" with #a naming another attribute is
    # another condition, whatever the order the names come in.
    table.put({"PK": "doc", "SK": "n", "version": 1, "label": "x"})

    def put_if(names: dict[str, str], value: Any) -> bool:
        try:
            table.client.put_item(
                TableName=table.name,
                Item={"PK": "doc", "SK": "n", "version": 1, "label": "x"},
                ConditionExpression="#a = :v AND attribute_exists(#b)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":v": value},
            )
        except ClientError:
            return False
        return True

    assert put_if({"#a": "version", "#b": "label"}, 1)
    assert not put_if({"#a": "label", "#b": "version"}, 1)
    assert put_if({"#b": "version", "#a": "label"}, "x")
    assert not put_if({"#a": "version", "#b": "nosuch"}, 1)
