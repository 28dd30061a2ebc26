"""What a page started stays findable: its id is kept in the page's URL (links.JOB_IDS), so a refresh or another
session opened on that URL finds it again, shows it and can Stop it."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.state.links import workload as workload_link
from dashboard.widgets import links
from dashboard.widgets.registry import SweepState, get_registry
from tests.dashboard.test_pages import APP

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
# A sweep that runs until stopped: one client for ten minutes per point.
LONG = "name: long\noperations:\n  - {name: bump, type: update, mode: add, weight: 1}\nload: {clients: 1, duration_s: 600}\n"


def _url_params_written() -> set[str]:
    """Every parameter a page writes into its URL as the id of what it started: the `param` of start_and_remember
    and start_now, and st.query_params["X"] = ... ."""
    found = set()
    for path in DASHBOARD.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "start_and_remember",
                "start_now",
            ):
                param = node.args[2] if len(node.args) > 2 else None
                if isinstance(param, ast.Constant) and isinstance(param.value, str):
                    found.add(param.value)
            if isinstance(node, ast.Assign) and isinstance(target := node.targets[0], ast.Subscript):
                if "query_params" in ast.unparse(target.value) and isinstance(target.slice, ast.Constant):
                    found.add(str(target.slice.value))
    return found


def test_every_id_a_page_keeps_in_its_url_survives_the_url_being_rewritten() -> None:
    written = _url_params_written() - {"presenter"}  # the presenter toggle: a flag, kept as one
    assert {"run", "group", "sweep", "workload", "workload_pair", "workload_sweep"} <= written
    assert written <= links.JOB_IDS, written - links.JOB_IDS
    assert links.JOB_IDS <= links.OTHER  # remember() keeps them, and no link takes them for a control


def test_a_workload_sweep_is_found_and_stopped_from_a_new_session() -> None:
    started = AppTest.from_file(APP, default_timeout=60)
    started.switch_page("app_pages/workload.py")
    started.query_params["wl"] = workload_link.encode(LONG)
    started.run()
    started.text_input(key="wl-sweep-clients").set_value("1").run()
    started.button(key="wl-sweep-start").click().run()
    assert not started.exception and not started.error, [e.value for e in [*started.exception, *started.error]]
    sweep_id = started.session_state["wl_sweep_id"]
    job = get_registry().workload_sweep(sweep_id)
    assert job is not None
    try:
        started.run()  # the page's rerun rewrites its URL: the sweep's id stays in it
        assert started.query_params["workload_sweep"] == sweep_id
        fresh = AppTest.from_file(APP, default_timeout=60)  # a refresh: a new session, only the URL
        fresh.switch_page("app_pages/workload.py")
        for name, value in started.query_params.items():
            fresh.query_params[name] = value
        fresh.run()
        assert not fresh.exception, [e.value for e in fresh.exception]
        assert fresh.query_params["workload_sweep"] == sweep_id
        stop = fresh.button(key="wl-sweep-stop")
        assert not stop.disabled  # it runs for ten minutes
        stop.click().run()
    finally:
        job.stop()
    deadline = time.monotonic() + 60
    while job.running:
        assert time.monotonic() < deadline, "the sweep did not stop"
        time.sleep(0.1)
    assert job.state is SweepState.STOPPED
