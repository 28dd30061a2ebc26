"""The "Your workload" page and the sidebar's profile: a knob out of range is refused with its range, never a
crashed page; a link's bad profile or knobs are refused in one line each, as the Run page does, and the rest of
the link (its workload) is kept."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.test_profile_knobs import page

WORKLOAD = "name: mine\noperations:\n  - {name: bump, type: update, mode: add, weight: 1}\nload: {clients: 2, ops: 2}\n"


def errors(at: AppTest) -> str:
    return " ".join(str(e.value) for e in at.error).replace("\\", "")  # as shown: without Markdown's escapes


def test_a_knob_out_of_range_is_refused_with_its_range_and_the_page_still_draws() -> None:
    at = page({}, "app_pages/workload.py")
    at.sidebar.radio(key="server_profile").set_value("aws-like").run()
    at.number_input(key="aws-knob-commit_ms").set_value(-5.0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "commit_ms=-5 is out of range" in errors(at)
    assert at.button(key="wl-sweep-start") is not None  # the sweep's section is drawn below
    at.text_input(key="wl-sweep-clients").set_value("1").run()
    at.button(key="wl-sweep-start").click().run()  # Start sweep reads the profile: refused, with the range
    assert not at.exception, [e.value for e in at.exception]
    assert "wl_sweep_id" not in at.session_state
    assert errors(at).count("commit_ms=-5 is out of range") >= 2, errors(at)
