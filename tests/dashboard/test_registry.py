"""The registry: real runs against the embedded DynamoDB, capacity caps, import/export round trips, broken files."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any

import pandas as pd
import pytest

from dashboard.state.records import RunRecord
from dashboard.state.run_settings import LIMIT_DURATION, RunSettings, build_config
from dashboard.text.calls import call_log
from dashboard.widgets.registry import Registry, SweepState
from engine.backends.backend import Backend, BackendSpec
from engine.errors import AwsNotConfirmed, BackendUnavailable, BadCredentials, BadInput, HistoryFileError, LabError
from engine.run.runner import Run, RunConfig
from tests.dashboard.helpers import DATA

SPEC = BackendSpec()


@pytest.fixture
def registry(backend: Backend) -> Registry:
    """A registry on the test session's backend (never closed here: the session owns it)."""
    return Registry(max_threads_per_run=16, max_total_threads=12, backend_factory=lambda spec: backend)


def run_of(record: RunRecord) -> Run:
    assert record.run is not None, "a live record has its Run"
    return record.run


def summary_of(record: RunRecord) -> dict[str, Any]:
    summary = record.summary()
    assert summary is not None, "a finished run has a summary"
    return summary


def note_of(record: RunRecord) -> str:
    note = record.budget_note()
    assert note is not None, "the run was ended by a call budget"
    return note


def wait(records, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(r.running for r in records):
        assert time.monotonic() < deadline, "run did not finish"
        time.sleep(0.05)


def test_a_run_is_registered_polled_and_verified(registry: Registry) -> None:
    record = registry.start(
        RunConfig(pattern="atomic-counters", variant="read-then-put", threads=3, ops_per_client=4), SPEC
    )
    assert registry.get(record.id) is record and registry.records()[0] is record
    seen = len(record.frame())
    wait([record])
    frame = record.frame()
    assert len(frame) >= seen and {"request", "detail", "detail.read"} <= set(frame.columns)
    assert record.state == "done" and summary_of(record)["calls"] == len(frame)
    assert {inv["name"] for inv in record.invariants()} >= {"final count = acknowledged increments"}
    assert record.progress()["fraction"] == 1.0
    assert registry.threads_in_use() == 0


def test_export_then_import_round_trip(registry: Registry) -> None:
    record = registry.start(
        RunConfig(pattern="optimistic-locking", variant="blind-write", threads=2, ops_per_client=3), SPEC
    )
    wait([record])
    data = record.export_jsonl()
    again = registry.import_history("mine.jsonl", data)
    assert again.pattern == "optimistic-locking" and again.variant == "blind-write" and again.threads == 2
    assert len(again.history) == len(record.history)
    assert again.invariants() == json.loads(json.dumps(record.invariants()))
    assert again.frame()["request"].tolist() == record.frame()["request"].tolist()
    summary = json.loads(record.export_summary_json())
    assert summary["pattern"] == "optimistic-locking" and summary["invariants"]
    csv = record.export_csv().decode()
    assert csv.splitlines()[0].startswith("seq,client,action,op,key")
    assert set(pd.read_csv(io.StringIO(csv))["server_profile"]) == {"exact"}
    assert len(csv.splitlines()) > len(record.history)


def test_the_call_log_parses_the_details_of_the_calls_it_prints_only(registry: Registry) -> None:
    record = registry.import_history("t.jsonl", (DATA / "transactions-safe.jsonl").read_bytes())
    cheap = record.frame(details=False)
    assert "detail" not in cheap and len(cheap) == len(record.history)
    cancelled = cheap[cheap["error"] == "TransactionCanceledException"].tail(5)
    rows = record.with_details(cancelled)
    full = record.frame()
    assert rows["detail"].tolist() == full.loc[cancelled.index, "detail"].tolist()
    assert call_log(rows).count("reasons: [") == len(rows) > 0


def test_import_a_recorded_file(registry: Registry) -> None:
    record = registry.import_history("x.jsonl", (DATA / "atomic-counters-racy.jsonl").read_bytes())
    assert record.source == "imported" and not record.running and record.run is None
    assert record.state == "done" and record.threads == 8 and len(record.frame()) == 960
    assert record.progress()["calls"] == 960 and record.progress()["elapsed_s"] > 0
    assert record.options() == {"tickets": 100, "sequence": 1}


@pytest.mark.parametrize(
    "name, data, problem",
    [
        ("bad.jsonl", b"not json at all\n", "line 1"),
        ("bad.jsonl", b'{"format": "ddblab-history", "version": 1}\n{"client": 1, "act', "line 2"),
        ("bad.jsonl", b'{"format": "something else"}\n', "no ddblab history header"),
        ("bad.jsonl", b"\xff\xfe\x00garbage", "not UTF-8"),
        ("calls.csv", b"seq,client\n1,2\n", "not a .jsonl history"),
    ],
)
def test_a_broken_import_says_why_and_keeps_the_runs(registry: Registry, name: str, data: bytes, problem: str) -> None:
    kept = registry.import_history("ok.jsonl", (DATA / "idempotency-keys-racy.jsonl").read_bytes())
    with pytest.raises(HistoryFileError) as e:
        registry.import_history(name, data)
    assert problem in str(e.value) and e.value.fix
    assert registry.records() == [kept]


def test_caps_on_threads(registry: Registry) -> None:
    with pytest.raises(BadInput, match="above the cap of 16"):
        registry.start(RunConfig(pattern="atomic-counters", threads=17, ops_per_client=1), SPEC)
    long = registry.start(RunConfig(pattern="atomic-counters", threads=8, duration_s=30), SPEC)
    try:
        with pytest.raises(BadInput, match="limit of 12 at once"):
            registry.start(RunConfig(pattern="atomic-counters", threads=8, ops_per_client=1), SPEC)
        assert registry.threads_in_use() == 8
    finally:
        run_of(long).stop()
        wait([long])
    assert long.state == "stopped" and registry.threads_in_use() == 0


def test_compare_pair_runs_both_variants_on_separate_tables(registry: Registry) -> None:
    safe, racy = registry.start_pair(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=3), SPEC)
    wait([safe, racy])
    assert (safe.variant, racy.variant) == ("add", "read-then-put")
    assert safe.group == racy.group and registry.group(safe.group) == [safe, racy]
    assert summary_of(safe)["table"] != summary_of(racy)["table"]
    assert all(inv["holds"] for inv in safe.invariants())


def test_a_group_of_two_configs_runs_them_together_within_the_thread_limit(registry: Registry) -> None:
    with pytest.raises(BadInput, match="13 more client threads would pass the dashboard's limit of 12"):
        registry.start_group(
            (
                RunConfig(pattern="atomic-counters", threads=8, ops_per_client=1),
                RunConfig(pattern="optimistic-locking", threads=5, ops_per_client=1),
            ),
            SPEC,
        )
    assert registry.threads_in_use() == 0 and registry.groups() == []
    counters, locking = registry.start_group(
        (
            RunConfig(pattern="atomic-counters", threads=2, ops_per_client=3),
            RunConfig(pattern="optimistic-locking", threads=3, ops_per_client=2),
        ),
        SPEC,
    )
    wait([counters, locking])
    assert (counters.pattern, locking.pattern) == ("atomic-counters", "optimistic-locking")
    assert (counters.threads, locking.threads) == (2, 3) and registry.group(counters.group) == [counters, locking]
    assert summary_of(counters)["table"] != summary_of(locking)["table"]


def test_sweep_rows_per_variant_and_thread_count(registry: Registry) -> None:
    job = registry.start_sweep("atomic-counters", [2, 1], 2, SPEC)
    deadline = time.monotonic() + 90
    while job.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job.state is SweepState.DONE and job.error is None
    rows = job.frame()
    assert sorted(zip(rows["threads"], rows["variant"])) == [
        (1, "add"),
        (1, "read-then-put"),
        (2, "add"),
        (2, "read-then-put"),
    ]
    with pytest.raises(BadInput, match="no thread counts"):
        registry.start_sweep("atomic-counters", [], 2, SPEC)


def test_bad_settings_are_refused_with_a_fix() -> None:
    with pytest.raises(BadInput, match="threads must be at least 1") as e:
        build_config(RunSettings(pattern="atomic-counters", threads=0, ops_per_client=5), max_threads=256)
    assert e.value.fix
    with pytest.raises(BadInput, match="ops per client"):
        build_config(RunSettings(pattern="atomic-counters", ops_per_client=0), max_threads=256)
    with pytest.raises(BadInput, match="duration"):
        build_config(RunSettings(pattern="atomic-counters", limit=LIMIT_DURATION, duration_s=0), max_threads=256)
    with pytest.raises(BadInput, match="out of range"):
        build_config(RunSettings(pattern="atomic-counters", ops_per_client=1, options={"tickets": -1}), max_threads=256)
    config = build_config(
        RunSettings(
            pattern="optimistic-locking", variant="blind-write", threads=4, ops_per_client=2, options={"accounts": 3}
        ),
        max_threads=256,
    )
    assert config.config.options["accounts"] == 3 and config.config.variant == "blind-write"
    with pytest.raises(BadInput, match="must share one process"):
        build_config(RunSettings(pattern="idempotency-keys", threads=8, ops_per_client=1, processes=2), max_threads=256)
    spread = build_config(
        RunSettings(pattern="atomic-counters", threads=8, ops_per_client=1, processes=2), max_threads=256
    )
    assert spread.config.processes == 2


def test_an_unreachable_endpoint_fails_fast_and_keeps_the_runs(registry: Registry) -> None:
    kept = registry.import_history("ok.jsonl", (DATA / "idempotency-keys-racy.jsonl").read_bytes())
    real = Registry()
    start = time.monotonic()
    with pytest.raises(BackendUnavailable, match="cannot reach DynamoDB at http://127.0.0.1:9"):
        real.backend(BackendSpec.parse("http://127.0.0.1:9"))
    assert time.monotonic() - start < 15
    assert registry.records() == [kept]
    with pytest.raises(AwsNotConfirmed):
        BackendSpec.parse(None, aws=True, confirm_aws=False)


def test_wrong_credentials_on_an_endpoint_are_named_and_nothing_is_lost() -> None:
    from tests.engine.backend.test_credentials import refusing_endpoint

    registry = Registry()  # a real one: the shared test registry always hands out the embedded server
    try:
        kept = registry.import_history("ok.jsonl", (DATA / "idempotency-keys-racy.jsonl").read_bytes())
        with refusing_endpoint(
            "UnrecognizedClientException", "The security token included in the request is invalid."
        ) as (url, targets):
            with pytest.raises(BadCredentials) as e:
                registry.start(
                    RunConfig(pattern="atomic-counters", threads=2, ops_per_client=2), BackendSpec.parse(url)
                )
        assert "rejected the credentials" in e.value.problem and e.value.fix
        assert targets == ["DynamoDB_20120810.ListTables"]  # the check, and nothing written
        assert registry.records() == [kept]
    finally:
        registry.close()


def test_when_the_server_dies_mid_run_the_run_says_so_keeps_its_calls_and_a_new_server_starts() -> None:
    registry = Registry(max_threads_per_run=64, max_total_threads=64)
    try:
        earlier = registry.start(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=2), SPEC)
        wait([earlier])
        doomed = registry.start(RunConfig(pattern="optimistic-locking", threads=32, duration_s=600), SPEC)
        deadline = time.monotonic() + 30
        while len(doomed.history) < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        recorded = len(doomed.history)
        server = registry.backend(SPEC).server
        assert server is not None, "the embedded backend runs its server"
        server.kill()
        wait([doomed], timeout=10)
        assert doomed.state == "failed" and "stopped during the run" in str(run_of(doomed).error)
        assert len(doomed.history) >= recorded and len(doomed.frame()) >= recorded
        assert {earlier.id, doomed.id} <= {r.id for r in registry.records()}  # earlier runs are kept
        again = registry.start(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=2), SPEC)
        wait([again])
        assert again.state == "done"  # the registry started a fresh embedded server
    finally:
        registry.close()


def test_runs_on_aws_get_a_call_budget(registry: Registry) -> None:
    aws = BackendSpec.parse(aws=True, confirm_aws=True)
    config = registry._validated(RunConfig(pattern="atomic-counters", threads=2), aws)
    assert config.config.max_calls == 20_000
    assert registry._validated(RunConfig(pattern="atomic-counters", threads=2), SPEC).config.max_calls is None


# -- the call budget shared by every session ------------------------------------------------------------------------


def budgeted(backend: Backend, calls: int, aws_calls: int = 100_000) -> Registry:
    return Registry(
        max_threads_per_run=16,
        max_total_threads=16,
        max_total_calls=calls,
        max_aws_calls=aws_calls,
        backend_factory=lambda spec: backend,
    )


def test_a_run_is_refused_once_the_call_budget_is_spent_and_the_message_names_the_fix(backend: Backend) -> None:
    registry = budgeted(backend, 150)
    record = registry.start(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=500), SPEC)
    wait([record])
    assert run_of(record).config.max_calls == 150 and record.budget_cap == 150  # the budget, not the run, limited it
    assert 150 <= len(record.history) <= 150 + 2 * 8  # at most an operation in flight per client past it
    assert registry.calls.used() == len(record.history) and registry.calls_left(SPEC) == 0
    assert "budget of 150 calls" in note_of(record) and "DDBLAB_MAX_TOTAL_CALLS" in note_of(record)
    refusals = [
        lambda: registry.start(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1), SPEC),
        lambda: registry.start_pair(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1), SPEC),
        lambda: registry.start_sweep("atomic-counters", [1], 1, SPEC),
    ]
    for refused in refusals:
        with pytest.raises(BadInput, match="budget of 150 calls is spent") as e:
            refused()
        assert "every browser session" in e.value.problem
        assert "DDBLAB_MAX_TOTAL_CALLS" in e.value.fix and "restart the dashboard" in e.value.fix
    assert registry.records() == [record] and registry.sweeps() == [] and registry.threads_in_use() == 0


def test_a_run_gets_max_calls_clamped_to_what_is_left(backend: Backend) -> None:
    registry = budgeted(backend, 300)
    first = registry.start(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=3), SPEC)
    wait([first])
    used = len(first.history)
    assert 0 < used < 300 and registry.calls.used() == used and first.budget_note() is None
    second = registry.start(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=3), SPEC)
    assert run_of(second).config.max_calls == second.budget_cap == 300 - used
    wait([second])
    own = registry.start(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1, max_calls=5), SPEC)
    assert run_of(own).config.max_calls == 5 and own.budget_cap is None  # a lower cap of its own stays
    wait([own])
    left = registry.calls_left(SPEC)
    safe, racy = registry.start_pair(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=2), SPEC)
    assert run_of(safe).config.max_calls == run_of(racy).config.max_calls == left // 2  # a pair splits what is left
    wait([safe, racy])
    # On AWS a run draws from both budgets: its own cap (AWS_DEFAULT_MAX_CALLS), the AWS budget, the total one.
    aws = BackendSpec.parse(aws=True, confirm_aws=True)
    config, cap = budgeted(backend, 10_000_000, aws_calls=500)._budgeted(
        registry._validated(RunConfig(pattern="atomic-counters", threads=2), aws), aws
    )
    assert config.config.max_calls == cap == 500
    config, cap = budgeted(backend, 10_000_000)._budgeted(
        registry._validated(RunConfig(pattern="atomic-counters", threads=2), aws), aws
    )
    assert config.config.max_calls == 20_000 and cap is None


def test_a_run_whose_thread_cannot_start_ends_failed_and_frees_its_threads_and_budget(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = budgeted(backend, 400)
    start = threading.Thread.start

    def refuse_runs(thread: threading.Thread) -> None:
        if thread.name.startswith("run-"):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuse_runs)
    with pytest.raises(LabError) as e:
        registry.start(RunConfig(pattern="atomic-counters", threads=4, ops_per_client=5), SPEC)
    assert "could not start a thread" in str(e.value) and e.value.fix
    record = registry.records()[0]
    assert not record.running and record.state == "failed"
    assert registry.threads_in_use() == 0 and registry.calls_left(SPEC) == 400
    # A compare pair whose first run cannot start: the second is never left waiting as "running".
    with pytest.raises(LabError):
        registry.start_pair(RunConfig(pattern="atomic-counters", threads=2, ops_per_client=5), SPEC)
    assert not any(r.running for r in registry.records()) and registry.threads_in_use() == 0
    assert registry.calls_left(SPEC) == 400
    monkeypatch.setattr(threading.Thread, "start", start)
    wait([registry.start(RunConfig(pattern="atomic-counters", threads=4, ops_per_client=5), SPEC)])


def test_two_sessions_share_one_budget_and_parallel_runs_stop_together(backend: Backend) -> None:
    registry = budgeted(backend, 400)  # one registry per process: every browser tab's runs draw from it
    tab_a = registry.start(RunConfig(pattern="optimistic-locking", threads=2, duration_s=300), SPEC)
    tab_b = registry.start(RunConfig(pattern="atomic-counters", threads=2, duration_s=300), SPEC)
    # Each was allowed what was left when it started (400): alone, together they could make 800.
    assert run_of(tab_a).config.max_calls == run_of(tab_b).config.max_calls == 400
    start = time.monotonic()
    wait([tab_a, tab_b], timeout=120)
    assert time.monotonic() - start < 100  # stopped by the budget, long before their 300 s
    used = len(tab_a.history) + len(tab_b.history)
    assert registry.calls.used() == used and 400 <= used < 400 + 150  # the watcher stopped both near the limit
    assert all("budget of 400 calls" in note_of(r) for r in (tab_a, tab_b))
    with pytest.raises(BadInput, match="budget of 400 calls is spent") as e:
        registry.start(RunConfig(pattern="atomic-counters", threads=1, ops_per_client=1), SPEC)
    assert "DDBLAB_MAX_TOTAL_CALLS" in e.value.fix


def test_a_sweep_draws_from_the_budget_and_ends_with_the_message_when_it_is_spent(backend: Backend) -> None:
    registry = budgeted(backend, 60)
    job = registry.start_sweep("atomic-counters", [1, 2, 4], 10, SPEC)
    deadline = time.monotonic() + 60
    while job.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert job.state is SweepState.FAILED and "budget of 60 calls is spent" in str(job.error)
    assert job.error is not None and "DDBLAB_MAX_TOTAL_CALLS" in job.error.fix and len(job.rows) < job.total
    assert 60 <= registry.calls.used() <= 60 + 4 * 8


def test_client_processes_are_capped_across_sessions() -> None:
    registry = Registry(max_total_processes=2)
    try:
        with pytest.raises(BadInput, match="limit of 2") as e:
            registry.start(RunConfig(pattern="atomic-counters", threads=8, ops_per_client=1, processes=3), SPEC)
        assert "DDBLAB_MAX_TOTAL_PROCESSES" in e.value.fix and registry.records() == []
    finally:
        registry.close()


def test_the_runs_table_marks_every_aws_like_run_simulated() -> None:
    from dashboard.widgets.panels import runs_table
    from engine.run.demos import DEFAULT_DIR

    exact = (DEFAULT_DIR / "atomic-counters--add.jsonl").read_bytes()
    header, _, rest = exact.partition(b"\n")
    head = json.loads(header)
    head["meta"]["summary"]["profile"] = {"name": "aws-like", "simulated": True, "knobs": {"commit_ms": 10.0}}
    del_profile = json.loads(header)
    del del_profile["meta"]["summary"]["profile"]  # a file from before profiles: nothing claimed
    registry = Registry(max_threads_per_run=4, max_total_threads=4)
    for name, first in (
        ("exact", header),
        ("aws", json.dumps(head).encode()),
        ("old", json.dumps(del_profile).encode()),
    ):
        registry.import_history(f"{name}.jsonl", first + b"\n" + rest)
    profiles = dict(zip(runs_table(registry.records())["source"], runs_table(registry.records())["profile"]))
    assert profiles == {"exact.jsonl": "exact", "aws.jsonl": "aws-like (SIMULATED)", "old.jsonl": ""}
    # A CSV has no room for a header: the label travels on every row.
    aws = next(r for r in registry.records() if r.file_name == "aws.jsonl")
    rows = pd.read_csv(io.BytesIO(aws.export_csv()))
    assert len(rows) == len(aws.history) and set(rows["server_profile"]) == {"aws-like (SIMULATED)"}
