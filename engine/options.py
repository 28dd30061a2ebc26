"""The validated knobs of one run: what a pattern's client threads and its setup/verify read.

Its own module because both sides need it: `engine.record.calls` hands it to each client, and the patterns define
what goes in it; either importing the other would make an import cycle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The validated knobs of one run, with the variant and sizes a pattern may need in setup/verify."""

    variant: str
    threads: int
    ops_per_client: int | None
    values: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]
