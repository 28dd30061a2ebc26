"""An imported history is judged by its own calls, not by its summary: a PASS its calls contradict is shown as the
calls' verdict, saying so; the same call twice is a damaged file; a run exported before it ended has no verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state.verdicts import key_of
from dashboard.widgets.registry import Registry, get_registry
from tests.dashboard.helpers import DATA

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


def lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines() if line]


def encoded(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(map(json.dumps, rows)).encode()


@pytest.mark.parametrize(
    ("name", "broken"),
    [
        ("atomic-counters-racy", "final-count-acknowledged-increments"),  # read-then-put: increments lost
        ("optimistic-locking-racy", "no-lost-update"),  # blind writes: two of one version
        ("../../demos/gsi-consistency--gsi-read", "read-your-writes-every-read-after-an-acknowledged-write-sees-it"),
    ],
)
def test_a_pass_that_its_own_calls_contradict_is_shown_as_the_calls_verdict(name: str, broken: str) -> None:
    rows = lines(name)
    carried = rows[0]["meta"]["summary"]["invariants"]
    assert next(inv for inv in carried if key_of(inv) == broken)["holds"] is False
    for inv in carried:
        inv["holds"] = True  # the summary edited to say PASS everywhere
    record = Registry(max_runs=4).import_history("edited.jsonl", encoded(rows))
    shown = next(inv for inv in record.invariants() if key_of(inv) == broken)
    assert shown["holds"] is False and "contradicted by its own calls (the file said PASS)" in shown["explanation"]
    assert record.error is not None and "contradicted by its own calls" in str(record.error)


RECORDED = sorted(DATA.glob("*.jsonl")) + sorted((DATA.parents[1] / "demos").glob("*.jsonl"))


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_a_file_as_the_lab_exported_it_keeps_its_verdicts(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    record = Registry(max_runs=4).import_history(path.name, path.read_bytes())
    assert record.invariants() == rows[0]["meta"]["summary"]["invariants"] and record.error is None


def test_a_call_line_replaced_by_a_copy_of_its_neighbour_is_a_damaged_file_with_no_verdicts() -> None:
    rows = lines("atomic-counters-safe")
    rows[6] = rows[5]  # the call count still matches the summary's
    record = Registry(max_runs=4).import_history("copied.jsonl", encoded(rows))
    assert record.state == "failed" and record.invariants() == []
    assert record.error is not None and "is damaged: lines 6 and 7 are the same call twice" in str(record.error)


@pytest.mark.parametrize("state", ["running", "pending", "preparing", "verifying"])
def test_a_run_exported_before_it_ended_is_incomplete_with_no_verdicts(state: str) -> None:
    rows = lines("atomic-counters-safe")
    rows[0]["meta"]["summary"]["state"] = state
    record = Registry(max_runs=4).import_history("early.jsonl", encoded(rows))
    assert record.state == "failed" and record.invariants() == [] and not record.running
    assert record.error is not None and f"still {state}" in str(record.error) and "incomplete" in str(record.error)


def test_the_history_page_shows_the_calls_verdict_and_no_running_badge() -> None:
    registry = get_registry()  # the process-wide one the page reads
    edited = lines("atomic-counters-racy")
    for inv in edited[0]["meta"]["summary"]["invariants"]:
        inv["holds"] = True
    early = lines("atomic-counters-safe")
    early[0]["meta"]["summary"]["state"] = "running"
    for name, rows, shown, never in (
        ("edited.jsonl", edited, "contradicted by its own calls", "PASS] final count"),
        ("early.jsonl", early, "still running", "RUNNING]"),
    ):
        record = registry.import_history(name, encoded(rows))  # the newest: the one the page shows first
        try:
            at = AppTest.from_file(APP, default_timeout=60).run()
            at.switch_page("app_pages/history.py").run()
            assert not at.exception, [e.value for e in at.exception]
            page = " ".join(
                [m.value for m in at.markdown] + [e.value for e in at.error] + [c.value for c in at.caption]
            )
            assert shown in page and never not in page, page[-3000:]
        finally:
            registry.remove(record.id)
