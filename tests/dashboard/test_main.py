"""python -m dashboard: the streamlit command line it builds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.__main__ import APP, streamlit_args
from dashboard.state.endpoint_setting import check_endpoint_setting


def flags(args: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)


def test_binds_loopback_with_the_projects_settings() -> None:
    args = streamlit_args([])
    assert args[:3] == ["streamlit", "run", str(APP)]
    f = flags(args)
    assert f["server.address"] == "127.0.0.1"
    assert f["browser.gatherUsageStats"] == "false"
    assert f["client.showErrorDetails"] == "none"
    assert f["theme.base"] == "light"


def test_further_arguments_pass_through_and_win() -> None:
    args = streamlit_args(["--server.port", "8600", "--server.headless", "true"])
    assert args[-4:] == ["--server.port", "8600", "--server.headless", "true"]
    assert "server.headless" not in flags(args[:-4]) and "server.port" not in flags(args)


def test_expose_binds_all_interfaces_and_dev_shows_errors() -> None:
    f = flags(streamlit_args(["--expose", "--dev"]))
    assert f["server.address"] == "0.0.0.0"
    assert f["client.showErrorDetails"] == "full"
    assert "--expose" not in streamlit_args(["--expose"])


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("garbage", "DDBLAB_ENDPOINT_URL: "),
        ("http://h:99999", "DDBLAB_ENDPOINT_URL: "),
        ("https://dynamodb.us-east-1.amazonaws.com", "choose AWS in the sidebar"),
    ],
)
def test_a_bad_endpoint_setting_is_refused_at_launch(raw: str, says: str) -> None:
    # As a bad DDBLAB_MAX_RUNS is: one line and exit 2, never a dashboard silently on the embedded server.
    env = {**os.environ, "DDBLAB_ENDPOINT_URL": raw}
    done = subprocess.run(
        [sys.executable, "-m", "dashboard", "--server.headless", "true", "--server.port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and says in line and " — " in line


def test_a_good_endpoint_setting_passes() -> None:
    check_endpoint_setting("http://127.0.0.1:8000")
    check_endpoint_setting("")
    check_endpoint_setting(None)


@pytest.mark.parametrize(
    ("raw", "fix"),
    [
        ("garbage", "DDBLAB_ENDPOINT_URL=http://127.0.0.1:8000"),
        ("https://dynamodb.us-east-1.amazonaws.com", "choose AWS in the sidebar"),
    ],
)
def test_the_app_run_directly_shows_a_bad_endpoint_setting_instead_of_using_the_embedded_server(
    monkeypatch: pytest.MonkeyPatch, raw: str, fix: str
) -> None:
    # `streamlit run dashboard/streamlit_app.py` skips python -m dashboard's launch check: the app says it itself.
    monkeypatch.setenv("DDBLAB_ENDPOINT_URL", raw)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value.replace("\\", "") for e in at.error]  # as shown, less markdown's escapes
    assert "DDBLAB_ENDPOINT_URL" in error and raw in error and fix in error
    assert not at.sidebar.success  # no backend shown as in use: the embedded server was not started quietly
