"""Render boto3 DynamoDB calls in the walkthrough "call-log" format.

The format is the one printed by the DynamoDB patterns guide (seed 000), e.g.::

    >>> UpdateItem p22-conditional-writes
        key:        {PK: 'USER#alice', SK: 'PROFILE'}
        condition:  credits >= 7
        update:     SET credits = credits - 7
        ReturnValuesOnConditionCheckFailure: ALL_OLD

    === Item at failure time ===
    {...json...}

Expressions are shown with their placeholders already substituted, because a
reader wants to see ``credits >= 7``, not ``credits >= :a`` plus a value map.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, TextIO

__all__ = ["NO_RESULT", "CallLog", "format_request", "format_result", "format_value", "inline_expression"]


class _NoResult:
    def __repr__(self) -> str:
        return "NO_RESULT"


NO_RESULT: Any = _NoResult()
"""Sentinel for a result heading without a value (``=== Ticket sale 1: sold ===``)."""

_PLACEHOLDER = re.compile(r"([#:][A-Za-z0-9_]+)")
_INDENT = "    "

# Shown after key/item/condition/update/filter/projection, in this order; the
# seed's Query prints IndexName before ConsistentRead.
_EXTRAS = (
    "IndexName",
    "ConsistentRead",
    "ScanIndexForward",
    "Select",
    "Limit",
    "ExclusiveStartKey",
    "Segment",
    "TotalSegments",
    "ReturnValues",
    "ReturnValuesOnConditionCheckFailure",
)
# Consumed elsewhere (inlined or structural), or noise. ClientRequestToken is
# hidden because the seed's transactions pass one but its call log never shows it.
_HIDDEN = {
    "TableName",
    "Key",
    "Item",
    "ConditionExpression",
    "UpdateExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
    "ExpressionAttributeNames",
    "ExpressionAttributeValues",
    "TransactItems",
    "RequestItems",
    "ClientRequestToken",
    "ReturnConsumedCapacity",
    "ReturnItemCollectionMetrics",
}


def format_value(value: Any) -> str:
    """Render a plain (resource-style) Python value the way the seed does: ``{PK: 'x', n: 10}``."""
    # Every recorded call is formatted, on the client thread, so the common types are tried first by exact type
    # (an isinstance against the Mapping ABC costs more than the rest of a small key).
    kind = value.__class__
    if kind is str:
        return _quote(value)
    if kind is int:
        return str(value)
    if kind is dict:
        return "{" + ", ".join([f"{k}: {format_value(v)}" for k, v in value.items()]) + "}"
    if value is None or kind is bool:
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        # DynamoDB hands numbers back as Decimal('10') or Decimal('1.50'); show them as 10 and 1.5.
        return str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (set, frozenset)):
        return format_value(_sorted(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value))
    return repr(value) if isinstance(value, float) else str(value)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sorted(values: Any) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # mixed types (a DynamoDB set never is, but a hand-built one may be)
        return sorted(values, key=format_value)


def inline_expression(
    expression: Any, names: Mapping[str, str] | None = None, values: Mapping[str, Any] | None = None
) -> str:
    """Substitute ``#name`` and ``:value`` placeholders in a DynamoDB expression.

    Whole tokens are matched in a single pass, so ``:a`` never clobbers
    ``:active`` and substituted text (``'USER#alice'``) is never re-scanned.
    boto3 condition objects (``Key("PK").eq(v)``) are rendered too.
    """
    if not isinstance(expression, str):
        return _render_condition(expression)
    names, values = names or {}, values or {}
    parts = _split_expression(expression)
    if len(parts) == 1:
        return parts[0]  # a plain str, even for a str subclass (whose __format__ may print something else)
    out = list(parts)
    for i in range(1, len(parts), 2):
        token = parts[i]
        if token[0] == "#":
            name = names.get(token, token)
            out[i] = "" if name is None else name
        elif token in values:
            out[i] = format_value(values[token])
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _split_expression(expression: str) -> tuple[str, ...]:
    """Text and placeholders, alternating (placeholders at odd positions): a run repeats a few expressions."""
    return tuple(_PLACEHOLDER.split(expression))


def _render_condition(cond: Any) -> str:
    if hasattr(cond, "get_expression"):  # boto3.dynamodb.conditions.ConditionBase
        expr = cond.get_expression()
        op, vals = expr["operator"], expr["values"]
        rendered = [_render_condition(v) for v in vals]
        if op == "IN":
            rendered[1] = "(" + ", ".join(format_value(v) for v in vals[1]) + ")"
        return expr["format"].format(*rendered, operator=op)
    if hasattr(cond, "name") and type(cond).__module__.startswith("boto3"):  # Key / Attr
        return cond.name
    return format_value(cond)


def _label(label: str, value: str, indent: str) -> str:
    return f"{indent}{label + ':':<11} {value}"


_LABELLED = (
    ("item", "Item"),
    ("condition", "ConditionExpression"),
    ("update", "UpdateExpression"),
    ("filter", "FilterExpression"),
    ("projection", "ProjectionExpression"),
)
_EXTRA_SET = frozenset(_EXTRAS)


def _body(op: str, params: Mapping[str, Any], indent: str) -> list[str]:
    names, values = params.get("ExpressionAttributeNames"), params.get("ExpressionAttributeValues")
    lines = []
    if op == "Query" and params.get("KeyConditionExpression") is not None:
        lines.append(_label("key", inline_expression(params["KeyConditionExpression"], names, values), indent))
    elif params.get("Key") is not None:
        lines.append(_label("key", format_value(params["Key"]), indent))
    for label, key in _LABELLED:
        value = params.get(key)
        if value is not None:
            text = format_value(value) if key == "Item" else inline_expression(value, names, values)
            lines.append(_label(label, text, indent))
    # Most calls carry none of the extras: look them up only when the call has some.
    extras = [k for k in _EXTRAS if k in params] if not _EXTRA_SET.isdisjoint(params) else []
    rest = [k for k in params if k not in _HIDDEN and k not in _EXTRA_SET]
    for key in (*extras, *rest):
        value = params[key]
        if key == "ScanIndexForward":  # True is the default; only a reversed query is news
            value = "False" if value is False else None
        if value is None or value is False:
            continue
        lines.append(_label(key, value if isinstance(value, str) else format_value(value), indent))
    return lines


def format_request(op: str, params: Mapping[str, Any]) -> str:
    """Render a boto3 client call (operation name + keyword arguments) as a ``>>> Op table`` block."""
    table = params.get("TableName")
    lines = [f">>> {op} {table}" if table else f">>> {op}"]
    inner = _INDENT * 2
    for action in params.get("TransactItems") or ():
        for kind, body in action.items():  # {"Put": {...}}: one key per action
            lines.append(f"{_INDENT}- {kind} {body.get('TableName', '')}".rstrip())
            lines += _body(kind, body, inner)
    for table_name, requests in (params.get("RequestItems") or {}).items():
        if isinstance(requests, Mapping):  # BatchGetItem: {"Keys": [...], ...}
            lines.append(f"{_INDENT}- Get {table_name}")
            lines += [_label("key", format_value(k), inner) for k in requests.get("Keys", ())]
            lines += _body("Get", {k: v for k, v in requests.items() if k != "Keys"}, inner)
            continue
        for request in requests:  # BatchWriteItem: [{"PutRequest": {"Item": ...}}, ...]
            for kind, body in request.items():
                lines.append(f"{_INDENT}- {kind.removesuffix('Request')} {table_name}")
                lines += _body(kind, body, inner)
    lines += _body(op, params, _INDENT)
    return "\n".join(lines)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value.is_finite() and value == value.to_integral_value() else float(value)
    if isinstance(value, (set, frozenset)):
        return _sorted(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def format_result(title: str, value: Any = NO_RESULT) -> str:
    """Render ``=== title ===`` followed by the value as indented JSON (unless ``NO_RESULT``)."""
    heading = f"=== {title} ==="
    if value is NO_RESULT:
        return heading
    return heading + "\n" + json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)


class CallLog:
    """Collects walkthrough text, one blank line between blocks, optionally streaming it live.

    The blank line after a block is written lazily (just before the next block)
    so that ``elided`` can still attach its line to the block it summarises.
    ``text()`` includes that pending blank line.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._parts: list[str] = []
        self._pending_blank = False
        self._results: list[tuple[str, Any]] = []
        self._lock = threading.Lock()  # walkthroughs log from worker threads; keep blocks whole

    def _write(self, block: str, attach: bool = False, result: tuple[str, Any] | None = None) -> None:
        with self._lock:
            chunk = ("\n" if self._pending_blank and not attach else "") + block + "\n"
            self._pending_blank = True
            self._parts.append(chunk)
            if result is not None:  # under the same lock: the results keep the text's order
                self._results.append(result)
            if self._stream is not None:
                self._stream.write(chunk)
                self._stream.flush()

    def request(self, op: str, params: Mapping[str, Any]) -> None:
        """Log a call block (see ``format_request``)."""
        self._write(format_request(op, params))

    def result(self, title: str, value: Any = NO_RESULT) -> None:
        """Log a result block (see ``format_result``)."""
        # Kept as the text shows it (Decimals as numbers, sets as sorted lists), and as it was when logged.
        plain = value if value is NO_RESULT else json.loads(json.dumps(value, default=_json_default))
        self._write(format_result(title, value), result=(title, plain))

    def note(self, text: str) -> None:
        """Log a free-standing narrative line, e.g. ``... worker-B crashes ...``."""
        self._write(text)

    def elided(self, text: str) -> None:
        """Attach an indented line to the previous block, e.g. ``... (+47 more UpdateItem calls not shown)``."""
        self._write(_INDENT + text.lstrip(), attach=True)

    def results(self) -> list[tuple[str, Any]]:
        """The titled results in the order logged, each value JSON-ready, or NO_RESULT for a heading alone."""
        with self._lock:
            return list(self._results)

    def text(self) -> str:
        """Everything logged so far, each block followed by a blank line."""
        with self._lock:
            return "".join(self._parts) + ("\n" if self._pending_blank else "")
