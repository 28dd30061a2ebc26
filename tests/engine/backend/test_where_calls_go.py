"""Where calls go, and the guard in front of real AWS."""

from __future__ import annotations

import boto3
import pytest

from engine.backends.backend import Backend, BackendKind, BackendSpec, RetryPolicy, mask_account
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.errors import AwsNotConfirmed, BackendUnavailable, BadInput, ForeignTable


def test_no_endpoint_means_the_embedded_server() -> None:
    assert BackendSpec.parse().kind is BackendKind.EMBEDDED


def test_an_endpoint_url_is_used_as_given() -> None:
    spec = BackendSpec.parse("http://127.0.0.1:8000/")
    assert (spec.kind, spec.endpoint_url) == (BackendKind.ENDPOINT, "http://127.0.0.1:8000")


@pytest.mark.parametrize("args", [dict(aws=True), dict(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com")])
def test_aws_is_refused_without_confirmation_and_makes_no_call(monkeypatch, args) -> None:
    def no_aws(*a, **k):
        raise AssertionError("a boto3 session was created: an AWS call could have been made")

    monkeypatch.setattr(boto3.session, "Session", no_aws)
    with pytest.raises(AwsNotConfirmed) as e:
        spec = BackendSpec.parse(**args)
        Backend(spec).open()
    assert "--confirm-aws" in e.value.fix


def test_aws_with_confirmation_is_an_aws_backend() -> None:
    spec = BackendSpec.parse(aws=True, confirm_aws=True, region="eu-west-1")
    assert (spec.kind, spec.region) == (BackendKind.AWS, "eu-west-1")


@pytest.mark.parametrize("url", ["localhost:8000", "ftp://x", "http://", "http://host:99999"])
def test_malformed_endpoint_urls_are_refused(url: str) -> None:
    with pytest.raises(BadInput):
        BackendSpec.parse(url)


def test_an_unreachable_endpoint_fails_fast_with_a_fix() -> None:
    with pytest.raises(BackendUnavailable) as e:
        Backend(BackendSpec.parse("http://127.0.0.1:9")).open()
    assert "cannot reach DynamoDB at http://127.0.0.1:9" in str(e.value)


@pytest.mark.parametrize(
    ("variable", "value", "says", "fix"),
    [
        ("HTTP_PROXY", "http://127.0.0.1:9", "through the proxy HTTP_PROXY/HTTPS_PROXY names", "NO_PROXY"),
        ("AWS_DEFAULTS_MODE", "bogus", "botocore could not set up a client", "AWS_* setting"),
        ("AWS_STS_REGIONAL_ENDPOINTS", "bogus", "botocore could not set up a client", "AWS_* setting"),
    ],
)
def test_a_bad_setting_in_the_environment_is_named_not_taken_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str, fix: str
) -> None:
    # The fix given was "start the server there", for the lab's own embedded server too.
    monkeypatch.setenv(variable, value)
    with pytest.raises(BackendUnavailable) as e:
        Backend(BackendSpec.parse("http://127.0.0.1:9")).open()
    assert says in e.value.problem and fix in e.value.fix and "start the server" not in e.value.fix


def test_one_client_has_a_pool_for_every_thread_and_the_chosen_retries(backend: Backend) -> None:
    client = backend.client(threads=100, retry=RetryPolicy("legacy", 7))
    config = client.meta.config
    assert config.max_pool_connections >= 100
    assert config.retries == {"mode": "legacy", "total_max_attempts": 7}


@pytest.mark.parametrize("mode, attempts", [("fast", 3), ("standard", 0), ("standard", 50)])
def test_a_bad_retry_policy_is_refused(mode: str, attempts: int) -> None:
    with pytest.raises(BadInput):
        RetryPolicy(mode, attempts)


def test_the_account_is_masked() -> None:
    assert mask_account("123456789012") == "********9012"


def test_a_table_the_lab_did_not_create_is_not_written_unasked(client) -> None:
    client.create_table(
        TableName="someone-elses",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
    )
    try:
        with pytest.raises(ForeignTable):
            open_table(client, "x", TableSpec(), name="someone-elses")
        adopted = open_table(client, "x", TableSpec(), name="someone-elses", allow_foreign=True)
        assert drop_table(adopted) is False  # never deleted: we did not create it
        assert "someone-elses" in client.list_tables()["TableNames"]
    finally:
        client.delete_table(TableName="someone-elses")


def test_a_named_table_the_lab_creates_is_tagged_and_dropped(client) -> None:
    table = open_table(client, "x", TableSpec(), name="my-demo-table")
    assert table.created
    again = open_table(client, "x", TableSpec(), name="my-demo-table")  # ours: reusable without a flag
    assert not again.created
    assert drop_table(table) is True
    assert "my-demo-table" not in client.list_tables()["TableNames"]


def test_a_bad_table_name_is_refused(client) -> None:
    with pytest.raises(BadInput):
        open_table(client, "x", TableSpec(), name="no spaces allowed")


def test_a_named_table_with_items_in_it_is_refused(client) -> None:
    table = open_table(client, "x", TableSpec(), name="ddblab-kept-table")
    try:
        table.put({"PK": "OLD", "SK": "ITEM"})
        with pytest.raises(BadInput) as e:
            open_table(client, "x", TableSpec(), name="ddblab-kept-table")
        assert "already holds items" in str(e.value)
    finally:
        drop_table(table)


def test_a_table_names_its_profile_only_where_the_server_simulates_one(embedded: Backend) -> None:
    from engine.server.profile import AWS_LIKE, EXACT

    assert embedded.with_profile(TableSpec(), AWS_LIKE).profile_tag == AWS_LIKE.tag_value()
    aws = Backend(BackendSpec(BackendKind.AWS, None, "us-east-1", True))  # asks nothing of AWS for this
    assert aws.with_profile(TableSpec(), EXACT) == TableSpec()
    with pytest.raises(BadInput, match="simulated by the lab's embedded server"):
        aws.with_profile(TableSpec(), AWS_LIKE)
