"""The Run page's controls for a run already made: opening a recorded demo (or any run of the History page) on
the Run page shows its controls and link, so Start and Copy link run what the screen shows, not the defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.state.records import known_pattern
from dashboard.state.run_settings import LIMIT_DURATION, LIMIT_OPS, RunSettings
from engine.server.profile import EXACT, ProfileSpec


def settings_of(summary: Mapping[str, Any]) -> RunSettings | None:
    """The controls a run's summary (engine.run.summary, or an imported file's) was made with; None when it names
    no pattern this lab knows. A knob the pattern no longer has is left out, not carried into a link it refuses."""
    cls = known_pattern(str(summary.get("pattern") or ""))
    if cls is None:
        return None
    variant = summary.get("variant")
    duration = summary.get("duration_limit_s")
    retry, faults, options = (_part(summary, name) for name in ("retry_policy", "faults", "options"))
    return RunSettings(
        pattern=cls.name,
        variant=variant if variant in cls.variants else None,
        threads=int(summary.get("threads") or 1),
        limit=LIMIT_DURATION if duration else LIMIT_OPS,
        ops_per_client=None if duration else int(summary.get("ops_per_client") or cls.default_ops),
        duration_s=float(duration) if duration else None,
        options={name: value for name, value in options.items() if name in cls.options},
        lost_response_share=float(faults.get("lost_response_share") or 0.0),
        latency_ms=float(faults.get("latency_ms") or 0.0),
        retry_mode=str(retry.get("mode") or "standard"),
        max_attempts=int(retry.get("max_attempts") or 3),
        processes=int(summary.get("processes") or 1),
    )


def _part(summary: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    part = summary.get(name)
    return part if isinstance(part, dict) else {}


def profile_of(summary: Mapping[str, Any]) -> ProfileSpec:
    """The profile a run's summary names, with its knobs (its link then carries those off the defaults); exact
    when it names none this lab knows."""
    return ProfileSpec.from_summary(summary.get("profile")) or EXACT
