"""Server profiles: `exact` (every request atomic and instant) and `aws-like` (the same atomicity, plus
DynamoDB's behaviour under contention, SIMULATED; see contention/ for what each knob drives).

A profile belongs to a table: the lab tags the run's table with `ddblab:profile` (the profile and its knobs in
one short string), so runs with different profiles can share one embedded server. A table without the tag
gets the server's default profile (`python -m engine serve --profile aws-like`).

Defaults, and where they come from:
- commit_ms 10: a TransactWriteItems holds its items through DynamoDB's two phases (prepare, commit), each
  about one in-region write of a few milliseconds. AWS publishes no figure; it is a knob.
- stale_ms 100, stale_share 0.33: DynamoDB keeps three copies of an item and acknowledges a write once two
  have it, so a read without ConsistentRead has about one chance in three of reaching the third copy, which
  AWS says is "usually" consistent "within a second"; 100 ms is a guess under that bound.
- write_units 1000, read_units 3000: DynamoDB's documented ceiling per partition per second; the model puts
  one ceiling on each partition key, lower it to reach it on a laptop.
- latency_ms 4, latency_p99_ms 12: DynamoDB's "single-digit millisecond" in-region calls; the median and 99th
  percentile of a lognormal distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from engine.errors import BadInput

PROFILE_TAG = "ddblab:profile"


class ServerProfile(StrEnum):
    EXACT = "exact"
    AWS_LIKE = "aws-like"


# Each knob of aws-like: (default, lowest, highest, what it sets).
KNOBS: dict[str, tuple[float, float, float, str]] = {
    "commit_ms": (10.0, 0.0, 1000.0, "how long a committed TransactWriteItems holds its items"),
    "stale_ms": (100.0, 0.0, 10_000.0, "how long a write may stay unseen by reads without ConsistentRead"),
    "stale_share": (0.33, 0.0, 1.0, "share of reads without ConsistentRead served by the lagging copy"),
    "write_units": (1000.0, 1.0, 100_000.0, "write units per second per partition key"),
    "read_units": (3000.0, 1.0, 100_000.0, "read units per second per partition key"),
    "latency_ms": (4.0, 0.0, 1000.0, "median network time per request"),
    "latency_p99_ms": (12.0, 0.0, 5000.0, "99th percentile of network time per request"),
}


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """A profile and its knobs (the knobs mean something only for aws-like)."""

    name: ServerProfile = ServerProfile.EXACT
    commit_ms: float = KNOBS["commit_ms"][0]
    stale_ms: float = KNOBS["stale_ms"][0]
    stale_share: float = KNOBS["stale_share"][0]
    write_units: float = KNOBS["write_units"][0]
    read_units: float = KNOBS["read_units"][0]
    latency_ms: float = KNOBS["latency_ms"][0]
    latency_p99_ms: float = KNOBS["latency_p99_ms"][0]

    @property
    def simulated(self) -> bool:
        return self.name is ServerProfile.AWS_LIKE

    @staticmethod
    def parse(name: str, knobs: dict[str, Any] | None = None) -> ProfileSpec:
        """From the user's words: a profile name and NAME=VALUE knobs; BadInput names the problem and the fix."""
        try:
            profile = ServerProfile(name)
        except ValueError:
            raise BadInput(f"unknown server profile {name!r}", "use --profile exact or --profile aws-like") from None
        spec = ProfileSpec(profile)
        if not knobs:
            return spec
        if profile is ServerProfile.EXACT:
            raise BadInput("profile knobs were given with the exact profile", "add --profile aws-like, or drop them")
        values: dict[str, float] = {}
        for knob, raw in knobs.items():
            if knob not in KNOBS:
                raise BadInput(f"unknown profile knob {knob!r}", f"use one of {', '.join(KNOBS)}")
            _, low, high, _ = KNOBS[knob]
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise BadInput(
                    f"profile knob {knob}={raw!r} is not a number", f"e.g. {knob}={KNOBS[knob][0]:g}"
                ) from None
            if not math.isfinite(value) or not low <= value <= high:
                raise BadInput(f"profile knob {knob}={raw} is out of range", f"use {low:g} to {high:g}")
            values[knob] = value
        spec = replace(spec, **values)  # type: ignore[arg-type]  # every key is a float knob (checked above)
        if spec.latency_p99_ms < spec.latency_ms:
            raise BadInput(
                f"latency_p99_ms {spec.latency_p99_ms:g} is below latency_ms {spec.latency_ms:g}",
                "give a 99th percentile at least as large as the median",
            )
        return spec

    def knobs(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}

    def as_dict(self) -> dict[str, Any]:
        """For summaries and exports: the profile, whether it is simulated, and its knobs when they apply."""
        out: dict[str, Any] = {"name": self.name.value, "simulated": self.simulated}
        if self.simulated:
            out["knobs"] = self.knobs()
        return out

    def tag_value(self) -> str:
        """The `ddblab:profile` tag: 'aws-like commit_ms=10 ...' (under DynamoDB's 256 characters)."""
        if not self.simulated:
            return self.name.value
        return " ".join([self.name.value, *(f"{k}={v:g}" for k, v in self.knobs().items())])

    @staticmethod
    def from_tag(value: str) -> ProfileSpec:
        name, *pairs = value.split()
        knobs = dict(pair.partition("=")[::2] for pair in pairs)
        return ProfileSpec.parse(name, knobs)

    @staticmethod
    def from_summary(value: Any) -> ProfileSpec | None:
        """The profile a run's summary names (`as_dict`'s shape, e.g. from an imported file), or None when it
        names none this lab knows: an import says "SIMULATED" as the live run did."""
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            return None
        knobs = value.get("knobs") if isinstance(value.get("knobs"), dict) else None
        try:
            return ProfileSpec.parse(value["name"], knobs)
        except BadInput:
            return None

    def describe(self) -> str:
        """One line for headers and captions; says "simulated" whenever anything is."""
        if not self.simulated:
            return "exact (every request atomic and instant)"
        return (
            f"aws-like (SIMULATED: transaction commit window {self.commit_ms:g} ms, stale reads {self.stale_share:g}"
            f" of reads within {self.stale_ms:g} ms of a write, {self.write_units:g} WCU / {self.read_units:g} RCU"
            f" per key per s, network {self.latency_ms:g} ms median, {self.latency_p99_ms:g} ms p99)"
        )


EXACT = ProfileSpec()
AWS_LIKE = ProfileSpec(ServerProfile.AWS_LIKE)
