"""What the embedded server adds to moto: request tokens, TTL expiry, injected faults, a clean lifecycle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.server.host.process import EmbeddedServer, is_embedded


@pytest.fixture
def table(embedded: Backend):
    client = embedded.client(retry=RetryPolicy("standard", 1))
    table = open_table(client, "server-test", TableSpec(ttl_attribute="expiresAt"))
    yield table
    drop_table(table)


def _order(table: Any, qty: int) -> dict[str, Any]:
    return dict(
        TransactItems=[
            {"Put": {"TableName": table.name, "Item": {"PK": "USER#alice", "SK": "ORDER#o1", "qty": qty}}},
            {
                "Update": {
                    "TableName": table.name,
                    "Key": {"PK": "USER#alice", "SK": "PROFILE"},
                    "UpdateExpression": "ADD orderCount :one",
                    "ExpressionAttributeValues": {":one": 1},
                }
            },
        ],
        ClientRequestToken=f"o1-{table.name[-30:]}",
    )  # tokens are account-wide, as on AWS; at most 36 characters, as the API's model says


def test_same_token_same_parameters_applies_once(table) -> None:
    table.client.transact_write_items(**_order(table, 2))
    table.client.transact_write_items(**_order(table, 2))  # a retry: succeeds, applies nothing
    assert table.get("USER#alice", "PROFILE")["orderCount"] == 1


def test_same_token_other_parameters_is_refused(table) -> None:
    table.client.transact_write_items(**_order(table, 2))
    with pytest.raises(ClientError) as e:
        table.client.transact_write_items(**_order(table, 5))
    assert e.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert table.get("USER#alice", "ORDER#o1")["qty"] == 2


def test_ttl_sweeper_deletes_expired_items_only(table) -> None:
    now = int(time.time())
    table.put({"PK": "IDEMPOTENCY#old", "SK": "RECORD", "expiresAt": now - 5})
    table.put({"PK": "IDEMPOTENCY#new", "SK": "RECORD", "expiresAt": now + 3600})
    table.put({"PK": "NO-TTL", "SK": "RECORD"})
    deadline = time.monotonic() + 5
    while table.get("IDEMPOTENCY#old", "RECORD") is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert table.get("IDEMPOTENCY#old", "RECORD") is None
    assert table.get("IDEMPOTENCY#new", "RECORD") is not None
    assert table.get("NO-TTL", "RECORD") is not None


def test_injected_throttling_is_retried_by_botocore_then_fails(embedded: Backend, table) -> None:
    client = embedded.client(retry=RetryPolicy("standard", 2))
    assert embedded.server is not None
    embedded.server.configure(throttle_share=1.0)
    try:
        with pytest.raises(ClientError) as e:
            client.get_item(TableName=table.name, Key={"PK": "A", "SK": "A"})
    finally:
        embedded.server.configure(throttle_share=0.0)
    assert e.value.response["Error"]["Code"] == "ThrottlingException"
    assert e.value.response["ResponseMetadata"]["RetryAttempts"] == 1


def test_the_server_answers_health_and_identifies_itself(embedded: Backend) -> None:
    assert embedded.endpoint_url is not None and is_embedded(embedded.endpoint_url)
    assert not is_embedded("http://127.0.0.1:9")


def test_a_client_signed_for_any_region_is_served(embedded: Backend) -> None:
    """As on DynamoDB Local: code written for it signs for "local" or "localhost", which moto did not know (a 500 on
    every request)."""
    import boto3

    client = boto3.client(
        "dynamodb",
        endpoint_url=embedded.endpoint_url,
        region_name="local",
        aws_access_key_id="lab",
        aws_secret_access_key="lab",
    )
    name = "region-local"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        client.put_item(TableName=name, Item={"pk": {"S": "a"}})
        assert client.get_item(TableName=name, Key={"pk": {"S": "a"}}, ConsistentRead=True)["Item"] == {
            "pk": {"S": "a"}
        }
    finally:
        client.delete_table(TableName=name)


def test_start_and_stop_leave_no_process() -> None:
    server = EmbeddedServer().start()
    pid, proc = server.pid, server._proc
    assert server.alive() and proc is not None
    server.stop()
    assert not _running(pid)
    time.sleep(0.2)  # the stderr reader takes the last lines
    # Stopped, not crashed: a thread blocked reading stdin once made every shutdown abort (SIGABRT, a core dump).
    assert proc.returncode in (0, -signal.SIGTERM)
    assert not [line for line in server._stderr_tail if "Fatal Python error" in line]


def test_the_server_dies_with_its_parent(tmp_path) -> None:
    script = textwrap.dedent("""
        import sys, time
        from engine.server.host.process import EmbeddedServer
        s = EmbeddedServer().start()
        print(s.pid, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(child), "orphaned embedded server"


def test_a_port_in_use_is_a_clear_error() -> None:
    from engine.errors import BadInput

    with EmbeddedServer() as first:
        with pytest.raises(BadInput) as e:
            EmbeddedServer(port=first.port or 0).start()
    assert "already in use" in str(e.value)


def _running(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_server_outlives_the_thread_that_started_it() -> None:
    """A Streamlit script run starts the server from a thread that then ends; the server must stay."""
    import threading

    box: list[EmbeddedServer] = []
    starter = threading.Thread(target=lambda: box.append(EmbeddedServer().start()))
    starter.start()
    starter.join()
    try:
        time.sleep(1.0)
        assert box[0].alive() and is_embedded(box[0].endpoint_url)
    finally:
        box[0].stop()


def test_many_server_errors_do_not_hang_the_server(table) -> None:
    """moto logs a traceback per HTTP 500; the server's stderr is drained so it never blocks on it."""
    for _ in range(60):
        try:
            table.client.put_item(
                TableName=table.name,
                Item={"PK": "A", "SK": "A"},
                ConditionExpression="attribute_not_exists(PK) AND AND",
            )
        except ClientError:
            pass
    table.put({"PK": "still", "SK": "alive"})
    assert table.get("still", "alive") is not None
