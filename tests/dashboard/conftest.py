"""Fixtures for the dashboard tests: recorded histories (tests/data) as snapshot frames, and the browser the
browser tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard.helpers import frame


@pytest.fixture(scope="session")
def counters_racy():
    return frame("atomic-counters-racy")


@pytest.fixture(scope="session")
def counters_safe():
    return frame("atomic-counters-safe")


@pytest.fixture(scope="session")
def locking_racy():
    return frame("optimistic-locking-racy")


@pytest.fixture(scope="session")
def locking_safe():
    return frame("optimistic-locking-safe")


@pytest.fixture(scope="module")
def browser(dashboard_url: str) -> Iterator[Any]:
    """Debian's Chromium through Playwright, one per test module, against that module's dashboard (the
    `dashboard_url` fixture of test_browser.py, which skips, saying why, without Chromium or Playwright)."""
    from playwright.sync_api import sync_playwright

    from tests.dashboard.test_browser import ARGS, CHROMIUM, collect_in_this_thread

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()
    collect_in_this_thread()
