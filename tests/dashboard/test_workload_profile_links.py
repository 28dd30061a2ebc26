"""The "Your workload" page and the sidebar's profile: a knob out of range is refused with its range, never a
crashed page; a link's bad profile or knobs are refused in one line each, as the Run page does, and the rest of
the link (its workload) is kept."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state.links import workload as workload_link
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


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"profile": "aws-like", "aws.commit_ms": "abc"}, "The link's aws-like knob commit_ms='abc' is not a number"),
        ({"profile": "bogus"}, "The link's Server profile 'bogus' is not one of exact, aws-like"),
        ({"aws.commit_ms": "40"}, "come without profile=aws-like"),
        ({"profile": "aws-like", "aws.latency_p99_ms": "1"}, "contradict each other"),
        ({"threads": "4"}, "The link's parameter 'threads' is not a control of this page"),
    ],
)
def test_a_links_bad_profile_or_knobs_are_refused_and_its_workload_kept(params: dict[str, str], said: str) -> None:
    at = page({"wl": workload_link.encode(WORKLOAD), **params}, "app_pages/workload.py")
    link_said = [str(e.value).replace("\\", "") for e in at.error if e.icon == ":material/link_off:"]
    assert any(said in e for e in link_said), link_said
    assert at.text_area(key="wl-text").value == WORKLOAD  # the rest of the link is used
    assert at.query_params["wl"] == workload_link.encode(WORKLOAD)


def test_a_good_profile_link_is_taken_without_a_word() -> None:
    at = page(
        {"wl": workload_link.encode(WORKLOAD), "profile": "aws-like", "aws.commit_ms": "40"}, "app_pages/workload.py"
    )
    assert not at.error, [e.value for e in at.error]
    assert at.number_input(key="aws-knob-commit_ms").value == 40


def test_a_workload_sweep_under_aws_like_says_simulated_in_its_figure_and_every_csv_row() -> None:
    import io

    import pandas as pd

    from dashboard.widgets.registry import SweepState, get_registry
    from dashboard.widgets.workload_sweep import sweep_csv
    from tests.dashboard.test_pages import until

    at = page({"wl": workload_link.encode(WORKLOAD), "profile": "aws-like"}, "app_pages/workload.py")
    at.text_input(key="wl-sweep-clients").set_value("1").run()
    at.button(key="wl-sweep-start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = get_registry().workload_sweep(at.session_state["wl_sweep_id"])
    assert job is not None
    until(at, lambda a: not job.running, timeout=120)
    assert job.state is SweepState.DONE, job.error
    at.run()
    table = pd.read_csv(io.BytesIO(sweep_csv(job.rows)))
    assert list(table["server_profile"]) == ["aws-like (SIMULATED)"] * 2  # both forms
    assert set(table["profile.simulated"]) == {True}
    [chart] = [c for c in at.get("plotly_chart") if "Sweep: mine" in c.proto.spec]
    assert "Sweep: mine, both forms against client count (SIMULATED)" in chart.proto.spec
