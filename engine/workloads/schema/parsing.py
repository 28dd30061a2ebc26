"""YAML text, a mapping or a run's JSON to a `Workload`, or `WorkloadInvalid` with one message per problem."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from engine.errors import BadInput
from engine.workloads.schema.base import FIELD_MARK
from engine.workloads.schema.limits import MAX_FILE_CHARS
from engine.workloads.schema.operations import OPERATION_TYPES
from engine.workloads.schema.workload import Workload


class WorkloadInvalid(BadInput):
    """A workload file that cannot run: `problems` has one (field path, message) per problem."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "the workload") -> None:
        self.problems = problems
        first = f"{problems[0][0]}: {problems[0][1]}" if problems[0][0] else problems[0][1]
        more = (
            f" (and {len(problems) - 1} more problems: `python -m engine workload check`)" if len(problems) > 1 else ""
        )
        super().__init__(f"{source} is invalid: {first}{more}", "fix the field named, then run it again")

    def lines(self) -> list[str]:
        return [f"{path}: {message}" if path else message for path, message in self.problems]


def _path(loc: tuple[Any, ...], data: Any) -> str:
    """pydantic's location as the file's field path: operations[1].retry.attempts (the tag level left out)."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
        elif isinstance(node, Mapping) and item in node:
            parts.append(f".{item}" if parts else str(item))
            node = node[item]
        elif item in OPERATION_TYPES:
            continue  # the discriminator's branch: not a field of the file
        else:
            parts.append(f".{item}" if parts else str(item))
            node = None
    return "".join(parts)


def _message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown field: remove it, or check its spelling against docs/workloads.md"
    if kind == "missing":
        return "required: add it"
    if kind == "union_tag_invalid":
        return f"{ctx.get('tag')!r} is not an operation type: use one of {', '.join(OPERATION_TYPES)}"
    if kind == "union_tag_not_found":
        return f"an operation needs a type: add type: one of {', '.join(OPERATION_TYPES)}"
    if kind == "literal_error":
        return f"{error.get('input')!r} is not allowed: use {ctx.get('expected')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = ctx.get("ge", ctx.get("gt", ctx.get("le", ctx.get("lt"))))
        word = {"greater_than_equal": "at least", "greater_than": "above", "less_than_equal": "at most"}.get(
            kind, "below"
        )
        return f"{error.get('input')!r} is out of range: use a value {word} {bound}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"])).partition(FIELD_MARK)[2] or str(ctx.get("error", error["msg"]))
    if kind == "string_too_short":
        return f"{error.get('input')!r} is too short: use at least {ctx.get('min_length')} characters"
    if kind == "string_too_long":
        return f"too long: use at most {ctx.get('max_length')} characters"
    if kind == "string_pattern_mismatch":
        return f"{str(error.get('input'))[:60]!r} has characters a name cannot: use letters, digits, '.', '_', '-'"
    if kind == "too_short":
        return "must not be empty: give at least one"
    return f"{error['msg']} (got {str(error.get('input'))[:60]!r})"


def parse_data(data: Any, source: str = "the workload") -> Workload:
    if not isinstance(data, Mapping):
        raise WorkloadInvalid([("", "the file must be a mapping of fields (name:, operations:, ...)")], source)
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        problems: list[tuple[str, str]] = []
        for err in e.errors():
            path = _path(tuple(err["loc"]), data)
            if err["type"] == "value_error" and FIELD_MARK in str((err.get("ctx") or {}).get("error", "")):
                field = str(err["ctx"]["error"]).partition(FIELD_MARK)[0]
                path = f"{path}.{field}" if path else field
            if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
                path += ".type"
            item = (path, _message(err))
            if item not in problems:
                problems.append(item)
        raise WorkloadInvalid(problems, source) from None


def parse(text: str, source: str = "the workload") -> Workload:
    """YAML text to a Workload; WorkloadInvalid with every problem (a YAML syntax error with its line and column)."""
    if len(text) > MAX_FILE_CHARS:
        raise WorkloadInvalid(
            [("", f"the file is {len(text):,} characters: a workload is at most {MAX_FILE_CHARS:,}; shorten it")],
            source,
        )
    try:
        # Aliases can expand a few lines into billions of nodes (the "billion laughs"): a workload needs none.
        if any(isinstance(token, yaml.AliasToken) for token in yaml.scan(text, Loader=yaml.SafeLoader)):
            raise WorkloadInvalid([("", "YAML aliases (*name) are not allowed: write the values out")], source)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(e, "problem", None) or str(e)
        raise WorkloadInvalid(
            [("", f"YAML syntax error at {where}{what}: fix the file's syntax there")], source
        ) from None
    return parse_data(data, source)


def load(path: str) -> Workload:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"cannot read workload file {path!r}: {e.strerror}", "give the path of a .yaml file") from None
    except UnicodeDecodeError:
        raise BadInput(f"workload file {path!r} is not UTF-8 text", "save it as UTF-8 YAML") from None
    return parse(text, path)


def from_json(text: str) -> Workload:
    """The spec as carried in a run's options (Workload.to_json)."""
    return parse_data(json.loads(text), "the workload in the run's options")
