"""A ProjectionExpression path through a value that is no map or list (`n.x` on a number, `b.x` on a boolean,
`ss.x` on a set) matches nothing, as in DynamoDB: the item comes back without it. moto's path walk tested
`"x" in 5` and crashed, a 500 on a valid request."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_INDEXED = re.compile(r"(.+)\[(\d+)\]$")  # moto's own reading of "name[i]" (one index per path element)


def reaches(keys: list[str], item: Any) -> bool:
    """True when every element of the path finds a map member or list element to step into."""
    node = item
    for key in keys:
        indexed = _INDEXED.match(key)
        name = indexed.group(1) if indexed else key
        if not isinstance(node, dict) or name not in node:
            return False
        node = node[name]
        if indexed:
            index = int(indexed.group(2))
            if not isinstance(node, list) or index >= len(node):
                return False
            node = node[index]
    return True


def _checked(find_nested_key: Callable[..., Any]) -> Callable[..., Any]:
    def find(keys: list[str], dct: Any, *args: Any, **kwargs: Any) -> Any:
        if not reaches(keys, dct):
            return {}  # what moto answers for a path that is not in the item
        return find_nested_key(keys, dct, *args, **kwargs)

    find.__wrapped__ = find_nested_key  # type: ignore[attr-defined]
    return find


def install() -> None:
    """Wrap the path walk moto's Item.project calls, once per process."""
    from moto.dynamodb.models import dynamo_type

    if not hasattr(dynamo_type.find_nested_key, "__wrapped__"):
        dynamo_type.find_nested_key = _checked(dynamo_type.find_nested_key)
