"""DynamoDB's request limits and shape checks, answered as DynamoDB answers them (both profiles).

moto checks little of this: it stores a 1 MB item, takes a 200-item transaction, and answers a body that is
not JSON, or an attribute value that is not a {type: value} map, with a crash (HTTP 500 and a traceback).
`check` runs before moto sees a request and names the first problem as DynamoDB would: SerializationException
for a body that does not parse into the API's shapes, ValidationException for a limit or a rule. The limits
are DynamoDB's documented ones (developer guide, "Service, account, and table quotas").
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any

MAX_BODY_BYTES = 16 * 1024 * 1024  # DynamoDB: a request (e.g. BatchWriteItem) is at most 16 MB
MAX_ITEM_BYTES = 400 * 1024  # an item, names and values as DynamoDB counts them
MAX_EXPRESSION_BYTES = 4 * 1024  # each expression string
MAX_NESTING = 32  # levels of lists and maps inside an attribute
MAX_TRANSACT_ITEMS = 100  # TransactWriteItems / TransactGetItems actions
MAX_TRANSACT_BYTES = 4 * 1024 * 1024  # the items of one transaction together
MAX_BATCH_WRITE = 25  # BatchWriteItem requests over all tables
MAX_BATCH_GET = 100  # BatchGetItem keys over all tables

OPERATIONS = frozenset(
    {
        "BatchExecuteStatement",
        "BatchGetItem",
        "BatchWriteItem",
        "CreateBackup",
        "CreateGlobalTable",
        "CreateTable",
        "DeleteBackup",
        "DeleteItem",
        "DeleteResourcePolicy",
        "DeleteTable",
        "DescribeBackup",
        "DescribeContinuousBackups",
        "DescribeContributorInsights",
        "DescribeEndpoints",
        "DescribeExport",
        "DescribeGlobalTable",
        "DescribeGlobalTableSettings",
        "DescribeImport",
        "DescribeKinesisStreamingDestination",
        "DescribeLimits",
        "DescribeTable",
        "DescribeTableReplicaAutoScaling",
        "DescribeTimeToLive",
        "ExecuteStatement",
        "ExecuteTransaction",
        "ExportTableToPointInTime",
        "GetItem",
        "GetResourcePolicy",
        "ImportTable",
        "ListBackups",
        "ListContributorInsights",
        "ListExports",
        "ListGlobalTables",
        "ListImports",
        "ListTables",
        "ListTagsOfResource",
        "PutItem",
        "PutResourcePolicy",
        "Query",
        "RestoreTableFromBackup",
        "RestoreTableToPointInTime",
        "Scan",
        "TagResource",
        "TransactGetItems",
        "TransactWriteItems",
        "UntagResource",
        "UpdateContinuousBackups",
        "UpdateContributorInsights",
        "UpdateGlobalTable",
        "UpdateGlobalTableSettings",
        "UpdateItem",
        "UpdateKinesisStreamingDestination",
        "UpdateTable",
        "UpdateTableReplicaAutoScaling",
        "UpdateTimeToLive",
    }
)
_TARGET_PREFIX = "DynamoDB_20120810."
_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "FilterExpression",
    "KeyConditionExpression",
)
# Members DynamoDB requires of each item operation ("Value null at 'tableName' failed to satisfy constraint").
_REQUIRED: dict[str, tuple[str, ...]] = {
    "PutItem": ("TableName", "Item"),
    "GetItem": ("TableName", "Key"),
    "DeleteItem": ("TableName", "Key"),
    "UpdateItem": ("TableName", "Key"),
    "Query": ("TableName",),
    "Scan": ("TableName",),
    "TransactWriteItems": ("TransactItems",),
    "TransactGetItems": ("TransactItems",),
    "BatchWriteItem": ("RequestItems",),
    "BatchGetItem": ("RequestItems",),
    "CreateTable": ("TableName",),
    "DeleteTable": ("TableName",),
    "DescribeTable": ("TableName",),
}
_NAME_REF = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_REF = re.compile(r":[A-Za-z0-9_]+")
_SCALARS = frozenset({"S", "N", "B", "BOOL", "NULL"})
_SETS = frozenset({"SS", "NS", "BS"})


class Refused(Exception):
    """A request DynamoDB would refuse: its error code (no namespace), message and HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.extra = extra or {}  # more members of the error body, e.g. CancellationReasons


def operation(target: str) -> str:
    """The operation an X-Amz-Target names; Refused (UnknownOperationException) for anything else."""
    op = target[len(_TARGET_PREFIX) :] if target.startswith(_TARGET_PREFIX) else ""
    if op not in OPERATIONS:
        shown = target[:80] or "(none)"
        raise Refused("UnknownOperationException", f"Unknown operation {shown}: the X-Amz-Target header names none")
    return op


def check(op: str, params: Any) -> None:
    """Raise Refused for the first shape or limit problem of a parsed request body; None when there is none."""
    if not isinstance(params, dict):
        raise Refused("SerializationException", "The request body is not a JSON object")
    for member in _REQUIRED.get(op, ()):
        if params.get(member) is None:
            lower = member[0].lower() + member[1:]
            raise Refused(
                "ValidationException",
                f"1 validation error detected: Value null at '{lower}' failed to satisfy constraint: "
                "Member must not be null",
            )
    for name in ("TableName", "IndexName", *_EXPRESSIONS):
        value = params.get(name)
        if value is not None and not isinstance(value, str):
            raise Refused("SerializationException", f"{name} must be a string, got {type(value).__name__}")
    _check_expressions(params, op)
    names = params.get("ExpressionAttributeNames")
    if names is not None and not (isinstance(names, dict) and all(isinstance(v, str) for v in names.values())):
        raise Refused("SerializationException", "ExpressionAttributeNames must map names to strings")
    values = params.get("ExpressionAttributeValues")
    if values is not None:
        _check_map(values, "ExpressionAttributeValues")
    for name in ("Key", "ExclusiveStartKey"):
        if name in params:
            _check_map(params[name], name)
    _check_references(params)
    if "Item" in params:
        size = _check_item(params["Item"], "Item")
        if size > MAX_ITEM_BYTES:
            raise Refused("ValidationException", "Item size has exceeded the maximum allowed size")
    if op in ("TransactWriteItems", "TransactGetItems"):
        _check_transaction(params, op)
    elif op == "BatchWriteItem":
        _check_batch_write(params)
    elif op == "BatchGetItem":
        _check_batch_get(params)


def install() -> None:
    """moto refuses items above 405,000 bytes (its guess at 400 KB); DynamoDB's limit is 400 KB = 409,600
    bytes. Requests are checked here first, so moto's own check only has to catch an UpdateItem that grows an
    item past the limit: give it DynamoDB's figure."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models import dynamo_type

    if getattr(dynamo_type.LimitedSizeDict, "_ddblab_limit", False):
        return

    def size_of(value: Any) -> int:
        return int(value.size()) if type(value) is dynamo_type.DynamoType else len(str(value).encode())

    def setitem(self: dict[str, Any], key: str, value: Any) -> None:
        total = len(key.encode()) + size_of(value)
        for k, v in self.items():  # a loop, not sum() over a generator: this runs for every attribute written
            if k != key:
                total += len(k.encode()) + size_of(v)
        if total > MAX_ITEM_BYTES:
            raise ItemSizeTooLarge
        dict.__setitem__(self, key, value)

    dynamo_type.LimitedSizeDict.__setitem__ = setitem  # type: ignore[method-assign]
    dynamo_type.LimitedSizeDict._ddblab_limit = True  # type: ignore[attr-defined]


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name in UTF-8 plus its value."""
    return _check_map(dict(item), "Item")


# -- internals ---------------------------------------------------------------------------------------------


def _check_expressions(params: Mapping[str, Any], where: str) -> None:
    for name in _EXPRESSIONS:
        value = params.get(name)
        if isinstance(value, str) and len(value.encode()) > MAX_EXPRESSION_BYTES:
            raise Refused(
                "ValidationException",
                f"Invalid {name}: Expression size has exceeded the maximum allowed size; "
                f"expression size: {len(value.encode())}",
            )


def _check_references(params: Mapping[str, Any]) -> None:
    """Every #name and :value an expression uses is defined, and every one defined is used (DynamoDB refuses
    both; moto crashes on the first)."""
    expressions = [(name, params[name]) for name in _EXPRESSIONS if isinstance(params.get(name), str)]
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    if not expressions and not names and not values:
        return
    used_names: set[str] = set()
    used_values: set[str] = set()
    for member, text in expressions:
        for ref in _NAME_REF.findall(text):
            if ref not in names:
                raise Refused(
                    "ValidationException",
                    f"Invalid {member}: An expression attribute name used in the document path is not defined; "
                    f"attribute name: {ref}",
                )
            used_names.add(ref)
        for ref in _VALUE_REF.findall(text):
            if ref not in values:
                raise Refused(
                    "ValidationException",
                    f"Invalid {member}: An expression attribute value used in expression is not defined; "
                    f"attribute value: {ref}",
                )
            used_values.add(ref)
    unused_names = sorted(set(names) - used_names)
    if unused_names:
        raise Refused(
            "ValidationException",
            f"Value provided in ExpressionAttributeNames unused in expressions: keys: {{{', '.join(unused_names)}}}",
        )
    unused_values = sorted(set(values) - used_values)
    if unused_values:
        raise Refused(
            "ValidationException",
            f"Value provided in ExpressionAttributeValues unused in expressions: keys: {{{', '.join(unused_values)}}}",
        )


def _check_map(value: Any, where: str) -> int:
    """Check a map of attribute values; return its size as DynamoDB counts an item's."""
    if type(value) is not dict:
        raise Refused("SerializationException", f"{where} must be a map of attribute values")
    size = 0
    for name, attribute in value.items():
        try:
            size += len(name.encode()) + _value(attribute, 1)
        except _Bad as bad:
            if bad.invalid and where == "ExpressionAttributeValues":
                raise Refused(bad.code, f"{where} contains invalid value: {bad.message} for key {name[:100]}") from None
            raise bad.refused(f"{where}.{name}"[:120]) from None
    return size


def _check_item(item: Any, where: str) -> int:
    return _check_map(item, where)


class _Bad(Exception):
    """A bad attribute value somewhere below a top-level attribute; named once, when it is reported. `invalid`:
    a value DynamoDB cannot store (a number, a set), which it words its own way in ExpressionAttributeValues."""

    def __init__(self, code: str, message: str, invalid: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.invalid = invalid

    def refused(self, where: str) -> Refused:
        return Refused(self.code, self.message.replace("{where}", where))


def _value(value: Any, depth: int) -> int:
    """Check one attribute value (one {type: value} map, nested at most MAX_NESTING deep); return its size.
    Written for speed: it runs on every attribute of every request."""
    if type(value) is not dict or len(value) != 1:
        if type(value) is dict:
            raise _Bad("ValidationException", "Supplied AttributeValue at {where} must contain exactly one datatype")
        raise _Bad("SerializationException", "Supplied AttributeValue at {where} is not a {type: value} map")
    for kind, inner in value.items():
        if kind == "S":
            if type(inner) is str:
                return len(inner) if inner.isascii() else len(inner.encode())
        elif kind == "N":
            if type(inner) is str:
                _number(inner)
                return _number_size(inner)
        elif kind == "BOOL":
            if type(inner) is bool:
                return 1
        elif kind == "NULL":
            if inner is True:
                return 1
        elif kind == "M":
            if type(inner) is dict:
                if depth >= MAX_NESTING:
                    raise _Bad("ValidationException", "Nesting Levels have exceeded supported limits")
                return 3 + sum(1 + len(k.encode()) + _value(v, depth + 1) for k, v in inner.items())
        elif kind == "L":
            if type(inner) is list:
                if depth >= MAX_NESTING:
                    raise _Bad("ValidationException", "Nesting Levels have exceeded supported limits")
                return 3 + sum(1 + _value(v, depth + 1) for v in inner)
        elif kind == "B":
            if type(inner) is str and _is_base64(inner):
                return len(inner) * 3 // 4
        elif kind in _SETS:
            if type(inner) is list and all(type(v) is str for v in inner):
                _check_set(kind, inner)
                if kind == "SS":
                    return sum(len(v.encode()) for v in inner)
                if kind == "NS":
                    return sum(_number_size(v) for v in inner)
                return sum(len(v) * 3 // 4 for v in inner)
        else:
            raise _Bad("SerializationException", f"Unknown AttributeValue type {kind[:20]!r} at {{where}}")
        raise _Bad("SerializationException", f"Unexpected value for AttributeValue type {kind} at {{where}}")
    return 0  # unreachable: one item


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INVALID = "One or more parameter values were invalid: "
_SET_NAMES = {"SS": "string", "NS": "number", "BS": "binary"}


_OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
_UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
_NOT_A_NUMBER = "A value provided cannot be converted into a number"


def _number(text: str) -> tuple[str, str, int]:
    """The value of a Number DynamoDB can store, as (sign, significant digits, magnitude) with the value
    0.d1d2... x 10^magnitude (zero is ("", "", 0)): its syntax, at most 38 significant digits, a magnitude from
    1E-130 to under 1E+126. moto checks only some of this, and nothing in ExpressionAttributeValues."""
    if not _NUMBER.fullmatch(text):
        raise _Bad("ValidationException", _NOT_A_NUMBER, invalid=True)
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent = text.lstrip("+-").lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    significant = (whole + fraction).strip("0")
    if len(significant) > 38:
        raise _Bad("ValidationException", "DynamoDB only supports precision up to 38 digits", invalid=True)
    if len(exponent.lstrip("+-").lstrip("0")) > 9:  # past any magnitude (and past what int() parses quickly)
        if not significant:
            raise _Bad("ValidationException", _NOT_A_NUMBER, invalid=True)
        raise _Bad("ValidationException", _UNDERFLOW if exponent[0] == "-" else _OVERFLOW, invalid=True)
    if not significant:
        return ("", "", 0)
    integer = whole.lstrip("0")
    zeros_after_point = 0 if integer else len(fraction) - len(fraction.lstrip("0"))
    magnitude = (int(exponent) if exponent else 0) + len(integer) - zeros_after_point
    if magnitude > 126:
        raise _Bad("ValidationException", _OVERFLOW, invalid=True)
    if magnitude < -129:
        raise _Bad("ValidationException", _UNDERFLOW, invalid=True)
    return (sign, significant, magnitude)


def _check_set(kind: str, members: list[str]) -> None:
    """DynamoDB's sets are never empty and never hold one member twice (numbers by value: 1 and 1.0 are one)."""
    if not members:
        raise _Bad("ValidationException", f"{_INVALID}An {_SET_NAMES[kind]} set  may not be empty", invalid=True)
    if kind == "NS":
        distinct = len({_number(m) for m in members})
    elif kind == "BS":
        if not all(_is_base64(m) for m in members):
            raise _Bad("SerializationException", "Unexpected value for AttributeValue type BS at {where}")
        distinct = len({base64.b64decode(m) for m in members})  # "AA==" and "AB==" are one byte
    else:
        distinct = len(set(members))
    if distinct < len(members):
        raise _Bad("ValidationException", f"{_INVALID}Input collection contains duplicates", invalid=True)


def _number_size(text: str) -> int:
    if len(text) < 3:
        return 2  # 1 or 2 characters: at most 2 significant digits, a byte for them and one more
    digits = text.lstrip("+-").replace(".", "").split("e")[0].split("E")[0].strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def _check_transaction(params: Mapping[str, Any], op: str) -> None:
    actions = params.get("TransactItems")
    if not isinstance(actions, list):
        raise Refused("SerializationException", "TransactItems must be a list")
    if not 1 <= len(actions) <= MAX_TRANSACT_ITEMS:
        raise Refused(
            "ValidationException",
            f"1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must "
            f"have length less than or equal to {MAX_TRANSACT_ITEMS} and greater than or equal to 1 "
            f"(got {len(actions)})",
        )
    total = 0
    for i, action in enumerate(actions):
        if not isinstance(action, dict) or len(action) != 1 or not isinstance(next(iter(action.values())), dict):
            raise Refused("SerializationException", f"TransactItems[{i}] must name exactly one action")
        body = next(iter(action.values()))
        for name in ("TableName", *_EXPRESSIONS):
            if body.get(name) is not None and not isinstance(body.get(name), str):
                raise Refused("SerializationException", f"TransactItems[{i}].{name} must be a string")
        _check_expressions(body, op)
        for name in ("Key", "ExpressionAttributeValues"):
            if name in body:
                _check_map(body[name], f"TransactItems[{i}].{name}")
        _check_references(body)
        if "Item" in body:
            size = _check_item(body["Item"], f"TransactItems[{i}].Item")
            if size > MAX_ITEM_BYTES:
                raise Refused("ValidationException", "Item size has exceeded the maximum allowed size")
            total += size
    if total > MAX_TRANSACT_BYTES:
        raise Refused("ValidationException", "Transaction request cannot exceed 4 MB of item data")


def _requests(params: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    items = params.get("RequestItems")
    if not isinstance(items, dict):
        raise Refused("SerializationException", "RequestItems must be a map from table names")
    yield from items.items()


def _check_batch_write(params: Mapping[str, Any]) -> None:
    count = 0
    for table, requests in _requests(params):
        if not isinstance(requests, list):
            raise Refused("SerializationException", f"RequestItems.{table[:100]} must be a list")
        for i, request in enumerate(requests):
            body = (request.get("PutRequest") or request.get("DeleteRequest")) if isinstance(request, dict) else None
            if not isinstance(body, dict):
                raise Refused("SerializationException", f"RequestItems.{table[:100]}[{i}] must be a put or delete")
            if "Item" in body and _check_item(body["Item"], "Item") > MAX_ITEM_BYTES:
                raise Refused("ValidationException", "Item size has exceeded the maximum allowed size")
            if "Key" in body:
                _check_map(body["Key"], "Key")
        count += len(requests)
    if count > MAX_BATCH_WRITE:
        raise Refused(
            "ValidationException",
            f"1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must "
            f"satisfy constraint: [Member must have length less than or equal to {MAX_BATCH_WRITE}] (got {count})",
        )


def _check_batch_get(params: Mapping[str, Any]) -> None:
    count = 0
    for table, request in _requests(params):
        keys = request.get("Keys") if isinstance(request, dict) else None
        if not isinstance(keys, list):
            raise Refused("SerializationException", f"RequestItems.{table[:100]}.Keys must be a list")
        for key in keys:
            _check_map(key, "Keys")
        count += len(keys)
    if count > MAX_BATCH_GET:
        raise Refused("ValidationException", f"Too many items requested for the BatchGetItem call ({count} > 100)")
