"""The short way's refusals, as botocore calls of the corpus."""

from __future__ import annotations

from typing import Any


def short_way_errors(call: Any, put: Any, update: Any, k: Any, t: str) -> list[tuple[str, dict[str, Any]]]:
    """Refusals of the calls the short way answers (engine/server/fast/short_way.py), one of each kind."""
    one = {":one": {"N": "1"}}
    check = {"ConditionCheck": {"TableName": t, "Key": k("a"), "ConditionExpression": "attribute_not_exists(pk)"}}
    return [
        call("get_item", TableName="missing", Key=k("a")),
        call(
            "update_item", TableName="missing", Key=k("a"), UpdateExpression="ADD n :one", ExpressionAttributeValues=one
        ),
        call("delete_item", TableName="missing", Key=k("a")),
        put(k("rv"), ReturnValues="ALL_NEW"),
        put(k("rc"), ReturnConsumedCapacity="TOTAL"),
        put(k("rc"), ReturnConsumedCapacity="BOGUS"),
        update(k("a"), "ADD n :one", one, ReturnValues="BOGUS"),
        call(
            "delete_item",
            TableName=t,
            Key=k("a"),
            ConditionExpression="n = :v",
            ExpressionAttributeValues={":v": one[":one"]},
        ),
        call("get_item", TableName=t, Key=k("a"), ProjectionExpression="#x"),
        call("get_item", TableName=t, Key=k("a"), AttributesToGet=["n"], ProjectionExpression="n"),
        call(
            "query", TableName="missing", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}
        ),
        call(
            "query",
            TableName=t,
            IndexName="nosuch",
            KeyConditionExpression="g = :p",
            ExpressionAttributeValues={":p": {"S": "x"}},
            ReturnConsumedCapacity="INDEXES",
        ),
        call("transact_write_items", TransactItems=[check]),
        call("transact_write_items", TransactItems=[{"Put": {"TableName": "missing", "Item": k("a")}}]),
        call("transact_get_items", TransactItems=[{"Get": {"TableName": "missing", "Key": k("a")}}]),
        call("batch_get_item", RequestItems={"missing": {"Keys": [k("a")]}}),
        call(
            "batch_write_item", RequestItems={t: [{"PutRequest": {"Item": k("d")}}, {"PutRequest": {"Item": k("d")}}]}
        ),
        call("batch_write_item", RequestItems={t: [{"DeleteRequest": {"Key": k(f"b{i}")}} for i in range(2)]}),
    ]
