"""The import schema: the lab's own exports always pass it; absurd values are refused in one line naming them."""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine.backends.backend import Backend
from engine.errors import HistoryFileError
from engine.patterns import all_patterns
from engine.record.history import read_jsonl
from engine.run.runner import RunConfig, run_pattern
from engine.run.summary import summary

HEADER = {"format": "ddblab-history", "version": 1, "meta": {}}
CALL = {"client": 0, "action": "a", "op": "PutItem", "key": "k", "invoke_ns": 10, "complete_ns": 20, "outcome": "ok"}


def test_every_variants_export_is_accepted_back(backend: Backend) -> None:
    def round_trip(name: str, variant: str) -> None:
        run = run_pattern(
            RunConfig(pattern=name, variant=variant, threads=2, ops_per_client=2, lost_response_share=0.2), backend
        )
        out = io.StringIO()
        run.history.write_jsonl(out, meta={"summary": summary(run)})
        history, meta = read_jsonl(io.StringIO(out.getvalue()))
        assert len(history) == len(run.history) and meta["summary"]["variant"] == variant

    # The runs mostly wait (lease pauses, GSI lag): side by side, each on its own table, they take a fifth of the time.
    pairs = [(name, variant) for name, pattern in all_patterns().items() for variant in pattern.variants]
    with ThreadPoolExecutor(len(pairs)) as pool:
        for done in [pool.submit(round_trip, *pair) for pair in pairs]:
            done.result()


def _file(*calls: dict, meta: dict | None = None) -> io.StringIO:
    lines = [json.dumps({**HEADER, "meta": meta or {}})] + [json.dumps(c) for c in calls]
    return io.StringIO("\n".join(lines))


@pytest.mark.parametrize(
    "change, field",
    [
        ({"invoke_ns": 2**63 - 1, "complete_ns": 2**63 - 1}, "invoke_ns"),
        ({"complete_ns": 9 * 10**18}, "complete_ns"),
        ({"invoke_ns": -5}, "invoke_ns"),
        ({"invoke_ns": 0, "complete_ns": 2 * 3_600 * 10**9}, "completes"),
        ({"client": -1}, "client"),
        ({"client": True}, "client"),
        ({"client": 10**9}, "client"),
        ({"key": "k" * 100_000}, "key"),
        ({"op": "Put Item; drop"}, "op"),
        ({"outcome": "maybe"}, "outcome"),
        ({"retries": -1}, "retries"),
        ({"detail": {"version": "seven"}}, "detail.version"),
        ({"detail": {"stale": "yes"}}, "detail.stale"),
        ({"detail": [1, 2]}, "detail"),
        ({"detail": {"x": "y" * 20_000}}, "detail"),
    ],
)
def test_an_absurd_call_is_refused_naming_its_field(change: dict, field: str) -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(_file({**CALL, **change}))
    assert "line 2" in e.value.problem and field in e.value.problem and "\n" not in e.value.problem


@pytest.mark.parametrize(
    "summary, field",
    [
        ({"threads": "eight"}, "threads"),
        ({"threads": 10**12}, "threads"),
        ({"invariants": "all fine"}, "invariants"),
        ({"invariants": [{"name": "x", "holds": "yes"}]}, "holds"),
        ({"invariants": [{"name": ["x"]}]}, "name"),
        ({"duration_s": 1e300}, "duration_s"),
        ({"client_cpu_cores": [float("inf")]}, "client_cpu_cores"),
        ({"state": "<b>done</b>"}, "state"),
        ({"options": {"accounts": [1]}}, "options"),
        ("a summary", "summary"),
    ],
)
def test_an_absurd_summary_is_refused_naming_its_field(summary: object, field: str) -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(_file(CALL, meta={"summary": summary}))
    assert field in e.value.problem and "\n" not in e.value.problem


def test_json_that_is_no_plain_number_is_refused() -> None:
    for raw in ("NaN", "Infinity", "1" * 400):
        text = json.dumps(HEADER) + "\n" + json.dumps({**CALL, "detail": {"amount": "@"}}).replace('"@"', raw)
        with pytest.raises(HistoryFileError, match="detail"):
            read_jsonl(io.StringIO(text))
