"""moto's response serializer for the fast path (fastpath.tune_moto): the same output, less repeated work.

For every member of every structure it serializes (each attribute value of an item is a structure of ten
members, S to BOOL, nearly all absent), moto builds six alias providers to list the keys the value might be
stored under, then looks each key up through a generic helper. For a plain dict those keys depend only on the
member's name and shape: they are listed once per shape, and looked up with `dict.get`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any

from moto.core import serialize
from moto.core.utils import MISSING
from moto.core.utils import get_value as value_at
from moto.dynamodb.models.dynamo_type import DynamoType

# (member name, member shape, its parent shape) -> the keys a plain dict may hold that member's value under, and
# whether each is a plain key (no "." path), so that a lookup is `dict.get`
_KEYS: dict[tuple[Any, ...], tuple[tuple[str, ...], bool]] = {}
# structure shape -> (member name, member shape, its possible keys, whether all are plain), in member order
_MEMBERS: dict[Any, list[tuple[str, Any, tuple[str, ...], bool]]] = {}


def _plain_picker(serializer: Any) -> bool:
    """True when the serializer picks values moto's default way (the only one the cached keys stand for)."""
    picker = serializer._value_picker
    return (
        type(picker) is serialize.XFormedAttributePicker
        and not picker.response_transformers
        and picker.alias_providers is serialize.DEFAULT_ALIAS_PROVIDERS
    )


def _possible_keys(serializer: Any, value: dict[str, Any], key: str, shape: Any) -> tuple[tuple[str, ...], bool]:
    cache_key = (key, shape, getattr(shape, "parent", None))
    found = _KEYS.get(cache_key)
    if found is None:
        context = serialize.AttributePickerContext(
            obj=value,
            key=key,
            shape=shape,
            operation_model=serializer.operation_model,
            service_model=serializer.operation_model.service_model,
            key_path=".".join(serializer.path),
        )
        keys = tuple(serializer._value_picker.get_possible_keys(context))
        found = (keys, not any("." in k for k in keys))
        if len(_KEYS) < 4096:
            _KEYS[cache_key] = found
    return found


def _pick(serializer: Any, value: dict[str, Any], key: str, shape: Any) -> Any:
    """What the default picker finds for `key` in a plain dict (None when nothing)."""
    keys, plain = _possible_keys(serializer, value, key, shape)
    for possible in keys:
        found = value.get(possible, MISSING) if plain else value_at(value, possible, MISSING)
        if found is not MISSING:
            return found
    return None


def picked(get_value: Callable[..., Any]) -> Callable[..., Any]:
    """ResponseSerializer.get_value, with the possible keys of a member of a plain dict listed once per shape."""

    def get(self: Any, value: Any, key: str, shape: Any) -> Any:
        if type(value) is not dict or not _plain_picker(self):
            return get_value(self, value, key, shape)
        return _pick(self, value, key, shape)

    return get


def structure(serialize_structure: Callable[..., Any]) -> Callable[..., Any]:
    """JSONSerializer._serialize_type_structure (moto's ResponseSerializer one under BaseJSONSerializer's
    document-type test), each member of a plain dict picked without the two calls per member in between."""
    member = serialize.ResponseSerializer._serialize_structure_member
    getter = serialize.ResponseSerializer.get_value  # picked(), when installed after it (tune_moto)

    def serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if (
            type(value) is not dict
            or shape.is_document_type
            or type(self)._serialize_structure_member is not member
            or type(self).get_value is not getter
            or not _plain_picker(self)
        ):
            serialize_structure(self, serialized, value, shape, key)
            return
        wrapper = self.MAP_TYPE() if key else serialized
        members = _MEMBERS.get(shape)
        if members is None:
            members = []
            for member_key, member_shape in shape.members.items():
                member_shape.parent = shape
                members.append((member_key, member_shape, *_possible_keys(self, value, member_key, member_shape)))
            if len(_MEMBERS) < 4096:
                _MEMBERS[shape] = members
                _OWNERS[shape] = _owners(members)
        owners = _OWNERS.get(shape) if len(value) == 1 else None
        if owners is not None:
            # One key (an attribute value: {"S": ...}): only the members that may be stored under it find a value.
            ((only_key, found),) = value.items()
            if found is not None:
                for member_key, member_shape, is_string in owners.get(only_key, ()):
                    member_shape.parent = shape
                    if is_string and type(found) is str and _plain_strings(self):
                        # _serialize -> _serialize_type_string -> _default_serialize of a str: the str itself,
                        # under the member's serialized name (its path pushed and popped: nothing reads it here).
                        wrapper[member_shape.serialization.get("name", member_key)] = found
                    else:
                        self._serialize(wrapper, found, member_shape, member_key)
            if key:
                self._default_serialize(serialized, wrapper, shape, key)
            return
        for member_key, member_shape, keys, plain in members:
            member_shape.parent = shape
            found = None
            for possible in keys:  # as _pick, inline: this runs for each of the ten members of every value
                picked = value.get(possible, MISSING) if plain else value_at(value, possible, MISSING)
                if picked is not MISSING:
                    found = picked
                    break
            if found is not None:
                if type(found) is str and member_shape.type_name == "string" and _plain_strings(self):
                    wrapper[member_shape.serialization.get("name", member_key)] = found  # as in the branch above
                else:
                    self._serialize(wrapper, found, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    return serialize_type_structure


# structure shape -> {key: the members that may be stored under it, in member order, with whether each is a string}
# (None for a shape with a member read by a path)
_OWNERS: dict[Any, dict[str, tuple[tuple[str, Any, bool], ...]] | None] = {}
_STRING_SERIALIZERS: dict[type, bool] = {}  # serializer class -> whether it writes a str member as moto's JSON does


def _owners(
    members: list[tuple[str, Any, tuple[str, ...], bool]],
) -> dict[str, tuple[tuple[str, Any, bool], ...]] | None:
    """Which members may be stored under each key; None when a member's keys are paths (a dict's own keys are
    then not all it may be read by)."""
    owners: dict[str, list[tuple[str, Any, bool]]] = {}
    for member_key, member_shape, keys, plain in members:
        if not plain:
            return None
        for possible in dict.fromkeys(keys):
            owners.setdefault(possible, []).append((member_key, member_shape, member_shape.type_name == "string"))
    return {k: tuple(v) for k, v in owners.items()}


def _plain_strings(serializer: Any) -> bool:
    """True when the serializer writes a string member moto's JSON way (no method of that chain overridden)."""
    cls = type(serializer)
    plain = _STRING_SERIALIZERS.get(cls)
    if plain is None:
        plain = _STRING_SERIALIZERS[cls] = (
            cls._serialize is serialize.ResponseSerializer._serialize
            and cls._serialize_type_string is serialize.BaseJSONSerializer._serialize_type_string
            and cls._default_serialize is serialize.ResponseSerializer._default_serialize
            and cls.get_serialized_name is serialize.ResponseSerializer.get_serialized_name
        )
    return plain


def dynamo_to_dict(obj: Any) -> Any:
    """moto.dynamodb.models.utilities.dynamo_to_dict, the same steps, without its `from ... import DynamoType` on
    every call (a few microseconds each: it runs for every node of every answer)."""
    if isinstance(obj, datetime):
        return obj
    if isinstance(obj, DynamoType):
        if type(obj.value) is str and obj.type != "B":  # a string or number: the walk below hands the str back
            return {obj.type: obj.value}
        if obj.type == "B":
            if isinstance(obj.value, bytes):
                return {"B": obj.value}
            return {"B": base64.b64decode(obj.value)}
        if obj.type == "BS":
            return {"BS": [v if isinstance(v, bytes) else base64.b64decode(v) for v in obj.value]}
        return {obj.type: dynamo_to_dict(obj.value)}
    if hasattr(obj, "to_json"):
        return dynamo_to_dict(obj.to_json())
    if isinstance(obj, dict):
        return {k: dynamo_to_dict(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [dynamo_to_dict(item) for item in obj]
    return obj
