"""Every chart title and legend fits, in a real browser, on every page: no title or panel title of a chart leaves its
chart or overprints another at 1024, 1280 and 1920 px wide, and no legend leaves its chart, overprints a title or
the plot, or squeezes the plot to a strip (Debian's Chromium through Playwright, the dashboard of test_browser.py).
Run alone: slow on a loaded machine; skips, saying why, without Chromium or Playwright."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.dashboard.test_browser import dashboard_url

__all__ = ["dashboard_url"]

pytestmark = pytest.mark.browser

WIDTHS = (1024, 1280, 1920)

# Each chart's box, its titles' boxes (the chart's title, subtitle, and each panel's title), its legend's box and
# its plot areas, as drawn.
TITLE_BOXES = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((chart) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const titles = [...chart.querySelectorAll('.g-gtitle text, .infolayer > .annotation .annotation-text')]
    .filter((t) => t.textContent.trim())
    .map((t) => ({text: t.textContent, box: box(t)}));
  const legend = chart.querySelector('.legend .bg');
  const plots = [...chart.querySelectorAll('.nsewdrag')].map(box);
  return {chart: box(chart.querySelector('.main-svg') || chart), titles, legend: legend ? box(legend) : null, plots};
})"""
MIN_PLOT_PX = 90  # a plot shorter than this, beside its legend and titles, is a strip


def _misfits(charts: list[dict[str, Any]]) -> list[str]:
    out = []
    for n, c in enumerate(charts):
        left, top, right, bottom = c["chart"]
        for t in c["titles"]:
            x0, y0, x1, y1 = t["box"]
            if x0 < left - 1 or x1 > right + 1 or y0 < top - 1 or y1 > bottom + 1:
                out.append(f"chart {n}: {t['text']!r} leaves its chart ({t['box']} outside {c['chart']})")
        for i, a in enumerate(c["titles"]):
            for b in c["titles"][i + 1 :]:
                (a0, a1, a2, a3), (b0, b1, b2, b3) = a["box"], b["box"]
                if min(a2, b2) - max(a0, b0) > 1 and min(a3, b3) - max(a1, b1) > 1:
                    out.append(f"chart {n}: {a['text']!r} overprints {b['text']!r}")
        out += _legend_misfits(n, c)
    return out


def _overlap(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


def _legend_misfits(n: int, c: dict[str, Any]) -> list[str]:
    out = []
    legend, (left, top, right, bottom) = c.get("legend"), c["chart"]
    if legend is not None:
        if legend[0] < left - 1 or legend[2] > right + 1 or legend[1] < top - 1 or legend[3] > bottom + 1:
            out.append(f"chart {n}: its legend leaves the chart ({legend} outside {c['chart']})")
        out += [f"chart {n}: its legend overprints {t['text']!r}" for t in c["titles"] if _overlap(legend, t["box"])]
        out += [f"chart {n}: its legend overprints the plot" for p in c["plots"] if _overlap(legend, p)]
    out += [f"chart {n}: a plot squeezed to {p[3] - p[1]:.0f} px" for p in c["plots"] if p[3] - p[1] < MIN_PLOT_PX]
    return out


def settled_chart_count(page: Any, timeout_s: float = 60) -> int:
    """How many charts the page draws once it has stopped adding them: a Compare pair's second side draws its
    charts a moment after the first side's verdict shows, and a count taken then missed them."""
    import time

    deadline = time.monotonic() + timeout_s
    counts = [page.get_by_test_id("stPlotlyChart").count()]
    while time.monotonic() < deadline:
        page.wait_for_timeout(2000)
        counts.append(page.get_by_test_id("stPlotlyChart").count())
        if counts[-1] > 0 and counts[-3:] == [counts[-1]] * 3:  # the same for two windows of 2 s
            break
    return counts[-1]


def test_no_sweep_chart_title_leaves_its_chart_or_overprints_another(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    link = "pattern=atomic-counters&threads=1,2,4&ops=2&repeats=1&autostart=1"
    page.goto(f"{dashboard_url}/sweep?{link}", wait_until="domcontentloaded")
    expect(page.get_by_text("done · 6 of 6 runs").first).to_be_visible(timeout=120_000)
    found = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(2500)  # plotly redraws at the new width
        expect(page.get_by_test_id("stPlotlyChart")).to_have_count(3, timeout=30_000)
        page.screenshot(path=f"/tmp/stage-sweep-{width}.png", full_page=True)
        found += [f"{width} px: {m}" for m in _misfits(page.evaluate(TITLE_BOXES))]
        if width >= 1280:  # the table's every column in view, none behind a horizontal scroll
            table = page.locator("[data-testid='stDataFrame'] .dvn-scroller").first
            overflow = table.evaluate("(e) => e.scrollWidth - e.clientWidth")
            if overflow > 1:
                found.append(f"{width} px: the Sweep table's last columns are cut ({overflow} px)")
    page.close()
    assert not found, "\n".join(found)


def _titles_fit(page: Any, name: str, charts: int) -> list[str]:
    from playwright.sync_api import expect

    found = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(2500)  # plotly redraws at the new width
        expect(page.get_by_test_id("stPlotlyChart")).to_have_count(charts, timeout=30_000)
        page.screenshot(path=f"/tmp/stage-{name}-{width}.png", full_page=True)
        found += [f"{name} at {width} px: {m}" for m in _misfits(page.evaluate(TITLE_BOXES))]
    return found


@pytest.mark.parametrize("page_path", ["", "compare"])
def test_no_run_or_pair_chart_title_leaves_its_chart_or_overprints_another(
    dashboard_url: str, browser: Any, page_path: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    link = "pattern=distributed-locking&variant=lease&threads=4&ops=6&autostart=1"
    page.goto(f"{dashboard_url}/{page_path}?{link}", wait_until="domcontentloaded")
    verdicts = page.locator("[class*='st-key-verdict-'], [data-testid='stMarkdown']").filter(
        has_text=re.compile(r"\d+ of \d+ hold")
    )
    expect(verdicts.first).to_be_visible(timeout=120_000)
    found = _titles_fit(page, page_path or "run", settled_chart_count(page))
    page.close()
    assert not found, "\n".join(found)


def test_no_history_workload_or_scene_chart_title_or_legend_misfits(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    found = []
    page.goto(f"{dashboard_url}/history", wait_until="domcontentloaded")
    page.get_by_role("button", name="Open a recorded demo").click(timeout=60_000)
    expect(page.get_by_text("imported from atomic-counters--add.jsonl").first).to_be_visible(timeout=90_000)
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=60_000)
    found += _titles_fit(page, "history", settled_chart_count(page))

    page.goto(f"{dashboard_url}/workload?preset=ticket-sale", wait_until="domcontentloaded")
    expect(page.get_by_text("name: ticket-sale").first).to_be_visible(timeout=90_000)
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.get_by_role("heading", name="ticket-sale: per operation")).to_be_visible(timeout=120_000)
    expect(page.get_by_text(re.compile(r"\d+ of \d+ hold|invariants? hold")).first).to_be_visible(timeout=120_000)
    found += _titles_fit(page, "workload", settled_chart_count(page))

    page.goto(f"{dashboard_url}/scenes?pattern=24&autostart=1", wait_until="domcontentloaded")
    page.get_by_text("Show the recorded calls as a timeline").click(timeout=90_000)
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1, timeout=30_000)
    found += _titles_fit(page, "scenes", 1)
    page.close()
    assert not found, "\n".join(found)
