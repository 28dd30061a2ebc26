"""The stage features in a real browser: Debian's Chromium through Playwright against one
`python -m dashboard` shared by the module (the fixture of test_browser.py). Run alone: they are slow on a
loaded machine. Skips, saying why, when /usr/bin/chromium or Playwright is missing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.dashboard.test_browser import dashboard_url

__all__ = ["dashboard_url"]  # the module-scoped server fixture, shared by every test here

pytestmark = pytest.mark.browser


def test_the_badge_reads_running_while_the_run_goes(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(dashboard_url, wait_until="domcontentloaded")
    expect(page.get_by_role("heading", name="Run a pattern")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Embedded DynamoDB", exact=True)).to_be_visible(timeout=60_000)
    threads = page.get_by_role("spinbutton", name="Threads (clients)")
    threads.fill("2")
    threads.press("Enter")
    page.get_by_text("duration (s)", exact=True).first.click()  # "Stop after": a duration, so the run lasts
    seconds = page.get_by_role("spinbutton", name="Seconds")
    seconds.fill("120")
    seconds.press("Enter")
    # A rerun still on its way can put the default (10 s) back; a run that ends by itself never reads STOPPED.
    expect(seconds).to_have_value("120.00", timeout=30_000)
    page.wait_for_timeout(500)
    page.get_by_test_id("stBaseButton-primary").click()

    expect(page.get_by_text("RUNNING", exact=True).first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("PREPARING", exact=True)).to_have_count(0)
    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
    # "STOPPING" lasts only until the clients' calls in flight return: what must follow is the end state.
    expect(page.get_by_text("STOPPED", exact=True).first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("RUNNING", exact=True)).to_have_count(0)
    # However short the verification, the header shows the run went through it, and for how long.
    expect(page.get_by_text(re.compile(r"^VERIFYING \d+\.\d\d s$")).first).to_be_visible(timeout=15_000)
    page.close()


def _calls(page: Any) -> int:
    """The "calls" counter of the run shown (the first metric of its counters)."""
    value = page.get_by_test_id("stMetric").first.get_by_test_id("stMetricValue").inner_text()
    return int(value.replace(",", ""))


def test_a_recorded_demo_replays_scrubbed_to_the_middle_and_played(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(f"{dashboard_url}/history", wait_until="domcontentloaded")
    page.get_by_role("button", name="Open a recorded demo").click(timeout=60_000)
    # Opening it imports and draws a whole run: a starved machine has taken more than 30 s.
    expect(page.get_by_text("imported from atomic-counters--add.jsonl").first).to_be_visible(timeout=90_000)
    page.get_by_text("Replay", exact=True).first.click()
    expect(page.get_by_text("Replay at t = 0.00 s").first).to_be_visible(timeout=30_000)
    assert _calls(page) == 0

    thumb = page.get_by_role("slider").first  # the scrubber, driven by the keyboard as a presenter might
    thumb.focus()
    page.keyboard.press("End")
    expect(page.get_by_text("completed · paused").first).to_be_visible()
    page.wait_for_timeout(1500)
    end = _calls(page)
    for _ in range(100):  # of its 200 steps
        page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(1500)
    middle = _calls(page)
    caption = page.get_by_text("Replay at t =").first.inner_text()
    total = int(caption.split(" of ")[2].split(" calls")[0].replace(",", ""))  # "…: n of N calls completed"
    assert 0 < middle < end == total, (middle, end, caption)

    page.get_by_text("0.1×", exact=True).first.click()  # slow motion: the demo lasts about a second
    expect(page.get_by_text("paused at 0.1×").first).to_be_visible(timeout=15_000)
    page.get_by_role("button", name="Play", exact=True).click()
    expect(page.get_by_text("playing at").first).to_be_visible(timeout=15_000)
    deadline = 20_000
    while _calls(page) <= middle and deadline > 0:
        page.wait_for_timeout(500)
        deadline -= 500
    assert _calls(page) > middle
    page.close()


def test_a_scenario_link_with_autostart_starts_that_run(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    link = "/?pattern=optimistic-locking&variant=blind-write&threads=3&ops=5&k.accounts=1&profile=aws-like&autostart=1"
    page.goto(f"{dashboard_url}{link}", wait_until="domcontentloaded")
    expect(page.get_by_text("optimistic-locking / blind-write (racy) · 3 threads × 5 ops").first).to_be_visible(
        timeout=60_000
    )
    expect(page.get_by_text("Server profile aws-like (SIMULATED").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("of 3 hold").first).to_be_visible(timeout=60_000)  # it ran and was verified
    # The URL is rewritten from the controls on every run of the page: it says they hold the link's values.
    expect(page).to_have_url(re.compile(r"[?&]threads=3&ops=5&.*&profile=aws-like"), timeout=10_000)
    # Widgets drawn after the run's refreshes (their code loads late on a busy machine) still show the link's
    # values: wait for the widget to be drawn, then read it.
    threads = page.get_by_role("spinbutton", name="Threads (clients)")
    expect(threads).to_be_visible(timeout=60_000)
    expect(threads).to_have_value("3")
    expect(page.get_by_role("radio", name="aws-like")).to_be_checked()
    assert "autostart" not in page.url and "run=r" in page.url  # a refresh shows the run, does not start another
    page.close()


def test_a_link_with_a_bad_value_says_which_control(dashboard_url: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(f"{dashboard_url}/?pattern=atomic-counters&threads=9999&autostart=1", wait_until="domcontentloaded")
    expect(page.get_by_text("The link's threads '9999' is out of range").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Not started: the link's values above were refused.")).to_be_visible()
    expect(page.get_by_role("heading", name="Run a pattern")).to_be_visible()
    page.close()


def _inside(page: Any, locator: Any, what: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_be_visible(timeout=15_000)  # a redraw (a replay's step) may be replacing it just now
    box = locator.bounding_box()
    assert box is not None, f"{what} is not on the page"
    view = page.viewport_size
    assert box["x"] >= 0 and box["y"] >= 0, (what, box)
    assert box["x"] + box["width"] <= view["width"] + 1, (what, box, view)
    assert box["y"] + box["height"] <= view["height"] + 1, (what, box, view)


def _verdicts_given(page: Any, runs: int) -> None:
    """Each of the page's `runs` verdict boxes shows its run's verdicts (dashboard.widgets.live.headline), held or broken."""
    from playwright.sync_api import expect

    given = page.locator("[class*='st-key-verdict-']").filter(has_text=re.compile(r"invariants (hold|broken)"))
    expect(given).to_have_count(runs, timeout=60_000)


def _presented(page: Any, verdicts: int) -> None:
    """The verdict(s), counters and timeline(s) are inside the viewport, the page not scrolled."""
    assert page.evaluate("window.scrollY") == 0
    for i in range(verdicts):
        _inside(page, page.locator("[class*='st-key-verdict-']").nth(i), f"verdict {i}")
    metrics = page.get_by_test_id("stMetric")
    assert metrics.count() == 4 * verdicts
    for i in range(metrics.count()):
        _inside(page, metrics.nth(i), f"counter {i}")
    charts = page.get_by_test_id("stPlotlyChart")
    assert charts.count() >= verdicts
    for i in range(verdicts):
        _inside(page, charts.nth(i), f"timeline {i}")


def _replayed(page: Any, verdicts: int, name: str) -> None:
    """Replay on, scrubbed to shortly before the end: still all on one screen."""
    from playwright.sync_api import expect

    page.get_by_text("Replay", exact=True).first.click()
    expect(page.get_by_text("Replay at t = 0.00 s").first).to_be_visible(timeout=30_000)
    thumb = page.get_by_role("slider").first
    thumb.focus()
    page.keyboard.press("End")
    for _ in range(10):  # of its 200 steps: the verdicts not yet given
        page.keyboard.press("ArrowLeft")
    expect(page.get_by_text("Replay at t = 0.00 s")).to_have_count(0, timeout=15_000)
    expect(page.get_by_text("replaying: the verdicts come at the end").first).to_be_visible(timeout=15_000)
    page.wait_for_timeout(1500)  # the charts' redraw
    _presented(page, verdicts)
    page.screenshot(path=f"/tmp/stageui-presenter-{name}-replay.png")


@pytest.mark.parametrize("width,height", [(1280, 720), (1920, 1080)])
def test_presenter_view_fits_a_run_and_a_pair_on_one_screen(
    dashboard_url: str, browser: Any, width: int, height: int
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    link = "presenter=1&pattern=atomic-counters&variant=read-then-put&threads=4&ops=10&autostart=1"
    page.goto(f"{dashboard_url}/?{link}", wait_until="domcontentloaded")
    _verdicts_given(page, 1)  # whatever they are: 4 x 10 racy increments need not lose one, and the layout is the same
    page.wait_for_timeout(1500)  # the charts' final redraw
    expect(page.get_by_test_id("stMetric")).to_have_count(4, timeout=30_000)  # drawn once their code has loaded
    _presented(page, 1)
    # The charts take the height the screen leaves: some 350 px at 720 (300 under a replay's controls), 630 at 1080.
    tallest = max(box["height"] for box in _settled(page, CHART_BOXES))
    assert tallest >= 340 if height == 720 else tallest >= 600, tallest
    _badges_read_from_the_back(page, 3)  # RUNNING → VERIFYING → DONE
    page.screenshot(path=f"/tmp/stageui-presenter-run-{width}.png")
    _replayed(page, 1, f"run-{width}")

    page.goto(f"{dashboard_url}/compare?{link}", wait_until="domcontentloaded")
    _verdicts_given(page, 2)
    page.wait_for_timeout(1500)
    _presented(page, 2)
    # The pair's two timelines have one plot area, and the racy side crosses only the calls that prove its breaks.
    plots = _settled(page, PLOT_AREAS)
    assert len(plots) == 2 and plots[0]["plot"] == pytest.approx(plots[1]["plot"], abs=1), plots
    assert all(p["crosses"] <= 60 for p in plots), plots
    _badges_read_from_the_back(page, 2)
    page.screenshot(path=f"/tmp/stageui-presenter-pair-{width}.png")
    _replayed(page, 2, f"pair-{width}")
    page.close()


# Each chart's plot area and how many ✕ its timeline shows (a trace hidden behind its legend entry is not shown).
PLOT_AREAS = """() => [...document.querySelectorAll('.js-plotly-plot')].map((p) => {
  const r = p.querySelector('.nsewdrag').getBoundingClientRect();
  const crosses = p.querySelectorAll('.scatterlayer .points path.point').length;  // a timeline's only markers
  return {plot: [Math.round(r.top), Math.round(r.height)], crosses};
})"""

CHART_BOXES = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c) => {
  const r = c.getBoundingClientRect();
  return {top: Math.round(r.top), height: Math.round(r.height)};
})"""


def _settled(page: Any, measure: str) -> Any:
    """`measure` once two reads half a second apart agree: the page redraws its charts when the browser first
    tells the server the screen's size, and a read during that redraw saw one side of a pair drawn and the other
    not yet."""
    last = page.evaluate(measure)
    for _ in range(60):
        page.wait_for_timeout(500)
        now = page.evaluate(measure)
        if now and now == last:
            break
        last = now
    return last


def _badges_read_from_the_back(page: Any, at_least: int) -> None:
    """The run's state badge is in presenter view, in the verdict's box, in type of 20 px or more."""
    badges = page.locator("[class*='st-key-verdict-'] .stMarkdownBadge")
    assert badges.count() >= at_least
    sizes = [float(b.evaluate("(e) => getComputedStyle(e).fontSize").removesuffix("px")) for b in badges.all()]
    assert min(sizes) >= 20, sizes


# A word of the scene's log that the browser broke over two lines.
MID_WORD = """() => { const out = [];
  for (const pre of document.querySelectorAll('.st-key-scenes-log pre')) {
    const walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT); let node;
    while ((node = walk.nextNode())) { const words = /\\S+/g; let m;
      while ((m = words.exec(node.textContent))) {
        const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map((q) => Math.round(q.top))).size > 1) out.push(m[0]);
      } } }
  return out; }"""


def _level_with_the_buttons(page: Any, width: int) -> None:
    """The "Step N of M" label sits on the line of Previous and Next: its middle within 3 px of theirs (it hung
    8 px low at 1280 and 10 px at 1920 when its box came out a rem shorter than its text)."""
    label = page.locator(".st-key-scenes-step-at p").first.bounding_box()
    buttons = [page.locator(f".st-key-scenes-{b} button").first.bounding_box() for b in ("back", "next")]
    middle = [box["y"] + box["height"] / 2 for box in (label, *buttons)]
    assert all(abs(middle[0] - m) <= 3 for m in middle[1:]), (width, label, buttons)


def test_a_seed_scene_steps_call_by_call_in_presenter_view_at_the_links_type_size(
    dashboard_url: str, browser: Any
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{dashboard_url}/scenes?pattern=24&presenter=1&type=L&step=3&autostart=1", wait_until="domcontentloaded")
    expect(page.get_by_text(re.compile(r"^Step 3 of \d+$"))).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    sizes = {}
    for width, height in ((1280, 720), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(500)
        log = page.locator(".st-key-scenes-log pre").first
        _inside(page, log, f"the step at {width} px")
        assert page.evaluate(MID_WORD) == [], width
        _level_with_the_buttons(page, width)
        sizes[width] = float(log.evaluate("(e) => getComputedStyle(e).fontSize").removesuffix("px"))
        page.screenshot(path=f"/tmp/stage-scene-step-{width}.png")
    assert sizes[1280] >= 28 and sizes[1920] > sizes[1280] * 1.4, sizes  # the largest type, growing with the screen
    before = page.locator(".st-key-scenes-log pre").first.inner_text()
    page.keyboard.press("ArrowRight")  # a clicker's or the presenter's key, no click needed
    expect(page.get_by_text(re.compile(r"^Step 4 of \d+$"))).to_be_visible(timeout=30_000)
    expect(page).to_have_url(re.compile(r"[?&]step=4(&|$)"), timeout=10_000)
    assert "type=L" in page.url and "presenter=1" in page.url
    assert page.locator(".st-key-scenes-log pre").first.inner_text() != before
    page.get_by_role("button", name="Previous").click()
    expect(page.get_by_text(re.compile(r"^Step 3 of \d+$"))).to_be_visible(timeout=30_000)
    page.close()
