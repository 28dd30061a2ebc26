"""What several benchmarks share: their boto3 DynamoDB client (one attempt per call: a benchmark counts what the
server did), a capturing one that records botocore's requests instead of sending them (to replay them as raw
bytes), a table to measure on, and the CPU time of another process or thread.

CPU time: /proc/PID/stat counts 10 ms ticks, so a bench round of 3,000 requests at ~130 µs (~40 ticks) moved in
2.5 % steps; each thread's /proc/PID/task/TID/schedstat gives its time on a CPU in ns."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
from botocore.config import Config


def client(endpoint: str) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(max_pool_connections=32, retries={"max_attempts": 1, "mode": "standard"}),
    )


def capturing_client() -> tuple[Any, list[Any]]:
    """A client whose calls go nowhere: each botocore request is appended to the list and answered with `{}`."""
    from botocore.awsrequest import AWSResponse

    ddb = client("http://127.0.0.1:9")
    sent: list[Any] = []

    class _Empty:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b"{}"

    def capture(request: Any, **_: Any) -> AWSResponse:
        sent.append(request)
        return AWSResponse(request.url, 200, {}, _Empty())

    ddb.meta.events.register("before-send", capture)
    return ddb, sent


def create_table(ddb: Any) -> str:
    name = "bench-" + uuid.uuid4().hex[:8]
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    )
    for _ in range(200):  # dynalite keeps a new table CREATING for --createTableMs
        if ddb.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE":
            break
        time.sleep(0.02)
    return name


def thread_cpu_s(pid: int, tid: int) -> float:
    """One thread's CPU seconds so far (OSError, ValueError or IndexError when Linux does not say)."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def process_cpu_s(pid: int) -> float:
    """A process's CPU seconds so far: its live threads' schedstat, else /proc/PID/stat's ticks (user + system).
    A thread that ended takes its time with it, so a process measured this way should keep its threads."""
    try:
        total = 0.0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                total += thread_cpu_s(pid, int(tid))
            except FileNotFoundError:  # a thread that ended meanwhile
                continue
        return total
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
