"""UpdateExpression trees for the fast path (fastpath.tune_moto): parsed once per text, copied fast, and their
structure checked once per (text, names).

moto parses an UpdateExpression into a tree twice per UpdateItem and validates a deep copy of it with ten tree
walks. The tree of a text is the same every time: it is cached, with a pickled snapshot from which a copy is
`pickle.loads` (a few times faster than `copy.deepcopy`). Callers only read the cached tree; the validator,
which changes its tree, gets such a copy. The validator's first two walks (at most one ADD, SET, REMOVE
clause; no two actions on overlapping paths) read only the tree and the attribute names, never the item or
the values, and change nothing: once they passed for a tree and its names, they pass again and are skipped.
The other eight walks (values, the item, types, key attributes) run on every request. moto also lists a
cached tree's name and value placeholders twice per UpdateItem: listed once per tree.
"""

from __future__ import annotations

import copy
import functools
import pickle
from collections.abc import Callable
from typing import Any

_SNAPSHOT = "_ddblab_pickled"  # attribute of a cached tree: its pickled form, for fast copies
_SOURCE = "_ddblab_copied_from"  # attribute of a fresh copy until it is validated: the cached tree it came from
_PASSED = "_ddblab_passed"  # attribute of a cached tree: the names with which its structure checks passed
_PASSED_PER_TREE = 64
_CLAUSES = "_ddblab_clauses"  # attribute of a cached tree: clause types -> the clauses find_clauses found
_CACHED_TREES: dict[int, Any] = {}  # id -> every tree the parser cached (up to a bound), to know one when seen
_CACHED_TREES_KEPT = 4096


class CachedUpdateExpressionParser:
    """Stands in for UpdateExpressionParser where moto calls `.make(expression)`."""

    def __init__(self, make: Callable[[str], Any], size: int = 1024) -> None:
        self.make = functools.lru_cache(maxsize=size)(lambda expression: _snapshot(make(expression)))


def _snapshot(ast: Any) -> Any:
    try:
        blob = pickle.dumps(ast, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return ast
    setattr(ast, _SNAPSHOT, blob)
    if len(_CACHED_TREES) < _CACHED_TREES_KEPT:
        _CACHED_TREES[id(ast)] = ast  # held here too, so that no other tree can take its id
    return ast


def find_clauses_once(find_clauses: Callable[[Any, Any], list[Any]]) -> Callable[[Any, Any], list[Any]]:
    """Node.find_clauses, once per (cached tree, clause types): moto asks a cached tree twice per UpdateItem for
    its name and value placeholders, a walk of the whole tree each time; the tree never changes."""

    def found(self: Any, clause_types: Any) -> list[Any]:
        if _CACHED_TREES.get(id(self)) is not self:  # a copy, or a part of a tree: its own walk
            return find_clauses(self, clause_types)
        memo: dict[tuple[type, ...], tuple[Any, ...]] = self.__dict__.setdefault(_CLAUSES, {})
        kinds = tuple(clause_types)
        clauses = memo.get(kinds)
        if clauses is None:
            clauses = memo[kinds] = tuple(find_clauses(self, clause_types))
        return list(clauses)

    return found


def copy_ast(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    """copy.deepcopy, through the pickled snapshot when the object is a cached tree (the copy remembers it)."""
    blob = getattr(obj, _SNAPSHOT, None) if memo is None else None
    if blob is None:
        return copy.deepcopy(obj, memo)
    fresh = pickle.loads(blob)
    setattr(fresh, _SOURCE, obj)
    return fresh


def validate_checking_structure_once(validate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """UpdateExpressionValidator.validate, skipping its two structure walks for a tree whose structure passed them
    with the same attribute names before."""
    from moto.dynamodb.parsing.validators import ActionCountValidator, OverlappingPathsValidator

    structure = (ActionCountValidator, OverlappingPathsValidator)

    def validated(self: Any) -> Any:
        tree = self.node_to_validate
        source = tree.__dict__.pop(_SOURCE, None)
        processors = list(self.processors)
        if source is None or tuple(type(p) for p in processors[:2]) != structure:
            return validate(self)
        names = self.expression_attribute_names
        try:
            key = None if names is None else tuple(sorted(names.items()))
            hash(key)
        except TypeError:  # not a map of strings: checked every time
            return validate(self)
        passed: set[Any] = source.__dict__.setdefault(_PASSED, set())
        skip = len(structure) if key in passed else 0
        for done, processor in enumerate(processors[skip:], start=skip + 1):
            tree = processor.traverse(tree)
            if done == len(structure) and len(passed) < _PASSED_PER_TREE:
                passed.add(key)  # both walks returned: no exception for this tree with these names
        return tree

    return validated


class _OldItemCopy:
    """Stands in for the `copy` module in moto.dynamodb.responses, whose one use there is UpdateItem's deep copy of
    the item before the update (`existing_item`). moto reads that copy only to build ReturnValues: for an
    UpdateItem that returns none, `skip_old_item_copy` makes it None, which moto's code then reads as an item
    that did not exist (no copy, no to_json, no comparison of every attribute), and gives the same answer."""

    skip = False

    def deepcopy(self, item: Any, memo: Any = None) -> Any:
        return None if self.skip else copy.deepcopy(item, memo)


OLD_ITEM_COPY = _OldItemCopy()


def skip_old_item_copy(update_item: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """DynamoHandler.update_item, without its copy of the old item when ReturnValues is NONE (given or not)."""

    def updated(self: Any) -> Any:
        if self.body.get("ReturnValues", "NONE") != "NONE":  # any other value (a wrong one too): moto's own way
            return update_item(self)
        OLD_ITEM_COPY.skip = True
        try:
            return update_item(self)
        finally:
            OLD_ITEM_COPY.skip = False

    return updated


class _ItemNotCopied:
    """What moto's models module sees as `copy` during an UpdateItem on a table without a stream: its one deep copy
    there (`orig_item`, the item before the update) is read only to add a stream record, so it is not made."""

    @staticmethod
    def deepcopy(obj: Any, memo: Any = None) -> Any:
        return obj


def skip_item_copy_without_stream(update_item: Callable[..., Any]) -> Callable[..., Any]:
    """DynamoDBBackend.update_item, without its copy of the old item when the table has no stream (any other
    case, a table not found by its name too: moto's own way). The models module's `copy` is put back after,
    whatever it was (moto_fixes/undo.py swaps it during a transaction, which may call this)."""
    import moto.dynamodb.models as models

    def updated(self: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        table = self.tables.get(table_name) if isinstance(table_name, str) else None
        if table is None or table.stream_shard is not None:
            return update_item(self, table_name, *args, **kwargs)
        previous = models.__dict__["copy"]
        models.__dict__["copy"] = _ItemNotCopied
        try:
            return update_item(self, table_name, *args, **kwargs)
        finally:
            models.__dict__["copy"] = previous

    return updated
