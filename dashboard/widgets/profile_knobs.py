"""The sidebar's "aws-like knobs (simulated)": one control per knob of the aws-like model, each with its unit, its
default and its range; a reset; a calibrated file's values as the starting point, labelled. The values live in
this session's state only: each run carries them on its own table (the `ddblab:profile` tag the embedded server
reads per table), so no session's knobs reach another's runs."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.state.profile_knobs import NAMES, control_label, knob_help, knob_key, link_params, profile_from
from dashboard.widgets import links
from dashboard.widgets.ui import plain, show_error
from engine.errors import BadInput
from engine.server.profile import CHOICES, ProfileSpec

START_KEY = "aws-knobs-start"  # the starting point the controls were last set from (its knobs and label)


def _start_mark(start: ProfileSpec) -> str:
    return f"{start.tag_value()}|{start.source}"


def _set_all(start: ProfileSpec) -> None:
    for knob, value in start.knobs().items():
        links.set_initial(knob_key(knob), value)


def _reset(start: ProfileSpec) -> None:
    _set_all(start)  # in the button's callback: before the controls are drawn again


def knob_values() -> dict[str, Any]:
    """The knobs' values as the controls hold them (knob -> value); a knob not drawn yet is left out."""
    return {knob: st.session_state[knob_key(knob)] for knob in NAMES if knob_key(knob) in st.session_state}


def session_profile(start: ProfileSpec) -> ProfileSpec:
    """The aws-like profile these controls hold over `start` (the model's, or a calibrated file's); BadInput
    naming the knob and its range when one is out of it."""
    return profile_from(knob_values(), start)


def knob_controls(sb: Any, start: ProfileSpec) -> None:
    """The expander: the controls start from `start`'s values (again whenever `start` changes: a file loaded or
    cleared), or from a link's, and keep the user's edits across reruns."""
    if st.session_state.get(START_KEY) != _start_mark(start):
        _set_all(start)
        st.session_state[START_KEY] = _start_mark(start)
    links.restore_knobs(start.knobs())
    with sb.expander("aws-like knobs (simulated)", expanded=_off_start(start)):
        where = (
            f"Starting values: calibrated from {plain(start.source)}."
            if start.source
            else "Starting values: the model's defaults (docs/aws-like-model.md gives each one's source)."
        )
        st.caption(f"{where} New runs on every page use these; runs already made keep theirs.")
        for knob, value in start.knobs().items():
            key = knob_key(knob)
            shown = links.initial(key, value)
            if knob in CHOICES:
                choices = list(CHOICES[knob][1])
                st.selectbox(
                    control_label(knob),
                    choices,
                    index=choices.index(shown) if shown in choices else 0,
                    key=key,
                    help=knob_help(knob, start),
                )
            else:  # no bounds here: the engine's check says what is wrong, in its own words (as for the CLI)
                st.number_input(control_label(knob), value=float(shown), key=key, help=knob_help(knob, start))
        reset = "Reset to the calibrated file's values" if start.source else "Reset to defaults"
        st.button(reset, key="aws-knobs-reset", on_click=_reset, args=(start,), icon=":material/restart_alt:")
        try:
            session_profile(start)
        except BadInput as e:
            show_error(e)  # under the knobs; Start refuses the same until it is fixed


def _off_start(start: ProfileSpec) -> bool:
    """Whether a knob holds another value than its starting one: the expander is then open, so it shows why."""
    values = knob_values()
    return any(values.get(k, v) != v for k, v in start.knobs().items())


def profile_link_params() -> dict[str, str]:
    """The link parameters of the knobs as the controls hold them, only those off the model's defaults."""
    return link_params(knob_values())
