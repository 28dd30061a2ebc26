"""The UpdateExpression validator's tree walks for the fast path (fastpath.tune_moto): the same walks, with their
class tests done once per (walker class, node class).

At every node of every walk moto tested isinstance against abstract classes (slow) and rebuilt the walker's
`_processing_map()` (a dict literal, the same for every walker of a class) to find the node's processor.
"""

from __future__ import annotations

from typing import Any

_NODE_TYPES: dict[type, tuple[type, ...]] = {}


def node_types(walker: Any) -> tuple[type, ...]:
    """DepthFirstTraverser.nodes_to_be_processed, once per walker class."""
    types = _NODE_TYPES.get(type(walker))
    if types is None:
        types = _NODE_TYPES[type(walker)] = tuple(walker._processing_map())
    return types


_NOT_A_NODE = object()
# (walker class, node class) -> the walker's function for that node (None: not processed, _NOT_A_NODE: a leaf)
_ROUTES: dict[tuple[type, type], Any] = {}


def _route(walker: Any, node: Any) -> Any:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]

    if not isinstance(node, Node):
        return _NOT_A_NODE
    if not isinstance(node, walker.nodes_to_be_processed()):
        return None
    plain_process = type(walker).process is DepthFirstTraverser.process
    for node_type, processor in walker._processing_map().items():
        if isinstance(node, node_type):
            if plain_process and getattr(processor, "__self__", None) is walker:
                return processor.__func__  # a method of the walker: the same one for every walker of its class
            break
    return lambda walker, node: walker.process(node)


_HOOKED: dict[type, bool] = {}  # walker class -> whether it has a pre_processing_of_child of its own


def _hooked(walker_class: type) -> bool:
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

    return walker_class.pre_processing_of_child is not DepthFirstTraverser.pre_processing_of_child  # type: ignore[attr-defined]


_ACTIONS: dict[type, bool] = {}  # node class -> isinstance of the four action classes (abstract: a slow test)


def resolving_pre_processing_of_child(self: Any, parent_node: Any, child_id: int) -> None:
    """ExpressionAttributeResolvingProcessor.pre_processing_of_child, its isinstance against four abstract classes
    done once per node class: resolving is on for every child of an action but its first (the path)."""
    action = _ACTIONS.get(type(parent_node))
    if action is None:
        from moto.dynamodb.parsing.ast_nodes import (  # type: ignore[attr-defined]
            UpdateExpressionAddAction,
            UpdateExpressionDeleteAction,
            UpdateExpressionRemoveAction,
            UpdateExpressionSetAction,
        )

        kinds = (UpdateExpressionSetAction, UpdateExpressionRemoveAction, UpdateExpressionDeleteAction)
        action = _ACTIONS[type(parent_node)] = isinstance(parent_node, (*kinds, UpdateExpressionAddAction))
    if action:
        self.resolving = child_id != 0


def traverse(self: Any, node: Any, child_id: int = -1) -> Any:
    """DepthFirstTraverser.traverse_node_recursively, with its class tests done once per (walker, node class)."""
    key = (type(self), type(node))
    route = _ROUTES.get(key)
    if route is None and key not in _ROUTES:
        route = _ROUTES[key] = _route(self, node)
    if route is _NOT_A_NODE:
        return node
    parent_node = node.parent
    if node.children is not None:
        hooked = _HOOKED.get(type(self))
        if hooked is None:
            hooked = _HOOKED[type(self)] = _hooked(type(self))
        for i, child_node in enumerate(node.children):
            if hooked:  # otherwise DepthFirstTraverser's own hook, which does nothing
                self.pre_processing_of_child(node, i)
            self.traverse_node_recursively(child_node, i)
    if route is not None:
        node = route(self, node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node
