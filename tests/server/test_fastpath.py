"""The fast path (fastpath.py: moto's handler without Flask, moto's repeated work cached) answers every request
with the bytes moto's own Flask app would, and its caches never carry one request's values into another."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.server.equivalence.replay import equivalence
from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.fast import handler as fastpath


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


def test_the_fast_headers_read_the_environ_as_motos_headers_do() -> None:
    from moto.core.request import EnvironHeaders

    from engine.server.fast.request import FastEnvironHeaders

    environs: list[dict[str, Any]] = [
        {
            "REQUEST_METHOD": "POST",
            "CONTENT_TYPE": "application/x-amz-json-1.0",
            "CONTENT_LENGTH": "2",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.PutItem",
            "HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=ddblab/20261201/us-east-1/dynamodb/aws4_request",
            "HTTP_CONTENT_TYPE": "ignored",
            "HTTP_X_EMPTY": "",
            "wsgi.url_scheme": "http",
        },
        {"CONTENT_TYPE": "", "CONTENT_LENGTH": "", "HTTP_ACCEPT_ENCODING": "identity", "HTTP_X_AMZ_META_MY_KEY": "v"},
        {"HTTP_X_AMZ_META_MY_KEY": "v", "moto.preserved_header_names": {"HTTP_X_AMZ_META_MY_KEY": "x-amz-meta-my_key"}},
    ]
    names = ["Host", "host", "X-Amz-Target", "x-amz-target", "Content-Type", "content-length", "X-Empty", "Missing"]
    for environ in environs:
        fast, moto_headers = FastEnvironHeaders(environ), EnvironHeaders(environ)
        for _ in range(2):  # the second time from the caches
            assert list(fast) == list(moto_headers)
            assert fast.as_dict() == dict(moto_headers)
            for name in names:
                assert (name in fast) == (name in moto_headers), name
                assert fast.get(name) == moto_headers.get(name), name
        environ["HTTP_LATE"] = "added"  # still a live view of the environ
        assert fast["Late"] == "added" and list(fast) == list(moto_headers)


def test_request_ids_are_52_letters_or_digits_from_motos_seeded_source() -> None:
    import random
    import string

    from engine.server.fast.request import request_id_maker

    ids = [request_id_maker(random.Random(7))() for _ in range(2)]
    assert ids[0] == ids[1]  # seeded: the same ids again
    headers: dict[str, Any] = {}
    many = {request_id_maker(random.Random(n))(headers) for n in range(200)}
    assert len(many) == 200 and headers["x-amzn-requestid"] in many
    assert all(len(i) == 52 and set(i) <= set(string.ascii_letters + string.digits) for i in many)


def test_an_update_text_that_passed_is_still_refused_with_names_that_collide(table: Any) -> None:
    # The structure checks of an update's tree are skipped once they passed with the same names: the same text
    # with names that put two actions on one attribute is refused, before and after it passed with others.
    def update(names: dict[str, str]) -> str:
        try:
            table.client.update_item(
                TableName=table.name,
                Key={"PK": "doc", "SK": "names"},
                UpdateExpression="SET #a = :x, #b = :y",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":x": 1, ":y": 2},
            )
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "ok"

    assert update({"#a": "n", "#b": "n"}) == "ValidationException"
    assert update({"#a": "n", "#b": "m"}) == "ok"
    assert update({"#a": "n", "#b": "m"}) == "ok"
    assert update({"#a": "m", "#b": "m"}) == "ValidationException"
    assert table.get("doc", "names") == {"PK": "doc", "SK": "names", "n": 1, "m": 2}


def test_one_condition_text_takes_each_requests_value_types_and_every_use_of_a_value(table: Any) -> None:
    # The parsed condition is kept per (text, names, value names) with stand-ins for the values: each request's
    # own values, of their own types, stand at every place their placeholder does.
    table.put({"PK": "doc", "SK": "t", "version": 1, "label": "1"})

    def put_if(condition: str, value: Any) -> bool:
        try:
            table.client.put_item(
                TableName=table.name,
                Item={"PK": "doc", "SK": "t", "version": 1, "label": "1"},
                ConditionExpression=condition,
                ExpressionAttributeValues={":v": value},
            )
        except ClientError:
            return False
        return True

    assert put_if("version = :v", 1)
    assert not put_if("version = :v", "1")  # a string is not the number 1
    assert put_if("label = :v", "1")
    assert not put_if("label = :v", 1)
    assert put_if("version = :v AND version <= :v", 1)
    assert not put_if("version = :v AND version <= :v", 2)
    assert not put_if("version = :v AND version <= :v", 0)
