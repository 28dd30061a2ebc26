"""A plain PutItem or GetItem (fast_item.py) or a counter's UpdateItem ADD (fast_add.py) that succeeds, answered
without moto's handler (fastpath.DirectDynamo).

The short way (short_way.py) still sets up a DynamoHandler per request, walks the body through the input shape and
goes through moto's call_action (authorization, dispatch by name, serialization, request id, CRC): about a third of
a plain PutItem's work. For a body that walk gives back unchanged (known members, none null, values of strings,
numbers and booleans: no binary to decode) and a request that succeeds, the same steps have one outcome each:
the region, access key and account found as the short way finds them, the write or read done as fast_item does
it, and moto's answer: status 200, its headers in its order (content type, server, request id, CRC) and body.
A condition that fails is answered as moto answers it (ConditionalCheckFailedException, through moto's own
functions). Anything else that would fail or differ (a condition refused, another type, a missing backend or
table) is left untouched, before any change, and returns None: the short way then answers it, moto's errors
included.
"""

from __future__ import annotations

import binascii
import json
from typing import Any

import moto.core.responses as core_responses
from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.dynamodb.comparisons import create_condition_expression_parser
from moto.dynamodb.exceptions import ConditionalCheckFailed
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.responses import DynamoHandler, validate_attributes_used
from moto.utilities.aws_headers import gen_amz_crc32

from engine.server.faithful.moto_fixes import item_size as moto_item_size
from engine.server.fast import add as fast_add
from engine.server.fast import item as fast_item
from engine.server.fast import setup as fast_setup
from engine.server.fast.request import _URL_KEYS, ServerRequest
from engine.server.wire import JSON_TYPE

OPERATIONS = frozenset({"PutItem", "GetItem", "UpdateItem"})
_EMPTY = "{}"
_NOT_FOUND = "AKIAEXAMPLE"  # moto's access key when the Authorization header names none
_RAW_KEY_TYPES = ("S", "N")  # key types whose JSON value is what the input shape's walk gives (not "B")

_FAILED = "condition failed"  # _put's answer when the condition does not hold (no body is this text)

_new_dynamo = object.__new__
_new_item = Item.__new__
_new_attrs = dict.__new__
_store = dict.__setitem__

Answer = tuple[int, dict[str, Any], str]


def answer(op: str, environ: dict[str, Any], params: dict[str, Any]) -> Answer | None:
    """moto's (status, headers, body) for a plain PutItem, GetItem or counter ADD that succeeds, or a plain PutItem
    whose condition fails; None, with nothing changed, to take the short way."""
    if settings.PRETTIFY_RESPONSES or None in params.values():  # the walk drops null members
        return None
    full_url = ServerRequest._urls.get(tuple(map(environ.get, _URL_KEYS)))
    if full_url is None:
        return None
    authorization = environ.get("HTTP_AUTHORIZATION")
    region = fast_setup.region_from(DynamoHandler, full_url, environ.get("HTTP_USER_AGENT", ""), authorization)
    access_key = _NOT_FOUND
    if authorization is not None:
        match = DynamoHandler.access_key_regex.search(authorization)
        if match:
            access_key = match.group(1)
    if "HTTP_X_MOTO_ACCOUNT_ID" in environ:
        account = str(environ["HTTP_X_MOTO_ACCOUNT_ID"])
    else:
        account = fast_setup.account_of(access_key)
    backends = dict.get(dynamodb_backends, account)
    backend = dict.get(backends, region) if backends is not None else None
    if backend is None:  # moto creates it: its own way
        return None
    body = (
        _put(backend, params)
        if op == "PutItem"
        else _get(backend, params)
        if op == "GetItem"
        else _add(backend, params)
    )
    if body is None:
        return None
    if body is _FAILED:
        return _failed(account, access_key, region)
    # What moto does for every request past its parse, in its order: the IAM visit, the unauthenticated request
    # count (routable: INITIAL_NO_AUTH_ACTION_COUNT is infinite), the request id, the CRC of the body.
    fast_setup.mark_visited(account, access_key, "dynamodb", region)
    ActionAuthenticatorMixin.request_count += 1
    headers = {"Content-Type": JSON_TYPE, "server": "amazon.com"}
    core_responses.gen_amzn_requestid_long(headers)
    headers["x-amz-crc32"] = str(binascii.crc32(body.encode("utf-8")))
    return 200, headers, body


def _failed(account: str, access_key: str, region: str) -> Answer:
    """moto's answer to a PutItem whose condition failed: call_action's for the HTTPException its put_item raised,
    then amz_crc32's (their steps, with their functions)."""
    fast_setup.mark_visited(account, access_key, "dynamodb", region)
    ActionAuthenticatorMixin.request_count += 1
    error = ConditionalCheckFailed()
    raised: dict[str, Any] = dict(error.get_headers() or [])
    raised["status"] = error.code
    status, headers, body = DynamoHandler._transform_response({"server": "amazon.com"}, (error.description, raised))
    headers, body = DynamoHandler._enrich_response(headers, body)
    out = dict(headers)
    if "status" in out:
        out["status"] = str(out["status"])
    gen_amz_crc32(body, out)
    return status, out, body


def _put(backend: Any, params: dict[str, Any]) -> str | None:
    """A plain PutItem written, and its answer's body; None, with nothing changed, when it would not succeed."""
    if (
        not params.keys() <= fast_item.PUT_MEMBERS
        or params.get("ReturnValues", "NONE") != "NONE"
        or params.get("ReturnConsumedCapacity", "NONE") != "NONE"
    ):
        return None
    table = fast_item.plain_table(backend, params.get("TableName"))
    item: Any = params.get("Item")
    if table is None or not fast_item.plain_item(item, table):
        return None
    condition = params.get("ConditionExpression")
    op = None
    if condition is not None:
        names = params.get("ExpressionAttributeNames", {})
        values = params.get("ExpressionAttributeValues")
        if type(condition) is not str or not condition or not _plain_values(values) or not _plain_names(names):
            return None
        try:
            parser = create_condition_expression_parser(condition, names, values or {})
            op = parser.parse()
            validate_attributes_used(names, parser.expr_attr_names_found)
        except Exception:  # refused or crashed: the short way gives moto's answer
            return None
    elif "ExpressionAttributeNames" in params or "ExpressionAttributeValues" in params:
        return None
    hash_value = _dynamo(item[table.hash_key_attr])
    range_value = None if table.range_key_attr is None else _dynamo(item[table.range_key_attr])
    current = table.get_item(hash_value, range_value)
    if op is not None:
        try:
            if not op.expr(current):
                return _FAILED
        except Exception:
            return None
    written = _item(hash_value, range_value, item)
    if range_value is not None:
        table.items[hash_value][range_value] = written
    else:
        table.items[hash_value] = written
    return _EMPTY


def _dynamo(value: dict[str, Any]) -> DynamoType:
    """DynamoType(value) of a plain value: its type and value set, without __init__'s tests for a list or map."""
    for kind, inner in value.items():
        made = _new_dynamo(DynamoType)
        made.type, made.value = kind, inner
        return made
    raise ValueError("an attribute value without a type")  # plain_item lets none through


def _item(hash_value: DynamoType, range_value: DynamoType | None, attrs: dict[str, Any]) -> Item:
    """Item(hash_value, range_value, attrs) of a plain item whose size limits.check has counted (a PutItem's: the
    server sets moto_item_size.request_sized around it): the same objects, set without a call per attribute."""
    if not moto_item_size.request_sized:
        return Item(hash_value, range_value, attrs)
    item: Any = _new_item(Item)  # BaseModel.__new__: moto tracks every instance
    item.hash_key, item.range_key = hash_value, range_value
    stored = item.attrs = _new_attrs(LimitedSizeDict)
    for name, value in attrs.items():
        for kind, inner in value.items():
            made = _new_dynamo(DynamoType)
            made.type, made.value = kind, inner
            _store(stored, name, made)  # what the size-checked __setitem__ does while request_sized is set
    return item


def _add(backend: Any, params: dict[str, Any]) -> str | None:
    """The counters' UpdateItem (fast_add.py) applied, and its answer's body; None when the short way must answer
    it (another shape, a key of binary type, an item that would grow past the limit: nothing changed then)."""
    plan = fast_add.planned(params, backend.tables, _RAW_KEY_TYPES)
    if plan is None:
        return None
    try:
        fast_add.add(*plan)
    except Exception:  # past the size limit, a sum moto refuses: nothing changed, and moto's error the short way's
        return None
    return fast_add.answer_body(params["TableName"])


def _get(backend: Any, params: dict[str, Any]) -> str | None:
    """A GetItem of a table's key read, and its answer's body; None when the short way must answer it."""
    if not params.keys() <= fast_item.GET_MEMBERS or params.get("ReturnConsumedCapacity", "NONE") != "NONE":
        return None
    name, key = params.get("TableName"), params.get("Key")
    table = backend.tables.get(name) if type(name) is str else None
    if table is None or type(key) is not dict:
        return None
    hash_name, range_name = table.hash_key_attr, table.range_key_attr
    if len(key) != (1 if range_name is None else 2) or not fast_item.key_given(key, hash_name, _RAW_KEY_TYPES):
        return None
    if range_name is not None and not fast_item.key_given(key, range_name, _RAW_KEY_TYPES):
        return None
    item = table.get_item(_dynamo(key[hash_name]), None if range_name is None else _dynamo(key[range_name]))
    if item is None:
        return _EMPTY
    attrs = fast_item.plain_attrs(item)
    return None if attrs is None else json.dumps({"Item": attrs})


def _plain_values(values: Any) -> bool:
    """True when ExpressionAttributeValues is absent, or moto takes it as it is (its _get_expr_attr_values and the
    input shape's walk): not empty, each name starting with ":", each value plain."""
    if values is None:
        return True
    if type(values) is not dict or not values:
        return False
    for placeholder, value in values.items():
        if type(placeholder) is not str or not placeholder.startswith(":") or not fast_item.plain_value(value):
            return False
    return True


def _plain_names(names: Any) -> bool:
    """True when ExpressionAttributeNames is a map of strings (what the input shape's walk gives back as it is)."""
    if type(names) is not dict:
        return False
    for value in names.values():
        if type(value) is not str:
            return False
    return True
