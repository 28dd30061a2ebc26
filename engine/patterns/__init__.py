"""One module per seed pattern; each defines one Pattern subclass. Found by scanning this package, so adding
a pattern is adding a file. A larger pattern is a package whose __init__ defines the class, with its invariants,
walkthrough and shared names in sibling modules."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from engine.errors import BadInput
from engine.patterns.base import Invariant, Option, Pattern, RunOptions, Variant

__all__ = ["Invariant", "Option", "Pattern", "RunOptions", "Variant", "all_patterns", "get_pattern"]

_NOT_PATTERNS = {"base", "versioning"}


@cache
def all_patterns() -> dict[str, type[Pattern]]:
    """Pattern name -> class, in the seed's order."""
    found: list[type[Pattern]] = []
    for module in pkgutil.iter_modules(__path__):
        if module.name in _NOT_PATTERNS or module.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{module.name}")
        for value in vars(mod).values():
            if (
                isinstance(value, type)
                and issubclass(value, Pattern)
                and value is not Pattern
                and value.__module__ == mod.__name__
                and getattr(value, "name", None)
            ):
                found.append(value)
    return {p.name: p for p in sorted(found, key=lambda p: p.seed)}


def get_pattern(name_or_seed: str | int) -> type[Pattern]:
    """By name ("optimistic-locking") or seed number (23)."""
    patterns = all_patterns()
    key = str(name_or_seed).strip()
    if key == "workload":  # a team's own workload (engine/workloads/): run like a pattern, never listed with them
        from engine.workloads.pattern import WorkloadPattern

        return WorkloadPattern
    if key in patterns:
        return patterns[key]
    for pattern in patterns.values():
        if key == str(pattern.seed):
            return pattern
    listing = ", ".join(f"{p.seed} {p.name}" for p in patterns.values())
    raise BadInput(f"unknown pattern {key!r}", f"pick one of: {listing} (python -m engine list)")
