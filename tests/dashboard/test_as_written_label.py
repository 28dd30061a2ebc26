"""A user's workload as the file writes it is not proven safe: wherever its form is named (the sweep's legend, a
run's title, Compare's headers, the History table, the presenter's verdict) it is "as written", never "safe";
it is still the side compared with the racy form, first in a pair and the default, as before."""

from __future__ import annotations

from dashboard.figures.workload_sweep import sweep_frame, workload_sweep_lines
from dashboard.widgets.registry import get_registry
from engine.workloads.pattern import AS_WRITTEN, RACY, WorkloadPattern
from tests.dashboard.test_pages import app, text, until
from tests.dashboard.test_workload_sweep_figure import row


def test_the_sweep_legend_names_the_as_written_form_without_calling_it_safe() -> None:
    fig = workload_sweep_lines(sweep_frame([row(1, AS_WRITTEN), row(1, RACY)], "clients"), "clients", title="Sweep")
    names = {t.name for t in fig.data}
    assert names == {"as-written", "racy (RACY)"}
    as_written = [t for t in fig.data if t.name == "as-written"]
    assert all(t.line.dash == "solid" for t in as_written)  # still drawn as the side compared with the racy one


def test_the_as_written_form_is_labelled_as_written_and_still_the_guarded_side() -> None:
    variant = WorkloadPattern.variants[AS_WRITTEN]
    assert variant.label == "as written" and WorkloadPattern.variants[RACY].label == "racy"
    assert WorkloadPattern.safe_variant() == AS_WRITTEN and WorkloadPattern.racy_variant() == RACY


def test_compare_both_forms_never_calls_the_users_file_safe() -> None:
    at = app("app_pages/workload.py")
    at.selectbox(key="wl-preset").set_value("ticket-sale").run()
    preset = at.text_area(key="wl-text").value or ""
    at.text_area(key="wl-text").set_value(preset.replace("clients: 16, ops: 25", "clients: 2, ops: 2")).run()
    at.button(key="wl-pair").click().run()
    assert not at.error, [e.value for e in at.error]
    pair = get_registry().group(at.session_state["wl_group"])
    until(at, lambda a: not any(r.running for r in pair), timeout=120)
    at.run()
    body = text(at)
    assert "(safe)" not in body, body
    assert "## :blue[as-written]\n" in body and "## :red[racy]\n" in body  # each form named for what it is
    titles = {r.variant: r.title for r in pair}
    assert titles[AS_WRITTEN].startswith("workload / as-written · 2 threads"), titles
    assert titles[RACY].startswith("workload / racy · "), titles
    assert {r.kind for r in pair} == {"as written", "racy"}
