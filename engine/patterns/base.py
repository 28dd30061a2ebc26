"""The shape every pattern module shares (after PynamoDB's one-file-per-concern).

A pattern is a class with: a seed number and texts, its variants (one safe, at least one racy), its knobs
(options with defaults and ranges), `setup` (seed the table), `client` (one thread's work, every call through
`ctx.call` so it is recorded), `verify` (invariants from the table and the history), and `walkthrough`
(the seed's "In practice", printed in the seed's call-log format).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import pandas as pd

from engine.backends.tables import Table, TableSpec
from engine.errors import BadInput
from engine.options import RunOptions
from engine.record.calls import CallError, ClientContext, ConditionFailed
from engine.record.history import History


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    safe: bool  # the pair's guarded side and the default; what screens call it is `label`
    description: str
    # How screens name it, when not "safe" or "racy" by `safe`: a user's workload as the file writes it is not
    # proven safe ("as written"), though it is the side compared with the racy form.
    kind: str = ""

    @property
    def label(self) -> str:
        return self.kind or ("safe" if self.safe else "racy")


_KINDS: dict[type, tuple[str, str]] = {int: ("a whole number", "integer"), float: ("a number", "number")}


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
            what, placeholder = _KINDS.get(kind, (f"a {kind.__name__}", kind.__name__))
            raise BadInput(f"{self.name}={raw!r} is not {what}", f"use --set {self.name}=<{placeholder}>") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise BadInput(f"{self.name}={raw!r} is not a finite number", f"use --set {self.name}=<number>")
        if isinstance(value, str):
            return value  # a free-text knob has no range
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise BadInput(
                f"{self.name}={value} is out of range", f"use a value from {self.minimum:g} to {self.maximum:g}"
            )
        return value


# Calls kept as evidence per invariant: enough crosses to show where in the run it broke, few enough to draw.
EVIDENCE_LIMIT = 200


def invariant_key(name: str) -> str:
    """The key an invariant of this display name gets when none is given ("One owner, at most" -> "one-owner-at-most")."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


CANNOT_JUDGE = "CANNOT JUDGE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Invariant:
    """A verdict on one property of the run, with the evidence.

    `calls` may be given every History row (seq) that broke it: they are kept in seq order (the order the
    History received them, i.e. over the run's time), and past EVIDENCE_LIMIT an even sample of them is kept,
    so the evidence covers the whole run instead of its first second. `calls_total` is how many there were.

    `key` is what the dashboard finds it by (a constant of the pattern module), so its display `name` can be
    reworded freely; left empty it is derived from the name, as for files recorded before keys existed.

    `holds` is None when the history cannot decide (a read the judge needed was refused, a write's outcome is
    unknown): "cannot judge" is neither a PASS nor a FAIL, and a run never counts it as either."""

    name: str
    holds: bool | None
    expected: Any
    observed: Any
    explanation: str
    calls: tuple[int, ...] = ()  # History rows (seq) that broke it: all of them, or an even sample
    violations: int = 0  # how many times it broke
    calls_total: int | None = None  # how many rows broke it in all (default: len(calls), before sampling)
    key: str = ""

    def __post_init__(self) -> None:
        every = sorted({int(s) for s in self.calls})
        object.__setattr__(self, "calls", even_sample(every, EVIDENCE_LIMIT))
        if self.calls_total is None:
            object.__setattr__(self, "calls_total", len(every))
        if not self.key:
            object.__setattr__(self, "key", invariant_key(self.name))

    @property
    def sampled(self) -> bool:
        return len(self.calls) < (self.calls_total or 0)

    @property
    def verdict(self) -> str:
        """PASS, FAIL or CANNOT JUDGE, as the CLI prints it."""
        return CANNOT_JUDGE if self.holds is None else "PASS" if self.holds else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "holds": self.holds,
            "verdict": self.verdict,
            "expected": self.expected,
            "observed": self.observed,
            "explanation": self.explanation,
            "violations": self.violations,
            "calls": list(self.calls),
            "calls_total": self.calls_total,
        }


def even_sample(seqs: Sequence[int], limit: int) -> tuple[int, ...]:
    """`limit` of the sorted `seqs` at evenly spaced ranks, first and last included; all of them if they fit."""
    n = len(seqs)
    if n <= limit:
        return tuple(seqs)
    if limit <= 1:
        return tuple(seqs[:limit])
    return tuple(seqs[round(i * (n - 1) / (limit - 1))] for i in range(limit))


def evidence_caption(invariant: Mapping[str, Any]) -> str:
    """What the calls listed for an invariant (a dict from `Invariant.as_dict`, or an older record) are.

    Records written before `calls_total` existed kept the first 40 calls at most; they say so.
    """
    shown = len(invariant.get("calls") or ())
    total = invariant.get("calls_total")
    if total is None:
        return f"{shown:,} calls (an older record: at most the first 40 were kept)" if shown else "no calls named"
    if not total:
        return "no calls named"
    if shown < total:
        return f"{shown:,} of {total:,} calls, sampled evenly over the run"
    return f"all {total:,} calls" if total > 1 else "the one call"


@dataclass(frozen=True, slots=True)
class Harm:
    """What a racy run does wrong, counted from its verified invariants: the violations of the invariants
    with one of the keys `invariants` ("lost updates" are the violations of NO_LOST_UPDATE); none given, every
    invariant counts."""

    name: str
    invariants: tuple[str, ...] = ()

    def count(self, invariants: Iterable[Invariant]) -> int:
        return sum(inv.violations for inv in invariants if not self.invariants or inv.key in self.invariants)


# A pattern that names no harm of its own: every violation of every invariant counts.
ANY_VIOLATION = Harm("invariant violations")


# In a call's detail: this is the client's last attempt at its operation, so if it is refused for a reason the
# client retries (a version conflict, a colliding transaction), the client gives the operation up.
LAST_ATTEMPT = "last_attempt"


@dataclass(frozen=True, slots=True)
class GiveUp:
    """How a safe variant's clients abandon an operation (the seed's `raise RuntimeError("gave up after
    retries")`): its last attempt (detail LAST_ATTEMPT) refused for a reason `retried` says it retries. The
    run's summary counts them, so a PASS never hides work that was not done."""

    what: str  # the operations, plural: "changes", "orders"
    why: str  # how they were given up; {option} fields are filled from the run's options
    retried: Callable[[str, str, Mapping[str, Any]], bool]  # (action, error code, detail) -> a retried refusal

    def gave_up(self, action: str, code: str, detail: Mapping[str, Any]) -> bool:
        return bool(detail.get(LAST_ATTEMPT)) and self.retried(action, code, detail)


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
    # Whether the clients may run in several processes (engine/clients/processes.py); False when they meet in memory
    # through ctx.shared, which is per process.
    process_pool: ClassVar[bool] = True
    lost_response_default: ClassVar[float] = 0.0  # share of writes whose response is lost, by default
    harm: ClassVar[Harm] = ANY_VIOLATION  # what the racy variant's damage is called and counted from
    gives_up: ClassVar[GiveUp | None] = None  # how its clients abandon an operation, if they ever do

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
    def check_run(cls, variant: str, config: Any) -> None:
        """Refuse (BadInput) a run setting this variant cannot honour; `config` is the RunConfig. Default: none."""

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

    def walkthrough(self, walk: Any) -> None:  # walk: engine.run.walkthrough.Walk
        raise NotImplementedError

    def walkthrough_for(self, variant: str | None) -> Callable[[Any], None]:
        """The scene a variant replays (a variant built on another seed has its own); default `walkthrough`."""
        return self.walkthrough


def succeeded(response: Any) -> bool | str:
    """A scene's True/False for a guarded call: True done, False refused by its condition; any other failure
    (throttled, say) is neither, and is shown as its error code rather than read as the condition saying no."""
    if isinstance(response, ConditionFailed):
        return False
    return response.code if isinstance(response, CallError) else True


def rows(frame: pd.DataFrame, mask: Any) -> tuple[int, ...]:
    """The History rows (seq) selected by mask: evidence for an invariant card (Invariant samples them)."""
    return tuple(int(s) for s in frame.loc[mask, "seq"])


class CallRow(NamedTuple):
    """One recorded call as a pattern's invariants read it."""

    seq: int
    action: str
    key: str
    outcome: str  # "ok", "fail" or "info"
    error: str  # the DynamoDB error code, or "None"
    attempts: int  # botocore's retries + 1
    detail: dict[str, Any]


def call_rows(history: History) -> list[CallRow]:
    """Every call of the history, picked out once for the invariant functions to walk over."""
    frame = history.snapshot(detail=True)
    return [
        CallRow(*row)
        for row in zip(
            frame["seq"].astype(int),
            frame["action"].astype(str),
            frame["key"].astype(str),
            frame["outcome"].astype(str),
            frame["error"].astype(str),
            frame["retries"].astype(int) + 1,
            frame["detail"],
        )
    ]


@dataclass(frozen=True)
class RunCalls:
    """The calls of a run, picked out of its history once; a pattern's invariants add the items they read."""

    calls: list[CallRow]

    def acked(self, action: str) -> list[CallRow]:
        """The calls of one action the server acknowledged."""
        return [c for c in self.calls if c.action == action and c.outcome == "ok"]
