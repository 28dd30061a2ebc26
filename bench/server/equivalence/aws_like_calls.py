"""The hot calls on a table of the aws-like profile, where the model wraps moto's answer."""

from __future__ import annotations

from typing import Any


def aws_like_calls(call: Any, k: Any) -> list[tuple[str, dict[str, Any]]]:
    """The hot calls on a table of the aws-like profile (SIMULATED; no network time, no random draw: strongly
    consistent reads only; not BatchGetItem, which the model reads as eventual whatever its tables ask), where
    the model wraps moto's answer."""
    a = "eqaws"
    spec = "aws-like latency_ms=0 latency_p99_ms=0 commit_ms=0"
    one = {":one": {"N": "1"}}
    return [
        call(
            "create_table",
            TableName=a,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            Tags=[{"Key": "ddblab:profile", "Value": spec}],
        ),
        call("put_item", TableName=a, Item={**k("a"), "n": {"N": "1"}}),
        call("put_item", TableName=a, Item=k("a"), ConditionExpression="attribute_not_exists(pk)"),
        call("update_item", TableName=a, Key=k("a"), UpdateExpression="ADD n :one", ExpressionAttributeValues=one),
        call("get_item", TableName=a, Key=k("a"), ConsistentRead=True),
        call(
            "query",
            TableName=a,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "a"}},
            ConsistentRead=True,
        ),
        call("transact_write_items", TransactItems=[{"Put": {"TableName": a, "Item": k("t")}}]),
        call("transact_get_items", TransactItems=[{"Get": {"TableName": a, "Key": k("t")}}]),
        call("batch_write_item", RequestItems={a: [{"PutRequest": {"Item": k("w")}}]}),
        call("delete_item", TableName=a, Key=k("a"), ReturnValues="ALL_OLD"),
        call("delete_table", TableName=a),
    ]
