"""Compare two workloads on the "Your workload" page (AppTest): the editor's workload beside a second text, both
run on their own tables to their verdicts, each side titled by its workload's name, and a link brings the pair
back; an invalid second text names its field and starts nothing."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.widgets.registry import get_registry
from tests.dashboard.test_pages import APP, app, text, until, verdicts

PRESETS = Path(__file__).resolve().parents[2] / "workloads"
SHRUNK = ("clients: 16, ops: 25", "clients: 2, ops: 3")


def editor_with(preset: str) -> tuple[AppTest, str]:
    """The "Your workload" page with `preset` in the editor, shrunk to a quick run, and that text."""
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-preset").set_value(preset).run()
    shrunk = (at.text_area(key="wl-text").value or "").replace(*SHRUNK)
    at.text_area(key="wl-text").set_value(shrunk).run()
    return at, shrunk


def compared(at: AppTest) -> str:
    """Compare two workloads pressed, and both sides run to their verdicts: the page's text then."""
    at.button(key="wl-two").click().run()
    assert not at.error, [e.value for e in at.error]
    until(at, lambda a: len(verdicts(a)) == 2)
    return text(at)


def test_two_workloads_run_side_by_side_titled_by_name_and_a_link_reopens_them() -> None:
    at, _ = editor_with("ticket-sale")
    at.selectbox(key="wl-other").set_value("a second text…").run()
    second = (PRESETS / "hot-customer.yaml").read_text(encoding="utf-8").replace(*SHRUNK)
    at.text_area(key="wl-other-text").set_value(second).run()
    body = compared(at)
    assert "#### ticket-sale (as-written)" in body and "#### hot-customer (as-written)" in body
    assert "ticket-sale: as-written" in body and "hot-customer: as-written" in body  # the live pair view's titles
    assert "ticket-sale: per operation" in body and "hot-customer: per operation" in body
    group = at.query_params["workload_pair"]
    sides = get_registry().group(group)
    assert [(r.threads, r.ops_per_client) for r in sides] == [(2, 3), (2, 3)]

    again = AppTest.from_file(APP, default_timeout=60)
    again.switch_page("app_pages/workload.py")
    again.query_params["workload_pair"] = group
    again.run()
    reopened = text(again)
    assert "#### ticket-sale (as-written)" in reopened and "#### hot-customer (as-written)" in reopened


def test_an_invalid_second_text_names_its_field_and_starts_nothing() -> None:
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-other").set_value("a second text…").run()
    at.text_area(key="wl-other-text").set_value(
        "name: t\nload: {clients: 100000}\noperations:\n  - {name: a, type: upsert, weight: 1}\n"
    ).run()
    errors = [str(e.value).replace("\\", "") for e in at.error]  # shown plain: Markdown's characters escaped
    assert [e.split(":")[0] for e in errors] == ["operations[0].type", "load.clients"]
    assert at.button(key="wl-two").disabled
    assert "workload_pair" not in at.query_params


def test_a_preset_is_offered_as_the_second_workload() -> None:
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-other").set_value("hot-customer").run()
    assert not at.error and not at.button(key="wl-two").disabled


def test_one_workload_with_transactions_and_without_are_told_apart() -> None:
    at, with_transactions = editor_with("hot-customer")
    at.selectbox(key="wl-other").set_value("a second text…").run()
    assert at.text_area(key="wl-other-text").value == with_transactions  # a copy to edit into the other design
    without = with_transactions.split("  - name: transfer-3")[0] + "load: {mode: closed, clients: 2, ops: 3}\n"
    at.text_area(key="wl-other-text").set_value(without).run()
    body = compared(at)
    assert "#### hot-customer #1 (as-written)" in body and "#### hot-customer #2 (as-written)" in body
    tables = [list(d.value["operation"]) for d in at.dataframe]
    assert ["update-customer", "transfer-3"] in tables and ["update-customer"] in tables
