"""The fast path (fastpath.py: moto's handler without Flask, moto's repeated work cached) answers every request
with the bytes moto's own Flask app would, and its caches never carry one request's values into another."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.server_equivalence import equivalence
from engine.backend import Backend, RetryPolicy
from engine.server import fastpath
from engine.tables import TableSpec, drop_table, open_table


@pytest.mark.skipif(not fastpath.verified(), reason="the fast path is off with this moto release")
def test_fast_path_answers_with_the_bytes_of_plain_moto() -> None:
    # Successes and refusals over many operations, replayed on a fast server and on moto's Flask app.
    assert equivalence() == []


@pytest.fixture
def table(embedded: Backend):
    client = embedded.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, "fastpath-test", TableSpec())
    yield table
    drop_table(table)


def _put_if_version(table: Any, version: int, expected: int) -> bool:
    try:
        table.client.put_item(
            TableName=table.name,
            Item={"PK": "doc", "SK": "v", "version": version},
            ConditionExpression="version = :v",
            ExpressionAttributeValues={":v": expected},
        )
    except ClientError as error:
        assert error.response["Error"]["Code"] == "ConditionalCheckFailedException"
        return False
    return True


def test_one_condition_text_with_other_values_is_judged_on_its_own_values(table: Any) -> None:
    # The parsed condition is cached per (expression, names, values): the same text with another value
    # must be judged against that value, every time, in any order.
    table.put({"PK": "doc", "SK": "v", "version": 1})
    assert _put_if_version(table, 2, expected=1)
    assert not _put_if_version(table, 3, expected=1)  # the cached "version = 1" no longer holds
    assert _put_if_version(table, 3, expected=2)
    assert not _put_if_version(table, 4, expected=2)
    assert not _put_if_version(table, 9, expected=1)
    assert table.get("doc", "v") == {"PK": "doc", "SK": "v", "version": 3}


def test_one_update_text_with_other_values_adds_its_own_values(table: Any) -> None:
    # The validator's walks are cached per node class, the expression's tree per text: each request's own
    # values and own item still decide the result.
    for amount in (1, 5, -2):
        table.client.update_item(
            TableName=table.name,
            Key={"PK": "counter", "SK": "c"},
            UpdateExpression="ADD n :a SET label = :l",
            ExpressionAttributeValues={":a": amount, ":l": f"added {amount}"},
        )
    assert table.get("counter", "c") == {"PK": "counter", "SK": "c", "n": 4, "label": "added -2"}


def test_the_access_key_shortcut_finds_what_motos_regex_finds() -> None:
    from moto.core.responses import BaseResponse

    regex: Any = BaseResponse.access_key_regex  # moto's, unless this process already tuned moto
    regex = regex._pattern if isinstance(regex, fastpath._AccessKeyPattern) else regex
    shortcut = fastpath._AccessKeyPattern(regex)
    signature = "SignedHeaders=host;x-amz-date, Signature=" + "0f3a9c1e5b7d2f4a" * 4
    headers = [
        f"AWS4-HMAC-SHA256 Credential={key}/20261201/us-east-1/dynamodb/aws4_request, {signature}"
        for key in ("ddblab", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLEX", "AKIA0123456789ABCDE", "x")
    ]
    headers += [
        "AWS AKIAIOSFODNN7EXAMPLE:c2lnbmF0dXJl",
        "Bearer AKIAIOSFODNN7EXAMPLE/",
        "",
        "AWS ÄKIAIOSFODNN7EXAMPLE/",
    ]
    assert sum(regex.search(header) is not None for header in headers) >= 2  # both outcomes are compared
    for header in headers:
        found, expected = shortcut.search(header), regex.search(header)
        assert (found and found.group(1)) == (expected and expected.group(1)), header
