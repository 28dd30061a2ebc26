"""AppTest smoke tests of every page: no exceptions, a short real run against the embedded DynamoDB, and bad
input (0 threads, an unreachable endpoint, a broken import) shown in the page with the earlier runs kept."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.helpers import DATA

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def text(at: AppTest) -> str:
    return "\n".join(
        [m.value for m in at.markdown]
        + [str(e.value) for e in at.error]
        + [str(i.value) for i in at.info]
        + [str(s.value) for s in at.success]
    )


# A run's headline once its verdicts are in (dashboard.widgets.live.headline), whatever they are.
VERDICT = re.compile(r"all \d+ invariants? hold|\d+ of \d+ invariants? (?:hold; \d+ cannot be judged|broken)")


def verdicts(at: AppTest) -> list[str]:
    """The verdict headlines the page shows, one per finished run (a Compare pair: two once both have ended)."""
    boxes = [*at.success, *at.error, *at.warning]
    return [str(b.value) for b in boxes if VERDICT.search(str(b.value))]


def until(at: AppTest, done, timeout: float = 90) -> AppTest:
    deadline = time.monotonic() + timeout
    while not done(at):
        assert time.monotonic() < deadline, text(at)[-2000:]
        time.sleep(0.3)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def test_run_page_starts_a_real_run_and_shows_the_verdicts() -> None:
    at = app()
    assert "Problem" in text(at) and "Pattern" in text(at)
    at.radio(key="run-atomic-counters-variant").set_value("read-then-put")
    at.number_input(key="run-atomic-counters-threads").set_value(3)
    at.number_input(key="run-atomic-counters-ops").set_value(4)
    at.button(key="run-start").click().run()
    assert not at.error, [e.value for e in at.error]
    until(at, lambda a: ":red-badge[FAIL]" in text(a) or ":green-badge[PASS]" in text(a))
    body = text(at)
    assert "DONE" in body and "### Invariants" in body and "final count = acknowledged increments" in body
    assert len(at.get("plotly_chart")) >= 5  # timeline, outcomes, latency, counter view, final state
    assert {m.label for m in at.metric} >= {"calls", "ok", "fail", "info", "conflicts", "calls/s", "client CPU"}
    assert len(at.get("download_button")) >= 3  # history, summary, CSV (and the call log)
    next(t for t in at.toggle if t.label.startswith("Show the call log")).set_value(True).run()
    log = [c.value for c in at.code if ">>> " in c.value][-1]  # after the evidence of the broken invariants
    assert ">>> GetItem ddblab-atomic-counters" in log and ">>> PutItem ddblab-atomic-counters" in log


def test_zero_threads_shows_the_problem_and_the_fix() -> None:
    at = app()
    at.number_input(key="run-atomic-counters-threads").set_value(0)
    at.button(key="run-start").click().run()
    assert not at.exception
    assert any("threads must be at least 1" in e.value for e in at.error)


def test_unreachable_endpoint_is_refused_in_the_sidebar() -> None:
    at = app()
    at.sidebar.radio(key="backend_choice").set_value("endpoint URL").run()
    at.sidebar.text_input(key="backend_url").set_value("http://127.0.0.1:9").run()
    at.sidebar.button(key="backend_use_url").click().run()
    assert not at.exception
    assert any("cannot reach DynamoDB at http\\://127.0.0.1:9" in e.value for e in at.error)  # escaped: not a link
    assert any("Embedded DynamoDB" in s.value for s in at.sidebar.success)  # still on the embedded backend


def test_aws_needs_the_confirmation() -> None:
    at = app()
    at.sidebar.radio(key="backend_choice").set_value("AWS").run()
    assert at.sidebar.button(key="backend_use_aws").disabled
    assert "never shown" in " ".join(c.value for c in at.sidebar.caption)


def test_compare_page_runs_safe_and_racy_side_by_side() -> None:
    at = app("app_pages/compare.py")
    at.number_input(key="compare-atomic-counters-threads").set_value(2)
    at.number_input(key="compare-atomic-counters-ops").set_value(3)
    at.button(key="compare-start").click().run()
    until(at, lambda a: text(a).count("invariants") >= 2 and "running" not in " ".join(str(s.value) for s in a.info))
    body = text(at)
    assert ":green[add]" in body and ":red[read-then-put]" in body
    assert "all 4 invariants hold" in body
    assert len(at.get("plotly_chart")) >= 6


def test_sweep_page_draws_lines_and_a_table() -> None:
    at = app("app_pages/sweep.py")
    at.multiselect(key="sweep-threads").set_value([1, 2])
    at.number_input(key="sweep-ops").set_value(2)
    at.number_input(key="sweep-repeats").set_value(2)
    at.button(key="sweep-start").click().run()
    until(at, lambda a: "done · 8 of 8 runs" in " ".join(str(p.proto.text) for p in a.get("progress")))
    table = at.dataframe[0].value
    assert len(at.dataframe) == 1 and len(table) == 4  # a row per variant and thread count, of 2 runs each
    assert list(table["runs"]) == [2, 2, 2, 2] and "harm / 1k ops" in table and "harm min" in table
    assert "harm" not in table and "state" not in table  # the same on every row: said once, the table fits
    assert any(c.value.startswith("Harm: lost increments") for c in at.caption)  # what the pattern names as damage
    assert (table[table["variant"] == "add"]["harm / 1k ops"] == 0).all()  # the safe variant does none
    assert len(at.get("plotly_chart")) == 3  # harm and its price, with bands; conflicts by cause; throughput, latency


def test_a_sweep_link_with_autostart_starts_its_sweep_once() -> None:
    at = app("app_pages/sweep.py")
    for name, value in {"pattern": "atomic-counters", "threads": "1,2", "ops": "2", "repeats": "1"}.items():
        at.query_params[name] = value
    at.query_params["autostart"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    until(at, lambda a: "done · 4 of 4 runs" in " ".join(str(p.proto.text) for p in a.get("progress")))
    started = at.query_params["sweep"]
    at.run()  # the same link again in this session: not a second sweep
    assert at.query_params["sweep"] == started


def test_history_page_imports_a_file_and_refuses_a_broken_one() -> None:
    at = app("app_pages/history.py")
    at.file_uploader(key="history-upload").set_value(
        ("counters.jsonl", (DATA / "atomic-counters-racy.jsonl").read_bytes(), "application/x-ndjson")
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Imported counters.jsonl: 960 calls" in s.value for s in at.success)
    assert "atomic-counters / read-then-put (racy)" in text(at)
    before = len(at.dataframe[0].value)
    at.file_uploader(key="history-upload").set_value(("broken.jsonl", b"{not json", "application/x-ndjson")).run()
    assert not at.exception
    assert any("line 1 of the history file is not JSON" in e.value for e in at.error)
    assert len(at.dataframe[0].value) == before  # the earlier runs are still listed


@pytest.mark.parametrize(
    "page", ["app_pages/run.py", "app_pages/compare.py", "app_pages/sweep.py", "app_pages/history.py"]
)
def test_every_page_renders_without_errors(page: str) -> None:
    at = app(page)
    assert at.title and not at.error


def test_a_spent_call_budget_is_shown_with_its_fix_and_start_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.widgets.registry import get_registry

    registry = get_registry()  # the process-wide one the pages use (a Streamlit resource)
    used = registry.calls.used()
    monkeypatch.setattr(registry.calls, "limit", used)  # every browser session's calls so far: none left
    for page, start in [
        (None, "run-start"),
        ("app_pages/compare.py", "compare-start"),
        ("app_pages/sweep.py", "sweep-start"),
    ]:
        at = app(page)
        warning = " ".join(str(w.value) for w in at.warning)
        assert f"budget of {used:,} calls is spent" in warning and "DDBLAB_MAX_TOTAL_CALLS" in warning
        assert at.button(key=start).disabled
        assert f"calls used: {used:,} of {used:,} (0 left)" in " ".join(c.value for c in at.sidebar.caption)


@pytest.mark.parametrize(
    ("page", "param", "says"),
    [
        ("app_pages/compare.py", "group", "Pair nonexistent is no longer in this dashboard"),
        ("app_pages/sweep.py", "sweep", "Sweep nonexistent is no longer in this dashboard"),
        ("app_pages/run.py", "run", "Run nonexistent is no longer in this dashboard"),
    ],
)
def test_a_link_to_something_gone_says_so_on_every_page(page: str, param: str, says: str) -> None:
    # As the Run page does: a bookmark to a pair or sweep this dashboard no longer holds is named, not a blank hint.
    at = app(page)
    at.query_params[param] = "nonexistent"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert says in text(at)
