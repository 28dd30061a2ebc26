"""A bad DDBLAB_* setting under plain `streamlit run dashboard/streamlit_app.py` (which skips python -m
dashboard's launch check): every page shows one error naming the variable, its value and the fix, never an
exception, and python -m dashboard refuses the same value at launch in one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state.env_settings import CAPS, CHECKED, NOT_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "streamlit_app.py")
PAGES = ["app_pages/run.py", "app_pages/compare.py", "app_pages/sweep.py", "app_pages/history.py"]
# What the user reads (markdown escapes undone) for each kind of bad value.
BAD_VALUES = ["abc", "-1", "0", "1e99", "1.5", "9" * 5000, "٣٣٣٣٣٣٣٣٣٣٣٣٣"]


def shown_error(at: AppTest) -> str:
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value.replace("\\", "") for e in at.error]  # one error, as shown, less markdown's escapes
    return error


@pytest.mark.parametrize("raw", BAD_VALUES)
def test_a_bad_cap_is_one_error_in_the_page_not_an_exception(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("DDBLAB_MAX_RUNS", raw)
    error = shown_error(AppTest.from_file(APP, default_timeout=60).run())
    assert f"DDBLAB_MAX_RUNS={raw[:40]!r}" in error and "unset it for the default (40)" in error
    assert "from 1 to 10,000" in error


@pytest.mark.parametrize("name", [*CAPS, "DDBLAB_PLAIN_MOTO", "DDBLAB_ENDPOINT_URL"])
def test_every_setting_the_dashboard_reads_is_checked_before_any_page_runs(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "bogus")
    error = shown_error(AppTest.from_file(APP, default_timeout=60).run())
    assert name in error and "bogus" in error
    assert "unset it" in error or f"set {name}" in error  # the fix


def test_every_page_shows_the_same_error_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDBLAB_MAX_TOTAL_THREADS", "-1")
    at = AppTest.from_file(APP, default_timeout=60).run()
    first = shown_error(at)
    for page in PAGES:
        at.switch_page(page).run()
        assert shown_error(at) == first
        assert not at.button and not at.sidebar.success  # the page did not run on half-read settings


def test_every_ddblab_name_in_the_code_is_a_checked_setting() -> None:
    # A new DDBLAB_* setting read somewhere but missing from check_settings would be read unchecked.
    names: set[str] = set()
    for folder in ("dashboard", "engine"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"(?<![A-Z_])DDBLAB_[A-Z_]+[A-Z]", path.read_text(encoding="utf-8")))
    assert names - NOT_SETTINGS == CHECKED


@pytest.mark.parametrize(("name", "raw"), [("DDBLAB_MAX_RUNS", "abc"), ("DDBLAB_PLAIN_MOTO", "maybe")])
def test_python_m_dashboard_refuses_a_bad_setting_at_launch(name: str, raw: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dashboard", "--server.headless", "true", "--server.port", "0"],
        env={**os.environ, name: raw},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {name}={raw!r}") and " — " in line
