"""The judge: verification reads go through throttling, and an invariant counts only what the history proves."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, BackendSpec, RetryPolicy
from engine.backends.patient_client import PatientClient
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.patterns import RunOptions
from engine.patterns.base import Invariant
from engine.patterns.gsi_consistency import GsiConsistency
from engine.record.history import Call, History, Outcome
from engine.run.runner import RunConfig, RunState, run_pattern
from engine.run.summary import render_text
from tests.conftest import ENDPOINT

WITHIN_LAG = "every write is visible within lag + margin"


@pytest.fixture(scope="module")
def throttled() -> Iterator[Backend]:
    if ENDPOINT:
        pytest.skip("needs the embedded server's injected throttling (set no DDBLAB_TEST_ENDPOINT)")
    with Backend(BackendSpec()) as backend:
        assert backend.server is not None
        backend.server.configure(throttle_share=0.3)
        yield backend


def test_a_patient_clients_reads_get_through_heavy_throttling(throttled: Backend) -> None:
    plain = throttled.client(retry=RetryPolicy("standard", 1))
    patient = PatientClient(throttled.client(retry=RetryPolicy("standard", 1)))  # the judge's, without its token
    table = open_table(patient, "judge", TableSpec())
    try:
        refused = 0
        for _ in range(40):
            try:
                plain.scan(TableName=table.name, ConsistentRead=True)
            except ClientError as e:
                assert e.response["Error"]["Code"] == "ThrottlingException"
                refused += 1
        assert refused >= 1  # refused about a third of the time: none of 40, 0.7**40 < 1e-6
        for _ in range(60):
            assert patient.scan(TableName=table.name, ConsistentRead=True)["Items"] == []
        assert patient.retried > 0  # none of 60 throttled, 0.7**60 < 1e-9 (with 20 it was 0.7**20, near 1e-3)
    finally:
        drop_table(table)


def test_injected_faults_are_for_the_clients_not_the_judge() -> None:
    """Every request throttled (share 1.0), and 300 ms added: a plain client never gets through, while the judge
    (set-up, verification, drop) is spared both, so such a run is set up; it used to fail there."""
    if ENDPOINT:
        pytest.skip("needs the embedded server's injected faults (set no DDBLAB_TEST_ENDPOINT)")
    with Backend(BackendSpec()) as backend:
        assert backend.server is not None
        backend.server.configure(throttle_share=1.0, latency_ms=300)
        plain = backend.client(retry=RetryPolicy("standard", 1))
        judge = backend.judge_client()
        with pytest.raises(ClientError, match="ThrottlingException"):
            plain.list_tables()
        started = time.monotonic()
        for _ in range(10):
            judge.list_tables()
        # Neither throttled nor slowed: slowed, the 10 calls would take 3 s at least; a busy machine is far faster.
        assert judge.retried == 0 and time.monotonic() - started < 3.0
        config = RunConfig(pattern="atomic-counters", threads=2, ops_per_client=2, retry=RetryPolicy("standard", 1))
        run = run_pattern(config, backend)
        # Set-up got through (it used to fail there, naming DescribeTable): the clients ran, and every one of their
        # calls was throttled, which the run reports as what stopped them.
        assert len(run.history) > 0 and run.table is not None
        assert run.history.counts()["errors"].get("ThrottlingException", 0) == len(run.history)
        assert "DescribeTable" not in str(run.error) and "CreateTable" not in str(run.error)


def test_a_run_under_heavy_throttling_is_still_set_up_judged_and_dropped(throttled: Backend) -> None:
    # One attempt per call, so the clients surely meet the throttling (botocore's own retries would hide most of it:
    # with three attempts a call is refused only 2.7 % of the time, and a short run may see none)
    # 4 clients x 4 ops x 4 calls: that none of the 64 is throttled at 0.3 has chance 0.7**64 < 1e-9.
    config = RunConfig(pattern="conditional-writes", threads=4, ops_per_client=4, retry=RetryPolicy("standard", 1))
    run = run_pattern(config, throttled)
    assert run.state is RunState.DONE, run.error
    # Judged: nothing broken, and at least one rule held (eight guarded ops may meet no refusal, and a rule about
    # refusals then has nothing to judge: CANNOT JUDGE, which is not a breach).
    assert run.invariants and all(inv.holds is not False for inv in run.invariants), [
        i.as_dict() for i in run.invariants
    ]
    assert any(inv.holds for inv in run.invariants)
    assert run.history.counts()["errors"].get("ThrottlingException", 0) > 0  # the clients met the faults
    assert run.table is not None
    with pytest.raises(ClientError):
        throttled.judge_client().describe_table(TableName=run.table.name)  # dropped despite throttling


def _call(client: int, action: str, op: str, outcome: Outcome, detail: dict, t: int, error: str | None = None) -> Call:
    return Call(
        client=client,
        action=action,
        op=op,
        key=f"USER#{client + 1}",
        invoke_ns=t,
        complete_ns=t + 1_000_000,
        outcome=outcome,
        error=error,
        detail=detail,
    )


def test_a_refused_read_back_is_no_evidence_that_a_write_is_invisible(backend: Backend) -> None:
    # Client 0's write was read back and seen; client 1's read-back was throttled to the end: nothing is proven
    # about client 1's write, so the card says "cannot judge", not FAIL.
    history = History(t0_ns=0)
    now = time.monotonic_ns()
    history.extend(
        [
            _call(0, "write", "PutItem", Outcome.OK, {"op": 0, "version": 1}, now),
            _call(0, "read-back", "GetItem", Outcome.OK, {"op": 0, "attempt": 1, "since_write_ms": 1.0}, now),
            _call(1, "write", "PutItem", Outcome.OK, {"op": 0, "version": 1}, now),
            _call(
                1,
                "read-back",
                "GetItem",
                Outcome.FAIL,
                {"op": 0, "attempt": 1, "since_write_ms": 1.0},
                now,
                "ThrottlingException",
            ),
        ]
    )
    pattern = GsiConsistency()
    options = RunOptions("base-table-read", 2, 1, pattern.resolve_options("base-table-read", {"gsi_lag_ms": 0}))
    table = open_table(backend.judge_client(), "gsi-consistency", TableSpec(gsi=True))
    try:
        verdicts = {inv.name: inv for inv in pattern.verify(table, history, options)}
    finally:
        drop_table(table)
    within = verdicts[WITHIN_LAG]
    assert within.holds is None and within.verdict == "CANNOT JUDGE"
    assert "1 not judged" in within.observed and "never seen" not in within.observed
    assert "cannot be judged" in within.explanation


def test_cannot_judge_is_printed_carried_in_json_and_never_a_pass() -> None:
    undecided = Invariant(name="x", holds=None, expected="a", observed="b", explanation="why")
    assert undecided.as_dict()["holds"] is None and undecided.as_dict()["verdict"] == "CANNOT JUDGE"
    data = {
        "pattern": "p",
        "variant": "v",
        "threads": 1,
        "processes": 1,
        "ops_per_client": 1,
        "duration_limit_s": None,
        "backend": "embedded",
        "endpoint_url": None,
        "table": "t",
        "error": None,
        "calls": 0,
        "duration_s": 0.0,
        "calls_per_s": 0.0,
        "outcomes": {"ok": 0, "fail": 0, "info": 0},
        "conflicts": 0,
        "retries": 0,
        "retry_policy": {"mode": "standard", "max_attempts": 3},
        "errors": {},
        "client_crashes": 0,
        "client_errors": [],
        "invariants": [undecided.as_dict()],
    }
    text = render_text(data)
    assert "  CANNOT JUDGE  x  expected a, observed b" in text and "PASS" not in text
