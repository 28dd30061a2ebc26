"""Requests a hostile or careless client sends: each kind gets DynamoDB's 400 and one-line message, never a 500
or silence, nothing of it is stored, and the server answers the next request.

Raw HTTP (boto3 would refuse most of these before sending them). The expression kinds are also tried with
random expressions (hypothesis, derandomized: the same examples on every run).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.control import TOKEN_HEADER
from engine.server.faithful import expression_syntax, mistakes

_AUTH = "AWS4-HMAC-SHA256 Credential=ddblab/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"
KEY = {"PK": {"S": "H"}, "SK": {"S": "1"}}


@pytest.fixture(scope="module")
def server(backend: Backend) -> Any:
    if not backend.embedded:
        pytest.skip("raw requests to the embedded server")
    assert backend.server is not None
    return backend.server


@pytest.fixture(scope="module")
def table(backend: Backend, server: Any) -> Any:
    table = open_table(backend.client(retry=RetryPolicy("standard", 1)), "hostile-requests", TableSpec())
    table.put({"PK": "H", "SK": "1", "n": 1, "m": {"a": "b"}, "s": "text"})
    yield table
    drop_table(table)


def _send(port: int, body: bytes | dict[str, Any], op: str, **headers: str) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/",
            data,
            {
                "X-Amz-Target": f"DynamoDB_20120810.{op}",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": _AUTH,
                **headers,
            },
        )
        response = conn.getresponse()
        answer = response.read()
    finally:
        conn.close()
    return response.status, (json.loads(answer) if answer else {})


def _refused(answer: tuple[int, dict[str, Any]], *codes: str) -> str:
    """Assert DynamoDB's 400 shape with one of `codes`; return its message."""
    status, body = answer
    assert status == 400, answer
    assert str(body.get("__type", "")).rpartition("#")[2] in codes, answer
    message = str(body.get("message", ""))
    assert message and "\n" not in message, answer
    return message


def _still_serving(table: Any, server: Any) -> None:
    """A normal GetItem is answered, the seeded item is as it was, and the server wrote no traceback."""
    status, body = _send(server.port, {"TableName": table.name, "Key": KEY}, "GetItem")
    assert status == 200, body
    assert body["Item"]["n"] == {"N": "1"} and body["Item"]["s"] == {"S": "text"}, body
    assert not [line for line in server._stderr_tail if "Traceback" in line]


# -- expressions -------------------------------------------------------------------------------------------


MALFORMED_KEY_CONDITIONS = [
    "PK == :x",
    "PK <> :x",
    "NOT PK = :x",
    "PK = :x OR PK = :x",
    "PK = :x AND SK == :x",
    "PK = :x AND NOT SK = :x",
    "PK = :x AND",  # moto answered these as if the rest were not there
    "(PK = :x",
    "PK = :x )",
    "PK = :x AND SK BETWEEN :x",
    "PK = :x AND begins_with(SK :x)",
    "PK = :x AND attribute_exists(SK)",
]


@pytest.mark.parametrize("expression", MALFORMED_KEY_CONDITIONS)
def test_a_malformed_key_condition_is_a_validation_error(expression: str, server: Any, table: Any) -> None:
    query = {
        "TableName": table.name,
        "KeyConditionExpression": expression,
        "ExpressionAttributeValues": {":x": {"S": "H"}},
    }
    message = _refused(_send(server.port, query, "Query"), "ValidationException")
    assert message.startswith(
        ("Invalid KeyConditionExpression: Syntax error; token: ", "Invalid operator used in KeyConditionExpression: ")
    ), message
    _still_serving(table, server)


VALID_KEY_CONDITIONS = [
    "PK = :x",
    "#pk = :x AND #sk BETWEEN :a AND :b",
    "PK = :x and SK >= :a",
    "PK=:x AND SK<:b",
    "((PK = :x))",
    "PK = :x AND SK between :a and :b",
]


def test_the_grammar_check_takes_every_well_formed_key_condition() -> None:
    # Also three that moto itself still refuses, though DynamoDB takes them: a parenthesised begins_with and a value
    # on the left of its key ("Multiple attribute names used in one condition"); the refusal is not the grammar's.
    for expression in [*VALID_KEY_CONDITIONS, "(PK = :x) AND (begins_with(SK, :a))", ":x = PK", "PK = :x AND :a <= SK"]:
        assert expression_syntax.problem("KeyConditionExpression", expression) is None, expression


@pytest.mark.parametrize("expression", VALID_KEY_CONDITIONS)
def test_a_well_formed_key_condition_is_answered(expression: str, server: Any, table: Any) -> None:
    values = {":x": {"S": "H"}, ":a": {"S": "0"}, ":b": {"S": "9"}}
    query = _with_references({"TableName": table.name, "KeyConditionExpression": expression}, expression)
    query["ExpressionAttributeValues"] = {ref: values[ref] for ref in query["ExpressionAttributeValues"]}
    if "ExpressionAttributeNames" in query:
        query["ExpressionAttributeNames"] = {"#pk": "PK", "#sk": "SK"}
    status, body = _send(server.port, query, "Query")
    assert status == 200 and [item["PK"]["S"] for item in body["Items"]] == ["H"], body


@pytest.mark.parametrize("expression", ["PK, SK", "m.a", "l[0]", "m.a, n ,s", "#n", "#n.a, l[0][1]"])
def test_a_well_formed_projection_is_not_refused_for_its_grammar(expression: str, server: Any, table: Any) -> None:
    params = {"TableName": table.name, "Key": KEY, "ProjectionExpression": expression}
    if "#n" in expression:
        params["ExpressionAttributeNames"] = {"#n": "m"}
    status, body = _send(server.port, params, "GetItem")
    assert status == 200 and "Item" in body, body


@pytest.mark.parametrize("expression", ["PK,", "n, ", "m.a,", "a..b", "a[x]", "n.>+", "a[1].[2]", "PK SK", "a-b"])
def test_a_malformed_projection_is_a_validation_error(expression: str, server: Any, table: Any) -> None:
    for op, extra in (("GetItem", {"Key": KEY}), ("Scan", {}), ("Query", {})):
        params = {"TableName": table.name, "ProjectionExpression": expression, **extra}
        if op == "Query":
            params |= {"KeyConditionExpression": "PK = :x", "ExpressionAttributeValues": {":x": {"S": "H"}}}
        message = _refused(_send(server.port, params, op), "ValidationException")
        assert message.startswith("Invalid ProjectionExpression"), message
    _still_serving(table, server)


@pytest.mark.parametrize("path", ["n.x", "s.x", "m.a.b", "l[0].x", "ss.x", "b.x", "n[0]", "l[5]"])
def test_a_projected_path_through_a_scalar_matches_nothing(path: str, server: Any, table: Any) -> None:
    """A valid path that passes through a number, string, boolean or set finds nothing there: the item comes back
    without it, with the other paths asked for."""
    key = {"PK": {"S": "PROJ"}, "SK": {"S": "1"}}
    item = {**key, "n": {"N": "1"}, "s": {"S": "t"}, "b": {"BOOL": True}, "ss": {"SS": ["x"]}}
    item |= {"m": {"M": {"a": {"N": "2"}}}, "l": {"L": [{"N": "3"}]}}
    assert _send(server.port, {"TableName": table.name, "Item": item}, "PutItem")[0] == 200
    projection = {"ProjectionExpression": f"{path}, m.a, l[0]"}
    status, body = _send(server.port, {"TableName": table.name, "Key": key, **projection}, "GetItem")
    assert status == 200, body
    assert body["Item"] == {"m": {"M": {"a": {"N": "2"}}}, "l": {"L": [{"N": "3"}]}}, body
    status, body = _send(server.port, {"TableName": table.name, **projection}, "Scan")
    assert status == 200 and {"m": {"M": {"a": {"N": "2"}}}, "l": {"L": [{"N": "3"}]}} in body["Items"], body
    _still_serving(table, server)


# Pieces of DynamoDB's expression grammar, right and wrong, and some that belong to no expression.
_TOKENS = [
    *["PK", "SK", "n", "m", "m.a", "l[0]", "#n", ":x", ":y", "size(n)"],
    *["=", "==", "<>", "<", "<=", ">", ">=", "+", "-", ",", ".", "(", ")", "[", "]"],
    *["AND", "OR", "NOT", "BETWEEN", "IN", "begins_with(", "attribute_exists(", "contains(", "if_not_exists("],
    *["SET", "ADD", "REMOVE", "DELETE", "list_append(", "0", "1a", "'", '"', "$", ";", "\t"],
]
_EXPRESSIONS = st.one_of(
    st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=8).map(" ".join),
    st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=6).map("".join),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=16),
)


def _with_references(params: dict[str, Any], expression: str) -> dict[str, Any]:
    """Define exactly the #names and :values the expression uses, so that it reaches the expression's parser."""
    names = {ref: "n" for ref in re.findall(r"#[A-Za-z0-9_]+", expression)}
    values = {ref: {"S": "H"} for ref in re.findall(r":[A-Za-z0-9_]+", expression)}
    return {
        **params,
        **({"ExpressionAttributeNames": names} if names else {}),
        **({"ExpressionAttributeValues": values} if values else {}),
    }


_MEMBERS = {
    "KeyConditionExpression": ("Query", {}),
    "ProjectionExpression": ("GetItem", {"Key": KEY}),
    "FilterExpression": ("Scan", {}),
    "ConditionExpression": ("DeleteItem", {"Key": {"PK": {"S": "NONE"}, "SK": {"S": "1"}}}),
    "UpdateExpression": ("UpdateItem", {"Key": {"PK": {"S": "SCRATCH"}, "SK": {"S": "1"}}}),
}


@pytest.mark.parametrize("member", list(_MEMBERS))
@settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(expression=_EXPRESSIONS)
def test_no_expression_gets_a_server_error(member: str, expression: str, server: Any, table: Any) -> None:
    op, extra = _MEMBERS[member]
    params = _with_references({"TableName": table.name, member: expression, **extra}, expression)
    status, body = _send(server.port, params, op)
    assert status in (200, 400), (expression, status, body)
    if status == 400:
        _refused((status, body), "ValidationException", "SerializationException")


def test_a_crash_in_the_servers_own_code_stays_a_server_error() -> None:
    """Only a crash inside moto's expression parsing is the client's: the same exception raised from the
    server's own code (or moto's other modules) is a bug, and must show as one."""

    def traceback_from(filename: str) -> Any:
        try:
            exec(compile("raise AssertionError()", filename, "exec"))
        except AssertionError as exc:
            return exc.__traceback__
        raise AssertionError("not raised")

    site = "/x/.venv/lib/python3.11/site-packages"
    assert mistakes.expression_parsed(traceback_from(f"{site}/moto/utilities/tokenizer.py")) == "KeyConditionExpression"
    assert mistakes.expression_parsed(traceback_from(f"{site}/moto/dynamodb/comparisons.py")) == "ConditionExpression"
    assert mistakes.expression_parsed(traceback_from(f"{site}/moto/dynamodb/models/table.py")) is None
    assert mistakes.expression_parsed(traceback_from("/x/engine/server/fast_item.py")) is None


# -- strings that are no valid Unicode -----------------------------------------------------------------------


def _put_body(table: Any, item_json: str) -> bytes:
    return f'{{"TableName": "{table.name}", "Item": {item_json}}}'.encode()


LONE_SURROGATES = {
    "in the partition key": '{"PK": {"S": "\\ud800"}, "SK": {"S": "1"}}',
    "in the sort key": '{"PK": {"S": "SUR"}, "SK": {"S": "a\\udc00"}}',
    "in a value": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"S": "\\uDBFF"}}',
    "in a set": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"SS": ["a", "\\ud800b"]}}',
    "in an attribute name": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "\\ud800": {"S": "x"}}',
    "in a map's name": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "m": {"M": {"\\udfff": {"N": "1"}}}}',
    "a pair reversed": '{"PK": {"S": "SUR"}, "SK": {"S": "1"}, "v": {"S": "\\ude00\\ud83d"}}',
}


@pytest.mark.parametrize("name", list(LONE_SURROGATES))
def test_a_lone_surrogate_is_refused_and_nothing_is_stored(name: str, server: Any, table: Any) -> None:
    _refused(_send(server.port, _put_body(table, LONE_SURROGATES[name]), "PutItem"), "SerializationException")
    # As raw UTF-8-encoded surrogate bytes (no valid UTF-8) too.
    raw = _put_body(table, LONE_SURROGATES[name].replace("\\ud800", "\\u00e9")).replace(b"\\u00e9", b"\xed\xa0\x80")
    if b"\xed" in raw:
        _refused(_send(server.port, raw, "PutItem"), "SerializationException")
    # In a UTF-16 body (json.loads takes one), escaped and as raw UTF-16 code units.
    utf16 = _put_body(table, LONE_SURROGATES[name]).decode("ascii").encode("utf-16-le")
    _refused(_send(server.port, utf16, "PutItem"), "SerializationException")
    unescaped = json.loads(_put_body(table, LONE_SURROGATES[name]))
    raw16 = json.dumps(unescaped, ensure_ascii=False).encode("utf-16-le", "surrogatepass")
    _refused(_send(server.port, raw16, "PutItem"), "SerializationException")
    update = {
        "TableName": table.name,
        "Key": {"PK": {"S": "SUR"}, "SK": {"S": "1"}},
        "UpdateExpression": "SET v = :v",
        "ExpressionAttributeValues": {":v": {"S": "x"}},
    }
    body = json.dumps(update).replace('"x"', '"\\ud800"').encode()
    _refused(_send(server.port, body, "UpdateItem"), "SerializationException")
    status, scanned = _send(server.port, {"TableName": table.name}, "Scan")
    assert status == 200 and all(item["PK"]["S"] != "SUR" for item in scanned["Items"]), scanned
    _still_serving(table, server)


def test_a_surrogate_pair_is_one_character_and_is_stored(server: Any, table: Any) -> None:
    item = '{"PK": {"S": "PAIR"}, "SK": {"S": "1"}, "v": {"S": "\\ud83d\\ude00"}}'
    assert _send(server.port, _put_body(table, item), "PutItem")[0] == 200
    status, body = _send(
        server.port, {"TableName": table.name, "Key": {"PK": {"S": "PAIR"}, "SK": {"S": "1"}}}, "GetItem"
    )
    assert status == 200 and body["Item"]["v"] == {"S": "\U0001f600"}, body
    assert table.get("PAIR", "1")["v"] == "\U0001f600"


# -- bodies nested deeply ----------------------------------------------------------------------------------


def _nested_list(depth: int) -> bytes:
    return b'{"L": [' * depth + b'{"S": "x"}' + b"]}" * depth


DEEP_BODIES = {
    "a legacy ScanFilter": (
        "Scan",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "ScanFilter": {{"v": {{"ComparisonOperator": "EQ", '
            f'"AttributeValueList": ['.encode()
            + _nested_list(d // 2)
            + b"]}}}"
        ),
    ),
    "a legacy Expected": (
        "PutItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Item": {{"PK": {{"S": "DEEP"}}, "SK": {{"S": "1"}}}}, '
            f'"Expected": {{"v": {{"Value": '.encode()
            + _nested_list(d // 2)
            + b"}}}"
        ),
    ),
    "an item's value": (
        "PutItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Item": {{"PK": {{"S": "DEEP"}}, "SK": {{"S": "1"}}, "v": '.encode()
            + _nested_list(d // 2)
            + b"}}"
        ),
    ),
    "a member the API does not know": (
        "GetItem",
        lambda table, d: (
            f'{{"TableName": "{table.name}", "Key": {json.dumps(KEY)}, "Bogus": '.encode() + b"[" * d + b"]" * d + b"}"
        ),
    ),
}


@pytest.mark.parametrize("where", list(DEEP_BODIES))
@pytest.mark.parametrize("depth", [900, 1600, 2000, 10_000])
def test_a_body_nested_far_past_any_request_is_refused(where: str, depth: int, server: Any, table: Any) -> None:
    op, body = DEEP_BODIES[where]
    status, answer = _send(server.port, body(table, depth), op)
    if where == "a member the API does not know" and status == 200:
        pass  # a member DynamoDB does not know is left alone, however deep, when the body parses
    else:
        _refused((status, answer), "SerializationException", "ValidationException")
    assert table.get("DEEP", "1") is None
    _still_serving(table, server)


@pytest.mark.parametrize("depth", [2_000, 30_000, 100_000])
def test_a_lab_config_body_nested_deeply_is_refused(depth: int, server: Any, table: Any) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {
            "Content-Type": "application/json",
            TOKEN_HEADER: server.lab_token,
            "Host": f"127.0.0.1:{server.port}",
        }
        conn.request("POST", "/_lab/config", b"[" * depth + b"]" * depth, headers)
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    if 2 * depth <= 65536:
        assert response.status == 400 and "nests too deeply" in answer["error"], answer
    else:  # past the control endpoint's 64 KB, refused from its length before it is parsed
        assert response.status == 413 and "at most 65536 bytes" in answer["error"], answer
    _still_serving(table, server)


# -- the HTTP head ------------------------------------------------------------------------------------------


def _exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes on a fresh connection; read until the server closes it (a refusal closes it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _head(port: int, request_line: str, *headers: str, end: bool = True) -> bytes:
    lines = [request_line, f"Host: 127.0.0.1:{port}", "Content-Length: 0", *headers]
    return ("\r\n".join(lines) + ("\r\n\r\n" if end else "\r\n")).encode("latin-1")


@pytest.mark.parametrize(
    "raw",
    [
        "POST /\x00 HTTP/1.1|",
        "PO\x00ST / HTTP/1.1|",
        "POST / HTTP/1.1\x00|",
        "POST / HTTP/1.1|X-Amz-Target: DynamoDB_20120810.GetItem\x00",
        "POST / HTTP/1.1|X-\x00Name: a",
        "POST / HTTP/1.1|Authorization: AWS4\x00",
        "POST / HTTP/1.1|X-Bell: \x07",
        "GET /_lab/config\x00 HTTP/1.1|",
    ],
)
@pytest.mark.parametrize("complete", [True, False])
def test_a_control_byte_in_the_request_line_or_a_header_gets_a_400(
    raw: str, complete: bool, server: Any, table: Any
) -> None:
    # complete=False: the head never ends, as from a client that waits for an answer to its first line.
    line, _, header = raw.partition("|")
    answer = _exchange(server.port, _head(server.port, line, *([header] if header else []), end=complete))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer
    _refused((400, json.loads(body)), "SerializationException")
    _still_serving(table, server)


@pytest.mark.parametrize(
    "authorization",
    ["AWS4-HMAC-SHA256 Credential=x", "AWS4-HMAC-SHA256 Credential=KEY/20260101, Signature=0", "AWS4"],
)
def test_an_aws4_authorization_without_a_region_is_refused(authorization: str, server: Any, table: Any) -> None:
    answer = _send(server.port, {"TableName": table.name, "Key": KEY}, "GetItem", Authorization=authorization)
    _refused(answer, "IncompleteSignatureException")
    _still_serving(table, server)


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
