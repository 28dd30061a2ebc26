"""An imported history is judged by its own calls, not by its summary: a PASS its calls contradict is shown as the
calls' verdict, saying so; the same call twice is a damaged file; a run exported before it ended has no verdicts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard.registry import Registry
from dashboard.verdicts import key_of
from engine.errors import HistoryFileError
from tests.dashboard.helpers import DATA


def lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines() if line]


def encoded(rows: list[dict[str, Any]]) -> bytes:
    return "\n".join(map(json.dumps, rows)).encode()


def test_a_pass_that_its_own_calls_contradict_is_shown_as_the_calls_verdict() -> None:
    rows = lines("atomic-counters-racy")  # read-then-put: increments lost, so its final count FAILs
    carried = rows[0]["meta"]["summary"]["invariants"]
    assert any(inv["holds"] is False for inv in carried)
    for inv in carried:
        inv["holds"] = True  # the summary edited to say PASS everywhere
    record = Registry(max_runs=4).import_history("edited.jsonl", encoded(rows))
    shown = {key_of(inv): inv for inv in record.invariants()}
    final = shown["final-count-acknowledged-increments"]
    assert final["holds"] is False and "contradicted by its own calls (the file said PASS)" in final["explanation"]
    assert record.error is not None and "contradicted by its own calls" in str(record.error)


def test_an_untouched_file_keeps_its_verdicts() -> None:
    for name in ("atomic-counters-racy", "atomic-counters-safe"):
        rows = lines(name)
        record = Registry(max_runs=4).import_history(f"{name}.jsonl", encoded(rows))
        assert record.invariants() == rows[0]["meta"]["summary"]["invariants"] and record.error is None


def test_a_call_line_replaced_by_a_copy_of_its_neighbour_is_a_damaged_file() -> None:
    rows = lines("atomic-counters-safe")
    rows[6] = rows[5]  # the call count still matches the summary's
    with pytest.raises(HistoryFileError) as refused:
        Registry(max_runs=4).import_history("copied.jsonl", encoded(rows))
    assert "is damaged" in refused.value.problem and "the same call twice" in refused.value.problem


@pytest.mark.parametrize("state", ["running", "pending", "preparing", "verifying"])
def test_a_run_exported_before_it_ended_is_incomplete_with_no_verdicts(state: str) -> None:
    rows = lines("atomic-counters-safe")
    rows[0]["meta"]["summary"]["state"] = state
    record = Registry(max_runs=4).import_history("early.jsonl", encoded(rows))
    assert record.state == "failed" and record.invariants() == [] and not record.running
    assert record.error is not None and f"still {state}" in str(record.error) and "incomplete" in str(record.error)
