"""Arithmetic on numbers written with an exponent ("1e3", valid in DynamoDB): moto's `+` and `-` parse a number
without a "." with int(), so `ADD n :a` or `SET n = n + :a` with such a number was a 500. The sum is then taken
as a Decimal and written as DynamoDB writes numbers (no exponent, no trailing zeros); every other sum is moto's,
unchanged.

A sum outside DynamoDB's number range (magnitudes from 1E-130 to 9.99...E+125) is refused as DynamoDB refuses it
("Number overflow..."); moto stored 1.98E+126 for `ADD n :v` twice with 9.9E+125."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models.dynamo_type import DynamoType


def text(number: Decimal) -> str:
    """A number as DynamoDB writes it: 1005, 1.5, -0.001."""
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


_LARGEST = Decimal("1E+126")  # exclusive: 9.9999999999999999999999999999999999999E+125 is the largest
_SMALLEST = Decimal("1E-130")  # inclusive


def check_range(number: str) -> None:
    """Raise DynamoDB's ValidationException when a computed number lies outside its range."""
    digits = number.lstrip("-")
    if digits.isdigit() and len(digits) <= 126:  # an integer (moto's sums of integers): in range by its length
        return
    magnitude = abs(Decimal(number))
    if magnitude >= _LARGEST:
        raise MockValidationException(
            "Number overflow. Attempting to store a number with magnitude larger than supported range"
        )
    if magnitude and magnitude < _SMALLEST:
        raise MockValidationException(
            "Number underflow. Attempting to store a number with magnitude smaller than supported range"
        )


def _exact(moto_op: Callable[[Any, Any], Any], decimal_op: Callable[[Decimal, Decimal], Decimal]) -> Any:
    def op(self: Any, other: Any) -> Any:
        try:
            result = moto_op(self, other)
        except ValueError:  # int() of a number with an exponent: moto's own check of the types came first
            result = DynamoType({"N": text(decimal_op(Decimal(self.value), Decimal(other.value)))})
        check_range(result.value)
        return result

    op.__wrapped__ = moto_op  # type: ignore[attr-defined]
    return op


def install() -> None:
    """Wrap moto's DynamoType `+` and `-` once per process."""
    if not hasattr(DynamoType.__add__, "__wrapped__"):
        DynamoType.__add__ = _exact(DynamoType.__add__, lambda a, b: a + b)  # type: ignore[method-assign]
        DynamoType.__sub__ = _exact(DynamoType.__sub__, lambda a, b: a - b)  # type: ignore[method-assign]
