"""UpdateItem `ADD <name> :v` of an integer to a number attribute of an existing item, ReturnValues NONE: the
counters' one update, applied without moto's expression machinery (fastpath.tune_moto).

For that shape moto parses the expression, walks a copy of its tree ten times (values, names, types, keys) and
executes it: about 550 Python calls to do `item.attrs[name] = old + value`. Here the shape is recognised from the
request (anything else, or anything moto would refuse or treat apart, goes moto's way): the same sum (moto's `+`
on its DynamoType, number_math's too), written through the item's size-checked dict, and the same result.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import ItemSizeTooLarge, ItemSizeToUpdateTooLarge
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords

from engine.server.fast.answer import Fixed

_MEMBERS = frozenset({"TableName", "Key", "UpdateExpression", "ExpressionAttributeValues", "ExpressionAttributeNames"})
_ADD = re.compile(r"ADD +(#[A-Za-z0-9_]+|[A-Za-z][A-Za-z0-9_]*) +(:[A-Za-z0-9_]+)")
_INTEGER = re.compile(r"-?[0-9]{1,38}")  # what moto adds with int() (no exponent, no "."): the counters' steps


@functools.lru_cache(maxsize=256)
def _shape(expression: str) -> tuple[str, str] | None:
    """(name or #placeholder, :placeholder) of an `ADD name :v` expression, as moto parses it; None for any other
    expression, or a plain name moto refuses as a reserved word."""
    match = _ADD.fullmatch(expression.strip())
    if match is None:
        return None
    name, value = match.groups()
    if not name.startswith("#") and name.upper() in ReservedKeywords.get_reserved_keywords():
        return None
    return name, value


def planned(body: dict[str, Any], tables: Any, key_types: tuple[str, ...] = ("S", "N", "B")) -> Any:
    """(item, attribute name, integer text) when `body` is the module docstring's shape on one of `tables` (moto's
    tables by name), with key values of `key_types`; None for anything else. Changes nothing."""
    expression = body.get("UpdateExpression")
    shape = _shape(expression) if type(expression) is str and body.keys() <= _MEMBERS else None
    if shape is None:
        return None
    name, placeholder = shape
    names = body.get("ExpressionAttributeNames")
    if name.startswith("#"):
        if type(names) is not dict or len(names) != 1 or type(names.get(name)) is not str:
            return None
        name = names[name]
    elif names is not None:
        return None
    values = body.get("ExpressionAttributeValues")
    step = values.get(placeholder) if type(values) is dict and len(values) == 1 else None
    number = step.get("N") if type(step) is dict and len(step) == 1 else None
    if type(number) is not str or _INTEGER.fullmatch(number) is None:
        return None
    table_name = body.get("TableName")
    table = tables.get(table_name) if type(table_name) is str else None
    key = body.get("Key")
    if table is None or table.stream_shard is not None or type(key) is not dict or not name:
        return None
    hash_name, range_name = table.hash_key_attr, table.range_key_attr
    if len(key) != (1 if range_name is None else 2) or hash_name not in key or name in key:
        return None
    if range_name is not None and range_name not in key:
        return None
    if any(d.get("AttributeName") == name for d in table.attr):  # a key of the table or an index: moto checks
        return None
    hash_value, range_value = key[hash_name], None if range_name is None else key[range_name]
    for value in (hash_value, range_value) if range_value is not None else (hash_value,):
        if type(value) is not dict or len(value) != 1:
            return None
        for kind in value:
            if kind not in key_types:
                return None
    item = table.get_item(DynamoType(hash_value), None if range_value is None else DynamoType(range_value))
    if item is None:  # a new item: moto creates it
        return None
    old = item.attrs.get(name)
    if old is not None and old.type != "N":
        return None  # moto's IncorrectDataType
    return item, name, number


def add(item: Any, name: str, number: str) -> None:
    """What moto's AddExecutor does for the planned update: the sum (moto's `+`, number_math's too) written through
    the item's size-checked dict; ItemSizeTooLarge, with nothing changed, when it would grow past the limit."""
    old = item.attrs.get(name)
    if old is None:
        old = DynamoType({"N": "0"})  # as moto's AddExecutor
    item.attrs[name] = old + DynamoType({"N": number})


def add_integer(update_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DynamoHandler.update_item, applying the module docstring's shape itself; moto's own way for anything else."""

    def updated(self: Any) -> Any:
        body = self.body
        plan = planned(body, self.dynamodb_backend.tables)
        if plan is None:
            return update_item(self)
        try:
            add(*plan)
        except ItemSizeTooLarge:
            raise ItemSizeToUpdateTooLarge() from None
        # moto's answer for ReturnValues NONE: the item's JSON with ConsumedCapacity, its Attributes popped.
        # moto's DynamoResult of it (dynamo_to_dict of plain strings and a float gives the same dict) depends only
        # on the table's name: serialized once per table.
        table = body["TableName"]
        return Fixed({"ConsumedCapacity": {"TableName": table, "CapacityUnits": 0.5}}, ("add", table))

    return updated


_BODIES: dict[str, str] = {}
_BODIES_KEPT = 1024


def answer_body(table_name: str) -> str:
    """The body moto serializes for the planned update's answer: its ConsumedCapacity only,
    members in the output shape's order (TableName, CapacityUnits); kept per table."""
    body = _BODIES.get(table_name)
    if body is None:
        body = json.dumps({"ConsumedCapacity": {"TableName": table_name, "CapacityUnits": 0.5}})
        if len(_BODIES) >= _BODIES_KEPT:
            _BODIES.clear()
        _BODIES[table_name] = body
    return body
