"""An UpdateItem is applied whole or not at all.

moto's UpdateExpressionExecutor applies an expression's actions one after another to the stored item itself. An
action it refuses on the way (an ADD past DynamoDB's number range, an ADD of a number to a string) left the
actions before it applied, under a 400 that says nothing was written. DynamoDB writes nothing in that case. With
two or more actions, the item's attributes are now copied before the first one and put back when one is refused;
with one action there is nothing before it to undo, and no copy is made (a counter's `ADD n :one`).
"""

from __future__ import annotations

from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType


def _tree(value: DynamoType) -> DynamoType:
    """A copy of an attribute value's containers (maps, lists, sets), which the actions change in place; the
    strings, numbers and bytes in them are immutable and shared. About a tenth of copy.deepcopy's time."""
    new = DynamoType.__new__(DynamoType)
    new.__dict__.update(value.__dict__)
    kind = value.type
    if kind == "M":
        new.value = {name: _tree(inner) for name, inner in value.value.items()}
    elif kind == "L":
        new.value = [_tree(inner) for inner in value.value]
    elif kind in ("SS", "NS", "BS"):
        new.value = list(value.value)
    return new


def _actions(executor: Any, node: Any) -> int:
    """How many of the tree's nodes the executor applies as actions (each has its own executor class)."""
    count = 0
    stack = [node]
    while stack:
        current = stack.pop()
        if executor.get_specific_execution(current) is not None:
            count += 1
        else:
            children = getattr(current, "children", None)  # a leaf's children are strings, not nodes
            if isinstance(children, list):
                stack.extend(children)
    return count


def install() -> None:
    """Wrap moto's UpdateExpressionExecutor.execute once per process."""
    from moto.dynamodb.parsing.executors import UpdateExpressionExecutor

    if getattr(UpdateExpressionExecutor.execute, "_whole", False):
        return
    original = UpdateExpressionExecutor.execute

    def execute(self: Any, node: Any = None) -> None:
        if node is not None or _actions(self, self.update_ast) < 2:
            original(self, node)
            return
        attrs = self.item.attrs
        before = {name: _tree(value) for name, value in attrs.items()}
        try:
            original(self, node)
        except Exception:
            dict.clear(attrs)  # the dict's own methods: the item was within its size limit before
            dict.update(attrs, before)
            raise

    execute._whole = True  # type: ignore[attr-defined]
    UpdateExpressionExecutor.execute = execute  # type: ignore[method-assign]
