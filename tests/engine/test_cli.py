"""python -m engine, as a user types it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading

import boto3
import pytest

from engine.backends.backend import Backend
from engine.cli import main
from tests.engine.backend.test_credentials import (  # noqa: F401 - no_network and no_dynamodb are fixtures
    DENIED,
    INVALID_TOKEN,
    STS_REFUSALS,
    no_dynamodb,
    no_network,
    refusing_endpoint,
    stubbed,
    without_aws_credentials,
)

SCHEMA: dict[str, type | tuple[type, ...]] = {
    "pattern": str,
    "variant": str,
    "threads": int,
    "ops_per_client": int,
    "backend": str,
    "endpoint_url": (str, type(None)),
    "table": str,
    "duration_s": float,
    "calls": int,
    "calls_per_s": float,
    "outcomes": dict,
    "errors": dict,
    "retries": int,
    "invariants": list,
    "client_cpu_cores": list,
}


def engine(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=timeout)


def test_list_names_every_pattern_and_its_variants(capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "23  optimistic-locking" in out and "--variant version-check" in out and "RACY" in out
    assert "24  atomic-counters" in out and "--variant read-then-put" in out


def test_run_json_prints_one_object_with_the_stable_schema() -> None:
    result = engine(
        "run", "optimistic-locking", "--variant", "version-check", "--threads", "16", "--ops", "5", "--json"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # nothing else on stdout
    for key, kind in SCHEMA.items():
        assert isinstance(data[key], kind), key
    assert set(data["outcomes"]) == {"ok", "fail", "info"}
    assert data["backend"] == "embedded" and data["threads"] == 16 and data["ops_per_client"] == 5
    assert data["calls"] == sum(data["outcomes"].values())
    [cores] = data["client_cpu_cores"]  # one client process, its threads' CPU over the run, in cores
    assert 0 < cores <= (os.cpu_count() or 1) + 0.2
    for inv in data["invariants"]:
        assert set(inv) >= {"name", "holds", "expected", "observed", "explanation"} and inv["holds"]


def test_run_prints_a_readable_summary_and_exports_the_history(backend, tmp_path, capsys) -> None:
    path = tmp_path / "run.jsonl"
    code = main(
        [
            "run",
            "24",
            "--variant",
            "read-then-put",
            "--threads",
            "8",
            "--ops",
            "10",
            "--endpoint-url",
            backend.endpoint_url,
            "--history",
            str(path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "calls " in out and "outcomes   ok" in out and "conflicts" in out and "calls/s" in out
    assert "client CPU " in out and "of a core" in out
    assert "FAIL  final count = acknowledged increments" in out
    assert len(path.read_text().splitlines()) > 100


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "optimistic-locking", "--threads", "0"], "threads must be at least 1"),
        (["run", "optimistic-locking", "--threads", "-3"], "threads must be at least 1"),
        (["run", "optimistic-locking", "--ops", "0"], "ops per client"),
        (["run", "optimistic-locking", "--threads", "many"], "not a whole number"),
        (["run", "no-such-pattern"], "unknown pattern"),
        (["run", "optimistic-locking", "--variant", "yolo"], "has no variant"),
        (["run", "optimistic-locking", "--set", "accounts"], "not NAME=VALUE"),
        (["run", "optimistic-locking", "--endpoint-url", "localhost:8000"], "is not a URL"),
        (["run", "optimistic-locking", "--aws"], "real AWS"),
        (["run", "optimistic-locking", "--history", "out.txt"], "must end in .jsonl or .csv"),
        (["walkthrough", "99"], "unknown pattern"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = engine(*args, timeout=30)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_an_unreachable_endpoint_is_exit_1_with_a_fix() -> None:
    result = engine("run", "optimistic-locking", "--endpoint-url", "http://127.0.0.1:9", timeout=30)
    assert result.returncode == 1
    assert "cannot reach DynamoDB at http://127.0.0.1:9" in result.stderr and "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_runs_the_embedded_server_for_any_boto3_script_until_ctrl_c() -> None:
    port = _free_port()
    # SIGINT as a terminal leaves it, even where the tests run with it ignored (a background job of a
    # non-interactive shell is started so, and a Python started so never turns Ctrl-C into KeyboardInterrupt).
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line
        ddb = boto3.resource(
            "dynamodb",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )
        table = ddb.create_table(
            TableName="seed-snippets",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        )
        table.put_item(Item={"PK": "POST#hello-world", "views": 0})
        table.update_item(
            Key={"PK": "POST#hello-world"},
            UpdateExpression="ADD #v :one",
            ExpressionAttributeNames={"#v": "views"},
            ExpressionAttributeValues={":one": 1},
        )
        assert table.get_item(Key={"PK": "POST#hello-world"})["Item"]["views"] == 1
        busy = engine("serve", "--port", str(port), timeout=30)
        assert busy.returncode == 2 and "already in use" in busy.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_sweep_runs_both_variants_at_each_thread_count(backend, capsys) -> None:
    code = main(["sweep", "24", "--threads", "1,4", "--ops", "3", "--endpoint-url", backend.endpoint_url, "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0
    assert sorted((r["variant"], r["threads"]) for r in rows) == [
        ("add", 1),
        ("add", 4),
        ("read-then-put", 1),
        ("read-then-put", 4),
    ]
    assert all(r["state"] == "done" and r["calls"] > 0 for r in rows)


def test_an_unwritable_history_path_is_refused_before_the_run(capsys) -> None:
    assert main(["run", "24", "--history", "/nonexistent/folder/run.jsonl"]) == 2
    assert "cannot write in /nonexistent/folder" in capsys.readouterr().err


def test_injected_throttling_shows_as_botocore_retries(capsys) -> None:
    code = main(
        [
            "run",
            "24",
            "--threads",
            "4",
            "--ops",
            "5",
            "--throttle-share",
            "0.3",
            "--retry-mode",
            "legacy",
            "--max-attempts",
            "10",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["retries"] > 0  # 60 requests throttled at 0.3: none retried, 0.7**60 < 1e-9
    assert data["retry_policy"] == {"mode": "legacy", "max_attempts": 10}


def test_throttling_needs_the_embedded_server(capsys) -> None:
    assert main(["run", "24", "--throttle-share", "0.3", "--endpoint-url", "http://127.0.0.1:9"]) == 2
    assert "needs the embedded server" in capsys.readouterr().err


# -- wrong credentials: one line, exit 1, before any write -----------------------------------------------------


def assert_one_error_line(stderr: str, *parts: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr
    for part in parts:
        assert part in lines[0]


def test_aws_without_any_credentials_is_one_line_and_exit_1(monkeypatch, tmp_path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        **without_aws_credentials(monkeypatch, tmp_path),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "run",
            "conditional-writes",
            "--aws",
            "--confirm-aws",
            "--threads",
            "2",
            "--ops",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert_one_error_line(result.stderr, "no AWS credentials were found", "aws configure", "AWS_PROFILE")
    assert result.stdout == ""


@pytest.mark.parametrize("code, status, message, problem, fix", STS_REFUSALS, ids=[r[0] for r in STS_REFUSALS])
def test_rejected_aws_credentials_are_one_line_and_exit_1(
    monkeypatch, capsys, no_network, no_dynamodb, code, status, message, problem, fix
) -> None:
    sts = stubbed("sts", "get_caller_identity", error=code, status=status, message=message)
    monkeypatch.setattr(Backend, "_sts_client", lambda self: sts)
    assert main(["run", "conditional-writes", "--aws", "--confirm-aws", "--threads", "2", "--ops", "1"]) == 1
    out, err = capsys.readouterr()
    assert_one_error_line(err, problem, code, fix)
    assert out == ""


def test_an_endpoint_that_rejects_the_credentials_is_one_line_and_nothing_is_written(tmp_path) -> None:
    history = tmp_path / "run.jsonl"
    with refusing_endpoint("UnrecognizedClientException", INVALID_TOKEN) as (url, targets):
        result = engine(
            "run",
            "conditional-writes",
            "--endpoint-url",
            url,
            "--threads",
            "8",
            "--ops",
            "20",
            "--history",
            str(history),
            timeout=60,
        )
    assert result.returncode == 1
    assert_one_error_line(
        result.stderr,
        f"DynamoDB at {url} rejected the credentials",
        "UnrecognizedClientException",
        "accepts any credentials",
    )
    assert result.stdout == "" and not history.exists()
    assert targets == ["DynamoDB_20120810.ListTables"]  # failed at the check: no table, no pattern call


def test_an_endpoint_that_denies_a_permission_is_one_line_naming_it(capsys) -> None:
    with refusing_endpoint("AccessDeniedException", DENIED) as (url, _):
        assert main(["run", "conditional-writes", "--endpoint-url", url, "--threads", "2", "--ops", "1"]) == 1
    err = capsys.readouterr().err
    assert_one_error_line(err, "denied dynamodb:ListTables", "allow dynamodb:ListTables")
    assert "123456789012" not in err and "arn:aws:iam" not in err


def test_a_stopped_sweep_prints_its_finished_rows_marked_incomplete() -> None:
    # Ctrl-C once the second run has begun: the first run's row must still be printed, and the exit non-zero.
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "sweep", "24", "--threads", "1,2", "--ops", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("[2/4]"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "INCOMPLETE sweep: stopped after" in err and "of 4 points (SIGINT" in err
    assert "add" in out and "1 " in out  # the finished first point's row is printed


def test_sigterm_stops_a_json_sweep_in_order(backend, capsys) -> None:
    # SIGTERM as Ctrl-C: the run under way is stopped and verified, its row printed, the JSON marked incomplete.
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        argv = ["sweep", "24", "--threads", "1,2", "--ops", "100000", "--endpoint-url", backend.endpoint_url]
        code = main([*argv, "--json"])
    finally:
        timer.cancel()
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert code == 128 + signal.SIGTERM
    assert "INCOMPLETE sweep: stopped after 0 of 4 points (SIGTERM" in err
    assert [r["state"] for r in rows] == ["stopped"] and rows[0]["calls"] > 0
    assert rows[0]["sweep_complete"] is False and rows[0]["sweep_points_planned"] == 4


def test_sweep_json_carries_the_profile_object_per_point_and_per_run(capsys) -> None:
    # As `run --json` does: name, simulated and the knobs, --profile-set values included.
    argv = ["sweep", "24", "--threads", "2", "--variants", "add", "--ops", "3", "--profile", "aws-like"]
    assert main([*argv, "--profile-set", "commit_ms=20", "--json"]) == 0
    [point] = json.loads(capsys.readouterr().out)
    for record in (point, *point["per_run"]):
        profile = record["profile"]
        assert profile["name"] == "aws-like" and profile["simulated"] is True
        assert profile["knobs"]["commit_ms"] == 20
        assert "profile_tag" not in record


def test_sweep_json_says_an_exact_sweep_is_not_simulated(backend, capsys) -> None:
    argv = ["sweep", "24", "--threads", "1", "--variants", "add", "--ops", "2", "--endpoint-url", backend.endpoint_url]
    assert main([*argv, "--json"]) == 0
    [point] = json.loads(capsys.readouterr().out)
    assert point["profile"] == point["per_run"][0]["profile"] == {"name": "exact", "simulated": False}
