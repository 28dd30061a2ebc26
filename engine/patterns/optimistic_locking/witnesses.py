"""The witnesses of optimistic locking's broken rules (blind-write): two clients read one account at the same
version and both wrote the next version, so the later put erased the earlier change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.explain.calls import Calls
from engine.explain.registry import finds
from engine.explain.shapes import same_read
from engine.explain.witness import Witness
from engine.history import Call
from engine.patterns.optimistic_locking.invariants import BALANCE_ADDS_UP, NO_LOST_UPDATE, VERSION_COUNTS_WRITES

PATTERN = "optimistic-locking"


def _read_version(call: Call) -> Any:
    return call.detail.get("read_version")


@finds(PATTERN, NO_LOST_UPDATE, BALANCE_ADDS_UP, VERSION_COUNTS_WRITES)
def lost_change(calls: Calls, invariant: Mapping[str, Any]) -> Witness | None:
    return same_read(
        calls,
        str(invariant["key"]),
        [(s, c) for s, c in calls if c.action in ("deposit", "withdraw")],
        read_of=_read_version,
        read_action="read",
        said=lambda v: (f"read version {v}", f"wrote version {v + 1}"),
        story=lambda who, v, key: (
            f"{who} both read {key} at version {v}; both wrote version {v + 1}; one change vanished"
        ),
    )
