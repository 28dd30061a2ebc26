"""The explainer opened from a racy run's timeline: its witnesses' crosses are clickable in the normal and the
presenter view, and a pick opens the dialog with the anomaly's story and its happens-before diagram. The click
itself is the browser's (test_explainer_browser.py); here, what the page does with it."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.dashboard.helpers import DATA
from tests.dashboard.test_happens_before import APP, _imported

RACY = (DATA / "atomic-counters-racy.jsonl").read_bytes()


def _timeline(at: AppTest, key: str) -> Any:
    return next(c for c in at.get("plotly_chart") if c.proto.id.endswith(key))


def _marked(chart: Any) -> list[str]:
    """The invariants whose witnesses the chart marks."""
    return [t["meta"]["witness"] for t in json.loads(chart.proto.spec)["data"] if (t.get("meta") or {}).get("witness")]


def test_a_picked_witness_opens_its_story_and_diagram_in_a_dialog() -> None:
    at = _imported(AppTest.from_file(APP, default_timeout=60).run(), "counters.jsonl", RACY)
    key = f"history-{at.session_state['history-pick']}-timeline"
    timeline = _timeline(at, key)
    assert list(timeline.proto.selection_mode) == [0]  # points: a click on a cross selects it
    # The fourth broken invariant is proven by the same calls as the third: one mark, which a click can reach.
    assert _marked(timeline) == [
        "final-count-acknowledged-increments",
        "sequence-numbers-unique-and-gap-free",
        "tickets-never-oversold",
    ]
    charts = len(at.get("plotly_chart"))

    at.session_state[f"{key}-explain"] = "final-count-acknowledged-increments"  # what the click's callback leaves
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    stories = [m.value for m in at.markdown if m.value.startswith("**Lost update** · ")]
    assert stories and "one increment vanished" in stories[0]
    assert len(at.get("plotly_chart")) == charts + 1  # the diagram
    assert any("saves it as an SVG" in c.value for c in at.caption)


def test_the_presenter_views_timeline_marks_the_witnesses_and_takes_the_click() -> None:
    at = _imported(AppTest.from_file(APP, default_timeout=60).run(), "counters.jsonl", RACY)
    run_id = at.session_state["history-pick"]
    at.session_state["run_id"] = run_id
    at.switch_page("app_pages/run.py").run()
    at.toggle(key="presenter").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    timeline = _timeline(at, f"run-{run_id}-p-timeline")
    assert list(timeline.proto.selection_mode) == [0]
    assert "final-count-acknowledged-increments" in _marked(timeline)
