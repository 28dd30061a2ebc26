"""The window's size in CSS px, reported by the browser: Streamlit tells a script neither (st.context has the
headers, the locale and the theme, no viewport), and chart text drawn by plotly is sized in px on the server.

A components-v2 component (inline JavaScript, no iframe, nothing fetched): it runs in the app's own page, so
`window.innerWidth` is the screen's, and it sets its state once on mount and again after a resize (debounced),
which reruns the script with the new size. Until the first report (the first run of a page) there is none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

KEY = "viewport"
SEEN = "viewport-seen"  # the size last reported, handed back to the probe

# Reports only a size that differs from the one the server last saw (`data`), so a rerun does not ask for another.
_JS = """
export default function (component) {
  const { setStateValue, data } = component;
  let last = data && data.width ? `${data.width}x${data.height}` : "";
  let timer = null;
  const report = () => {
    const width = Math.round(window.innerWidth), height = Math.round(window.innerHeight);
    if (`${width}x${height}` !== last) {
      last = `${width}x${height}`;
      setStateValue("size", { width, height });
    }
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(report, 250); };
  report();
  window.addEventListener("resize", later);
  return () => { clearTimeout(timer); window.removeEventListener("resize", later); };
}
"""

# Out of the page's flow: the probe draws nothing, and its empty box would still take a gap in the column.
CSS = f".st-key-{KEY}-box {{ position: absolute !important; width: 0 !important; height: 0 !important; overflow: hidden; }}"

_component = st.components.v2.component("ddblab_viewport", js=_JS)


@dataclass(frozen=True)
class Viewport:
    """The window's inner size, CSS px."""

    width: int
    height: int


SANE_PX = (200, 20_000)  # a window's size in CSS px that any screen gives; anything else is no report


def _size(value: Any) -> Viewport | None:
    """The reported size, or None for anything no browser window reports (NaN, infinity, a 10^12-px screen: the
    state arrives as JSON from the page, which anyone can send)."""
    if not isinstance(value, dict):
        return None
    width, height = value.get("width"), value.get("height")
    low, high = SANE_PX
    sizes = [v for v in (width, height) if isinstance(v, int | float) and not isinstance(v, bool) and low <= v <= high]
    return Viewport(int(sizes[0]), int(sizes[1])) if len(sizes) == 2 else None


def viewport() -> Viewport | None:
    """Mount the probe (once per page run) and return the last size it reported, or None before its first."""
    seen = st.session_state.get(SEEN)
    with st.container(key=f"{KEY}-box"):
        result = _component(key=KEY, data=seen or {}, default={"size": None}, on_size_change=lambda: None)
    size = _size(result.get("size"))
    st.session_state[SEEN] = {"width": size.width, "height": size.height} if size else None
    return size
