"""Every top-level member of a request checked against botocore's model of the operation's input shape, before
any of our code or moto reads it: moto crashed (500) on e.g. `"Limit": "x"` or a map as ClientRequestToken,
and served `"Limit": 0` or a 37-character token (200) where DynamoDB answers 400.

- a member of the wrong JSON type: SerializationException naming it (DynamoDB Local 1.11.478 answers these
  with a 500 InternalFailure, or coerces "5" to 5 and 1 to true; this follows the model, as DynamoDB does);
- a required member missing, a number under its `min` or over its `max`, a string, list or map shorter or
  longer than the model allows, a value outside its enum: ValidationException in DynamoDB's words
  ("1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value
  greater than or equal to 1"), all of a request's errors in one message. DynamoDB Local words some of
  these its own way ("Limit must be greater than or equal to 1"); the words here are DynamoDB's.
- a member the model does not know, or a null: left alone, as DynamoDB Local does.

Cheap on a good request: per operation a dict member -> (JSON types, bounds), and only the members present are
looked at; nested members are the business of limits.check and moto.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine.server.faithful.limits import Refused

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "blob": (str,),
    "integer": (int,),
    "long": (int,),
    "double": (int, float),
    "float": (int, float),
    "boolean": (bool,),
    "timestamp": (int, float, str),
    "list": (list,),
    "map": (dict,),
    "structure": (dict,),
}


@dataclass(frozen=True)
class Member:
    """What the model says of one top-level member: its JSON types, and its bounds when it has any."""

    path: str  # lower-camel, as DynamoDB names it in a message
    types: tuple[type, ...]
    number: bool  # min/max bound the value, not its length
    low: int | None
    high: int | None
    enum: frozenset[str]
    bounded: bool  # any of low, high, enum: a field, not a property (a Python call per member on every request)


@dataclass(frozen=True)
class Operation:
    members: dict[str, Member]
    required: tuple[str, ...]


def _member(name: str, shape: Any) -> Member:
    meta = shape.metadata
    kind = shape.type_name
    enum = frozenset(getattr(shape, "enum", None) or ())
    low, high = meta.get("min"), meta.get("max")
    return Member(
        path=name[0].lower() + name[1:],
        types=_JSON_TYPES.get(kind, (object,)),
        number=kind in ("integer", "long", "double", "float"),
        low=low,
        high=high,
        enum=enum,
        bounded=low is not None or high is not None or bool(enum),
    )


def _operations() -> dict[str, Operation]:
    from moto.core.utils import get_service_model

    model = get_service_model("dynamodb")
    out = {}
    for op in model.operation_names:
        shape = model.operation_model(op).input_shape
        if shape is None:
            continue
        members = {name: _member(name, s) for name, s in shape.members.items()}
        out[op] = Operation(members, tuple(shape.required_members))
    return out


OPERATIONS = _operations()


def check(op: str, params: dict[str, Any]) -> None:
    """Raise Refused when a top-level member of `params` breaks `op`'s input shape; None when none does."""
    if op not in OPERATIONS:
        return
    spec = OPERATIONS[op]
    members = spec.members
    errors: list[str] | None = None
    # `in` and subscripts rather than dict.get: no function call per member on a good request.
    for name in params:
        if name not in members:
            continue  # unknown members: DynamoDB ignores them
        value = params[name]
        member = members[name]
        if value is None:
            continue  # a null is an absent member
        if type(value) not in member.types:
            raise Refused("SerializationException", _wrong_type(name, value, member))
        if member.bounded:  # compared inline; the message is built only for a value out of bounds
            if member.enum:
                broken = value not in member.enum
            else:
                size = value if member.number else len(value)
                low, high = member.low, member.high
                broken = (low is not None and size < low) or (high is not None and size > high)
            if broken:
                errors = [*(errors or []), _out_of_bounds(value, member) or ""]
    for name in spec.required:
        if name not in params or params[name] is None:
            path = members[name].path
            errors = [*(errors or []), f"Value null at '{path}' failed to satisfy constraint: Member must not be null"]
    if errors:
        count = len(errors)
        noun = "error" if count == 1 else "errors"
        raise Refused("ValidationException", f"{count} validation {noun} detected: " + "; ".join(errors))


def _wrong_type(name: str, value: Any, member: Member) -> str:
    wanted = " or ".join(_JSON_NAMES[t] for t in member.types)
    return f"Unexpected value type for {name}: expected {wanted}, got {_JSON_NAMES.get(type(value), 'a value')}"


_JSON_NAMES: dict[type, str] = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
    object: "a value",
}


def _out_of_bounds(value: Any, member: Member) -> str | None:
    shown = _shown(value)
    where = f"Value '{shown}' at '{member.path}' failed to satisfy constraint: Member must"
    if member.enum and value not in member.enum:
        return f"{where} satisfy enum value set: [{', '.join(sorted(member.enum))}]"
    size = value if member.number else len(value)
    what = "have value" if member.number else "have length"
    if member.low is not None and size < member.low:
        return f"{where} {what} greater than or equal to {member.low}"
    if member.high is not None and size > member.high:
        return f"{where} {what} less than or equal to {member.high}"
    return None


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= 100 else text[:100] + "..."


def deep_problem(op: str, params: Any) -> Refused | None:
    """The first place where the whole body breaks `op`'s input shape, nested members included, or None. Slow
    (a walk of the whole body against the model): called only when moto or our code crashed on a request, so
    that an invalid body gets its 400 rather than a 500."""
    from moto.core.utils import get_service_model

    model = get_service_model("dynamodb")
    if op not in model.operation_names:
        return None
    try:
        _walk(model.operation_model(op).input_shape, params, "", 0)
    except Refused as refused:
        return refused
    except RecursionError:
        return Refused("SerializationException", "The request body nests too deeply")
    return None


def _walk(shape: Any, value: Any, path: str, depth: int) -> None:
    if value is None:
        return
    kind = shape.type_name
    shown = path or "the request"
    if type(value) not in _JSON_TYPES.get(kind, (object,)):
        raise Refused("SerializationException", f"Unexpected value type at {shown}: expected a {kind}")
    if kind in ("string", "list", "map", "integer", "long"):
        member = replace(_member("x", shape), path=_lower(path) or "request")
        problem = _out_of_bounds(value, member) if member.bounded else None
        if problem:
            raise Refused("ValidationException", "1 validation error detected: " + problem)
    if kind == "structure":
        for name in shape.required_members:
            if value.get(name) is None:
                where = f"{path}.{name}" if path else name
                raise Refused(
                    "ValidationException",
                    f"1 validation error detected: Value null at '{_lower(where)}' "
                    "failed to satisfy constraint: Member must not be null",
                )
        for name, member_shape in shape.members.items():
            if name in value:
                _walk(member_shape, value[name], f"{path}.{name}" if path else name, depth + 1)
    elif kind == "list":
        for i, item in enumerate(value):
            _walk(shape.member, item, f"{path}.{i + 1}.member", depth + 1)
    elif kind == "map":
        for key, item in value.items():
            _walk(shape.value, item, f"{path}.{key}", depth + 1)


def _lower(path: str) -> str:
    return ".".join(part[:1].lower() + part[1:] for part in path.split("."))
