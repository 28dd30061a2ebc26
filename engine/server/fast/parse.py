"""moto's JSON request parser for the fast path (fastpath.tune_moto): the same parsed request, less repeated work.

Per node of a request, moto looked its handler up by formatting the shape's type name; per structure (each
attribute value is one) it listed every member of the shape with its JSON name. Both are now done once per shape,
and an attribute value (a map of one of ten types) is parsed without a look at the nine others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core.parse import RequestParser

_PARSERS: dict[tuple[type, str], Callable[..., Any]] = {}
_MEMBERS: dict[Any, tuple[tuple[str, str, Any], ...]] = {}  # structure shape -> (name, JSON name, shape)


def parse_shape(self: Any, shape: Any, node: Any) -> Any:
    """RequestParser._parse_shape, with the handler found once per (parser class, shape type)."""
    key = (type(self), shape.type_name)
    handler = _PARSERS.get(key)
    if handler is None:
        handler = _handler(self, shape)
    return handler(self, shape, node)


def parse_structure(self: Any, shape: Any, value: Any) -> Any:
    """BaseJSONParser._parse_structure, with each shape's members and their JSON names listed once, and a map of
    one member (an attribute value: one of its ten types) parsed without a look at the nine others."""
    if shape.is_document_type:
        return value
    if value is None:
        return None
    members = _MEMBERS.get(shape)
    if members is None:
        members = tuple(
            (name, member.serialization.get("name", name), member) for name, member in shape.members.items()
        )
        if len(_MEMBERS) < 4096:
            _MEMBERS[shape] = members
    final_parsed = self.MAP_TYPE()
    if type(value) is dict and len(value) == 1:
        ((json_key, raw_value),) = value.items()
        if raw_value is not None:
            plain = type(self)._parse_shape is parse_shape
            for name, json_name, member in members:
                if json_name == json_key:
                    handler = _PARSERS.get((type(self), member.type_name)) if plain else None
                    if handler is _KEEP:  # a string, number or bool: _parse_shape would hand it back as it is
                        final_parsed[name] = raw_value
                    else:
                        final_parsed[name] = self._parse_shape(member, raw_value)
        return final_parsed
    if type(value) is dict:  # a shape has many members, a request few: each tested with `in` (no call), not get
        for name, json_name, member in members:
            if json_name in value:
                raw_value = value[json_name]
                if raw_value is not None:
                    final_parsed[name] = self._parse_shape(member, raw_value)
        return final_parsed
    for name, json_name, member in members:
        raw_value = value.get(json_name)
        if raw_value is not None:
            final_parsed[name] = self._parse_shape(member, raw_value)
    return final_parsed


_KEEP = RequestParser._default_handle  # the handler of a shape whose value is taken as it is


def parse_map(self: Any, shape: Any, value: Any) -> Any:
    """RequestParser._parse_map, with a key whose shape takes it as it is (an attribute's name) not parsed."""
    parsed = self.MAP_TYPE()
    key_shape = shape.key
    value_shape = shape.value
    keep_key = type(self)._parse_shape is parse_shape and _PARSERS.get((type(self), key_shape.type_name)) is _KEEP
    for key, val in value.items():
        actual_key = key if keep_key else self._parse_shape(key_shape, key)
        parsed[actual_key] = self._parse_shape(value_shape, val)
    return parsed


def _handler(parser: Any, shape: Any) -> Any:
    """The handler _parse_shape calls for this shape."""
    key = (type(parser), shape.type_name)
    handler = _PARSERS.get(key)
    if handler is None:
        handler = _PARSERS[key] = getattr(type(parser), f"_parse_{shape.type_name}", type(parser)._default_handle)
    return handler
