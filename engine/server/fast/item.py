"""PutItem (plain or conditional) and GetItem of a plain item: moto's steps that can change the answer, without the
ones that cannot for that item (fastpath.tune_moto).

A plain item: every attribute a string, a number (digits, an optional fraction) or a boolean; on a PutItem the
table has no index and no stream, and its key attributes are of the table's types, not empty and short. For such
an item moto's validations (empty keys and sets, index keys, each value's type, the keys' sizes) all pass, and its
answer is a known dict: here they are skipped, the item is written (or read) with moto's own Item and Table, a
condition is parsed and evaluated by moto's parser once (moto parses it twice), and the answer is serialized
without the walk of the output shape (fast_answer.py). Anything else goes moto's way, checks and errors included.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import create_condition_expression_parser
from moto.dynamodb.exceptions import ConditionalCheckFailed
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.responses import DynamoResult, validate_attributes_used

from engine.server.fast.answer import Fixed, PlainJson

PUT_MEMBERS = frozenset(
    {
        "TableName",
        "Item",
        "ConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "ReturnValues",
        "ReturnConsumedCapacity",
    }
)
GET_MEMBERS = frozenset({"TableName", "Key", "ConsistentRead", "ReturnConsumedCapacity"})
# A number moto's _validate_number_type takes as it is (finite, no blanks, far from the magnitude limits).
_NUMBER = re.compile(r"-?[0-9]{1,38}(?:\.[0-9]{1,38})?")
_KEY_CHARS = 256  # a key string this long is at most 1,024 bytes in UTF-8: under both of moto's key-size limits
_KEY_TYPES = ("S", "N", "B")


def plain_item(item: Any, table: Any) -> bool:
    """True when `item` is plain (module docstring) and its keys are what `table` wants, so that every validation
    of moto's PutItem passes."""
    if type(item) is not dict:
        return False
    for value in item.values():
        if type(value) is not dict or len(value) != 1:
            return False
        if "S" in value:
            if type(value["S"]) is not str:
                return False
        elif "N" in value:
            number = value["N"]
            if type(number) is not str or _NUMBER.fullmatch(number) is None:
                return False
        elif "BOOL" not in value or type(value["BOOL"]) is not bool:
            return False
    return _key_fits(item, table.hash_key_attr, table.hash_key_type) and (
        table.range_key_attr is None or _key_fits(item, table.range_key_attr, table.range_key_type)
    )


def _key_fits(item: dict[str, Any], name: str, kind: str) -> bool:
    value = item.get(name)
    if value is None or kind not in value:
        return False
    inner = value[kind]
    return kind == "N" or (kind == "S" and 0 < len(inner) <= _KEY_CHARS)


def plain_table(backend: Any, name: Any) -> Any:
    """The table named `name` when a plain PutItem's validations cannot fail on it (no index, no stream)."""
    table = backend.tables.get(name) if type(name) is str else None
    if table is None or table.indexes or table.global_indexes or table.stream_shard is not None:
        return None
    return table


def put_plain(put_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DynamoHandler.put_item, applying a plain item's PutItem itself; moto's own way for anything else."""

    def put(self: Any) -> Any:
        body = self.body
        if (
            not body.keys() <= PUT_MEMBERS
            or body.get("ReturnValues", "NONE") != "NONE"
            or body.get("ReturnConsumedCapacity", "NONE") != "NONE"
        ):
            return put_item(self)
        table = plain_table(self.dynamodb_backend, body["TableName"])
        item = body["Item"]
        if table is None or not plain_item(item, table):
            return put_item(self)
        condition = body.get("ConditionExpression")
        op = None
        if condition is not None:
            if type(condition) is not str or not condition:
                return put_item(self)
            # moto's steps for the condition, in its order: the values' checks, the parse, the names' use.
            names = body.get("ExpressionAttributeNames", {})
            parser = create_condition_expression_parser(condition, names, self._get_expr_attr_values())
            op = parser.parse()
            validate_attributes_used(names, parser.expr_attr_names_found)
        elif "ExpressionAttributeNames" in body or "ExpressionAttributeValues" in body:
            return put_item(self)
        # Table.put_item's steps past its validations, with the same objects.
        hash_value = DynamoType(item[table.hash_key_attr])
        range_value = None if table.range_key_attr is None else DynamoType(item[table.range_key_attr])
        current = table.get_item(hash_value, range_value)
        written = Item(hash_value, range_value, item)
        if op is not None and not op.expr(current):
            raise ConditionalCheckFailed
        if range_value is not None:
            table.items[hash_value][range_value] = written
        else:
            table.items[hash_value] = written
        return Fixed({}, None)  # moto's answer: the item's JSON with its Attributes popped

    return put


def get_plain(get_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DynamoHandler.get_item for a GetItem of a table's key and nothing else; moto's own way for anything else."""

    def get(self: Any) -> Any:
        body = self.body
        if not body.keys() <= GET_MEMBERS or body.get("ReturnConsumedCapacity", "NONE") != "NONE":
            return get_item(self)
        name, key = body["TableName"], body["Key"]
        table = self.dynamodb_backend.tables.get(name) if type(name) is str else None
        if table is None or type(key) is not dict:
            return get_item(self)
        hash_name, range_name = table.hash_key_attr, table.range_key_attr
        if len(key) != (1 if range_name is None else 2) or not key_given(key, hash_name):
            return get_item(self)
        if range_name is not None and not key_given(key, range_name):
            return get_item(self)
        hash_value = DynamoType(key[hash_name])
        item = table.get_item(hash_value, None if range_name is None else DynamoType(key[range_name]))
        if item is None:
            return Fixed({}, None)
        attrs = plain_attrs(item)
        if attrs is None:  # moto's answer, serialized its way
            return DynamoResult({"Item": item.describe_attrs(attributes=None)["Item"]})
        return PlainJson({"Item": attrs})

    return get


def plain_attrs(item: Item) -> dict[str, Any] | None:
    """The item's attributes as moto's answer has them, when all are strings, numbers or booleans; else None."""
    attrs = {}
    for attr, value in item.attrs.items():
        kind, inner = value.type, value.value
        if ((kind == "S" or kind == "N") and type(inner) is str) or (kind == "BOOL" and type(inner) is bool):
            attrs[attr] = {kind: inner}
        else:
            return None
    return attrs


def plain_value(value: Any) -> bool:
    """True when an attribute value is a string, a number moto takes as it is, or a boolean."""
    if type(value) is not dict or len(value) != 1:
        return False
    if "S" in value:
        return type(value["S"]) is str
    if "N" in value:
        number = value["N"]
        return type(number) is str and _NUMBER.fullmatch(number) is not None
    return "BOOL" in value and type(value["BOOL"]) is bool


def key_given(key: dict[str, Any], name: str, kinds: tuple[str, ...] = _KEY_TYPES) -> bool:
    """True when `key` holds `name` as one value of a key type (of `kinds`) that is not empty (moto refuses an
    empty one)."""
    value = key.get(name)
    if type(value) is not dict or len(value) != 1:
        return False
    for kind in kinds:
        if kind in value:
            return bool(value[kind])
    return False
