"""moto's response serializer for the fast path (fastpath.tune_moto): the same output, less repeated work.

For every member of every structure it serializes (each attribute value of an item is a structure of ten
members, S to BOOL, nearly all absent), moto builds six alias providers to list the keys the value might be
stored under, then looks each key up through a generic helper. For a plain dict those keys depend only on the
member's name and shape: they are listed once per shape, and looked up with `dict.get`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.core import serialize
from moto.core.utils import MISSING
from moto.core.utils import get_value as value_at

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
        for member_key, member_shape, keys, plain in members:
            member_shape.parent = shape
            found = None
            for possible in keys:  # as _pick, inline: this runs for each of the ten members of every value
                picked = value.get(possible, MISSING) if plain else value_at(value, possible, MISSING)
                if picked is not MISSING:
                    found = picked
                    break
            if found is not None:
                self._serialize(wrapper, found, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    return serialize_type_structure
