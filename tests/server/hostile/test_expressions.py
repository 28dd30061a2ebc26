"""Malformed expressions of every kind: each is DynamoDB's ValidationException, never a 500."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.server.faithful import expression_syntax, mistakes
from tests.server.hostile.raw import KEY, _refused, _send, _still_serving

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


def _asked(member: str, expression: str, server: Any, table: Any) -> tuple[int, dict[str, Any]]:
    """The server's answer to `expression` as `member` of its operation, with exactly the references it uses."""
    op, extra = _MEMBERS[member]
    return _send(server.port, _with_references({"TableName": table.name, member: expression, **extra}, expression), op)


@pytest.mark.parametrize("member", list(_MEMBERS))
@settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(expression=_EXPRESSIONS)
def test_no_expression_gets_a_server_error(member: str, expression: str, server: Any, table: Any) -> None:
    status, body = _asked(member, expression, server, table)
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


NOT_DYNAMODBS_TOKENS = [
    "n = 1",
    "1 = 1",
    "0<0",
    "size(n) > 0",
    "n IN (0, 1)",
    "n = 'x'",
    "n-1 = :v",
    "n^x = :v",
    "`n` = :v",
]


@pytest.mark.parametrize("member", ["ConditionExpression", "FilterExpression"])
@pytest.mark.parametrize("expression", NOT_DYNAMODBS_TOKENS)
def test_a_constant_or_a_name_that_starts_with_no_letter_is_refused(
    member: str, expression: str, server: Any, table: Any
) -> None:
    """A constant in a condition is a :value, and a name starts with a letter or is a #name: moto read `1` as an
    attribute named "1", so `1 = 1` held and `n = 1` quietly failed, where DynamoDB refuses the request."""
    message = _refused(_asked(member, expression, server, table), "ValidationException")
    assert 'Syntax error; token: "' in message, message
    _still_serving(table, server)


def test_a_list_index_of_two_digits_is_read_whole(server: Any, table: Any) -> None:
    """`l[10]` is the eleventh element, as in DynamoDB (moto's lexer read one digit and refused the request)."""
    key = {"PK": {"S": "LIST"}, "SK": {"S": "1"}}
    item = {**key, "l": {"L": [{"N": str(i)} for i in range(11)]}}
    assert _send(server.port, {"TableName": table.name, "Item": item}, "PutItem")[0] == 200
    check = {
        "TableName": table.name,
        "Key": key,
        "ConditionExpression": "l[10] = :ten AND attribute_exists(l[10])",
        "ExpressionAttributeValues": {":ten": {"N": "10"}},
    }
    status, body = _send(server.port, check, "DeleteItem")
    assert status == 200, body
    assert _send(server.port, {"TableName": table.name, "Key": key}, "GetItem")[1].get("Item") is None


WELL_FORMED_CONDITIONS = [
    "n = :v\nAND s = :w",
    "n = :v\tAND s = :w",
    "n = :v\r\nAND s = :w",
    "m .a = :v",
    "m. a = :v",
    "l [0] = :v",
    "l[ 0 ] = :v",
    "(n = :v)AND(s = :w)",
    "n IN (:v,:w)",
    "NOT(n = :v)",
    "#n = :v AND size(s) > :v",
]


@pytest.mark.parametrize("member", ["ConditionExpression", "FilterExpression"])
@pytest.mark.parametrize("expression", WELL_FORMED_CONDITIONS)
def test_a_well_formed_condition_over_lines_or_with_spaces_in_a_path_is_read(
    member: str, expression: str, server: Any, table: Any
) -> None:
    """DynamoDB (and DynamoDB Local, checked) skips tabs and line breaks between tokens and spaces around a path's
    '.' and '[': a workload's condition written as a YAML block over two lines was refused."""
    status, body = _asked(member, expression, server, table)
    assert status == 200 or str(body.get("__type", "")).endswith("ConditionalCheckFailedException"), body


def test_a_list_index_written_with_a_leading_zero_is_refused(server: Any, table: Any) -> None:
    params = {
        "TableName": table.name,
        "FilterExpression": "l[01] = :v",
        "ExpressionAttributeValues": {":v": {"N": "1"}},
    }
    assert 'token: "' in _refused(_send(server.port, params, "Scan"), "ValidationException")
