"""The "Your workload" page's sweep and its links (AppTest, the same embedded server): the edited workload swept
over client counts in both forms, its values refused with the CLI's and the editor's words; a link that carries a
whole workload fills the editor, a broken one says so in one line, and what it carries is never Markdown."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state.links import workload as workload_link
from dashboard.widgets.registry import SweepState, get_registry
from tests.dashboard.test_pages import APP, app, text, until

SMALL = "clients: 3, ops: 3"


def opened(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("app_pages/workload.py")
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def small_ticket_sale(at: AppTest) -> str:
    at.selectbox(key="wl-preset").set_value("ticket-sale").run()
    preset = at.text_area(key="wl-text").value or ""
    small = preset.replace("clients: 16, ops: 25", SMALL)
    assert small != preset
    at.text_area(key="wl-text").set_value(small).run()
    return small


def link_errors(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.error if e.icon == ":material/link_off:"]


def test_a_link_carries_a_whole_workload_into_the_editor() -> None:
    yaml_text = "name: my-orders\noperations:\n  - {name: bump, type: update, mode: add, weight: 1}\nload: {clients: 2, ops: 2}\n"
    at = opened(wl=workload_link.encode(yaml_text))
    assert at.text_area(key="wl-text").value == yaml_text
    assert not at.error and "1 operations" in text(at)
    at.text_area(key="wl-text").set_value(yaml_text.replace("clients: 2", "clients: 3")).run()
    assert "clients: 3" in (at.text_area(key="wl-text").value or "")  # the link is applied once, not on each rerun


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (workload_link.encode("name: x\n")[:-6], "damaged"),
        ("not base64!", "characters other than"),
        ("A" * (workload_link.MAX_LINK_CHARS + 1), "above the 16,384 a link may carry"),
        (workload_link.encode("x" * 300_000), "larger than a workload may be"),
    ],
)
def test_a_broken_or_oversized_link_says_so_in_one_line(value: str, said: str) -> None:
    at = opened(wl=value)
    [error] = link_errors(at)
    assert said in error
    assert "name:" in (at.text_area(key="wl-text").value or "")  # the first preset, ready to run
    at.run()
    assert link_errors(at) == [error]  # said again while the URL holds it, and only once


def test_a_linked_workload_is_checked_like_a_typed_one_and_never_drawn_as_markdown() -> None:
    bad = "name: t\n'[click](http://example.com)': 1\noperations:\n  - {name: a, type: upsert, weight: 1}\n"
    at = opened(wl=workload_link.encode(bad))
    errors = [str(e.value) for e in at.error]
    assert len(errors) == 2 and not link_errors(at)
    assert any(e.startswith("operations\\[0\\].type") for e in errors)
    assert any("\\[click\\]" in e for e in errors) and not any("[click](http" in e for e in errors)
    assert at.button(key="wl-start").disabled and at.button(key="wl-sweep-start").disabled


def test_copy_link_carries_the_editor_as_it_is_now() -> None:
    at = app("app_pages/workload.py")
    small = small_ticket_sale(at)
    [link] = [c.value for c in at.code if f"{workload_link.PARAM}=" in c.value]
    [value] = parse_qs(urlsplit(link).query)[workload_link.PARAM]
    assert workload_link.decode(value) == small


def test_what_one_session_types_or_opens_stays_in_it() -> None:
    first = app("app_pages/workload.py")
    first.text_area(key="wl-text").set_value("name: mine\n").run()
    linked = opened(wl=workload_link.encode("name: theirs\n"))
    other = app("app_pages/workload.py")
    assert first.text_area(key="wl-text").value == "name: mine\n"
    assert linked.text_area(key="wl-text").value == "name: theirs\n"
    untouched = other.text_area(key="wl-text").value or ""
    assert "mine" not in untouched and "theirs" not in untouched and "operations:" in untouched


def test_the_sweep_values_are_refused_with_the_clis_and_the_editors_words() -> None:
    at = app("app_pages/workload.py")
    small_ticket_sale(at)
    at.text_input(key="wl-sweep-clients").set_value("1,x").run()
    [error] = [str(e.value) for e in at.error]
    assert "Client counts '1,x' is not a comma-separated list of numbers" in error
    assert at.button(key="wl-sweep-start").disabled
    at.text_input(key="wl-sweep-clients").set_value("1,100000").run()
    [error] = [str(e.value) for e in at.error]
    assert error.startswith("load.clients: 100000 is out of range")
    at.radio(key="wl-sweep-axis").set_value("rate").run()
    at.text_input(key="wl-sweep-rate").set_value("0,50").run()
    [error] = [str(e.value) for e in at.error]
    assert error.startswith("load.rate: 0.0 is out of range")


def test_a_sweep_runs_both_forms_at_each_client_count_and_draws_them() -> None:
    at = app("app_pages/workload.py")
    small_ticket_sale(at)
    at.text_input(key="wl-sweep-clients").set_value("1,2").run()
    at.button(key="wl-sweep-start").click().run()
    assert not at.error, [e.value for e in at.error]
    job = get_registry().workload_sweep(at.session_state["wl_sweep_id"])
    assert job is not None
    until(at, lambda a: not job.running, timeout=120)
    assert job.state is SweepState.DONE, job.error
    until(at, lambda a: len(a.dataframe) > 0)
    table = at.dataframe[-1].value
    assert [(r["clients"], r["form"]) for _, r in table.iterrows()] == [
        (1, "as-written"),
        (1, "racy"),
        (2, "as-written"),
        (2, "racy"),
    ]
    assert int(table[table["form"] == "as-written"]["invariant violations"].sum()) == 0  # the safe form holds, always
    assert list(table["ops"]) == [3, 3, 6, 6]


def test_a_link_with_both_a_preset_and_a_workload_uses_the_workload_and_says_so() -> None:
    at = opened(preset="leaderboard", wl=workload_link.encode("name: theirs\n"))
    assert at.text_area(key="wl-text").value == "name: theirs\n"
    [error] = link_errors(at)
    assert "both a preset and a workload" in error


def test_a_workload_link_keeps_the_sidebars_profile_and_carries_its_knobs() -> None:
    from dashboard.state.profile_knobs import knob_key

    # Opened with a workload and aws-like knobs: both applied once; a later choice in the sidebar is the user's.
    at = opened(wl=workload_link.encode(small_ticket_sale_text()), profile="aws-like", **{"aws.commit_ms": "40"})
    assert at.session_state["server_profile"] == "aws-like"
    assert at.number_input(key=knob_key("commit_ms")).value == 40
    at.number_input(key=knob_key("commit_ms")).set_value(55).run()
    at.run()
    assert at.session_state["server_profile"] == "aws-like"
    assert at.number_input(key=knob_key("commit_ms")).value == 55
    assert "wl" in at.query_params  # the link's workload stays in the URL beside the knobs
    link = next(c.value for c in at.code if "wl=" in c.value)
    assert parse_qs(urlsplit(link).query)["aws.commit_ms"] == ["55"]
    # Without knobs in the URL, choosing aws-like in the sidebar holds across reruns (the link's wl= is no control).
    plain_link = opened(wl=workload_link.encode(small_ticket_sale_text()))
    plain_link.sidebar.radio(key="server_profile").set_value("aws-like").run()
    plain_link.run()
    assert plain_link.session_state["server_profile"] == "aws-like"


def small_ticket_sale_text() -> str:
    from pathlib import Path

    return (
        (Path(__file__).resolve().parents[2] / "workloads" / "ticket-sale.yaml")
        .read_text()
        .replace("clients: 16, ops: 25", SMALL)
    )
