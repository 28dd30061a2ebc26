"""The explainer on a projector, in a real browser (Debian's Chromium through Playwright, the dashboard of
test_browser.py): a recorded racy counter run in presenter view, one click on a witness's ✕ on its timeline,
and the story and the happens-before diagram are on the screen, not below it; the diagram saves as an SVG with
no internet. One page load per screen size. Run alone: slow on a loaded machine; skips, saying why, without
Chromium or Playwright."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_browser import dashboard_url, offline
from tests.dashboard.test_stage_browser import _inside

__all__ = ["dashboard_url"]

pytestmark = pytest.mark.browser

DEMO = "atomic-counters / read-then-put"  # recorded: its lost update is certain, not left to a live race

# Where the first ✕ of a witness (a trace whose meta names its invariant) is drawn on the presenter's timeline.
WITNESS_MARK = """(gd) => {
  const trace = gd._fullData.find((t) => t.meta && t.meta.witness);
  const point = trace && gd.querySelector(`.trace${trace.uid} path.point`);
  if (!point) return null;
  const r = point.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2, name: trace.name};
}"""


def _presented_demo(page: Any, url: str) -> None:
    """The racy demo opened on the Run page, in presenter view, its verdict given."""
    from playwright.sync_api import expect

    page.goto(f"{url}/history", wait_until="domcontentloaded")
    page.get_by_role("combobox", name="Recorded demo").click(timeout=60_000)
    page.get_by_role("option", name=DEMO).click()
    page.get_by_role("button", name="Open a recorded demo").click()
    expect(page.get_by_text("imported from atomic-counters--read-then-put.jsonl").first).to_be_visible(timeout=90_000)
    page.get_by_role("button", name="Open on the Run page").click()
    page.get_by_text("Presenter view", exact=True).click(timeout=60_000)
    verdict = page.locator("[class*='st-key-verdict-']").filter(has_text="invariants broken")
    expect(verdict).to_have_count(1, timeout=60_000)
    page.wait_for_timeout(1500)  # the charts' final redraw


@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_a_click_on_a_witness_opens_its_story_and_diagram_on_the_screen(
    dashboard_url: str, browser: Any, width: int, height: int
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": height})
    outside, failed = offline(context)  # a venue without internet: the SVG export must not need it
    page = context.new_page()
    _presented_demo(page, dashboard_url)

    charts = page.locator(".st-key-presenter-charts [data-testid='stPlotlyChart']")
    expect(charts).to_have_count(2, timeout=30_000)
    if height == 1080:  # the charts take the height the verdict and counters leave: no empty band below them
        bottom = max(box["y"] + box["height"] for box in (c.bounding_box() for c in charts.all()) if box)
        assert height - bottom < 0.12 * height, f"{height - bottom:.0f} px empty under the charts"
    timeline = charts.first.locator(".js-plotly-plot")
    # Only the witnesses get a ✕: the other flagged calls wait behind their legend entry.
    subtitle = timeline.locator(".g-gtitle").text_content() or ""
    assert "click one for why" in subtitle, subtitle
    mark = timeline.evaluate(WITNESS_MARK)
    assert mark is not None, "no witness ✕ on the timeline"
    page.screenshot(path=f"/tmp/explainer-timeline-{width}.png")
    page.mouse.click(mark["x"], mark["y"])

    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("Why it broke")).to_be_visible(timeout=30_000)
    story = dialog.locator(".st-key-explainer-story")
    expect(story).to_contain_text("one increment vanished", timeout=30_000)
    diagram = dialog.locator(".st-key-explainer-diagram [data-testid='stPlotlyChart']")
    expect(diagram.locator(".main-svg").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1000)  # plotly's resize to the dialog
    _inside(page, story, "the story")
    _inside(page, diagram, "the happens-before diagram")
    assert diagram.bounding_box()["height"] >= 300  # drawn at a size a room reads, not squeezed to fit
    page.screenshot(path=f"/tmp/explainer-presenter-{width}.png")
    size = story.locator("p").first.evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= 19, f"the story in {size} px type: too small for a room"

    if width == 1280:  # the camera button: an SVG drawn in the browser, with the internet cut off
        diagram.hover()
        with page.expect_download(timeout=30_000) as saved:
            diagram.locator("[data-title^='Download plot']").click()
        assert saved.value.suggested_filename == "atomic-counters-lost-update.svg"
        assert "<svg" in Path(saved.value.path()).read_text()[:200]
    else:  # closed, the same ✕ opens it again (a second click would otherwise only unselect it)
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0, timeout=15_000)
        mark = charts.first.locator(".js-plotly-plot").evaluate(WITNESS_MARK)
        page.mouse.click(mark["x"], mark["y"])
        expect(page.get_by_role("dialog").locator(".st-key-explainer-story")).to_be_visible(timeout=30_000)
    assert not outside, outside
    assert not failed, failed
    context.close()
