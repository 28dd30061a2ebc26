"""An AWS file botocore cannot parse, as the dashboard shows it (the CLI's side: tests/engine/test_aws_files.py).
Here, with the dashboard's tests, so that Streamlit's AppTest never runs in the engine's test process."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets.registry import Registry
from engine.backends.backend import BackendSpec
from engine.errors import BadInput
from tests.dashboard.test_pages import app
from tests.engine.test_aws_files import MALFORMED, clean_env, write  # noqa: F401  (clean_env: a fixture)


def test_the_dashboard_shows_it_where_backend_errors_go(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(clean_env, MALFORMED["binary"][0])
    at: AppTest = app()  # the page's own backend may already be up (a shared registry): the server is fine
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(path))
    registry = Registry()
    try:
        with pytest.raises(BadInput, match="AWS_SHARED_CREDENTIALS_FILE=.*botocore cannot parse it"):
            registry.backend(BackendSpec())  # the embedded backend's start
    finally:
        registry.close()
    at.sidebar.radio(key="backend_choice").set_value("endpoint URL").run()
    at.sidebar.text_input(key="backend_url").set_value("http://127.0.0.1:9").run()
    at.sidebar.button(key="backend_use_url").click().run()
    errors = [e.value.replace("\\", "") for e in at.sidebar.error]  # as shown: markdown escapes taken out
    assert any("AWS_SHARED_CREDENTIALS_FILE=" in e and "unset AWS_SHARED_CREDENTIALS_FILE" in e for e in errors), errors
