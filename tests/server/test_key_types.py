"""A key attribute of another type than its table's is a client mistake: DynamoDB answers ValidationException,
never a 500 and never "no such item", for every request that names an item, in both profiles."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench import shared as bench_client
from engine.backends.backend import Backend
from engine.server import profile as profiles

WRONG = {
    "map": {"M": {"x": {"S": "a"}}},
    "list": {"L": [{"S": "a"}]},
    "string set": {"SS": ["a"]},
    "number for a string": {"N": "1"},
    "binary for a string": {"B": b"a"},
    "bool": {"BOOL": True},
    "null": {"NULL": True},
}


@pytest.fixture(params=["exact", "aws-like"])
def table(request: pytest.FixtureRequest, embedded: Backend) -> Iterator[tuple[Any, str]]:
    client = bench_client.client(str(embedded.endpoint_url))  # the wire's types: Backend.client would serialize them
    name = f"keytypes-{request.param}"
    tags = [] if request.param == "exact" else [{"Key": profiles.PROFILE_TAG, "Value": "aws-like"}]
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        **({"Tags": tags} if tags else {}),
    )
    yield client, name
    client.delete_table(TableName=name)


def requests(client: Any, t: str, key: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    return {
        "GetItem": lambda: client.get_item(TableName=t, Key=key),
        "PutItem": lambda: client.put_item(TableName=t, Item=key),
        "DeleteItem": lambda: client.delete_item(TableName=t, Key=key),
        "UpdateItem": lambda: client.update_item(
            TableName=t, Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "1"}}
        ),
        "BatchGetItem": lambda: client.batch_get_item(RequestItems={t: {"Keys": [key]}}),
        "BatchWriteItem": lambda: client.batch_write_item(RequestItems={t: [{"DeleteRequest": {"Key": key}}]}),
        "TransactGetItems": lambda: client.transact_get_items(TransactItems=[{"Get": {"TableName": t, "Key": key}}]),
        "TransactWriteItems": lambda: client.transact_write_items(
            TransactItems=[{"Put": {"TableName": t, "Item": key}}, {"Delete": {"TableName": t, "Key": key}}]
        ),
    }


@pytest.mark.parametrize("kind", list(WRONG))
def test_a_key_of_the_wrong_type_is_a_validation_error_for_every_request(table: tuple[Any, str], kind: str) -> None:
    client, name = table
    for op, call in requests(client, name, {"pk": WRONG[kind], "sk": {"S": "s"}}).items():
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == "ValidationException", (op, refused.value.response)
    client.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"S": "s"}})  # the server answers on
    read = client.get_item(TableName=name, Key={"pk": {"S": "a"}, "sk": {"S": "s"}}, ConsistentRead=True)
    assert read["Item"]["pk"] == {"S": "a"}


def test_a_query_whose_key_condition_has_a_value_of_the_wrong_type_is_refused(table: tuple[Any, str]) -> None:
    # moto answered no items (or a parser error for a sort key); the messages are DynamoDB Local's, word for word.
    client, name = table
    client.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"S": "s1"}})
    mismatch = "One or more parameter values were invalid: Condition parameter type does not match schema type"

    def refused(**query: Any) -> str:
        with pytest.raises(ClientError) as e:
            client.query(TableName=name, **query)
        assert e.value.response["Error"]["Code"] == "ValidationException", e.value.response
        return str(e.value.response["Error"]["Message"])

    for wrong in WRONG.values():
        assert refused(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": wrong}) == mismatch
    a = {":p": {"S": "a"}}
    assert refused(KeyConditionExpression="pk = :p AND sk > :s", ExpressionAttributeValues={**a, ":s": {"N": "1"}}) == (
        mismatch
    )
    between = refused(
        KeyConditionExpression="pk = :p AND sk BETWEEN :l AND :h",
        ExpressionAttributeValues={**a, ":l": {"S": "s0"}, ":h": {"N": "9"}},
    )
    assert between.startswith("Invalid KeyConditionExpression: The BETWEEN operator requires same data type")
    assert refused(
        KeyConditionExpression="pk = :p AND begins_with(sk, :s)", ExpressionAttributeValues={**a, ":s": {"N": "1"}}
    ) == (
        "Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
        "operator or function: begins_with, operand type: N"
    )
    legacy = {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}}
    assert refused(KeyConditions=legacy) == mismatch
    found = client.query(
        TableName=name,
        KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
        ExpressionAttributeValues={**a, ":s": {"S": "s"}},
        ConsistentRead=True,  # aws-like: an eventually consistent read right after the put may be stale
    )
    assert [i["sk"] for i in found["Items"]] == [{"S": "s1"}]  # the right types still find the item


def test_an_index_key_of_the_wrong_type_is_refused_and_the_index_still_scans(embedded: Backend) -> None:
    client = bench_client.client(str(embedded.endpoint_url))  # the wire's types: Backend.client would serialize them
    name = "index-key-types"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        client.put_item(TableName=name, Item={"pk": {"S": "a"}, "g": {"S": "x"}})
        for wrong in WRONG.values():
            with pytest.raises(ClientError) as refused:
                client.put_item(TableName=name, Item={"pk": {"S": "b"}, "g": wrong})
            assert refused.value.response["Error"]["Code"] == "ValidationException"
            assert "Type mismatch for Index Key g" in refused.value.response["Error"]["Message"]
        assert [i["pk"] for i in client.scan(TableName=name, IndexName="by-g")["Items"]] == [{"S": "a"}]
        with pytest.raises(ClientError) as refused:  # the index's key type, not the table's
            client.query(
                TableName=name,
                IndexName="by-g",
                KeyConditionExpression="g = :g",
                ExpressionAttributeValues={":g": {"N": "1"}},
            )
        assert "Condition parameter type does not match schema type" in refused.value.response["Error"]["Message"]
        # A number written with an exponent is a number: sums with it are DynamoDB's, not a 500.
        update = {"UpdateExpression": "ADD n :a", "ExpressionAttributeValues": {":a": {"N": "1e3"}}}
        client.update_item(TableName=name, Key={"pk": {"S": "a"}}, **update)
        after = client.update_item(TableName=name, Key={"pk": {"S": "a"}}, ReturnValues="UPDATED_NEW", **update)
        assert after["Attributes"]["n"] == {"N": "2000"}
        minus = {"UpdateExpression": "SET n = n - :a", "ExpressionAttributeValues": {":a": {"N": "2.5E1"}}}
        after = client.update_item(TableName=name, Key={"pk": {"S": "a"}}, ReturnValues="UPDATED_NEW", **minus)
        assert after["Attributes"]["n"] == {"N": "1975"}
    finally:
        client.delete_table(TableName=name)
