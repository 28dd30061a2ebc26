"""The History: one Call per boto3 call, thread-safe, columnar, exported and imported without loss."""

from __future__ import annotations

import io
import json
import threading

import pytest

from engine.errors import HistoryFileError
from engine.record.history import Call, History, Outcome, read_jsonl


def _call(i: int, **kw) -> Call:
    base = dict(
        client=i % 7,
        action="withdraw",
        op="PutItem",
        key=f"ACCOUNT#{i % 3}",
        invoke_ns=1000 + i,
        complete_ns=2000 + i,
        outcome=Outcome.OK,
    )
    return Call(**{**base, **kw})


def test_many_threads_append_without_losing_a_call() -> None:
    history = History()

    def work(t: int) -> None:
        for i in range(2000):
            history.append(_call(i, client=t))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(history) == 16000
    assert history.counts()["ok"] == 16000
    frame = history.snapshot()
    assert frame.groupby("client").size().to_dict() == {t: 2000 for t in range(8)}


def test_snapshot_columns_and_relative_times() -> None:
    history = History(t0_ns=1000)
    history.append(
        _call(
            0,
            outcome=Outcome.FAIL,
            error="ConditionalCheckFailedException",
            retries=2,
            detail={"read_version": 3},
            request=">>> PutItem t",
        )
    )
    frame = history.snapshot(detail=True, requests=True)
    row = frame.iloc[0]
    assert row["outcome"] == "fail" and row["error"] == "ConditionalCheckFailedException"
    assert row["retries"] == 2 and row["invoke_ns"] == 0 and row["latency_ms"] == pytest.approx(0.001)
    assert row["detail"] == {"read_version": 3} and row["request"] == ">>> PutItem t"
    assert history.counts()["errors"] == {"ConditionalCheckFailedException": 1}


def test_incremental_snapshot_reads_only_new_rows() -> None:
    history = History()
    history.extend(_call(i) for i in range(10))
    assert list(history.snapshot(7)["seq"]) == [7, 8, 9]


def test_jsonl_round_trip_keeps_every_field(tmp_path) -> None:
    history = History(t0_ns=500)
    history.append(_call(1, outcome=Outcome.INFO, error="ReadTimeoutError", detail={"lost_response": True}))
    history.append(_call(2, detail={"reasons": ["None", "ConditionalCheckFailed", "None"]}))
    path = tmp_path / "run.jsonl"
    history.export(path, meta={"pattern": "transactions"})
    loaded, meta = read_jsonl(path)
    assert meta == {"pattern": "transactions"}
    assert [c.detail for c in loaded] == [
        {"lost_response": True},
        {"reasons": ["None", "ConditionalCheckFailed", "None"]},
    ]
    assert loaded.call(0).outcome is Outcome.INFO and loaded.call(0).invoke_ns == 1001 - 500


def test_csv_export_has_one_row_per_call(tmp_path) -> None:
    history = History()
    history.extend(_call(i) for i in range(5))
    path = tmp_path / "run.csv"
    assert history.export(path) == 5
    assert len(path.read_text().strip().splitlines()) == 6
    assert "server_profile" not in path.read_text()  # nothing said of a profile the caller did not name


def test_a_csv_of_an_aws_like_run_says_simulated_on_every_row(tmp_path) -> None:
    history = History()
    history.extend(_call(i) for i in range(3))
    path = tmp_path / "run.csv"
    history.export(path, meta={"summary": {"profile": {"name": "aws-like", "simulated": True}}})
    header, *rows = path.read_text().strip().splitlines()
    assert header.endswith(",server_profile") and len(rows) == 3
    assert all(row.endswith(",aws-like (SIMULATED)") for row in rows)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "not JSON"),
        ("hello\n", "not JSON"),
        ('{"format": "other"}\n', "no ddblab history header"),
        ('{"format": "ddblab-history", "version": 1}\n{"client": 1', "line 2"),
        ('{"format": "ddblab-history", "version": 1}\n{"client": 1}\n', "lacks the fields"),
    ],
)
def test_a_broken_file_gets_a_clear_message(text: str, problem: str) -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(io.StringIO(text))
    assert problem in str(e.value) and e.value.fix


def test_export_to_unknown_type_is_refused_and_writes_nothing(tmp_path) -> None:
    from engine.errors import BadInput

    history = History()
    with pytest.raises(BadInput):
        history.export(tmp_path / "run.txt")
    assert list(tmp_path.iterdir()) == []


def test_repeated_request_texts_are_stored_once() -> None:
    history = History()
    text = ">>> UpdateItem t\n    update:     ADD views 1"
    history.extend(_call(i, request=text) for i in range(1000))
    assert len(history._requests.values) == 2  # None and the one text
    assert json.loads(json.dumps(history.snapshot(requests=True)["request"].iloc[-1])) == text
