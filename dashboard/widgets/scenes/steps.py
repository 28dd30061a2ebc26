"""The Seed scenes page's log for a room: its type size (`type=S|M|L` in the link, growing with the screen, never
wrapping mid-word), and in presenter view one call at a time, stepped with Previous/Next or the arrow keys."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.state import scene_play as scenes
from dashboard.state.links import scene as scene_links
from dashboard.text.words import plural
from dashboard.widgets import links

# Readable from the back of a room: at least `rem`, and `vw` of the screen's width on a larger screen (a 1920-px
# projector gets half as much again as a 1280-px one). A long line wraps between words rather than scrolls.
TYPE_SIZES = {"S": ("large", 1.15, 1.5), "M": ("larger", 1.4, 1.9), "L": ("largest", 1.7, 2.4)}  # name, rem, vw


def type_picker(at: Any) -> str:
    """The log's type size, in `at` (a column); its initial value from the link's type=."""
    picked = at.segmented_control(
        "Type size",
        list(TYPE_SIZES),
        default=links.initial(scene_links.TYPE_KEY, scene_links.DEFAULT_TYPE),
        key=scene_links.TYPE_KEY,
        format_func=lambda s: TYPE_SIZES[s][0],
        help="for the room's screen; also type=S, M or L in the link",
    )
    return picked if picked in TYPE_SIZES else scene_links.DEFAULT_TYPE  # a click on the picked one unpicks it


def style(type_size: str, *, stepping: bool) -> None:
    """The log's type; a step's log block grows with its text instead of scrolling inside a fixed box."""
    _, rem, vw = TYPE_SIZES[type_size]
    size = f"clamp({rem}rem, {vw}vw, {rem * 2:g}rem)"
    # white-space keeps the log's indentation; a line breaks at a space, and inside a word only when that word
    # alone is longer than the line (a long JSON value), never to fill the line.
    st.html(
        "<style>.st-key-scenes-log pre, .st-key-scenes-log code "
        f"{{ font-size: {size} !important; line-height: 1.4 !important; white-space: pre-wrap !important; "
        "word-break: normal !important; overflow-wrap: break-word !important; }"
        + (
            ".st-key-scenes-step-at p { font-size: clamp(1.1rem, 1.5vw, 1.8rem) !important; margin: 0 !important; }"
            # Streamlit pulls a text block up by its last paragraph's 1rem margin, which is 0 here: without this the
            # box is a rem shorter than the label, so the row centres the box and the label hangs 8-10 px low.
            ".st-key-scenes-step-at [data-testid='stMarkdownContainer'] { margin-bottom: 0 !important; }"
            if stepping
            else ""
        )
        + "</style>"
    )


def shown(text: str, stepping: bool) -> str:
    """What the log shows of the text printed so far: all of it, or when stepping the call being made."""
    parts = scenes.steps(text) if stepping else []
    return parts[-1] if parts else text


def restart() -> None:
    st.session_state[scene_links.STEP_KEY] = 1


def _go(step: int) -> None:
    st.session_state[scene_links.STEP_KEY] = step


def stepper(steps: list[str], log: Any, back: Any, at: Any, forward: Any, notes: Any) -> int:
    """Show one step of `steps` in `log`, with Previous and Next (the Left and Right keys) in `back` and `forward`
    and where it is in `at`; a step past the scene's last (a link's) shows the last, saying so in `notes`.
    Returns the step shown (1-based)."""
    n = len(steps)
    wanted = int(st.session_state.get(scene_links.STEP_KEY, 1))
    step = min(max(wanted, 1), n)
    if wanted > n:
        notes.warning(f"Step {wanted:,} is past this scene's {plural(n, 'step')}: the last is shown.")
    st.session_state[scene_links.STEP_KEY] = step
    back.button(
        "Previous",
        icon=":material/arrow_back:",
        key="scenes-back",
        on_click=_go,
        args=(step - 1,),
        disabled=step <= 1,
        shortcut="Left",
        width="stretch",
    )
    with at.container(key="scenes-step-at"):
        st.markdown(f"**Step {step} of {n}**")
    forward.button(
        "Next",
        icon=":material/arrow_forward:",
        key="scenes-next",
        on_click=_go,
        args=(step + 1,),
        disabled=step >= n,
        shortcut="Right",
        width="stretch",
    )
    log.code(steps[step - 1], language=None, wrap_lines=True)
    return step
