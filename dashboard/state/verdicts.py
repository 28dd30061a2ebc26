"""The invariants of a run as the views read them (dicts, as in the summary JSON): by their stable key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.patterns.base import invariant_key

Invariants = Sequence[Mapping[str, Any]]


def flagged_calls(invariants: Invariants) -> set[int]:
    """History rows (seq) named as evidence by the invariants that failed."""
    return {int(s) for inv in invariants if not inv.get("holds", True) for s in inv.get("calls", ())}


def key_of(inv: Mapping[str, Any]) -> str:
    """An invariant's key; a file recorded before invariants had keys gets the key its name had then."""
    return str(inv.get("key") or invariant_key(str(inv.get("name", ""))))


def invariant(invariants: Invariants, key: str) -> Mapping[str, Any] | None:
    """The invariant with this key (a constant of its pattern module), or None."""
    return next((inv for inv in invariants if key_of(inv) == key), None)


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and np.isfinite(value):
        return float(value)
    return None


def observed(invariants: Invariants, key: str) -> int | None:
    """The observed value of the invariant with this key, as an int (None when absent or not a number)."""
    inv = invariant(invariants, key)
    value = as_number(inv.get("observed")) if inv else None
    return int(value) if value is not None else None
