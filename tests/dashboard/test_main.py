"""python -m dashboard: the streamlit command line it builds."""

from __future__ import annotations

from dashboard.__main__ import APP, streamlit_args


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
