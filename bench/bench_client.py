"""The benchmarks' boto3 DynamoDB client: one attempt per call (a benchmark counts what the server did), and a
capturing one that records botocore's requests instead of sending them (to replay them as raw bytes)."""

from __future__ import annotations

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
