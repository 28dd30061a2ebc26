"""DynamoDB's request limits and shape checks, answered as DynamoDB answers them (both profiles).

moto checks little of this: it stores a 1 MB item, takes a 200-item transaction, and answers a body that is
not JSON, or an attribute value that is not a {type: value} map, with a crash (HTTP 500 and a traceback).
`check` runs before moto sees a request and names the first problem as DynamoDB would: SerializationException
for a body that does not parse into the API's shapes, ValidationException for a limit or a rule. The limits
are DynamoDB's documented ones (developer guide, "Service, account, and table quotas").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from engine.server.faithful.attribute_values import BadValue, value_size
from engine.server.wire import TARGET_PREFIX, Refused

MAX_BODY_BYTES = 16 * 1024 * 1024  # DynamoDB: a request (e.g. BatchWriteItem) is at most 16 MB
MAX_ITEM_BYTES = 400 * 1024  # an item, names and values as DynamoDB counts them
MAX_EXPRESSION_BYTES = 4 * 1024  # each expression string
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
_EXPRESSION_MEMBERS = frozenset({*_EXPRESSIONS, "ExpressionAttributeNames", "ExpressionAttributeValues"})
_NAME_REF = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_REF = re.compile(r":[A-Za-z0-9_]+")


def operation(target: str) -> str:
    """The operation an X-Amz-Target names; Refused (UnknownOperationException) for anything else."""
    op = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
    if op not in OPERATIONS:
        shown = target[:80] or "(none)"
        raise Refused("UnknownOperationException", f"Unknown operation {shown}: the X-Amz-Target header names none")
    return op


def check(op: str, params: Any) -> None:
    """Raise Refused for the first shape or limit problem of a parsed request body; None when there is none."""
    if not isinstance(params, dict):
        raise Refused("SerializationException", "The request body is not a JSON object")
    # A parsed JSON body's strings are str itself: `in` and `type(...) is` below test a member without a call.
    for member in _REQUIRED.get(op, ()):
        if member not in params or params[member] is None:
            lower = member[0].lower() + member[1:]
            raise Refused(
                "ValidationException",
                f"1 validation error detected: Value null at '{lower}' failed to satisfy constraint: "
                "Member must not be null",
            )
    # A request without expressions (a plain PutItem, GetItem) skips their checks, which would find nothing: about
    # 30 calls a request.
    expressions = not params.keys().isdisjoint(_EXPRESSION_MEMBERS)
    for name in ("TableName", "IndexName", *_EXPRESSIONS) if expressions else ("TableName", "IndexName"):
        value = params[name] if name in params else None
        if value is not None and type(value) is not str:
            raise Refused("SerializationException", f"{name} must be a string, got {type(value).__name__}")
    if expressions:
        _check_expressions(params, op)
        names = params.get("ExpressionAttributeNames")
        if names is not None and not (isinstance(names, dict) and all(isinstance(v, str) for v in names.values())):
            raise Refused("SerializationException", "ExpressionAttributeNames must map names to strings")
        if names and "" in names.values():
            key = next(k for k, v in names.items() if v == "")
            raise Refused(
                "ValidationException",
                f"ExpressionAttributeNames contains invalid value: Empty attribute name for key {key[:100]}",
            )
        values = params.get("ExpressionAttributeValues")
        if values is not None:
            _check_map(values, "ExpressionAttributeValues")
    for name in ("Key", "ExclusiveStartKey"):
        if name in params:
            _check_map(params[name], name)
    if expressions:
        _check_references(params)
    if "Item" in params:
        size = _check_map(params["Item"], "Item")
        if size > MAX_ITEM_BYTES:
            raise Refused("ValidationException", "Item size has exceeded the maximum allowed size")
    if op == "CreateTable":
        _check_table_names(params)
    if op in ("TransactWriteItems", "TransactGetItems"):
        _check_transaction(params, op)
    elif op == "BatchWriteItem":
        _check_batch_write(params)
    elif op == "BatchGetItem":
        _check_batch_get(params)


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name in UTF-8 plus its value."""
    return _check_map(dict(item), "Item")


# -- internals ---------------------------------------------------------------------------------------------


def _check_expressions(params: Mapping[str, Any], where: str) -> None:
    for name in _EXPRESSIONS:
        value = params[name] if name in params else None
        if type(value) is str and len(value.encode()) > MAX_EXPRESSION_BYTES:
            raise Refused(
                "ValidationException",
                f"Invalid {name}: Expression size has exceeded the maximum allowed size; "
                f"expression size: {len(value.encode())}",
            )


def _check_references(params: Mapping[str, Any]) -> None:
    """Every #name and :value an expression uses is defined, and every one defined is used (DynamoDB refuses
    both; moto crashes on the first)."""
    # JSON's strings are str itself: `type(...) is str` and `in` test them without a call each.
    expressions = tuple([(name, params[name]) for name in _EXPRESSIONS if name in params and type(params[name]) is str])
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    if not expressions and not names and not values:
        return
    if type(names) is dict and type(values) is dict:  # the verdict depends on the texts and the keys only
        refusal = _cached_references_refusal(expressions, frozenset(names), frozenset(values))
    else:
        refusal = _references_refusal(expressions, names, values)
    if refusal is not None:
        raise Refused("ValidationException", refusal)


def _references_refusal(expressions: tuple[tuple[str, str], ...], names: Any, values: Any) -> str | None:
    """_check_references' refusal message, None when there is none."""
    used_names: set[str] = set()
    used_values: set[str] = set()
    for member, text in expressions:
        for ref in _NAME_REF.findall(text):
            if ref not in names:
                return (
                    f"Invalid {member}: An expression attribute name used in the document path is not defined; "
                    f"attribute name: {ref}"
                )
            used_names.add(ref)
        for ref in _VALUE_REF.findall(text):
            if ref not in values:
                return (
                    f"Invalid {member}: An expression attribute value used in expression is not defined; "
                    f"attribute value: {ref}"
                )
            used_values.add(ref)
    unused_names = sorted(set(names) - used_names)
    if unused_names:
        return f"Value provided in ExpressionAttributeNames unused in expressions: keys: {{{', '.join(unused_names)}}}"
    unused_values = sorted(set(values) - used_values)
    if unused_values:
        return (
            f"Value provided in ExpressionAttributeValues unused in expressions: keys: {{{', '.join(unused_values)}}}"
        )
    return None


# The same expressions and keys come back on every call of a workload (about 15 Python calls a request saved).
_cached_references_refusal = functools.lru_cache(maxsize=1024)(_references_refusal)


def _check_map(value: Any, where: str) -> int:
    """Check a map of attribute values; return its size as DynamoDB counts an item's."""
    if type(value) is not dict:
        raise Refused("SerializationException", f"{where} must be a map of attribute values")
    if "" in value:  # moto stored it, and a GetItem answered a flattened item
        raise Refused("ValidationException", "Empty attribute name")
    size = 0
    for name, attribute in value.items():
        try:
            size += len(name.encode()) + value_size(attribute)
        except BadValue as bad:
            if bad.invalid and where == "ExpressionAttributeValues":
                raise Refused(bad.code, f"{where} contains invalid value: {bad.message} for key {name[:100]}") from None
            raise Refused(bad.code, bad.message.replace("{where}", f"{where}.{name}"[:120])) from None
    return size


_TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")


def _check_table_names(params: Mapping[str, Any]) -> None:
    """A new table's and its indexes' names as DynamoDB takes them (moto made a table called "h")."""
    indexes = [
        index.get("IndexName")
        for member in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes")
        for index in (params.get(member) or [])
        if isinstance(index, dict)
    ]
    for name in (params.get("TableName"), *indexes):
        if isinstance(name, str) and not _TABLE_NAME.fullmatch(name):
            raise Refused(
                "ValidationException",
                "Invalid table/index name.  Table/index names must be between 3 and 255 characters long, and may "
                "contain only the characters a-z, A-Z, 0-9, '_', '-', and '.'",
            )


def _check_item(item: Any, where: str) -> int:
    return _check_map(item, where)


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
        kind, body = next(iter(action.items()))
        for member in _ACTION_REQUIRED.get(kind, ()):
            if body.get(member) is None:  # moto ran a ConditionCheck without a condition, and passed it
                raise Refused(
                    "ValidationException",
                    f"1 validation error detected: Value null at 'transactItems.{i + 1}.member."
                    f"{_lower_first(kind)}.{_lower_first(member)}' failed to satisfy constraint: "
                    "Member must not be null",
                )
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


# The members DynamoDB's model requires in each action of a transaction (botocore's TransactWriteItem, TransactGetItem).
_ACTION_REQUIRED = {
    "ConditionCheck": ("Key", "TableName", "ConditionExpression"),
    "Put": ("Item", "TableName"),
    "Delete": ("Key", "TableName"),
    "Update": ("Key", "UpdateExpression", "TableName"),
    "Get": ("Key", "TableName"),
}


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


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
        if not requests:  # the model's WriteRequests: 1 to 25; moto answered 200 (DynamoDB Local's words)
            raise Refused(
                "ValidationException",
                f"The batch write request list for a table cannot be null or empty: {table[:255]}",
            )
        for i, request in enumerate(requests):
            if not isinstance(request, dict):
                raise Refused("SerializationException", f"RequestItems.{table[:100]}[{i}] must be a put or delete")
            given = [kind for kind in ("PutRequest", "DeleteRequest") if request.get(kind) is not None]
            if len(given) != 1:  # both: moto applied the put and dropped the delete; neither: nothing to do
                raise Refused(
                    "ValidationException",
                    "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the "
                    f"supported datatypes (RequestItems.{table[:100]}[{i}] must hold one PutRequest or one "
                    "DeleteRequest)",
                )
            body = request[given[0]]
            if not isinstance(body, dict):
                raise Refused("SerializationException", f"RequestItems.{table[:100]}[{i}] must be a put or delete")
            member = "Item" if given[0] == "PutRequest" else "Key"
            if body.get(member) is None:
                raise Refused(
                    "ValidationException",
                    f"1 validation error detected: Value null at 'requestItems.{table[:100]}.member.{i + 1}."
                    f"member.{_lower_first(given[0])}.{member.lower()}' failed to satisfy constraint: "
                    "Member must not be null",
                )
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
        if not keys:  # the model's KeyList: 1 to 100
            raise Refused(
                "ValidationException",
                "1 validation error detected: Value '[]' at 'requestItems.keys' failed to satisfy constraint: "
                "Member must have length greater than or equal to 1",
            )
        for key in keys:
            _check_map(key, "Keys")
        count += len(keys)
    if count > MAX_BATCH_GET:
        raise Refused("ValidationException", f"Too many items requested for the BatchGetItem call ({count} > 100)")
