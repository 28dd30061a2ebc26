"""A team tries its own figures for the aws-like model from the sidebar: a longer commit window, another stale
share. Each knob starts at the model's default, a change reaches the run's recorded config and the table the
server reads it from, every label that says SIMULATED names what changed, a link carries it, a bad link value is
one plain message naming the knob and its range, and two browser sessions never change each other's knobs."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from dashboard.state.profile_knobs import knob_key, parse_link
from dashboard.state.run_settings import RunSettings
from dashboard.widgets import links
from dashboard.widgets.registry import get_registry
from dashboard.widgets.sidebar import PROFILE_FILE_KEY
from engine.record.history import Outcome
from engine.server.profile import CHOICES, EXACT, KNOB_WORDS, KNOBS, ProfileSpec

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
FAST = {"aws.latency_ms": "0", "aws.latency_p99_ms": "0"}  # no network time: the runs below take a moment
SMALL = {"pattern": "atomic-counters", "threads": "2", "ops": "2"}


def page(params: dict[str, str], where: str = "app_pages/run.py") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(where).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def knob(at: AppTest, name: str) -> Any:
    return at.number_input(key=knob_key(name))


def sidebar_text(at: AppTest) -> str:
    return " ".join(str(c.value) for c in at.sidebar.caption) + " ".join(str(e.value) for e in at.sidebar.error)


def start_run(at: AppTest) -> Any:
    """Start the Run page's run (its controls set by the page's link) and return its record once it has ended."""
    at.button(key="run-start").click().run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    record = get_registry().get(at.session_state["run_id"])
    assert record is not None
    deadline = time.monotonic() + 120
    while record.running:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    return record


def test_each_knob_starts_at_its_default_and_a_change_reaches_the_runs_recorded_config() -> None:
    at = page({**SMALL, "profile": "aws-like", **FAST})
    assert knob(at, "commit_ms").value == 10.0 and knob(at, "stale_share").value == 0.33
    assert (
        knob(at, "commit_ms").label == "commit window (ms) · default 10"
        and "Default 10 ms; 0 to 10000" in knob(at, "commit_ms").help
    )
    knob(at, "commit_ms").set_value(40.0).run()
    assert "SIMULATED, knobs changed: commit window 40 ms" in sidebar_text(at)
    assert at.query_params["aws.commit_ms"] == "40"  # the link carries it, and only what is off the defaults
    assert "aws.stale_share" not in at.query_params

    record = start_run(at)
    profile = record.run.config.profile
    assert profile.commit_ms == 40.0 and profile.latency_ms == 0.0 and profile.stale_share == 0.33
    assert "commit_ms=40" in record.run.table.spec.profile_tag  # the tag the embedded server reads per table
    assert record.summary()["profile"]["knobs"]["commit_ms"] == 40.0
    label = "aws-like (SIMULATED; knobs changed: commit window 40 ms, network latency 0 ms median"
    assert record.export_summary()["profile"]["label"].startswith(label)
    column = pd.read_csv(io.BytesIO(record.export_csv()))["server_profile"]
    assert column.str.startswith(label).all()  # on every row of the CSV
    at.switch_page("app_pages/history.py").run()
    row = next(r for r in at.dataframe[0].value.itertuples() if r.run == record.id)
    assert row.profile.startswith(label)

    at.switch_page("app_pages/run.py").run()
    at.sidebar.button(key="aws-knobs-reset").click().run()
    assert knob(at, "commit_ms").value == 10.0 and "knobs changed" not in sidebar_text(at)


def test_a_bad_knob_in_a_link_is_one_plain_message_naming_the_knob_and_its_range() -> None:
    at = page({"profile": "aws-like", "aws.commit_ms": "99999", "autostart": "1"})
    said = [str(e.value) for e in at.error]
    assert len(said) == 1, said
    assert said == [
        "The link's aws-like knob commit\\_ms=99999 is out of range (commit window (ms)): use 0 to 10000; that "
        "knob keeps its default."
    ]
    assert knob(at, "commit_ms").value == 10.0  # the knob keeps its default
    assert not get_registry().get(at.session_state["run_id"] if "run_id" in at.session_state else None)

    at = page({"profile": "aws-like", "aws.table_mode": "**free**"})
    said = [str(e.value) for e in at.error]
    assert len(said) == 1 and "\\*\\*free\\*\\*" in said[0] and "on-demand or provisioned" in said[0], said

    at = page({"profile": "exact", "aws.commit_ms": "40"})
    assert [str(e.value) for e in at.error] == [
        "The link's aws-like knobs (commit\\_ms) come without profile=aws-like; they are not used (add "
        "profile=aws-like to the link, or leave them out)."
    ]


def test_a_knob_out_of_range_in_the_sidebar_refuses_start_with_the_knobs_range() -> None:
    at = page({"profile": "aws-like"})
    knob(at, "stale_share").set_value(1.5).run()
    said = sidebar_text(at)
    assert "stale\\_share=1.5 is out of range (the sidebar's “stale share (of reads)”)" in said and "use 0 to 1" in said
    at.button(key="run-start").click().run()
    assert not at.exception and "run_id" not in at.session_state
    assert any("stale share" in str(e.value) for e in at.error), [e.value for e in at.error]


def test_two_sessions_with_different_knobs_do_not_change_each_others_runs() -> None:
    mine = page({**SMALL, "profile": "aws-like", **FAST, "aws.commit_ms": "40"})
    theirs = page({**SMALL, "profile": "aws-like", **FAST, "aws.stale_share": "0"})
    first = start_run(mine)
    second = start_run(theirs)
    assert (first.run.config.profile.commit_ms, first.run.config.profile.stale_share) == (40.0, 0.33)
    assert (second.run.config.profile.commit_ms, second.run.config.profile.stale_share) == (10.0, 0.0)
    mine.run()
    assert knob(mine, "commit_ms").value == 40.0 and knob(mine, "stale_share").value == 0.33
    assert knob(theirs, "commit_ms").value == 10.0 and knob(theirs, "stale_share").value == 0.0


def test_a_calibrated_file_is_the_starting_point_and_a_change_on_top_of_it_is_labelled(tmp_path: Path) -> None:
    measured = tmp_path / "my-account.json"
    calibrated = {"region": "eu-west-1", "date": "2026-12-04"}
    measured.write_text(json.dumps({"profile": "aws-like", "knobs": {"commit_ms": 37}, "calibrated": calibrated}))
    at = page({"profile": "aws-like"})
    at.text_input(key=PROFILE_FILE_KEY).set_value(str(measured)).run()
    assert knob(at, "commit_ms").value == 37.0 and "calibrated from my-account.json" in knob(at, "commit_ms").help
    knob(at, "commit_ms").set_value(50.0).run()
    said = "SIMULATED, calibrated from my-account.json (eu-west-1, 2026-12-04), then set here: commit window 50 ms"
    assert said in sidebar_text(at)
    at.sidebar.button(key="aws-knobs-reset").click().run()
    assert knob(at, "commit_ms").value == 37.0


def test_a_huge_commit_window_reaches_the_server_and_its_holds_cause_the_conflicts() -> None:
    # Exact windows (spread 1), no network time, every order on the one stock item: under a 3 s commit window,
    # every committed TransactWriteItems' answer waits the whole window (the model holds it back): certain when the
    # knob reached the server, impossible under the default 10 ms. And commits cannot overlap (each holds the stock
    # item; one landing in another's hold is cancelled), so without a TransactionConflict the 8 orders would take
    # 8 windows: faster means conflicts (both halves hold whatever the machine's speed).
    window_s = 3.0
    knobs = {"aws.commit_ms": "3000", "aws.window_spread": "1", "aws.abort_ms": "0", **FAST}
    orders = {"pattern": "transactions", "threads": "4", "ops": "2", "k.resend_share": "0"}  # 8 orders, no resends
    record = start_run(page({**orders, "profile": "aws-like", **knobs}))
    assert record.run.config.threads == 4 and record.run.config.options["resend_share"] == 0
    calls = record.history.calls()
    commits = [c for c in calls if c.op == "TransactWriteItems" and c.outcome is Outcome.OK]
    assert commits and all((c.complete_ns - c.invoke_ns) / 1e9 >= window_s for c in commits)
    wall_s = (max(c.complete_ns for c in calls) - min(c.invoke_ns for c in calls)) / 1e9
    conflicts = record.summary()["conflicts_by_cause"]["transaction_conflict"]
    assert conflicts > 0 or wall_s >= 8 * window_s, (conflicts, wall_s)


def test_a_recorded_runs_link_carries_only_the_knobs_off_the_defaults() -> None:
    spec = ProfileSpec.parse("aws-like", {"commit_ms": "40", "table_mode": "provisioned", "stale_share": "0.33"})
    params = links.encode(RunSettings("transactions", ops_per_client=2), profile=spec)
    assert {k: v for k, v in params.items() if k.startswith("aws.") or k == "profile"} == {
        "aws.commit_ms": "40",
        "aws.table_mode": "provisioned",
        "profile": "aws-like",
    }
    values, problems = parse_link(params)
    assert values == {"commit_ms": 40.0, "table_mode": "provisioned"} and problems == []
    assert links.encode(RunSettings("transactions", ops_per_client=2), profile=EXACT).get("profile") is None


def test_every_knob_has_words_and_a_unit_for_its_control() -> None:
    assert set(KNOB_WORDS) == {*KNOBS, *CHOICES}
