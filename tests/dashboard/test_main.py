"""python -m dashboard: the streamlit command line it builds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dashboard.__main__ import APP, check_endpoint_setting, streamlit_args


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
