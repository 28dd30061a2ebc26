"""Arithmetic on numbers written with an exponent ("1e3", valid in DynamoDB): moto's `+` and `-` parse a number
without a "." with int(), so `ADD n :a` or `SET n = n + :a` with such a number was a 500. The sum is then taken
as a Decimal and written as DynamoDB writes numbers (no exponent, no trailing zeros); every other sum is moto's,
unchanged."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType


def text(number: Decimal) -> str:
    """A number as DynamoDB writes it: 1005, 1.5, -0.001."""
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def _exact(moto_op: Callable[[Any, Any], Any], decimal_op: Callable[[Decimal, Decimal], Decimal]) -> Any:
    def op(self: Any, other: Any) -> Any:
        try:
            return moto_op(self, other)
        except ValueError:  # int() of a number with an exponent: moto's own check of the types came first
            return DynamoType({"N": text(decimal_op(Decimal(self.value), Decimal(other.value)))})

    op.__wrapped__ = moto_op  # type: ignore[attr-defined]
    return op


def install() -> None:
    """Wrap moto's DynamoType `+` and `-` once per process."""
    if not hasattr(DynamoType.__add__, "__wrapped__"):
        DynamoType.__add__ = _exact(DynamoType.__add__, lambda a, b: a + b)  # type: ignore[method-assign]
        DynamoType.__sub__ = _exact(DynamoType.__sub__, lambda a, b: a - b)  # type: ignore[method-assign]
