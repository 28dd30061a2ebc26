"""One Chromium for a browser test module, beside its dashboard: `from tests.dashboard.browser_fixture import
browser, dashboard_url` gives the module both fixtures (the dashboard is test_browser.py's, one per module).
Launching Chromium costs seconds on a busy machine: a module's tests share one and open a page each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard.test_browser import ARGS, CHROMIUM, collect_in_this_thread, dashboard_url

__all__ = ["browser", "dashboard_url"]


@pytest.fixture(scope="module")
def browser(dashboard_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()
    collect_in_this_thread()
