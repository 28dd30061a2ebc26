"""Wrong credentials, each told in one clear line with its fix. No test here sends a request to AWS: STS and
DynamoDB answers come from botocore's Stubber, the transport refuses to send, and a missing credential is found by
botocore before any request exists."""

from __future__ import annotations

import http.server
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import botocore.httpsession
import pytest
from botocore.stub import Stubber

from engine.backends.backend import Backend, BackendSpec
from engine.errors import BackendUnavailable, BadCredentials, PermissionDenied
from engine.run.runner import RunConfig, RunState, run_pattern
from tests.canned import Answering, error_answer

ACCOUNT = "123456789012"
DENIED = (
    f"User: arn:aws:iam::{ACCOUNT}:user/lab is not authorized to perform: dynamodb:ListTables on resource: "
    f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/* because no identity-based policy allows the "
    "dynamodb:ListTables action"
)
# (STS error code, HTTP status, AWS's message, what our message must name, what our fix must say)
STS_REFUSALS = [
    (
        "InvalidClientTokenId",
        403,
        "The security token included in the request is invalid.",
        "the access key id is not valid",
        "aws configure",
    ),
    (
        "SignatureDoesNotMatch",
        403,
        "The request signature we calculated does not match the signature you provided.",
        "the secret access key does not match the access key id",
        "AWS_SECRET_ACCESS_KEY",
    ),
    (
        "ExpiredToken",
        400,
        "The security token included in the request is expired",
        "the session token has expired",
        "refresh the session token",
    ),
    (
        "ExpiredTokenException",
        400,
        "The security token included in the request is expired",
        "the session token has expired",
        "refresh the session token",
    ),
]


def stubbed(
    service: str,
    method: str,
    *,
    error: str | None = None,
    status: int = 400,
    message: str = "",
    response: dict[str, Any] | None = None,
) -> Any:
    """A real botocore client whose one answer is given: no request leaves it."""
    client = boto3.session.Session().client(
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    if error:
        stub.add_client_error(method, service_error_code=error, service_message=message, http_status_code=status)
    else:
        stub.add_response(method, response or {})
    stub.activate()
    return client


def without_aws_credentials(monkeypatch: pytest.MonkeyPatch, folder: Path) -> dict[str, str]:
    """This process's environment as on a machine with no AWS set-up: no variables, empty files, no IMDS."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    empty = folder / "empty"
    empty.write_text("")
    settings = {
        "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        "AWS_CONFIG_FILE": str(empty),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return settings


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a request was about to be sent")

    monkeypatch.setattr(botocore.httpsession.URLLib3Session, "send", refuse)


@pytest.fixture
def no_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if a DynamoDB client is made: with credentials unknown, nothing may be written."""

    def refuse(self: Backend, **kwargs: object) -> None:
        raise AssertionError("a DynamoDB client was made before the credentials were known good")

    monkeypatch.setattr(Backend, "_make_client", refuse)


def aws_backend() -> Backend:
    return Backend(BackendSpec.parse(aws=True, confirm_aws=True, region="us-east-1"))


def assert_one_clear_line(error: Exception) -> None:
    text = str(error)
    assert "\n" not in text and " — " in text  # "problem — fix", one line
    assert ACCOUNT not in text and "arn:aws:iam" not in text and "arn:aws:dynamodb" not in text


@pytest.mark.parametrize("code, status, message, problem, fix", STS_REFUSALS, ids=[r[0] for r in STS_REFUSALS])
def test_rejected_aws_credentials_stop_at_sts_with_a_fix(
    monkeypatch, no_network, no_dynamodb, code, status, message, problem, fix
) -> None:
    sts = stubbed("sts", "get_caller_identity", error=code, status=status, message=message)
    monkeypatch.setattr(Backend, "_sts_client", lambda self: sts)
    with pytest.raises(BadCredentials) as e:
        aws_backend().open()
    assert isinstance(e.value, BackendUnavailable) and e.value.exit_code == 1
    assert problem in e.value.problem and code in e.value.problem
    assert fix in e.value.fix
    assert_one_clear_line(e.value)


def test_no_aws_credentials_at_all_is_one_message_before_any_request(
    monkeypatch, tmp_path, no_network, no_dynamodb
) -> None:
    without_aws_credentials(monkeypatch, tmp_path)
    with pytest.raises(BadCredentials) as e:
        aws_backend().open()
    assert "no AWS credentials were found" in e.value.problem
    assert "aws configure" in e.value.fix and "AWS_PROFILE" in e.value.fix
    assert_one_clear_line(e.value)


def test_a_profile_that_does_not_exist_is_named(monkeypatch, tmp_path, no_network, no_dynamodb) -> None:
    without_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(BadCredentials) as e:
        aws_backend().open()
    assert "'no-such-profile'" in e.value.problem and "AWS_PROFILE" in e.value.fix


def test_half_a_key_pair_is_named(monkeypatch, tmp_path, no_network, no_dynamodb) -> None:
    without_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    with pytest.raises(BadCredentials) as e:
        aws_backend().open()
    assert "AWS_SECRET_ACCESS_KEY" in e.value.problem


def test_valid_aws_credentials_without_dynamodb_permission_name_the_permission(monkeypatch, no_network) -> None:
    sts = stubbed(
        "sts",
        "get_caller_identity",
        response={"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/lab"},
    )
    ddb = stubbed("dynamodb", "list_tables", error="AccessDeniedException", message=DENIED)
    monkeypatch.setattr(Backend, "_sts_client", lambda self: sts)
    monkeypatch.setattr(Backend, "_make_client", lambda self, **kwargs: ddb)
    with pytest.raises(PermissionDenied) as e:
        aws_backend().open()
    assert "denied dynamodb:ListTables" in e.value.problem and "AccessDeniedException" in e.value.problem
    assert "grant this IAM identity dynamodb:ListTables" in e.value.fix
    assert_one_clear_line(e.value)


def test_good_aws_credentials_open_and_show_only_the_masked_account(monkeypatch, no_network) -> None:
    sts = stubbed(
        "sts",
        "get_caller_identity",
        response={"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/lab"},
    )
    ddb = stubbed("dynamodb", "list_tables", response={"TableNames": []})
    monkeypatch.setattr(Backend, "_sts_client", lambda self: sts)
    monkeypatch.setattr(Backend, "_make_client", lambda self, **kwargs: ddb)
    backend = aws_backend().open()
    info = backend.describe()  # from the check's own STS answer: the stub has no second one to give
    assert info["account"] == "********9012" and ACCOUNT not in json.dumps(info)


@contextmanager
def refusing_endpoint(error: str, message: str) -> Iterator[tuple[str, list[str]]]:
    """A stand-in DynamoDB on 127.0.0.1 that answers every request with HTTP 400 `error`, as DynamoDB does.

    Yields its URL and the X-Amz-Target of every request it got, so a test can tell how far a run went."""
    targets: list[str] = []
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{error}", "message": message}).encode()

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            targets.append(self.headers.get("X-Amz-Target", ""))
            self.send_response(400)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", targets
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


INVALID_TOKEN = "The security token included in the request is invalid."


def test_an_endpoint_that_rejects_the_credentials_fails_at_open_with_a_fix() -> None:
    with refusing_endpoint("UnrecognizedClientException", INVALID_TOKEN) as (url, targets):
        with pytest.raises(BadCredentials) as e:
            Backend(BackendSpec.parse(url)).open()
    assert f"DynamoDB at {url} rejected the credentials" in e.value.problem
    assert "UnrecognizedClientException" in e.value.problem
    assert "accepts any credentials" in e.value.fix and "embedded server" in e.value.fix
    assert targets == ["DynamoDB_20120810.ListTables"]  # one call, no retries
    assert_one_clear_line(e.value)


def test_a_run_on_an_unopened_backend_that_rejects_the_credentials_makes_no_table_and_no_calls() -> None:
    config = RunConfig(pattern="conditional-writes", threads=4, ops_per_client=5)
    with refusing_endpoint("UnrecognizedClientException", INVALID_TOKEN) as (url, targets):
        run = run_pattern(config, Backend(BackendSpec.parse(url)))
    assert run.state is RunState.FAILED and isinstance(run.error, BadCredentials)
    assert "rejected the credentials" in str(run.error)
    assert len(run.history) == 0 and run.table is None
    assert targets == ["DynamoDB_20120810.ListTables"]  # no DescribeTable, no CreateTable


class _TokenExpires(Answering):
    """The test's backend, whose clients' session token expires after `calls` sends: later sends are answered
    with the error DynamoDB gives an expired token (a botocore before-send hook; the earlier ones reach the
    server)."""

    def __init__(self, backend: Backend, calls: int) -> None:
        super().__init__(backend)
        self._left = calls
        self._lock = threading.Lock()

    def answer(self, request: Any, **_: Any) -> Any:
        with self._lock:
            self._left -= 1
            if self._left >= 0:
                return None
        return error_answer(
            request,
            "com.amazon.coral.service#ExpiredTokenException",
            "The security token included in the request is expired",
        )


def test_a_token_that_expires_during_a_run_ends_it_with_the_credentials_message_and_keeps_the_calls(
    backend: Backend,
) -> None:
    run = run_pattern(
        RunConfig(pattern="optimistic-locking", threads=4, ops_per_client=50),
        _TokenExpires(backend, calls=60),
    )
    assert run.state is RunState.FAILED and isinstance(run.error, BadCredentials)
    assert "rejected the credentials: the session token has expired (ExpiredTokenException)" in run.error.problem
    assert_one_clear_line(run.error)
    errors = run.history.counts()["errors"]
    assert errors.get("ExpiredTokenException", 0) >= 1 and len(run.history) >= 40  # what was called is kept
    assert all("ExpiredTokenException" in e["message"] for e in run.worker_errors)


def test_an_endpoint_that_denies_a_permission_names_it_without_arns() -> None:
    with refusing_endpoint("AccessDeniedException", DENIED) as (url, targets):
        with pytest.raises(PermissionDenied) as e:
            Backend(BackendSpec.parse(url)).open()
    assert "denied dynamodb:ListTables (AccessDeniedException)" in e.value.problem
    assert "allow dynamodb:ListTables" in e.value.fix
    assert_one_clear_line(e.value)


def test_a_bad_aws_profile_is_ignored_on_an_endpoint(monkeypatch, tmp_path) -> None:
    # Endpoint calls are signed with the lab's dummy key, so the profile never matters: the check goes on to
    # find what does (here: nothing listens on port 9).
    without_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(BackendUnavailable) as e:
        Backend(BackendSpec.parse("http://127.0.0.1:9")).client()
    assert not isinstance(e.value, BadCredentials) and "cannot reach" in e.value.problem


def test_a_missing_aws_profile_does_not_stop_a_local_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # A user's AWS_PROFILE is for AWS; the embedded server and its clients use dummy credentials.
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile-here")
    with Backend() as backend:
        run = run_pattern(RunConfig(pattern="atomic-counters", variant="add", threads=2, ops_per_client=2), backend)
    assert run.state is RunState.DONE and len(run.history) > 0
