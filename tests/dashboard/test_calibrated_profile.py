"""A team that measured its own account (`python -m engine calibrate`) runs the dashboard on those figures: the
sidebar takes the profile file, and every run says where its knobs came from."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.widgets.sidebar import PROFILE_FILE_KEY

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def sidebar_text(at: AppTest) -> str:
    return " ".join(str(c.value) for c in at.sidebar.caption) + " ".join(str(e.value) for e in at.sidebar.error)


def aws_like_run_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.query_params.clear()
    at.query_params.update({"profile": "aws-like"})
    at.switch_page("app_pages/run.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_calibrated_profile_file_sets_the_knobs_and_says_where_they_came_from(tmp_path: Path) -> None:
    measured = tmp_path / "my-account.json"
    measured.write_text(
        json.dumps(
            {
                "profile": "aws-like",
                "knobs": {"commit_ms": 37, "stale_share": 0.05},
                "calibrated": {"region": "eu-west-1", "date": "2026-12-04"},
            }
        )
    )
    at = aws_like_run_page()
    assert "calibrated from" not in sidebar_text(at)
    at.text_input(key=PROFILE_FILE_KEY).set_value(str(measured)).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = sidebar_text(at)
    assert "SIMULATED, calibrated from my-account.json (eu-west-1, 2026-12-04)" in shown, shown
    assert "37" in shown  # the measured commit window, not the model's default


def test_a_file_that_is_not_a_calibrated_profile_is_one_message_and_runs_keep_the_model(tmp_path: Path) -> None:
    wrong = tmp_path / "notes.json"
    wrong.write_text("[1, 2, 3]")
    at = aws_like_run_page()
    at.text_input(key=PROFILE_FILE_KEY).set_value(str(wrong)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [str(e.value) for e in at.sidebar.error] and "is not a calibrated profile" in sidebar_text(at)
    assert "calibrated from" not in " ".join(str(c.value) for c in at.sidebar.caption)
    at.text_input(key=PROFILE_FILE_KEY).set_value(str(tmp_path / "missing.json")).run()
    assert "cannot read the profile file" in sidebar_text(at)


def test_a_fifo_or_a_device_named_as_the_profile_file_is_refused_at_once(tmp_path: Path) -> None:
    # Read on every rerun, by the script thread every user's page shares the server with: never waited on.
    import os

    fifo = tmp_path / "profile.json"
    os.mkfifo(fifo)
    at = aws_like_run_page()
    for path, said in ((str(fifo), "is a FIFO, not a regular file"), ("/dev/zero", "not a regular file")):
        at.text_input(key=PROFILE_FILE_KEY).set_value(path).run(timeout=20)
        assert not at.exception, [e.value for e in at.exception]
        assert said in sidebar_text(at), sidebar_text(at)
        assert "calibrated from" not in " ".join(str(c.value) for c in at.sidebar.caption)
