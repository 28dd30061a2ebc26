"""The witness finders by (pattern, invariant key), and `explain`, which asks them about each broken invariant.

A finder is registered by its pattern's witness module (`@finds("atomic-counters", FINAL_COUNT)`); that module
is imported here by name the first time its pattern is asked about, so no pattern is imported by this package
at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.witness import Witness
from engine.patterns.base import invariant_key
from engine.record.history import History

# (calls, the invariant as Invariant.as_dict() writes it) -> its witness, or None when none could be found
Finder = Callable[[Calls, Mapping[str, Any]], Witness | None]

# Where the patterns live: a pattern's witness module is <PATTERNS>.<name>.witnesses (a package pattern) or
# <PATTERNS>.<name>_witnesses (a one-file one). By name, not by asking engine.patterns: it imports them all,
# and they import this.
PATTERNS = "engine.patterns"

_FINDERS: dict[tuple[str, str], Finder] = {}
_LOADED: set[str] = set()


def finds(pattern: str, *keys: str) -> Callable[[Finder], Finder]:
    """Register a function as the witness finder of these invariants of `pattern`."""

    def register(finder: Finder) -> Finder:
        for key in keys:
            _FINDERS[(pattern, key)] = finder
        return finder

    return register


def load(pattern: str) -> None:
    """Import the pattern's witness module (it registers its finders); a pattern without one has no finders."""
    if pattern in _LOADED:
        return
    _LOADED.add(pattern)
    module = f"{PATTERNS}.{pattern.replace('-', '_')}"
    for name in (f"{module}.witnesses", f"{module}_witnesses"):
        try:
            importlib.import_module(name)
            return
        except ModuleNotFoundError as e:
            if e.name not in (name, module):
                raise  # the witness module exists and itself failed to import: a bug to see, not to hide


def key_of(invariant: Mapping[str, Any]) -> str:
    """An invariant's key; one recorded before invariants had keys gets the key its name had then."""
    return str(invariant.get("key") or invariant_key(str(invariant.get("name", ""))))


def has_finder(pattern: str, key: str) -> bool:
    load(pattern)
    return (pattern, key) in _FINDERS


def witness_for(pattern: str, calls: Calls | History, invariant: Mapping[str, Any] | Any) -> Witness | None:
    """The witness of one broken invariant (an Invariant or its dict), or None when its pattern has no finder
    for it or the calls hold no proof the finder recognises."""
    load(pattern)
    record = invariant if isinstance(invariant, Mapping) else invariant.as_dict()
    finder = _FINDERS.get((pattern, key_of(record)))
    if finder is None:
        return None
    return finder(calls if isinstance(calls, Calls) else Calls.of(calls), record)


def explain(pattern: str, history: History, invariants: Iterable[Mapping[str, Any] | Any]) -> dict[str, Witness | None]:
    """Invariant key -> its witness, for every invariant that broke (holds is False); None where none was found."""
    calls: Calls | None = None
    found: dict[str, Witness | None] = {}
    for invariant in invariants:
        record = invariant if isinstance(invariant, Mapping) else invariant.as_dict()
        if record.get("holds") is not False:
            continue
        calls = calls or Calls.of(history)
        found[key_of(record)] = witness_for(pattern, calls, record)
    return found
