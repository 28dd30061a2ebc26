"""The dashboard's "Your workload" page (AppTest): a preset runs live to its verdicts and its per-operation
report; an invalid text shows one message per problem, each naming its field, and Start stays disabled."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.dashboard.test_pages import APP, app, text, until


def test_a_preset_runs_live_and_reports_per_operation() -> None:
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-preset").set_value("ticket-sale").run()
    preset = at.text_area(key="wl-text").value or ""
    at.text_area(key="wl-text").set_value(preset.replace("clients: 16, ops: 25", "clients: 3, ops: 4")).run()
    assert "invariants: no-lost-change" in text(at)
    at.button(key="wl-start").click().run()
    assert not at.error, [e.value for e in at.error]
    until(at, lambda a: ":green-badge[PASS]" in text(a) or ":red-badge[FAIL]" in text(a))
    body = text(at)
    assert ":green-badge[PASS]" in body and "ticket-sale: per operation" in body
    table = at.dataframe[0].value
    assert list(table["operation"]) == ["sell", "show-count"] and int(table["ops"].sum()) == 12


def test_an_invalid_workload_names_each_field_and_cannot_start() -> None:
    at = app("app_pages/workload.py")
    at.text_area(key="wl-text").set_value(
        "name: t\ncolour: red\nload: {clients: 100000}\noperations:\n  - {name: a, type: upsert, weight: 1}\n"
    ).run()
    errors = [str(e.value).replace("\\", "") for e in at.error]  # shown plain: Markdown's characters escaped
    assert [e.split(":")[0] for e in errors] == ["operations[0].type", "load.clients", "colour"]
    assert at.button(key="wl-start").disabled


def test_a_yaml_syntax_error_shows_its_line_and_column() -> None:
    at = app("app_pages/workload.py")
    at.text_area(key="wl-text").set_value("name: t\noperations: [\n").run()
    [error] = [str(e.value) for e in at.error]
    assert error.startswith("YAML syntax error at line 3, column 1")


def test_a_link_names_a_preset_and_an_unknown_one_is_said() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("app_pages/workload.py")
    at.query_params["preset"] = "leaderboard"
    at.run()
    assert at.selectbox(key="wl-preset").value == "leaderboard" and "name: leaderboard" in (at.text_area[0].value or "")
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("app_pages/workload.py")
    at.query_params["preset"] = "nope"
    at.run()
    assert any("The link's preset 'nope' is not one of" in str(e.value) for e in at.error)


def test_compare_both_forms_runs_them_side_by_side() -> None:
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-preset").set_value("ticket-sale").run()
    preset = at.text_area(key="wl-text").value or ""
    at.text_area(key="wl-text").set_value(preset.replace("clients: 16, ops: 25", "clients: 3, ops: 3")).run()
    at.button(key="wl-pair").click().run()
    assert not at.error, [e.value for e in at.error]
    until(at, lambda a: text(a).count("ticket-sale: per operation") == 2 and "(so far)" not in text(a))
    body = text(at)
    assert "#### as-written" in body and "#### racy" in body
    until(at, lambda a: ":green-badge[PASS]" in text(a) and ":red-badge[FAIL]" in text(a))
