"""Answers of the fast paths (fast_add.py, fast_item.py) serialized without moto's walk of the output shape.

moto serializes an answer by walking the operation's output shape (about forty Python calls for an empty one) and
then `json.dumps` of what the walk built. For the answers below that walk gives a known dict: `Fixed` answers are
the same for every request with the same key (serialized by moto once per key), and `PlainJson` answers are items
of strings, numbers and booleans, whose walk gives back the same dict, so `json.dumps` of it is moto's body. The
status and headers are moto's own for that operation and serializer, taken from its serialization of "{}" once.
Anything else (moto's pretty-printing, another serializer or value picker) goes moto's way.
"""

from __future__ import annotations

import json
from typing import Any

from moto import settings
from moto.core.common_types import TYPE_RESPONSE
from moto.core.responses import ActionContext, ActionResult
from moto.core.serialize import BaseJSONSerializer

_KEPT = 1024
_FIXED: dict[tuple[Any, ...], tuple[int, dict[str, Any], Any]] = {}
_HEADS: dict[tuple[Any, ...], tuple[int, dict[str, Any]] | None] = {}  # None: not a JSON serializer


class Fixed(ActionResult):
    """An answer whose serialized form depends only on `key`, the operation, the serializer and moto's
    pretty-print setting: serialized once per those, and a copy of its headers handed out (the caller adds to
    them)."""

    def __init__(self, result: object, key: object) -> None:
        super().__init__(result)
        self._key = key

    def execute_result(self, context: ActionContext) -> TYPE_RESPONSE:
        key = (self._key, context.operation_model.name, context.serializer_class, settings.PRETTIFY_RESPONSES)
        serialized = _FIXED.get(key)
        if serialized is None:
            serialized = ActionResult.execute_result(self, context)
            if len(_FIXED) >= _KEPT:
                _FIXED.clear()
            _FIXED[key] = serialized
        status, headers, body = serialized
        return status, dict(headers), body


class PlainJson(ActionResult):
    """An answer of plain JSON types only, whose members are all members of the operation's output shape, with
    every attribute value of type S or N (a str) or BOOL (a bool): moto's serializer gives `json.dumps` of it."""

    def execute_result(self, context: ActionContext) -> TYPE_RESPONSE:
        if settings.PRETTIFY_RESPONSES or getattr(context.response, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None):
            return ActionResult.execute_result(self, context)
        key = (context.operation_model.name, context.serializer_class)
        if key in _HEADS:
            head = _HEADS[key]
        else:
            head = None
            if issubclass(context.serializer_class, BaseJSONSerializer):
                status, headers, _ = ActionResult.execute_result(ActionResult({}), context)
                head = status, dict(headers)
            if len(_HEADS) < _KEPT:
                _HEADS[key] = head
        if head is None:
            return ActionResult.execute_result(self, context)
        return head[0], dict(head[1]), json.dumps(self._result)
