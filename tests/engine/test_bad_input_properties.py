"""Property tests: no argument set crashes the CLI, no byte string crashes the history importer."""

from __future__ import annotations

import io

import boto3
from botocore.stub import Stubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.backends import backend as backend_module
from engine.cli import build_parser, config_from_args, main
from engine.errors import HistoryFileError, LabError
from engine.record.history import read_jsonl

FLAGS = [
    "--variant",
    "--threads",
    "--ops",
    "--duration",
    "--set",
    "--retry-mode",
    "--max-attempts",
    "--lost-responses",
    "--latency-ms",
    "--table",
    "--max-threads",
    "--seed",
    "--gsi-lag-ms",
    "--max-calls",
    "--endpoint-url",
    "--region",
]
VALUES = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=True).map(str),
    st.text(max_size=12),
    st.sampled_from(
        [
            "0",
            "-1",
            "1e9",
            "nan",
            "inf",
            "version-check",
            "a=b",
            "accounts=0",
            "accounts=inf",
            "max_attempts=nan",
            "http://",
            "http://127.0.0.1:9",
        ]
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.sampled_from(["23", "optimistic-locking", "atomic-counters", "29", "nope", ""]),
    pairs=st.lists(st.tuples(st.sampled_from(FLAGS), VALUES), max_size=5),
)
def test_any_run_arguments_parse_or_fail_with_a_clear_message(pattern: str, pairs: list[tuple[str, str]]) -> None:
    argv = ["run", pattern] + [part for pair in pairs for part in pair]
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        assert e.code == 2
        return
    try:
        config_from_args(args)
    except LabError as e:
        assert e.problem and e.exit_code in (1, 2)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash_the_importer(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    try:
        read_jsonl(io.StringIO(text))
    except HistoryFileError as e:
        assert e.fix


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=6))
def test_random_lines_after_a_valid_header_never_crash_the_importer(lines: list[str]) -> None:
    text = '{"format": "ddblab-history", "version": 1}\n' + "\n".join(lines)
    try:
        history, _ = read_jsonl(io.StringIO(text))
    except HistoryFileError as e:
        assert "line" in e.problem
    else:
        assert len(history) <= len(lines)


def test_an_unconfirmed_aws_run_makes_zero_calls(monkeypatch, capsys) -> None:
    """botocore's Stubber holds no responses: any call at all would raise."""
    stubbed = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x").client(
        "dynamodb"
    )
    stubber = Stubber(stubbed)
    stubber.activate()
    made = []
    stubbed.meta.events.register("before-call", lambda **kw: made.append(kw))
    monkeypatch.setattr(backend_module.Backend, "client", lambda self, **kw: stubbed)
    assert main(["run", "optimistic-locking", "--aws", "--threads", "2", "--ops", "1"]) == 2
    assert "--confirm-aws" in capsys.readouterr().err
    assert made == []
    stubber.assert_no_pending_responses()
