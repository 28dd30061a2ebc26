"""The aws-like knobs as the dashboard holds them: one session-state value per knob (the sidebar's controls), in
scenario links as `aws.KNOB=VALUE` (only the knobs off the model's defaults), and back to a ProfileSpec for a run.

Plain Python, no Streamlit. Every value is checked by the engine's own `check_knob` and `ProfileSpec.parse`, the
ones the CLI's `--profile-set` goes through: one validation, and its message names the knob and its range.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dashboard.text.plain import plain
from engine.errors import BadInput, clip
from engine.server.profile import (
    AWS_LIKE,
    CHOICES,
    KNOB_WORDS,
    KNOBS,
    ProfileSpec,
    ServerProfile,
    changed_knobs,
    check_knob,
    knob_said,
    knob_text,
)

LINK_PREFIX = "aws."  # a knob's link parameter: aws.commit_ms=40
NAMES = (*KNOBS, *CHOICES)


def knob_key(knob: str) -> str:
    """The session-state key of a knob's sidebar control."""
    return f"aws-knob-{knob}"


def knob_label(knob: str) -> str:
    """A control's label: the knob in words and its unit, "commit window (ms)"."""
    words, unit = KNOB_WORDS[knob]
    return f"{words} ({unit})" if unit else words


def control_label(knob: str) -> str:
    """A control's label with the model's default in sight: "commit window (ms) · default 10"."""
    default = CHOICES[knob][0] if knob in CHOICES else knob_text(KNOBS[knob][0])
    return f"{knob_label(knob)} · default {default}"


def knob_help(knob: str, start: ProfileSpec) -> str:
    """What a knob sets, its default, its range, and the starting value when a calibrated file gave another."""
    if knob in CHOICES:
        default, choices, what = CHOICES[knob]
        text = f"{what}. Default {default}; one of {', '.join(choices)}."
    else:
        default_value, low, high, what = KNOBS[knob]
        unit = KNOB_WORDS[knob][1]
        text = f"{what}. Default {default_value:g} {unit}; {low:g} to {high:g}. Set with --profile-set {knob}=… in the CLI."
    value = start.knobs()[knob]
    if start.source and value != AWS_LIKE.knobs()[knob]:
        text += f" Starting value {knob_text(value)}: calibrated from {plain(start.source)}."  # the file's words
    return text


def in_sidebar_words(error: BadInput) -> BadInput:
    """The engine's message with the CLI's words swapped for the sidebar's: the knob named by its control too."""
    problem = error.problem
    named = [(problem.find(knob), knob) for knob in NAMES if re.search(rf"\b{knob}\b", problem)]
    if named:  # the first knob the message names (latency_p99_ms, in "latency_p99_ms 3 is below latency_ms 4")
        problem = f"{problem} (the sidebar's “{knob_label(min(named)[1])}”)"
    fix = error.fix.replace("--profile-set ", "")
    return BadInput(problem, fix)


def profile_from(values: Mapping[str, Any], start: ProfileSpec) -> ProfileSpec:
    """The aws-like profile the controls hold (`values`: knob -> value; a knob not there keeps `start`'s), labelled
    with `start`'s calibration, and with the knobs set by hand on top of it; BadInput (the CLI's own check, in the
    sidebar's words) for a value out of range or a pair that contradicts itself."""
    knobs = {k: _text(values.get(k, v)) for k, v in start.knobs().items()}
    try:
        spec = ProfileSpec.parse(ServerProfile.AWS_LIKE.value, knobs)
    except BadInput as e:
        raise in_sidebar_words(e) from None
    if not start.source:
        return spec
    by_hand = [knob_said(k, v) for k, v in spec.knobs().items() if v != start.knobs()[k]]
    source = start.source + (f", then set here: {', '.join(by_hand)}" if by_hand else "")
    return replace(spec, source=source)


def _text(value: Any) -> Any:
    """A control's number as the CLI would type it (40, not 40.0: the message quotes it); anything else as is."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def link_params(values: Mapping[str, Any]) -> dict[str, str]:
    """The link parameters of the knobs' values as the controls hold them, only those off the model's defaults
    (even a value out of range: the link then reproduces what the page showed, and opening it says what is wrong)."""
    default = AWS_LIKE.knobs()
    out = {}
    for knob in NAMES:
        if knob not in values or values[knob] is None:
            continue
        value = values[knob]
        if value != default[knob]:
            out[f"{LINK_PREFIX}{knob}"] = str(_text(value))
    return out


def spec_link_params(spec: ProfileSpec) -> dict[str, str]:
    """A recorded run's changed knobs as link parameters (the History page's "Open on the Run page")."""
    return {f"{LINK_PREFIX}{k}": knob_text(v) for k, v in changed_knobs(spec).items()}


def is_knob_param(name: str) -> bool:
    return name.startswith(LINK_PREFIX)


def parse_link(params: Mapping[str, str]) -> tuple[dict[str, float | str], list[str]]:
    """A link's knob values (knob -> value) and its refusals, one line each naming the knob and its range: each
    value checked alone, then the ones that passed together (p99 below the median, say). A knob with the exact
    profile (or none named) is refused too: the exact server has no knobs."""
    given = {name[len(LINK_PREFIX) :]: text for name, text in params.items() if is_knob_param(name)}
    if not given:
        return {}, []
    if params.get("profile") != ServerProfile.AWS_LIKE.value:
        names = ", ".join(given)
        return {}, [
            clip(
                f"The link's aws-like knobs ({names}) come without profile=aws-like; they are not used (add "
                "profile=aws-like to the link, or leave them out)."
            )
        ]
    values: dict[str, float | str] = {}
    problems: list[str] = []
    for knob, text in given.items():
        try:
            values[knob] = check_knob(knob, text)
        except BadInput as e:  # the CLI's own words, the knob named in the sidebar's too
            said = e.problem.replace("profile knob", "aws-like knob")
            where = f" ({knob_label(knob)})" if knob in KNOB_WORDS else ""
            problems.append(clip(f"The link's {said}{where}: {e.fix}; that knob keeps its default."))
    try:
        profile_from(values, AWS_LIKE)
    except BadInput as e:
        problems.append(
            clip(f"The link's aws-like knobs contradict each other: {e.problem}; {e.fix}. They keep their defaults.")
        )
        return {}, problems
    return values, problems
