"""One attribute value checked as DynamoDB checks it, and its size as DynamoDB counts it: its {type: value} shape,
its nesting, its numbers (syntax, 38 significant digits, magnitude) and sets (never empty, no member twice). moto
checks only some of this, and nothing at all in ExpressionAttributeValues. engine/server/faithful/limits.py names where a
bad value was."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

MAX_NESTING = 32  # levels of lists and maps inside an attribute
_SETS = frozenset({"SS", "NS", "BS"})


class BadValue(Exception):
    """A bad attribute value somewhere below a top-level attribute; named once, when it is reported. `invalid`:
    a value DynamoDB cannot store (a number, a set), which it words its own way in ExpressionAttributeValues."""

    def __init__(self, code: str, message: str, invalid: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.invalid = invalid


def value_size(value: Any, depth: int = 1) -> int:
    """Check one attribute value (one {type: value} map, nested at most MAX_NESTING deep); return its size.
    Written for speed: it runs on every attribute of every request."""
    if type(value) is not dict or len(value) != 1:
        if type(value) is dict:
            raise BadValue(
                "ValidationException", "Supplied AttributeValue at {where} must contain exactly one datatype"
            )
        raise BadValue("SerializationException", "Supplied AttributeValue at {where} is not a {type: value} map")
    for kind, inner in value.items():
        if kind == "S":
            if type(inner) is str:
                return len(inner) if inner.isascii() else len(inner.encode())
        elif kind == "N":
            if type(inner) is str:
                if len(inner) <= 38 and inner.isdigit() and inner.isascii():
                    # A plain non-negative integer of at most 38 digits, which DynamoDB stores whatever they are:
                    # its size (_number_size) without _number's checks, in a few C calls instead of 13 calls.
                    return (max(len(inner.strip("0")), 1) + 1) // 2 + 1
                return _number_size(_number(inner))
        elif kind == "BOOL":
            if type(inner) is bool:
                return 1
        elif kind == "NULL":
            if inner is True:
                return 1
        elif kind == "M":
            if type(inner) is dict:
                if depth >= MAX_NESTING:
                    raise BadValue("ValidationException", "Nesting Levels have exceeded supported limits")
                if "" in inner:
                    raise BadValue("ValidationException", "Empty attribute name")
                return 3 + sum(1 + len(k.encode()) + value_size(v, depth + 1) for k, v in inner.items())
        elif kind == "L":
            if type(inner) is list:
                if depth >= MAX_NESTING:
                    raise BadValue("ValidationException", "Nesting Levels have exceeded supported limits")
                return 3 + sum(1 + value_size(v, depth + 1) for v in inner)
        elif kind == "B":
            if type(inner) is str and _base64(inner) is not None:
                return len(inner) * 3 // 4
        elif kind in _SETS:
            if type(inner) is list and all(type(v) is str for v in inner):
                return _set_size(kind, inner)
        else:
            raise BadValue("SerializationException", f"Unknown AttributeValue type {kind[:20]!r} at {{where}}")
        raise BadValue("SerializationException", f"Unexpected value for AttributeValue type {kind} at {{where}}")
    return 0  # unreachable: one item


def _base64(text: str) -> bytes | None:
    """The bytes `text` encodes, or None when it is not base64."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


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
        raise BadValue("ValidationException", _NOT_A_NUMBER, invalid=True)
    sign = "-" if text[0] == "-" else ""
    mantissa, _, exponent = text.lstrip("+-").lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    significant = (whole + fraction).strip("0")
    if len(significant) > 38:
        raise BadValue("ValidationException", "DynamoDB only supports precision up to 38 digits", invalid=True)
    if len(exponent.lstrip("+-").lstrip("0")) > 9:  # past any magnitude (and past what int() parses quickly)
        if not significant:
            raise BadValue("ValidationException", _NOT_A_NUMBER, invalid=True)
        raise BadValue("ValidationException", _UNDERFLOW if exponent[0] == "-" else _OVERFLOW, invalid=True)
    if not significant:
        return ("", "", 0)
    integer = whole.lstrip("0")
    zeros_after_point = 0 if integer else len(fraction) - len(fraction.lstrip("0"))
    magnitude = (int(exponent) if exponent else 0) + len(integer) - zeros_after_point
    if magnitude > 126:
        raise BadValue("ValidationException", _OVERFLOW, invalid=True)
    if magnitude < -129:
        raise BadValue("ValidationException", _UNDERFLOW, invalid=True)
    return (sign, significant, magnitude)


def _set_size(kind: str, members: list[str]) -> int:
    """A set's size, once checked: DynamoDB's sets are never empty and never hold one member twice (numbers by
    value: 1 and 1.0 are one; binary members by their bytes: "AA==" and "AB==" are one)."""
    if not members:
        raise BadValue("ValidationException", f"{_INVALID}An {_SET_NAMES[kind]} set  may not be empty", invalid=True)
    if kind == "NS":
        numbers = [_number(m) for m in members]
        distinct, size = len(set(numbers)), sum(_number_size(n) for n in numbers)
    elif kind == "BS":
        decoded = [_base64(m) for m in members]
        if None in decoded:
            raise BadValue("SerializationException", "Unexpected value for AttributeValue type BS at {where}")
        distinct, size = len(set(decoded)), sum(len(m) * 3 // 4 for m in members)
    else:
        distinct, size = len(set(members)), sum(len(m.encode()) for m in members)
    if distinct < len(members):
        raise BadValue("ValidationException", f"{_INVALID}Input collection contains duplicates", invalid=True)
    return size


def _number_size(number: tuple[str, str, int]) -> int:
    """A number's size as DynamoDB counts it: a byte per two significant digits, and one more (zero: 2)."""
    return (max(len(number[1]), 1) + 1) // 2 + 1
