"""The Seed scenes page's link: `?pattern=22` (a seed number or a pattern name), `variant=` for a scene of its own,
the sidebar's `profile=`, `type=S|M|L` for the log's type size, `step=N` for the call shown when stepping through
the scene (presenter view), and `autostart=1` to play it on open. Parsed like the other pages' links (dashboard.widgets.links):
a bad value is refused with a message naming the control, and that control keeps its default."""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.widgets.links import OTHER, Restored, is_profile_param, profile_problems, with_profile
from engine.errors import LabError
from engine.patterns import get_pattern
from engine.run.walkthrough import scene_variants
from engine.server.profile import ProfileSpec

PAGE = "scenes"
PATTERN_KEY = f"{PAGE}-pattern"
TYPE_KEY = f"{PAGE}-type-size"
STEP_KEY = f"{PAGE}-step"
TYPES = ("S", "M", "L")  # the log's type: large, larger, largest
DEFAULT_TYPE = "S"
MAX_STEP = 10_000  # far past any scene's calls (a few dozen)


def variant_key(pattern: str) -> str:
    return f"{PAGE}-{pattern}-variant"


def parse(params: Mapping[str, str]) -> Restored:
    """The widget values a Seed scenes link sets, and its refused values (one line each)."""
    values: dict[str, object] = {}
    problems: list[str] = []

    def refuse(control: str, text: str, why: str) -> None:
        problems.append(f"The link's {control} {text!r} {why}; that control keeps its default.")

    pattern: str | None = None
    if "pattern" in params:
        try:
            pattern = get_pattern(params["pattern"]).name
            values[PATTERN_KEY] = pattern
        except LabError:
            refuse("pattern", params["pattern"], "is not a pattern: use a seed number (22 to 29) or a pattern name")
    for name, text in params.items():
        if name in OTHER or name == "pattern":
            continue
        if is_profile_param(name):
            continue  # said once, below
        elif name == "variant":
            own = scene_variants(get_pattern(pattern)) if pattern else []
            if text in own and pattern is not None:
                values[variant_key(pattern)] = text
            else:
                why = f"has no scene of its own: use {' or '.join(own)}" if own else "has no scene of its own"
                refuse("scene variant", text, why + " (or leave it out for the default scene)")
        elif name == "type":
            if text in TYPES:
                values[TYPE_KEY] = text
            else:
                refuse("type size", text, f"is not one of {', '.join(TYPES)}")
        elif name == "step":
            if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_STEP):
                refuse("step", text, f"is not a whole number from 1 to {MAX_STEP:,}")
            elif params.get("presenter") != "1":  # only presenter view steps through the log
                refuse("step", text, "is used only in presenter view (add presenter=1, or leave out step)")
            else:
                values[STEP_KEY] = int(text)
        else:
            refuse("parameter", name, "is not a control of this page: use pattern, variant, profile, type or step")
    return Restored(values, [*problems, *profile_problems(params)])


def encode(
    pattern: str,
    variant: str | None,
    *,
    profile: str | ProfileSpec = "exact",
    type_size: str = DEFAULT_TYPE,
    step: int | None = None,
) -> dict[str, str]:
    """The URL parameters of this scene (the inverse of `parse`); the profile only when it is not exact, the type
    size when not the default, the step when stepping."""
    out = {"pattern": pattern}
    if variant:
        out["variant"] = variant
    if type_size != DEFAULT_TYPE:
        out["type"] = type_size
    if step is not None:
        out["step"] = str(step)
        out["presenter"] = "1"  # a step is only used there
    return with_profile(out, profile)
