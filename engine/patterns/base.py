"""The shape every pattern module shares (after PynamoDB's one-file-per-concern).

A pattern is a class with: a seed number and texts, its variants (one safe, at least one racy), its knobs
(options with defaults and ranges), `setup` (seed the table), `client` (one thread's work, every call through
`ctx.call` so it is recorded), `verify` (invariants from the table and the history), and `walkthrough`
(the seed's "In practice", printed in the seed's call-log format).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from engine.calls import ClientContext
from engine.errors import BadInput
from engine.history import History
from engine.tables import Table, TableSpec


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    safe: bool
    description: str


@dataclass(frozen=True, slots=True)
class Option:
    """A knob of a pattern: shown in the CLI (--set name=value) and as a dashboard control."""

    name: str
    default: float | int | str
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def coerce(self, raw: Any) -> Any:
        if self.choices:
            if str(raw) not in self.choices:
                raise BadInput(
                    f"{self.name}={raw!r} is not one of {', '.join(self.choices)}",
                    f"use --set {self.name}=<{'|'.join(self.choices)}>",
                )
            return str(raw)
        kind = type(self.default)
        try:
            value = kind(float(raw)) if kind is int and isinstance(raw, str) and "." not in raw else kind(raw)
        except (TypeError, ValueError, OverflowError):
            raise BadInput(
                f"{self.name}={raw!r} is not a {kind.__name__}", f"use --set {self.name}=<{kind.__name__}>"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"{self.name}={raw!r} is not a finite number", f"use --set {self.name}=<number>")
        if isinstance(value, str):
            return value
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise BadInput(
                f"{self.name}={value} is out of range", f"use a value from {self.minimum:g} to {self.maximum:g}"
            )
        return value


CANNOT_JUDGE = "CANNOT JUDGE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Invariant:
    """A verdict on one property of the run, with the evidence.

    `holds` is None when the history cannot decide (a read the judge needed was refused, a write's outcome is
    unknown): "cannot judge" is neither a PASS nor a FAIL, and a run never counts it as either."""

    name: str
    holds: bool | None
    expected: Any
    observed: Any
    explanation: str
    calls: tuple[int, ...] = ()  # History rows (seq) that broke it, at most a few dozen
    violations: int = 0  # how many times it broke

    @property
    def verdict(self) -> str:
        """PASS, FAIL or CANNOT JUDGE, as the CLI prints it."""
        return CANNOT_JUDGE if self.holds is None else "PASS" if self.holds else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "holds": self.holds,
            "verdict": self.verdict,
            "expected": self.expected,
            "observed": self.observed,
            "explanation": self.explanation,
            "violations": self.violations,
            "calls": list(self.calls),
        }


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The validated knobs of one run, with the variant and sizes a pattern may need in setup/verify."""

    variant: str
    threads: int
    ops_per_client: int | None
    values: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


class Pattern:
    """Base class; subclasses fill in the class attributes and the four methods."""

    name: ClassVar[str]
    seed: ClassVar[int]
    title: ClassVar[str]
    problem: ClassVar[str]
    solution: ClassVar[str]
    variants: ClassVar[Mapping[str, Variant]]
    options: ClassVar[Mapping[str, Option]] = {}
    default_ops: ClassVar[int] = 50
    # Refusals that are the business rule saying no (sold out, out of stock), not a race lost: action -> the
    # error it comes back with. A sweep leaves them out of the conflict rate: they grow with the ops, not the
    # threads, and one client alone meets them too.
    business_refusals: ClassVar[Mapping[str, str]] = {}
    # Whether the clients may run in several processes (engine/pool.py); False when they meet in memory
    # through ctx.shared, which is per process.
    process_pool: ClassVar[bool] = True
    lost_response_default: ClassVar[float] = 0.0  # share of writes whose response is lost, by default

    @classmethod
    def safe_variant(cls) -> str:
        return next(v.name for v in cls.variants.values() if v.safe)

    @classmethod
    def racy_variant(cls) -> str:
        return next(v.name for v in cls.variants.values() if not v.safe)

    @classmethod
    def resolve_options(cls, variant: str, raw: Mapping[str, Any]) -> dict[str, Any]:
        if variant not in cls.variants:
            raise BadInput(f"pattern {cls.name!r} has no variant {variant!r}", f"use one of: {', '.join(cls.variants)}")
        unknown = set(raw) - set(cls.options)
        if unknown:
            known = ", ".join(cls.options) or "none"
            raise BadInput(f"pattern {cls.name!r} has no option {sorted(unknown)[0]!r}", f"its options are: {known}")
        return {
            name: opt.coerce(raw[name]) if name in raw else cls.variant_default(variant, name)
            for name, opt in cls.options.items()
        }

    @classmethod
    def variant_default(cls, variant: str, option: str) -> Any:
        """A variant may change an option's default (e.g. crashes on by default in the racy variant)."""
        return cls.options[option].default

    def table_spec(self, options: RunOptions) -> TableSpec:
        return TableSpec()

    def setup(self, table: Table, options: RunOptions) -> None:
        raise NotImplementedError

    def client(self, ctx: ClientContext) -> None:
        raise NotImplementedError

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        raise NotImplementedError

    def walkthrough(self, walk: Any) -> None:  # walk: engine.walkthrough.Walk
        raise NotImplementedError


def rows(frame: pd.DataFrame, mask: Any, limit: int = 40) -> tuple[int, ...]:
    """The History rows (seq) selected by mask, capped: evidence for an invariant card."""
    return tuple(int(s) for s in frame.loc[mask, "seq"].head(limit))
