"""The sidebar's aws-like knobs reach every page that runs something: Compare's pair, a Sweep, a Seed scene and
"Your workload", each run with the knobs of the session that started it."""

from __future__ import annotations

import time

from dashboard.widgets.registry import get_registry
from tests.dashboard.test_pages import text, until
from tests.dashboard.test_profile_knobs import FAST, page

KNOBS = {"profile": "aws-like", "aws.commit_ms": "40", **FAST}


def test_compare_starts_both_variants_with_the_knobs() -> None:
    at = page({"pattern": "atomic-counters", "threads": "2", "ops": "2", **KNOBS}, "app_pages/compare.py")
    at.button(key="compare-start").click().run()
    # The racy side may already have ended with its verdict in red: only a refusal would be another error.
    refusals = [e.value for e in at.error if "invariants broken" not in e.value]
    assert not at.exception and not refusals, refusals
    pair = get_registry().group(at.session_state["compare_group"])
    assert len(pair) == 2 and {r.run.config.profile.commit_ms for r in pair if r.run} == {40.0}
    assert at.query_params["aws.commit_ms"] == "40"


def test_a_sweep_runs_every_point_with_the_knobs() -> None:
    at = page({"pattern": "atomic-counters", "threads": "1", "ops": "1", "repeats": "1", **KNOBS}, "app_pages/sweep.py")
    at.button(key="sweep-start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = get_registry().sweep(at.session_state["sweep_id"])
    assert job is not None and job.profile.commit_ms == 40.0
    deadline = time.monotonic() + 120
    while job.running:
        assert time.monotonic() < deadline, "the sweep did not end"
        time.sleep(0.1)
    assert set(job.frame()["profile_tag"].str.contains("commit_ms=40")) == {True}  # every run's table
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("knobs changed: commit window 40 ms" in c.value for c in at.caption)


def test_a_scene_plays_with_the_knobs_and_says_which() -> None:
    at = page({"pattern": "conditional-writes", **KNOBS}, "app_pages/scenes.py")
    at.button(key="scenes-play").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = " ".join(w.value for w in at.warning)
    assert "SIMULATED" in said and "knobs changed: commit window 40 ms" in said, said
    assert at.query_params["aws.commit_ms"] == "40"


def test_your_workload_runs_with_the_knobs_and_keeps_them_after_start() -> None:
    at = page({}, "app_pages/workload.py")  # no link: the profile and a knob picked in the sidebar
    at.sidebar.radio(key="server_profile").set_value("aws-like").run()
    at.number_input(key="aws-knob-commit_ms").set_value(40.0).run()
    at.selectbox(key="wl-preset").set_value("ticket-sale").run()
    preset = at.text_area(key="wl-text").value or ""
    at.text_area(key="wl-text").set_value(preset.replace("clients: 16, ops: 25", "clients: 2, ops: 2")).run()
    at.button(key="wl-start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    record = get_registry().get(at.session_state["wl_run_id"])
    assert record is not None and record.run is not None and record.run.config.profile.commit_ms == 40.0
    until(at, lambda a: ":green-badge[PASS]" in text(a) or ":red-badge[FAIL]" in text(a))
    # The page keeps its run in the URL (?workload=…) beside the sidebar's profile and knobs: not a link just
    # opened, so the sidebar keeps them (it once took it for one, and set the profile back to exact after every Start).
    assert dict(at.query_params) == {"workload": record.id, "profile": "aws-like", "aws.commit_ms": "40"}
    assert at.sidebar.radio(key="server_profile").value == "aws-like"
    assert at.number_input(key="aws-knob-commit_ms").value == 40.0
