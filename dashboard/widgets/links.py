"""Scenario links: every control of the Run, Compare and Sweep pages lives in the page's URL, so a talk's demos
can be bookmarked or linked from a slide. Opening a link restores the controls (each value checked: a bad or stale
one is refused with a message naming the control, and that control keeps its default); `autostart=1` starts the
run on open, once.

The parsing is plain Python (`parse`), tested without a browser; `restore`/`remember` move values between the
URL and the widgets' session state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from dashboard.state import profile_knobs
from dashboard.state.run_settings import LIMIT_DURATION, LIMIT_OPS, RunSettings, option_kind
from dashboard.text.plain import plain
from dashboard.text.words import plural
from engine.backends.backend import RETRY_MODES
from engine.digits import ONLY, foreign_digits
from engine.errors import LabError, clip
from engine.patterns import Pattern, all_patterns, get_pattern
from engine.server.profile import ProfileSpec, ServerProfile

# The ids of what a page started, kept in its URL so a refresh or a new session finds it (and can Stop it).
JOB_IDS = frozenset({"run", "group", "sweep", "workload", "workload_pair", "workload_sweep"})
# Parameters that are not controls: the page's own state (which run it shows) and flags; "Your workload" keeps its
# preset and runs in the URL too (without them here, each rerun there took them for a new link: profile reset).
OTHER = JOB_IDS | {"autostart", "presenter", "preset", "wl"}
LIMITS = {"ops": LIMIT_OPS, "duration": LIMIT_DURATION}
KNOB = "k."  # a pattern knob's parameter: k.accounts=4
PROFILE = "profile"  # the sidebar's "Server profile": restored before the sidebar is drawn (restore_profile)
PROFILES = {p.value: p.value for p in ServerProfile}
SEEN_KEPT = 500  # URLs a session remembers having written (a few hundred bytes each)


@dataclass(frozen=True)
class Restored:
    """What a link set: the widget values (session-state key -> value) and what it refused, one line each."""

    values: dict[str, Any]
    problems: list[str]


def _number(text: str, kind: type, low: float, high: float) -> Any:
    """`text` as an int or float within [low, high]; ValueError naming the range otherwise."""
    if foreign_digits(text):
        raise ValueError(f"has digits other than 0-9: {ONLY}")
    if "_" in text:  # int() and float() read '4_0' as 40
        raise ValueError(f"has a '_' in it: {ONLY} alone")
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"is not a {'whole ' if kind is int else ''}number") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("is not a finite number")
    if not low <= value <= high:
        raise ValueError(f"is out of range: use {low:g} to {high:g}")
    return value


def _pattern(text: str) -> type[Pattern]:
    try:
        return get_pattern(text)
    except LabError:
        raise ValueError(f"is not a pattern: use one of {', '.join(all_patterns())}") from None


def parse(
    params: Mapping[str, str], page: str, *, max_threads: int, pick_variant: bool = True, on_cluster: bool = False
) -> Restored:
    """The widget values a Run or Compare link sets on `page` ("run" or "compare"), and its refused values; a
    value the page would not use (processes where the clients run in one process or on a cluster's workers, ops
    with a duration limit) is refused too, never dropped without a word."""
    values: dict[str, Any] = {}
    problems: list[str] = []

    def refuse(control: str, text: str, why: str) -> None:
        problems.append(refusal(control, text, why))

    cls = all_patterns().get("atomic-counters") or next(iter(all_patterns().values()))
    if "pattern" in params:
        try:
            cls = _pattern(params["pattern"])
            values[f"{page}-pattern"] = cls.name
        except ValueError as e:
            refuse("pattern", params["pattern"], str(e))
    k = f"{page}-{cls.name}"
    checks: dict[str, tuple[str, str, Callable[[str], Any]]] = {
        "threads": ("threads", f"{k}-threads", lambda t: _number(t, int, 1, max_threads)),
        "ops": ("ops per client", f"{k}-ops", lambda t: _number(t, int, 1, 10_000_000)),
        "duration": ("duration", f"{k}-duration", lambda t: _number(t, float, 0.1, 86_400)),
        "lost": ("lost-response share", f"{k}-lost", lambda t: _number(t, float, 0.0, 1.0)),
        "latency": ("added latency", f"{k}-latency", lambda t: _number(t, float, 0.0, 10_000.0)),
        "attempts": ("max attempts", f"{k}-attempts", lambda t: _number(t, int, 1, 20)),
        "seed": ("seed", f"{k}-seed", lambda t: _number(t, int, 0, 2**31 - 1)),
        "processes": ("client processes", f"{k}-processes", lambda t: _number(t, int, 1, 64)),
        "limit": ("stop-after", f"{k}-limit", lambda t: _choice(t, LIMITS)),
        "retry": ("retry mode", f"{k}-retry", lambda t: _choice(t, {m: m for m in RETRY_MODES})),
    }
    if pick_variant:
        checks["variant"] = ("variant", f"{k}-variant", lambda t: _choice(t, {v: v for v in cls.variants}))
    problems.extend(profile_problems(params))
    for name, text in params.items():
        if name in OTHER or name == "pattern" or (name == "variant" and not pick_variant):
            continue  # Compare runs every variant: a Run link's variant is not wrong there
        if is_profile_param(name):
            continue
        if name.startswith(KNOB):
            knob = name[len(KNOB) :]
            option = cls.options.get(knob)
            if option is None:
                refuse(f"knob {knob}", text, f"is not a knob of {cls.name}")
                continue
            try:
                values[f"{k}-opt-{knob}"] = _knob(option, text)
            except ValueError as e:
                refuse(f"knob {knob}", text, str(e))
            continue
        if name not in checks:
            refuse(
                "parameter",
                name,
                f"is not a control of this page: use {', '.join(sorted([*checks, PROFILE]))}, k.KNOB or aws.KNOB",
            )
            continue
        control, key, check = checks[name]
        try:
            values[key] = check(text)
            if why := _unused(name, values[key], cls, params, on_cluster):
                del values[key]
                refuse(control, text, why)
        except ValueError as e:
            refuse(control, text, str(e))
    return Restored(values, problems)


def _unused(name: str, value: Any, cls: type[Pattern], params: Mapping[str, str], on_cluster: bool) -> str | None:
    """Why the page would not use this (valid) value, or None when it would."""
    if name == "processes" and value != 1:
        if not cls.process_pool:
            return f"is not used: {cls.name}'s clients share memory, so they run in one process (use processes=1)"
        if on_cluster:
            return "is not used: with a cluster set in the sidebar its workers run the clients (use processes=1)"
    by_duration = params.get("limit") == "duration"
    if name == "ops" and by_duration:
        return "is not used: the link's stop-after is duration (leave out ops, or limit=duration)"
    if name == "duration" and not by_duration:
        return "is not used without limit=duration (add limit=duration, or leave out duration)"
    return None


def _choice(text: str, choices: Mapping[str, Any]) -> Any:
    if text not in choices:
        raise ValueError(f"is not one of {', '.join(choices)}")
    return choices[text]


def _knob(option: Any, text: str) -> Any:
    kind = option_kind(option)
    if kind == "choice":
        return _choice(text, {str(c): c for c in option.choices})
    return _number(text, int if kind == "int" else float, -1e12, 1e12)


def profile_problems(params: Mapping[str, str]) -> list[str]:
    """The link's server profile and aws-like knobs refused, one line each (empty when none or good ones)."""
    text = params.get(PROFILE)
    if text is None or text in PROFILES:
        return profile_knobs.parse_link(params)[1]
    return [refusal("Server profile", text, f"is not one of {', '.join(PROFILES)}")]


def is_profile_param(name: str) -> bool:
    """The sidebar's parameters in a page's link: the server profile and its aws-like knobs (aws.commit_ms=40)."""
    return name == PROFILE or profile_knobs.is_knob_param(name)


def refusal(control: str, text: str, why: str) -> str:
    """One line for a refused value of a link; a long one (a pasted page, a 5,000-digit number) cut to its start."""
    return clip(f"The link's {control} {text!r} {why}; that control keeps its default.")


def encode(settings: RunSettings, *, pick_variant: bool = True, profile: str | ProfileSpec = "exact") -> dict[str, str]:
    """The URL parameters of these control values (the inverse of `parse`); the server profile (the sidebar's)
    only when it is not exact."""
    out = {"pattern": settings.pattern}
    if pick_variant and settings.variant:
        out["variant"] = settings.variant
    out["threads"] = str(settings.threads)
    if settings.limit == LIMIT_DURATION:
        out["limit"] = "duration"
        out["duration"] = f"{settings.duration_s:g}"
    else:
        out["ops"] = str(settings.ops_per_client)
    for name, value in settings.options.items():
        out[f"{KNOB}{name}"] = f"{value:g}" if isinstance(value, float) else str(value)
    out["lost"] = f"{settings.lost_response_share or 0.0:g}"
    out["latency"] = f"{settings.latency_ms:g}"
    out["retry"] = settings.retry_mode
    out["attempts"] = str(settings.max_attempts)
    if settings.seed:
        out["seed"] = str(settings.seed)
    if settings.processes != 1:
        out["processes"] = str(settings.processes)
    return with_profile(out, profile)


def with_profile(params: dict[str, str], profile: str | ProfileSpec) -> dict[str, str]:
    """`params` with the server profile (when not exact) and, for a recorded run's ProfileSpec, its knobs off the
    model's defaults."""
    if isinstance(profile, ProfileSpec):
        return with_profile({**params, **profile_knobs.spec_link_params(profile)}, profile.name.value)
    return {**params, PROFILE: profile} if profile != ServerProfile.EXACT.value else params


# -- the page side --------------------------------------------------------------------------------------------------


def _params() -> dict[str, str]:
    return {name: st.query_params[name] for name in st.query_params}


def _controls(params: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset((k, v) for k, v in params.items() if k not in OTHER)


def restore(page: str, parse_link: Callable[[Mapping[str, str]], Restored]) -> list[str]:
    """Before the page's widgets: set them from the URL when it holds a link this session has not applied (a
    link just opened, or edited by hand); returns the link's problems (empty when none or nothing new)."""
    params = _params()
    if not _new_link(params):
        return []
    restored = parse_link(params)
    twice = [twice_given(name, st.query_params.get_all(name)) for name in params if name != "autostart"]
    for key, value in restored.values.items():
        st.session_state[key] = value
    _initials().update(restored.values)
    _see(_controls(params))
    return [*restored.problems, *filter(None, twice)]


def twice_given(name: str, values: list[str]) -> str | None:
    """A parameter the link gives more than once: the page would take the last without a word."""
    if len(values) < 2:
        return None
    shown = ", ".join(repr(v) for v in values[:4])
    return clip(
        f"The link gives {name!r} {plural(len(values), 'time')} ({shown}); give it once. The last is used meanwhile."
    )


def _initials() -> dict[str, Any]:
    initials: dict[str, Any] = st.session_state.setdefault("links-initial", {})
    return initials


def initial(key: str, fallback: Any) -> Any:
    """The value a widget is drawn with: the last link's for its key, else `fallback`. Setting the session state
    is not enough: Streamlit sends that value to the browser once, and a widget the browser draws only after a
    later rerun (its code still loading, while an autostarted run refreshes the page) shows its default; with the
    link's value as the default it shows the link's, and the user's edits stick as for any widget."""
    return _initials().get(key, fallback)


def _new_link(params: Mapping[str, str]) -> bool:
    """Whether the URL holds a link this session has not applied: one just opened, or edited by hand. Every URL a
    page wrote itself is "seen", not only the last: a widget changed while the browser has not yet shown the URL
    of the rerun before sends that older URL with its rerun, and taking it for a new link would undo the user's
    earlier edits (seen in a browser test on a loaded machine: a variant picked and threads typed, then reset)."""
    controls = _controls(params)
    return bool(controls) and controls not in _seen()


def _seen() -> dict[frozenset[tuple[str, str]], None]:
    seen: dict[frozenset[tuple[str, str]], None] = st.session_state.setdefault("links-seen", {})
    return seen


def _see(controls: frozenset[tuple[str, str]]) -> None:
    """Note a URL as seen; the oldest are forgotten past SEEN_KEPT (a session of edits cannot grow without end)."""
    seen = _seen()
    seen.pop(controls, None)
    seen[controls] = None  # the newest last
    while len(seen) > SEEN_KEPT:
        del seen[next(iter(seen))]


def restore_profile(key: str) -> None:
    """Before the sidebar's "Server profile" radio is drawn (Streamlit refuses a widget's value set after it): a
    link just opened sets it, to exact when the link names none; a bad one is refused by the page (`parse`)."""
    params = _params()
    profile = params.get(PROFILE, ServerProfile.EXACT.value)
    if _new_link(params) and profile in PROFILES:
        st.session_state[key] = _initials()[key] = profile


def restore_knobs(start: Mapping[str, Any]) -> None:
    """Before the sidebar's aws-like knobs are drawn: a link just opened sets each knob it names, and every other
    knob to `start` (knob -> value: the model's defaults, or a calibrated file's); its refusals are the page's."""
    params = _params()
    if not _new_link(params):
        return
    values, _ = profile_knobs.parse_link(params)
    for knob, value in start.items():
        set_initial(profile_knobs.knob_key(knob), values.get(knob, value))


def set_initial(key: str, value: Any) -> None:
    """A widget's value set from code (a link, a reset): in the session and as the value it is drawn with."""
    st.session_state[key] = _initials()[key] = value


def show_problems(problems: list[str]) -> None:
    for problem in problems:
        st.error(plain(problem), icon=":material/link_off:")  # it quotes the link's value


def remember(page: str, params: Mapping[str, str]) -> str:
    """After the widgets: put their values in the URL (keeping the page's other parameters) and return the link."""
    keep = {k: v for k, v in _params().items() if k in OTHER and k != "autostart"}
    wanted = {**params, **keep}
    if _params() != wanted:
        st.query_params.from_dict(wanted)
    _see(_controls(wanted))
    return link_to(params)


def link_to(params: Mapping[str, str]) -> str:
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{urlencode(dict(params))}"


def copy_link(link: str, key: str) -> None:
    """A "Copy link" control: the scenario's link, with the code block's copy button."""
    with st.popover("Copy link", icon=":material/link:"):
        st.caption("This page's controls as a link (add &autostart=1 to start the run on open):")
        st.code(link, language=None, wrap_lines=True)


def autostart(page: str, problems: list[str]) -> bool:
    """Whether the link asks to start the run now: `autostart=1`, the first time this session sees it, and no
    refused value (a run with a default where the link said otherwise would not be the scenario)."""
    if st.query_params.get("autostart") != "1" or st.session_state.get(f"links-{page}-autostarted"):
        return False
    st.session_state[f"links-{page}-autostarted"] = True
    if problems:
        st.warning("Not started: the link's values above were refused.", icon=":material/block:")
        return False
    return True


def start_now(start: Callable[[], str], state_key: str, param: str, show_error: Callable[[LabError], None]) -> None:
    """An autostart: start() and keep its id in the session and the URL, as a Start click does, but without a
    rerun: a rerun before the browser has seen the widgets would lose the values the link set in them. A refusal
    goes to `show_error` (the page's, so this module needs nothing of dashboard.widgets.ui, which reads the links)."""
    try:
        started = start()
    except LabError as e:
        show_error(e)
        return
    st.session_state[state_key] = started
    st.query_params[param] = started


def parse_sweep(params: Mapping[str, str], *, thread_choices: list[int], max_repeats: int = 10) -> Restored:
    """The Sweep page's controls from a link: pattern, threads (a comma-separated list), ops and repeats."""
    values: dict[str, Any] = {}
    problems: list[str] = []

    def refuse(control: str, text: str, why: str) -> None:
        problems.append(refusal(control, text, why))

    for name, text in params.items():
        try:
            if name in OTHER:
                continue
            if name == "pattern":
                values["sweep-pattern"] = _pattern(text).name
            elif name == "threads":
                counts = [_number(t.strip(), int, 1, max(thread_choices)) for t in text.split(",") if t.strip()]
                wrong = [c for c in counts if c not in thread_choices]
                if wrong or not counts:
                    raise ValueError(f"is not a list of {', '.join(map(str, thread_choices))}")
                if len(set(counts)) != len(counts):  # the multiselect holds each once: one would go silently
                    raise ValueError("names a count twice: name each once")
                values["sweep-threads"] = counts
            elif name == "ops":
                values["sweep-ops"] = _number(text, int, 1, 10_000_000)
            elif name == "repeats":
                values["sweep-repeats"] = _number(text, int, 1, max_repeats)
            elif is_profile_param(name):
                continue  # said once, below
            else:
                refuse(
                    "parameter", name, "is not a control of this page: use pattern, threads, ops, repeats or profile"
                )
        except ValueError as e:
            refuse(name, text, str(e))
    return Restored(values, [*problems, *profile_problems(params)])
