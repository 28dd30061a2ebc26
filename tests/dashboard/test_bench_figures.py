"""The dashboard's refresh bench still runs (see tests/test_bench.py for the others): it draws the Run page's
charts, so it runs with the dashboard's tests, in the process that has Streamlit loaded anyway."""

from __future__ import annotations

from bench.dashboard import refresh as dashboard_refresh


def test_the_dashboard_figures_come_from_a_recorded_run_drawn_as_the_page_draws_it() -> None:
    history, summary = dashboard_refresh.scaled(3000)
    assert len(history) == 3000
    wall, cpu, sent = dashboard_refresh.refresh(dashboard_refresh.running_record(history, summary))
    assert wall > 0 and cpu > 0 and sent > 10_000  # every chart of the Run page, as JSON
    assert 0 < dashboard_refresh.kept_bytes_per_call(dashboard_refresh.Recorded(), 3000) < 100_000
