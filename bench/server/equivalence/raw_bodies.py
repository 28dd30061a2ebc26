"""Requests written by hand, as (label, path, X-Amz-Target operation, body): bodies botocore would not send."""

from __future__ import annotations

import json
from typing import Any


def odd_bodies(t: str) -> list[tuple[str, str, str, bytes]]:
    """Bodies moto reads otherwise than json.loads does (as a query string, as UTF-8 only) or takes in part (its
    parser drops members it does not know and null ones): the short way must leave each to moto, or agree."""
    key = '"Key": {"pk": {"S": "a"}, "sk": {"S": "1"}}'
    get = f'{{"TableName": "{t}", {key}}}'
    return [
        (
            "body with &",
            "/",
            "PutItem",
            f'{{"TableName": "{t}", "Item": {{"pk": {{"S": "&Action=ListTables"}}}}}}'.encode(),
        ),
        (
            "unknown and null members",
            "/",
            "GetItem",
            f'{{"TableName": "{t}", {key}, "Bogus": 1, "Limit": null}}'.encode(),
        ),
        ("leading space", "/", "GetItem", b"  " + get.encode()),
        ("UTF-8 BOM", "/", "GetItem", b"\xef\xbb\xbf" + get.encode()),
        ("UTF-16", "/", "GetItem", get.encode("utf-16-le")),
        ("a list", "/", "GetItem", b"[1]"),
        ("a null key value", "/", "GetItem", f'{{"TableName": "{t}", "Key": {{"pk": null}}}}'.encode()),
    ]


def hostile_bodies(t: str) -> list[tuple[str, str, str, bytes]]:
    """Client mistakes that crashed moto or were taken where DynamoDB refuses them (tests/server/
    hostile/ has each kind): both paths must answer each with the same 400."""
    key = {"pk": {"S": "h"}, "sk": {"S": "1"}}
    big = {":v": {"N": "9.9E+125"}}

    def body(**params: Any) -> bytes:
        return json.dumps({"TableName": t, **params}).encode()

    deep = b'{"L": [' * 500 + b'{"S": "x"}' + b"]}" * 500
    return [
        (
            "hostile key condition",
            "/",
            "Query",
            body(KeyConditionExpression="pk == :p", ExpressionAttributeValues={":p": {"S": "h"}}),
        ),
        ("hostile projection", "/", "GetItem", body(Key=key, ProjectionExpression="n,")),
        ("hostile surrogate", "/", "PutItem", body(Item={**key, "v": {"S": "\ud800"}})),
        (
            "hostile deep filter",
            "/",
            "Scan",
            f'{{"TableName": "{t}", "ScanFilter": {{"a": {{"ComparisonOperator": "EQ", "AttributeValueList": ['.encode()
            + deep
            + b"]}}}",
        ),
        (
            "hostile put for overflow",
            "/",
            "PutItem",
            body(Item={**key, "n": {"N": "9.9E+125"}, "i": {"N": "9" * 38 + "0" * 88}}),
        ),
        (
            "hostile ADD overflow",
            "/",
            "UpdateItem",
            body(Key=key, UpdateExpression="SET a = :v ADD n :v", ExpressionAttributeValues=big),
        ),
        (
            "hostile integer ADD overflow",
            "/",
            "UpdateItem",
            body(Key=key, UpdateExpression="ADD i :one", ExpressionAttributeValues={":one": {"N": "1" + "0" * 88}}),
        ),
        ("hostile after overflow", "/", "GetItem", body(Key=key)),
        (
            "hostile condition check",
            "/",
            "TransactWriteItems",
            json.dumps({"TransactItems": [{"ConditionCheck": {"TableName": t, "Key": key}}]}).encode(),
        ),
        (
            "hostile batch put and delete",
            "/",
            "BatchWriteItem",
            json.dumps({"RequestItems": {t: [{"PutRequest": {"Item": key}, "DeleteRequest": {"Key": key}}]}}).encode(),
        ),
    ]


def other_account() -> list[tuple[str, str, str, bytes]]:
    """Calls in another account (moto's X-Moto-Account-Id header), where a table of the same name as another
    account's is another table: the direct answers (direct_item.py) find the account as moto does."""
    table = '"TableName": "eqacct"'
    key = '"Key": {"pk": {"S": "a"}}'
    return [
        ("account get, no table", "/", "GetItem", f"{{{table}, {key}}}".encode()),
        (
            "account create_table",
            "/",
            "CreateTable",
            f'{{{table}, "BillingMode": "PAY_PER_REQUEST", "KeySchema": [{{"AttributeName": "pk", "KeyType": "HASH"}}], '
            '"AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}'.encode(),
        ),
        ("account put", "/", "PutItem", f'{{{table}, "Item": {{"pk": {{"S": "a"}}, "n": {{"N": "1"}}}}}}'.encode()),
        (
            "account add",
            "/",
            "UpdateItem",
            f'{{{table}, {key}, "UpdateExpression": "ADD n :one", '
            '"ExpressionAttributeValues": {":one": {"N": "2"}}}'.encode(),
        ),
        ("account get", "/", "GetItem", f"{{{table}, {key}}}".encode()),
        ("account list_tables", "/", "ListTables", b"{}"),
    ]
