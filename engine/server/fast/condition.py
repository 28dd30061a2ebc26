"""ConditionExpressions for the fast path (fastpath.tune_moto): parsed once per (text, names, value names).

moto parses a condition into a tree of operations twice per conditional write (the handler, then the table).
The values (":v" = {"N": "7"}) take no part in the parse: each one only becomes an AttributeValue operand where
its placeholder stands. So a text is parsed once with stand-ins for its values, and the tree kept pickled with
each stand-in as a reference; a request's tree is that pickle loaded with the request's own values put in
(new AttributeValue operands, as moto's parser makes them): a fresh tree per request, with nothing of another.
A parse that fails (an unknown placeholder, a syntax error) is not kept: it fails again, as moto's does.
"""

from __future__ import annotations

import functools
import io
import pickle
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import AttributeValue, ConditionExpressionParser


class _StandIn:
    """The inner value of a value placeholder's stand-in during the parse: {"S": _StandIn(":v")}."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is AttributeValue and type(obj.value) is _StandIn:
            return obj.value.name
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, blob: bytes, values: dict[str, Any]) -> None:
        super().__init__(io.BytesIO(blob))
        self._values = values

    def persistent_load(self, pid: Any) -> Any:
        return AttributeValue(self._values[pid])


@functools.lru_cache(maxsize=1024)
def _template(
    parse: Callable[[Any], Any],
    expression: str,
    names: tuple[tuple[str, str], ...] | None,
    value_names: tuple[str, ...],
) -> tuple[bytes, tuple[str, ...], tuple[str, ...]]:
    stand_ins: dict[str, Any] = {name: {"S": _StandIn(name)} for name in value_names}
    parser = ConditionExpressionParser(expression, None if names is None else dict(names), stand_ins)
    op = parse(parser)
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(op)
    return out.getvalue(), tuple(parser.expr_attr_names_found), tuple(parser.expr_attr_values_found)


def parsed_once(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """ConditionExpressionParser.parse, through the pickled tree of (text, names, value names)."""

    def cached(self: Any) -> Any:
        expression = self.condition_expression
        values = self.expression_attribute_values
        if not expression or not (values is None or type(values) is dict):
            return parse(self)
        names = self.expression_attribute_names
        try:
            # The names as a sorted tuple of pairs: the same key for the same map, in any order (a JSON text of
            # them cost a JSONEncoder per request).
            key = None if names is None else tuple(sorted(names.items()))
            blob, names_found, values_found = _template(parse, expression, key, tuple(sorted(values or ())))
        except (TypeError, AttributeError, pickle.PicklingError):  # names of no map of strings, a tree not pickled
            return parse(self)
        op = _Unpickler(blob, values or {}).load()
        self.expr_attr_names_found.extend(names_found)
        self.expr_attr_values_found.extend(values_found)
        return op

    return cached
