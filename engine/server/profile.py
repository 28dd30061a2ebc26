"""Server profiles: `exact` (every request atomic and instant) and `aws-like` (the same atomicity, plus
DynamoDB's behaviour under contention, SIMULATED; see contention/ for what each knob drives).

A profile belongs to a table: the lab tags the run's table with `ddblab:profile` (the profile and its knobs in
one short string), so runs with different profiles can share one embedded server. A table without the tag
gets the server's default profile (`python -m engine serve --profile aws-like`).

Every default, its source (an AWS page or paper, quoted briefly) or why it is assumed: docs/aws-like-model.md
(a test keeps that table and KNOBS in step). In short:
- commit_ms 10, abort_ms 10, write_ms 3, read_ms 4, window_spread 3: how long a TransactWriteItems holds its
  items from prepare to commit, or to its release when cancelled; how long a single write and a
  TransactGetItems are under way (when the two overlap on an item, the TransactGetItems is cancelled); each
  drawn per request from a lognormal with that median and a 99th percentile of `window_spread` times it. AWS
  publishes no figure: assumed, calibratable.
- stale_ms 20, stale_spread 10, stale_cap_ms 1000, stale_share 0.33: DynamoDB keeps three copies and
  acknowledges a write once two have it; the third lags for a time drawn per write (median, spread, capped
  near AWS's "within a second"), and a read without ConsistentRead reaches it about one time in three.
- write_units 1000, read_units 3000: DynamoDB's documented ceiling per partition per second.
- latency_ms 4, latency_p99_ms 12: DynamoDB's "single-digit millisecond" in-region calls.
- gsi_lag_ms 100: GSI propagation, "within 1 second" (AWS); a table's own ddblab:gsi-lag-ms tag wins.
- table_mode on-demand: decides the throttling error (ThrottlingException, or
  ProvisionedThroughputExceededException for provisioned) and its ThrottlingReasons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from engine.digits import ONLY, foreign_digits
from engine.errors import BadInput

PROFILE_TAG = "ddblab:profile"


class ServerProfile(StrEnum):
    EXACT = "exact"
    AWS_LIKE = "aws-like"


# Each numeric knob of aws-like: (default, lowest, highest, what it sets).
KNOBS: dict[str, tuple[float, float, float, str]] = {
    "commit_ms": (10.0, 0.0, 10_000.0, "median time a committed TransactWriteItems holds its items"),
    "abort_ms": (10.0, 0.0, 10_000.0, "median time a cancelled TransactWriteItems holds the items it prepared"),
    "write_ms": (3.0, 0.0, 10_000.0, "median time a single write is under way (a TransactGetItems meanwhile fails)"),
    "read_ms": (4.0, 0.0, 10_000.0, "median time a TransactGetItems is under way (a write meanwhile cancels it)"),
    "window_spread": (3.0, 1.0, 100.0, "99th percentile / median of the commit, abort, write and read windows"),
    "stale_ms": (20.0, 0.0, 10_000.0, "median time the lagging copy stays behind a write"),
    "stale_spread": (10.0, 1.0, 1000.0, "99th percentile / median of the lagging copy's lag"),
    "stale_cap_ms": (1000.0, 0.0, 60_000.0, "longest the lagging copy stays behind a write"),
    "stale_share": (0.33, 0.0, 1.0, "share of reads without ConsistentRead served by the lagging copy"),
    "write_units": (1000.0, 1.0, 100_000.0, "write units per second per partition key (index keys too)"),
    "read_units": (3000.0, 1.0, 100_000.0, "read units per second per partition key"),
    "latency_ms": (4.0, 0.0, 1000.0, "median network time per request"),
    "latency_p99_ms": (12.0, 0.0, 5000.0, "99th percentile of network time per request"),
    "gsi_lag_ms": (100.0, 0.0, 10_000.0, "GSI propagation lag of a table without its own ddblab:gsi-lag-ms tag"),
}
# Knobs that name one of a few choices: (default, choices, what it sets).
CHOICES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "table_mode": ("on-demand", ("on-demand", "provisioned"), "capacity mode: which throttling error DynamoDB gives"),
}


# How screens name each knob and its unit: (words, unit); the dashboard's controls and run labels use them.
KNOB_WORDS: dict[str, tuple[str, str]] = {
    "commit_ms": ("commit window", "ms"),
    "abort_ms": ("abort window", "ms"),
    "write_ms": ("write window", "ms"),
    "read_ms": ("read window", "ms"),
    "window_spread": ("window spread", "× median"),
    "stale_ms": ("stale lag", "ms"),
    "stale_spread": ("stale lag spread", "× median"),
    "stale_cap_ms": ("stale lag cap", "ms"),
    "stale_share": ("stale share", "of reads"),
    "write_units": ("write ceiling", "WCU/s per key"),
    "read_units": ("read ceiling", "RCU/s per key"),
    "latency_ms": ("network latency", "ms median"),
    "latency_p99_ms": ("network latency p99", "ms"),
    "gsi_lag_ms": ("GSI lag", "ms"),
    "table_mode": ("table mode", ""),
}


def check_knob(knob: str, raw: Any) -> float | str:
    """One knob's value from the user's words (CLI, dashboard control or link alike), or BadInput naming the knob,
    its range (or choices) and the fix."""
    if knob in CHOICES:
        choices = CHOICES[knob][1]
        if raw not in choices:
            raise BadInput(f"profile knob {knob}={raw!r} is not one of its choices", f"use {' or '.join(choices)}")
        return str(raw)
    if knob not in KNOBS:
        raise BadInput(f"unknown profile knob {knob!r}", f"use one of {', '.join([*KNOBS, *CHOICES])}")
    _, low, high, _ = KNOBS[knob]
    if isinstance(raw, str) and (foreign_digits(raw) or "_" in raw):  # float() reads '٤٠' and '4_0' as 40
        said = "has digits other than 0-9" if foreign_digits(raw) else "has a '_' in it"
        raise BadInput(f"profile knob {knob}={raw!r} {said}", f"{ONLY} alone, e.g. {knob}={KNOBS[knob][0]:g}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise BadInput(f"profile knob {knob}={raw!r} is not a number", f"e.g. {knob}={KNOBS[knob][0]:g}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise BadInput(f"profile knob {knob}={raw} is out of range", f"use {low:g} to {high:g}")
    return value


def draw_ms(chance: Any, median: float, spread: float, cap: float = math.inf) -> float:
    """A duration in seconds from a lognormal with that median (ms) and 99th percentile spread × median, at most
    `cap` ms; the median itself when spread is 1 (no draw: tests that need an exact window get one)."""
    if median <= 0:
        return 0.0
    if spread <= 1.0:
        return min(median, cap) / 1000.0
    sigma = math.log(spread) / Z99
    return min(median * math.exp(sigma * chance.gauss(0.0, 1.0)), cap) / 1000.0


Z99 = 2.3263478740408408  # the standard normal's 99th percentile


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """A profile and its knobs (the knobs mean something only for aws-like)."""

    name: ServerProfile = ServerProfile.EXACT
    commit_ms: float = KNOBS["commit_ms"][0]
    abort_ms: float = KNOBS["abort_ms"][0]
    write_ms: float = KNOBS["write_ms"][0]
    read_ms: float = KNOBS["read_ms"][0]
    window_spread: float = KNOBS["window_spread"][0]
    stale_ms: float = KNOBS["stale_ms"][0]
    stale_spread: float = KNOBS["stale_spread"][0]
    stale_cap_ms: float = KNOBS["stale_cap_ms"][0]
    stale_share: float = KNOBS["stale_share"][0]
    write_units: float = KNOBS["write_units"][0]
    read_units: float = KNOBS["read_units"][0]
    latency_ms: float = KNOBS["latency_ms"][0]
    latency_p99_ms: float = KNOBS["latency_p99_ms"][0]
    gsi_lag_ms: float = KNOBS["gsi_lag_ms"][0]
    table_mode: str = CHOICES["table_mode"][0]
    # Where the knobs come from, when a calibration measured them: "FILE (REGION, DATE)" (not a knob).
    source: str = ""

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
        values = {knob: check_knob(knob, raw) for knob, raw in knobs.items()}
        spec = replace(spec, **values)  # type: ignore[arg-type]  # every key is a knob of its type (checked above)
        if spec.latency_p99_ms < spec.latency_ms:
            raise BadInput(
                f"latency_p99_ms {spec.latency_p99_ms:g} is below latency_ms {spec.latency_ms:g}",
                "give a 99th percentile at least as large as the median",
            )
        if spec.stale_ms > spec.stale_cap_ms:  # the cap would silently shorten every lag to below the median asked for
            raise BadInput(
                f"stale_ms {spec.stale_ms:g} is above stale_cap_ms {spec.stale_cap_ms:g}, which caps every lag",
                f"raise the cap too (--profile-set stale_cap_ms={spec.stale_ms:g} or more), or lower stale_ms",
            )
        return spec

    def knobs(self) -> dict[str, float | str]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("name", "source")}

    def calibrated_from(self, label: str) -> ProfileSpec:
        """The same knobs, labelled as measured: "calibrated from FILE (REGION, DATE)" wherever it is shown."""
        return replace(self, source=label)

    def as_dict(self) -> dict[str, Any]:
        """For summaries and exports: the profile, whether it is simulated, and its knobs when they apply."""
        out: dict[str, Any] = {"name": self.name.value, "simulated": self.simulated}
        if self.simulated:
            out["knobs"] = self.knobs()
        if self.source:
            out["calibrated_from"] = self.source
        return out

    def tag_value(self) -> str:
        """The `ddblab:profile` tag: 'aws-like commit_ms=10 ...' (under DynamoDB's 256 characters)."""
        if not self.simulated:
            return self.name.value
        full = " ".join([self.name.value, *(f"{k}={knob_text(v)}" for k, v in self.knobs().items())])
        if len(full) <= 256:
            return full
        # Past DynamoDB's tag limit: only the knobs off their defaults (from_tag gives the rest their defaults).
        default = ProfileSpec(self.name).knobs()
        changed = (f"{k}={knob_text(v)}" for k, v in self.knobs().items() if v != default[k])
        return " ".join([self.name.value, *changed])

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
            spec = ProfileSpec.parse(value["name"], knobs)
        except BadInput:
            return None
        source = value.get("calibrated_from")
        return spec.calibrated_from(source) if isinstance(source, str) and spec.simulated else spec

    def describe(self) -> str:
        """One line for headers and captions; says "simulated" whenever anything is."""
        if not self.simulated:
            return "exact (every request atomic and instant)"
        note = knobs_note(self)
        label = f"SIMULATED, {note}" if note else "SIMULATED"
        return (
            f"aws-like ({label}: transaction commit / abort windows {self.commit_ms:g} / {self.abort_ms:g} ms median,"
            f" single writes {self.write_ms:g} ms, stale reads {self.stale_share:g} of reads within a lag of"
            f" {self.stale_ms:g} ms median (at most {self.stale_cap_ms:g} ms) of a write, {self.write_units:g} WCU /"
            f" {self.read_units:g} RCU per key per s, {self.table_mode} throttling, GSI lag {self.gsi_lag_ms:g} ms,"
            f" network {self.latency_ms:g} ms median, {self.latency_p99_ms:g} ms p99)"
        )


def knob_text(value: float | str) -> str:
    """A knob's value as the tag and summaries write it: 10, 0.33, on-demand."""
    return value if isinstance(value, str) else f"{value:g}"


EXACT = ProfileSpec()
AWS_LIKE = ProfileSpec(ServerProfile.AWS_LIKE)


def knob_said(knob: str, value: float | str) -> str:
    """One knob as screens say it: "commit window 40 ms", "table mode provisioned"."""
    words, unit = KNOB_WORDS[knob]
    return f"{words} {knob_text(value)} {unit}".rstrip()


def changed_knobs(spec: ProfileSpec) -> dict[str, float | str]:
    """The knobs of an aws-like profile that differ from the model's defaults (empty for exact)."""
    if not spec.simulated:
        return {}
    default = AWS_LIKE.knobs()
    return {k: v for k, v in spec.knobs().items() if v != default[k]}


def knobs_note(spec: ProfileSpec) -> str:
    """Where an aws-like run's knobs came from, for every place that says SIMULATED: "" with the model's defaults,
    "calibrated from FILE (REGION, DATE)", or "knobs changed: commit window 40 ms, stale share 0.5 of reads"."""
    if spec.source:
        return f"calibrated from {spec.source}"
    changed = changed_knobs(spec)
    return "knobs changed: " + ", ".join(knob_said(k, v) for k, v in changed.items()) if changed else ""


def simulated_label(spec: ProfileSpec) -> str:
    """A run's profile in a table row or a CSV column: "exact", "aws-like (SIMULATED)", or with its note:
    "aws-like (SIMULATED; knobs changed: commit window 40 ms)"."""
    if not spec.simulated:
        return spec.name.value
    note = knobs_note(spec)
    return f"{spec.name.value} (SIMULATED; {note})" if note else f"{spec.name.value} (SIMULATED)"
