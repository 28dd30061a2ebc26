"""A chart's text at another size: every font size in a figure times one factor, and the room plotly keeps for text
(margins, a title's padding, an annotation's offset) with it, so a title made larger still fits above its plot.

Presenter view draws charts for the screen it is shown on: the page's own text grows with the screen's width (a
root font of 16 px up to 19.2 px at 1920), and a chart's px-sized text has to grow by the same factor, or at
1920x1080 the charts keep the type of a laptop under headings a fifth larger."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

PLOTLY_FONT_PX = 12  # plotly's own base size, for a figure that sets none


def scaled(fig: go.Figure, factor: float) -> go.Figure:
    """A copy of `fig` with every font size (the layout's, its axes', legend's, titles', annotations', hover
    labels', the traces' text) times `factor`, and the margins, the title's pad and the annotations' shifts with
    them; nothing else changes. A factor of 1 returns `fig` itself."""
    if factor == 1:
        return fig
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    font = layout.setdefault("font", {})
    font.setdefault("size", PLOTLY_FONT_PX)  # text that sets no size of its own inherits this one
    _fonts(layout, factor)
    for trace in spec["data"]:
        _fonts(trace, factor)
    _room(layout, "margin", ("l", "r", "t", "b", "pad"), factor)
    if isinstance(layout.get("title"), dict):
        _room(layout["title"], "pad", ("t", "b", "l", "r"), factor)
    for note in layout.get("annotations") or ():
        for key in ("xshift", "yshift"):
            if isinstance(note.get(key), int | float):
                note[key] = round(note[key] * factor)
    return go.Figure(spec, _validate=False)


def _fonts(node: MutableMapping[str, Any], factor: float) -> None:
    """Every `font`/`*font` mapping's size under `node`, scaled in place (a list of mappings is walked too; data
    arrays are not: they hold no fonts)."""
    for key, value in node.items():
        if isinstance(value, MutableMapping):
            if (key == "font" or key.endswith("font")) and "size" in value:
                value["size"] = _times(value["size"], factor)
            _fonts(value, factor)
        elif isinstance(value, list | tuple) and value and isinstance(value[0], MutableMapping):
            for item in value:
                if isinstance(item, MutableMapping):
                    _fonts(item, factor)


def _times(size: Any, factor: float) -> Any:
    """A size, or per-point sizes, times `factor` (one decimal: plotly draws fractional px)."""
    if isinstance(size, int | float) and not isinstance(size, bool):
        return round(size * factor, 1)
    if isinstance(size, np.ndarray):
        return np.round(size * factor, 1)
    if isinstance(size, list | tuple):
        return [_times(s, factor) for s in size]
    return size


def _room(node: MutableMapping[str, Any], key: str, sides: tuple[str, ...], factor: float) -> None:
    box = node.get(key)
    if isinstance(box, MutableMapping):
        for side in sides:
            if isinstance(box.get(side), int | float):
                box[side] = round(box[side] * factor)
