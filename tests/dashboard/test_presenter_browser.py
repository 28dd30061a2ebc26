"""Presenter view in a real browser at a laptop's, a projector's and a full-HD screen's size: a finished racy run
and a finished Compare pair fit the screen without scrolling, no chart title leaves its chart or overprints
another, no legend squeezes a plot, the charts' text grows with the screen as the page's does, and a pair's
timelines keep a plot a room can read at 1280x720 (Debian's Chromium through Playwright, the dashboard of
test_browser.py). Run alone: slow on a loaded machine; skips, saying why, without Chromium or Playwright."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.dashboard.test_browser import dashboard_url
from tests.dashboard.test_chart_titles_browser import TITLE_BOXES, _misfits

__all__ = ["dashboard_url"]

pytestmark = pytest.mark.browser

SCREENS = ((1024, 768), (1280, 720), (1920, 1080))
FIT = {(1280, 720), (1920, 1080)}  # a projector's screens: everything on one screen, nothing scrolled
RACY = "presenter=1&pattern=atomic-counters&variant=read-then-put&threads=4&ops=10&autostart=1"
PAIR_PLOT_PX = 150  # a pair's timeline at 1280x720: four clients' lanes a room can tell apart

# The page's overflow (the document's and Streamlit's scrolling main area), and each chart's box, plot area and
# the type of its title and of its first tick label.
MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const overflow = Math.max(document.documentElement.scrollHeight - window.innerHeight,
                            main ? main.scrollHeight - main.clientHeight : 0);
  const px = (e) => e ? parseFloat(getComputedStyle(e).fontSize) : null;
  const charts = [...document.querySelectorAll('.js-plotly-plot')].map((p) => {
    const r = p.getBoundingClientRect(), plot = p.querySelector('.nsewdrag').getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, plot: plot.height, title: px(p.querySelector('.gtitle')),
            tick: px(p.querySelector('.ytick text, .xtick text'))};
  });
  return {overflow, scrolled: window.scrollY + (main ? main.scrollTop : 0), charts};
}"""


def _at(page: Any, width: int, height: int, title_px: float) -> dict[str, Any]:
    """The page at this screen size, once the browser has told the server its size and the charts are redrawn
    for it (their titles in `title_px` type)."""
    page.set_viewport_size({"width": width, "height": height})
    for _ in range(60):
        page.wait_for_timeout(500)
        shown = page.evaluate(MEASURE)
        if shown["charts"] and all(c["title"] == pytest.approx(title_px, abs=0.3) for c in shown["charts"]):
            break
    page.wait_for_timeout(1500)  # the last redraw settles
    return page.evaluate(MEASURE)


@pytest.mark.parametrize("page_path,verdicts", [("", 1), ("compare", 2)])
def test_presenter_view_fits_every_screen_and_its_chart_text_grows_with_it(
    dashboard_url: str, browser: Any, page_path: str, verdicts: int
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{dashboard_url}/{page_path}?{RACY}", wait_until="domcontentloaded")
    given = page.locator("[class*='st-key-verdict-']").filter(has_text=re.compile(r"invariants (hold|broken)"))
    expect(given).to_have_count(verdicts, timeout=120_000)
    found, shown = [], {}
    for width, height in SCREENS:
        # The page's root font, and so a chart's title (22 px on a laptop), grows by up to a fifth from 1600 px.
        shown[width] = measured = _at(page, width, height, 22 * min(max(width / 1600, 1.0), 1.2))
        page.screenshot(path=f"/tmp/presenter-{page_path or 'run'}-{width}.png")
        found += [f"{width}x{height}: {m}" for m in _misfits(page.evaluate(TITLE_BOXES))]
        if (width, height) in FIT:
            if measured["overflow"] > 1 or measured["scrolled"]:
                found.append(f"{width}x{height}: the page scrolls ({measured['overflow']} px more than the screen)")
            found += [
                f"{width}x{height}: chart {n} ends at {c['bottom']:.0f} px, below the screen"
                for n, c in enumerate(measured["charts"])
                if c["bottom"] > height + 1
            ]
    assert not found, "\n".join(found)
    small, large = shown[1280]["charts"][0], shown[1920]["charts"][0]
    assert large["title"] >= small["title"] * 1.1 and large["tick"] >= small["tick"] * 1.1, (small, large)
    assert small["title"] > small["tick"] and large["title"] > large["tick"]  # the hierarchy kept
    if verdicts == 2:
        plots = [c["plot"] for c in shown[1280]["charts"]]
        assert len(plots) == 2 and min(plots) >= PAIR_PLOT_PX, plots
    page.close()
