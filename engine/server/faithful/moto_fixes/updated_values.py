"""UpdateItem's ReturnValues UPDATED_NEW and UPDATED_OLD as DynamoDB answers them: the item after (or before) the
update, projected on the paths the update names, as a ProjectionExpression of those paths would project it, and no
Attributes when nothing is left. moto returned the top-level attributes whose value changed, so an `ADD n :zero`
or a SET to the value already there answered without the attribute, and `SET m.a = :v` with all of `m`.

What DynamoDB does was taken from other emulators' conformance reports against it (nested SET answers only the
changed fragment; a REMOVE answers no Attributes with UPDATED_NEW); DynamoDB Local answers a nested SET with the
whole top-level attribute, the one difference (this module follows DynamoDB).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from moto.dynamodb.parsing import ast_nodes as _ast_nodes
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.responses import DynamoHandler

ast_nodes: Any = _ast_nodes  # moto's node classes, which its stubs do not list
Path = tuple[str | int, ...]
_ACTIONS = (
    ast_nodes.UpdateExpressionSetAction,
    ast_nodes.UpdateExpressionRemoveAction,
    ast_nodes.UpdateExpressionAddAction,
    ast_nodes.UpdateExpressionDeleteAction,
)
_ASKED_AS = {"UPDATED_NEW": "ALL_NEW", "UPDATED_OLD": "ALL_OLD"}


def install() -> None:
    """Wrap moto's UpdateItem once per process (the reference server of `--equivalence` too)."""
    if not hasattr(DynamoHandler.update_item, "_ddblab_updated_values"):
        DynamoHandler.update_item = _projected(DynamoHandler.update_item)  # type: ignore[method-assign, assignment]


def _projected(update_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def update(self: Any) -> Any:
        body = self.body
        asked = body.get("ReturnValues")
        paths = target_paths(body) if asked in _ASKED_AS else None
        if paths is None:  # another ReturnValues, or an update moto will refuse in its own words
            return update_item(self)
        body["ReturnValues"] = _ASKED_AS[asked]  # the whole item after (or before), projected here
        try:
            answer = update_item(self)
        finally:
            body["ReturnValues"] = asked
        result = answer.result
        if isinstance(result, dict):
            attributes = project(result.get("Attributes") or {}, paths)
            if attributes:
                result["Attributes"] = attributes
            else:
                result.pop("Attributes", None)
        return answer

    update._ddblab_updated_values = True  # type: ignore[attr-defined]
    return update


def target_paths(body: Mapping[str, Any]) -> tuple[Path, ...] | None:
    """The document paths an UpdateItem writes or removes; None when they cannot be read (moto refuses it)."""
    names = body.get("ExpressionAttributeNames") or {}
    try:
        if body.get("UpdateExpression"):
            return _expression_paths(body["UpdateExpression"], tuple(sorted(names.items())))
        return tuple((name,) for name in body.get("AttributeUpdates") or {})
    except Exception:
        return None


@functools.lru_cache(maxsize=256)
def _expression_paths(expression: str, names: tuple[tuple[str, str], ...]) -> tuple[Path, ...]:
    """Cached: the counters' and locks' few expressions come back on every call."""
    named = dict(names)
    paths: list[Path] = []

    def walk(node: Any) -> None:
        if isinstance(node, _ACTIONS):
            paths.append(_path(node.children[0], named))
            return
        for child in getattr(node, "children", None) or []:
            if isinstance(child, ast_nodes.Node):
                walk(child)

    walk(UpdateExpressionParser.make(expression))
    return tuple(paths)


def _path(node: Any, names: Mapping[str, str]) -> Path:
    path: list[str | int] = []
    for part in node.children:
        if isinstance(part, ast_nodes.ExpressionAttributeName):
            path.append(names[part.children[0]])
        elif isinstance(part, ast_nodes.ExpressionAttribute):
            path.append(part.children[0])
        elif isinstance(part, ast_nodes.ExpressionSelector):
            path.append(int(part.children[0]))
    return tuple(path)


def project(item: Mapping[str, Any], paths: tuple[Path, ...]) -> dict[str, Any]:
    """`item` (DynamoDB JSON) projected on `paths`, as DynamoDB projects: maps keep the named members, lists the
    named elements in index order, and a path that is not in the item adds nothing."""
    out: dict[str, Any] = {}
    for path in paths:
        found, value = _at(item, path)
        if found:
            try:
                _place(out, path, value)
            except (KeyError, TypeError):  # paths that overlap, which DynamoDB refuses: the first one stands
                continue
    return {name: _lists(value) for name, value in out.items()}


def _at(item: Mapping[str, Any], path: Path) -> tuple[bool, Any]:
    first = path[0]
    if not isinstance(first, str) or first not in item:
        return False, None
    value = item[first]
    for part in path[1:]:
        if isinstance(part, int):
            elements = value.get("L") if isinstance(value, dict) else None
            if not isinstance(elements, list) or part >= len(elements):
                return False, None
            value = elements[part]
        else:
            members = value.get("M") if isinstance(value, dict) else None
            if not isinstance(members, dict) or part not in members:
                return False, None
            value = members[part]
    return True, value


def _place(out: dict[str, Any], path: Path, value: Any) -> None:
    """Put `value` at `path` in `out`, lists kept as {index: element} until `_lists` orders them."""
    holder: dict[Any, Any] = out
    for part, following in zip(path, path[1:], strict=False):
        kind = "L" if isinstance(following, int) else "M"
        holder = holder.setdefault(part, {kind: {}})[kind]
        if not isinstance(holder, dict):
            raise TypeError("overlapping paths")
    holder[path[-1]] = value


def _lists(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "L" and isinstance(inner, dict):
            return {"L": [_lists(inner[i]) for i in sorted(inner)]}
        if kind == "M" and isinstance(inner, dict):
            return {"M": {k: _lists(v) for k, v in inner.items()}}
    return value
