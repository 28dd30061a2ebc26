"""Key attributes of the wrong type, refused as DynamoDB refuses them, in both profiles: moto crashed with a 500
on a map, list or set as a key value (it hashes the key) and served a key of the wrong scalar type as a key that
is not there; a Query's key condition with a value of the wrong type it answered with no items, or with a parser
error for a sort key condition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from moto.dynamodb.parsing.key_condition_expression import parse_expression

from engine.server.faithful.limits import Refused
from engine.server.moto_store import moto_table

KEY_MISMATCH = "The provided key element does not match the schema"
CONDITION_MISMATCH = "One or more parameter values were invalid: Condition parameter type does not match schema type"
_KEYED = frozenset(
    {"GetItem", "DeleteItem", "UpdateItem", "PutItem", "BatchGetItem", "BatchWriteItem"}
    | {"TransactGetItems", "TransactWriteItems"}
)


def check(op: str, params: dict[str, Any], region: str) -> None:
    """Raise Refused when a request names an item by a key attribute of another type than its table's. A
    request whose table or shape is wrong is left to moto, which refuses it."""
    if op not in _KEYED and op != "Query":
        return
    try:
        if op == "Query":
            _check_query(params, region)
        else:
            _check(op, params, region)
    except Refused:
        raise
    except Exception:  # a body of another shape than the API's: moto refuses it with DynamoDB's words
        return


# The one-item operations: the member naming their item, and whether it is a whole item.
_ONE_ITEM = {"GetItem": ("Key", False), "DeleteItem": ("Key", False), "UpdateItem": ("Key", False)}
_ONE_ITEM["PutItem"] = ("Item", True)


def _check(op: str, params: dict[str, Any], region: str) -> None:
    one = _ONE_ITEM.get(op)
    # A one-item request's names without _named's generator (its calls, on every request).
    named = ((params.get("TableName"), params.get(one[0]), one[1]),) if one is not None else _named(op, params)
    for table_name, attrs, is_item in named:
        table = moto_table(region, table_name)
        if table is None or not isinstance(attrs, dict):
            continue
        for name, wanted in ((table.hash_key_attr, table.hash_key_type), (table.range_key_attr, table.range_key_type)):
            value = attrs.get(name) if name else None
            if value is None:
                continue  # missing: moto refuses it with DynamoDB's words
            given = _type_of(value)
            if given != wanted:
                if is_item:
                    raise Refused(
                        "ValidationException",
                        "One or more parameter values were invalid: Type mismatch for key "
                        f"{name} expected: {wanted} actual: {given or 'none'}",
                    )
                raise Refused("ValidationException", KEY_MISMATCH)
        if is_item:
            _check_index_keys(table, attrs)


def _check_query(params: dict[str, Any], region: str) -> None:
    """A Query's key condition values against the types of the keys it names, table's or index's, in DynamoDB's
    words (checked against DynamoDB Local: an operand type first, then the schema's type)."""
    table = moto_table(region, params.get("TableName"))
    if table is None:
        return
    defined = {a.get("AttributeName"): a.get("AttributeType") for a in table.attr or []}
    index_name = params.get("IndexName")
    if index_name:
        index = next((i for i in table.indexes + table.global_indexes if i.name == index_name), None)
        if index is None:
            return  # moto names the indexes there are
        schema = index.schema
    else:
        schema = table.schema
    if params.get("KeyConditionExpression"):
        hashes, ranges, _ = parse_expression(
            key_condition_expression=params["KeyConditionExpression"],
            expression_attribute_values=params.get("ExpressionAttributeValues") or {},
            expression_attribute_names=params.get("ExpressionAttributeNames") or {},
            schema=schema,
        )
        conditions = [(name, "=", [value]) for name, value in hashes] + list(ranges)
    else:
        conditions = [
            (name, str(condition.get("ComparisonOperator")), condition.get("AttributeValueList") or [])
            for name, condition in (params.get("KeyConditions") or {}).items()
        ]
    keys = {key["AttributeName"] for key in schema}
    for name, comparison, values in conditions:
        if name not in keys:
            continue  # not a key: moto refuses it with DynamoDB's words
        types = [_type_of(v) for v in values]
        if comparison.upper() == "BETWEEN" and len(set(types)) > 1:
            low, high = (_operand(v) for v in values[:2])
            raise Refused(
                "ValidationException",
                "Invalid KeyConditionExpression: The BETWEEN operator requires same data type for lower and upper "
                f"bounds; lower bound operand: {low}, upper bound operand: {high}",
            )
        if comparison.upper() == "BEGINS_WITH" and types and types[0] not in ("S", "B"):
            raise Refused(
                "ValidationException",
                "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or "
                f"function: begins_with, operand type: {types[0] or 'none'}",
            )
        if any(t != defined.get(name) for t in types):
            raise Refused("ValidationException", CONDITION_MISMATCH)


def _type_of(value: Any) -> str | None:
    """An attribute value's type ("S", "M", ...); None for anything that is not one typed value."""
    if type(value) is dict and len(value) == 1:  # a parsed JSON body's objects are dicts
        for kind in value:  # its one key, without next(iter(...))'s two calls: this runs for every key of every request
            return kind
    return None


def _operand(value: Any) -> str:
    """An operand as DynamoDB prints it in this message: {N: 0,}."""
    kind = _type_of(value)
    return f"{{{kind}: {value[kind]},}}" if kind else str(value)


def _check_index_keys(table: Any, item: dict[str, Any]) -> None:
    """An item whose index key attribute has another type than its definition is refused (moto stored it, and a
    Scan of the index then crashed sorting it against the others)."""
    indexes = table.indexes + table.global_indexes
    if not indexes:
        return
    defined = {a.get("AttributeName"): a.get("AttributeType") for a in table.attr or []}
    for index in indexes:
        for name in index.schema_key_attrs:
            value = item.get(name)
            if value is None:
                continue  # an item without the attribute is left out of the index
            given = _type_of(value)
            if given != defined.get(name):
                raise Refused(
                    "ValidationException",
                    "One or more parameter values were invalid: Type mismatch for Index Key "
                    f"{name} Expected: {defined.get(name)} Actual: {given or 'none'} IndexName: {index.name}",
                )


def _named(op: str, params: dict[str, Any]) -> Iterator[tuple[Any, Any, bool]]:
    """(table name, key or item attributes, whether they are a whole item) of everything the request names."""
    if op in ("GetItem", "DeleteItem", "UpdateItem"):
        yield params.get("TableName"), params.get("Key"), False
    elif op == "PutItem":
        yield params.get("TableName"), params.get("Item"), True
    elif op == "BatchGetItem":
        for name, asked in _items(params.get("RequestItems")):
            for key in asked.get("Keys") or [] if isinstance(asked, dict) else []:
                yield name, key, False
    elif op == "BatchWriteItem":
        for name, requests in _items(params.get("RequestItems")):
            for request in requests if isinstance(requests, list) else []:
                if isinstance(request, dict):
                    if isinstance(request.get("PutRequest"), dict):
                        yield name, request["PutRequest"].get("Item"), True
                    if isinstance(request.get("DeleteRequest"), dict):
                        yield name, request["DeleteRequest"].get("Key"), False
    else:  # TransactGetItems, TransactWriteItems
        for action in params.get("TransactItems") or []:
            for kind, body in action.items() if isinstance(action, dict) else []:
                if isinstance(body, dict):
                    yield body.get("TableName"), body.get("Item" if kind == "Put" else "Key"), kind == "Put"


def _items(value: Any) -> Any:
    return value.items() if isinstance(value, dict) else ()
