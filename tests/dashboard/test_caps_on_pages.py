"""A cap set low (DDBLAB_MAX_THREADS_PER_RUN=1, 2, 7, 31) leaves every page drawable: each widget's default that a
cap bounds is within the options or range the cap leaves, so no page raises and every Start can run its defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets.registry import get_registry

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
PAGES = [
    "app_pages/run.py",
    "app_pages/compare.py",
    "app_pages/sweep.py",
    "app_pages/scenes.py",
    "app_pages/history.py",
]


@pytest.mark.parametrize("cap", [1, 2, 7, 31])
def test_every_page_draws_its_defaults_within_a_low_thread_cap(monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    monkeypatch.setattr(get_registry(), "max_threads_per_run", cap)  # what DDBLAB_MAX_THREADS_PER_RUN sets
    for page in PAGES:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        for key in ("run-atomic-counters-threads", "compare-atomic-counters-threads"):
            if any(n.key == key for n in at.number_input):
                assert 1 <= (at.number_input(key=key).value or 0) <= cap, page
        if page.endswith("sweep.py"):
            counts = at.multiselect(key="sweep-threads")
            assert counts.value and {str(c) for c in counts.value} <= set(counts.options), counts.value
            assert max(int(c) for c in counts.value) <= cap
            assert at.button(key="sweep-start") is not None
