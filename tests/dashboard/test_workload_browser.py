"""The "Your workload" page in Debian's Chromium at 1280×720 (Playwright): each preset runs live to its report,
and a broken edit shows its problems by field with Start disabled. Skips, saying why, without Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_browser import dashboard_url, offline

__all__ = ["dashboard_url"]  # the module-scoped fixture: one dashboard for this module's tests

pytestmark = pytest.mark.browser
PRESETS = ["hot-customer", "ticket-sale", "leaderboard", "inventory-transfers", "idempotent-payments"]


def test_each_preset_runs_live_and_a_broken_edit_is_refused_by_field(
    dashboard_url: str, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    outside, failed = offline(context)
    try:
        page = context.new_page()
        page.goto(f"{dashboard_url}/workload", wait_until="domcontentloaded")
        expect(page.get_by_role("heading", name="Your workload")).to_be_visible(timeout=90_000)
        for preset in PRESETS:
            picker = page.get_by_test_id("stSelectbox").filter(has_text="Preset")
            expect(picker).to_be_visible(timeout=60_000)
            # Typed, then Enter: the live run above redraws every second, and a dropdown opened by a click
            # can close under it before its option is clicked.
            box = picker.locator("input")
            box.click()
            box.fill(preset)
            box.press("Enter")
            expect(page.get_by_text(f"name: {preset}").first).to_be_visible(timeout=30_000)
            page.get_by_role("button", name="Start", exact=True).click()
            heading = page.get_by_role("heading", name=f"{preset}: per operation")
            expect(heading).to_be_visible(timeout=120_000)
            expect(page.get_by_text("Per-call timeline").first).to_be_visible(timeout=60_000)
            page.screenshot(path=str(tmp_path / f"{preset}.png"))

        editor = page.get_by_role("textbox", name="Workload (YAML)")
        editor.fill("name: t\ncolour: red\noperations:\n  - {name: a, type: upsert, weight: 1}\n")
        editor.press("Control+Enter")  # Streamlit applies a text area's edit on Ctrl+Enter or blur
        expect(page.get_by_text("operations[0].type: 'upsert' is not an operation type").first).to_be_visible(
            timeout=30_000
        )
        expect(page.get_by_text("colour: unknown field").first).to_be_visible()
        expect(page.get_by_role("button", name="Start", exact=True)).to_be_disabled()
        page.screenshot(path=str(tmp_path / "invalid.png"))
    finally:
        context.close()
    assert outside == [], f"the page asked the internet for {outside}"
    assert failed == [], f"requests failed: {failed}"
    assert len(list(tmp_path.glob("*.png"))) == len(PRESETS) + 1
