"""A chart's text at a presenter's screen size (dashboard.figures.text_scale): every font size in the figure is
multiplied by the factor, the room plotly keeps for text (margins, the title's pad, annotations' shifts) with it,
and nothing else changes."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dashboard.figures import charts
from dashboard.figures.text_scale import PLOTLY_FONT_PX, scaled
from dashboard.widgets.presenter import type_scale
from dashboard.widgets.viewport.probe import Viewport

ROOM = {"margin", "pad", "xshift", "yshift"}


def _sizes(node: Any, path: str = "") -> dict[str, Any]:
    """Every font size under `node`, by its path."""
    out: dict[str, Any] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "font" or key.endswith("font")) and isinstance(value, dict) and "size" in value:
                out[f"{path}.{key}.size"] = value["size"]
            out |= _sizes(value, f"{path}.{key}")
    elif isinstance(node, list | tuple):
        for i, item in enumerate(node):
            out |= _sizes(item, f"{path}[{i}]")
    return out


def _rest(node: Any) -> Any:
    """`node` without its font sizes and the px of room for text."""
    if isinstance(node, dict):
        return {
            k: _rest({f: v for f, v in value.items() if f != "size"} if k.endswith("font") else value)
            for k, value in node.items()
            if k not in ROOM
        }
    if isinstance(node, list | tuple):
        return [_rest(item) for item in node]
    return node


def _every_kind_of_text() -> go.Figure:
    fig = go.Figure(
        {
            "data": [
                {
                    "type": "scatter",
                    "x": [1, 2],
                    "y": [3, 4],
                    "mode": "markers+text",
                    "text": ["a", "b"],
                    "textfont": {"size": [10, 20], "color": "red"},
                    "marker": {"size": 9},
                    "hoverlabel": {"font": {"size": 13}},
                },
                {
                    "type": "bar",
                    "x": [1],
                    "y": ["x"],
                    "orientation": "h",
                    "textfont": {"size": 18},
                    "insidetextfont": {"size": 14},
                },
            ],
            "layout": {
                "font": {"size": 17, "family": "Inter"},
                "title": {
                    "text": "<b>t</b>",
                    "font": {"size": 22},
                    "pad": {"t": 14},
                    "subtitle": {"text": "s", "font": {"size": 15, "color": "#444"}},
                },
                "legend": {"font": {"size": 15}, "title": {"font": {"size": 16}}, "y": 1.01},
                "xaxis": {"title": {"text": "s", "font": {"size": 16}}, "tickfont": {"size": 13}, "range": [0, 2]},
                "yaxis": {"title": {"text": "c", "font": {"size": 16}}, "dtick": 1},
                "annotations": [{"text": "13 lost", "font": {"size": 22}, "yshift": 10, "x": 1, "y": 2}],
                "margin": {"l": 70, "r": 24, "t": 120, "b": 56},
                "height": 380,
            },
        },
        _validate=False,
    )
    return fig


def test_every_font_size_and_the_room_for_text_scale_and_nothing_else_changes() -> None:
    fig = _every_kind_of_text()
    before = fig.to_plotly_json()
    big = scaled(fig, 1.5).to_plotly_json()
    sizes, grown = _sizes(before), _sizes(big)
    assert len(sizes) == 13 and set(grown) == set(sizes)
    for path, size in sizes.items():
        want = [s * 1.5 for s in size] if isinstance(size, list) else size * 1.5
        assert grown[path] == want, path
    assert big["layout"]["margin"] == {"l": 105, "r": 36, "t": 180, "b": 84}
    assert big["layout"]["title"]["pad"] == {"t": 21}
    assert big["layout"]["annotations"][0]["yshift"] == 15
    assert _rest(big) == _rest(before)  # the data, the marks' sizes, the height, the axes' ranges: as they were
    assert fig.to_plotly_json() == before  # the figure given is left alone


def test_a_figure_without_a_base_size_gets_plotlys_scaled_and_a_factor_of_1_changes_nothing() -> None:
    bare = go.Figure({"data": [{"type": "scatter", "x": [1], "y": [1]}], "layout": {}}, _validate=False)
    assert scaled(bare, 1.2).layout.font.size == round(PLOTLY_FONT_PX * 1.2, 1)  # the text it inherits grows too
    assert scaled(bare, 1) is bare


def test_a_charts_text_keeps_its_hierarchy_at_a_larger_screens_scale(counters_racy) -> None:
    fig = charts.timeline(counters_racy[0], lanes=4)
    scale = type_scale(Viewport(1920, 1080))
    big = scaled(fig, scale)
    assert scale == 1.2 and type_scale(Viewport(1280, 720)) == 1.0 and type_scale(None) == 1.0
    assert big.layout.title.font.size == round(fig.layout.title.font.size * scale, 1)
    assert big.layout.title.font.size > big.layout.font.size > big.layout.hoverlabel.font.size  # titles over ticks
    assert big.layout.margin.t == round(fig.layout.margin.t * scale)


def test_a_presenter_chart_on_a_full_hd_screen_is_drawn_in_its_type_for_its_height(counters_racy) -> None:
    # At 1920x1080 the page's text is a fifth larger and the charts some 630 px tall: a chart in laptop type
    # and spaced for 300 px labelled every other client of eight, in 17-px ticks under 19-px headings.
    from dashboard.widgets.presenter import _fit_title, _sized

    hd = Viewport(1920, 1080)
    laptop = _sized(charts.timeline(counters_racy[0], lanes=8))
    big = _sized(charts.timeline(counters_racy[0], lanes=8), screen=hd)
    assert big.layout.title.font.size == round(laptop.layout.title.font.size * 1.2, 1)
    assert big.layout.font.size == round(laptop.layout.font.size * 1.2, 1)
    assert laptop.layout.yaxis.dtick == 2 and big.layout.yaxis.dtick == 1  # room for every client's label
    assert big.layout.height > 600

    # On a 1024-px screen a half-width chart's long title breaks between words, the room above it growing.
    fig = charts.timeline(counters_racy[0], lanes=4)
    fig.update_layout(title_text="<b>Counter: acknowledged increments vs the count</b>")
    top = fig.layout.margin.t
    _fit_title(fig, 69, 1.0)
    assert fig.layout.title.text.count("<br>") == 1 and fig.layout.margin.t > top


def test_a_size_no_browser_window_reports_is_no_size() -> None:
    """The probe's state arrives as JSON anyone can send: NaN, infinity or a 10^12-px screen raised in int() or
    drew a chart a billion px tall; each is taken as no report, and the charts keep their laptop sizes."""
    from dashboard.widgets.viewport.probe import _size

    assert _size({"width": 1920, "height": 1080}) == Viewport(1920, 1080)
    for width in (float("nan"), float("inf"), 1e12, 0, -5, True, "1920", None):
        assert _size({"width": width, "height": 1080}) is None, width
        assert _size({"width": 1280, "height": width}) is None, width
    assert _size("1920x1080") is None and _size({}) is None
