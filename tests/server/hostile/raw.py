"""A request sent as raw HTTP, and what every hostile request's test checks: DynamoDB's 400 with a one-line message,
and a server still serving, its item unchanged, with no traceback written."""

from __future__ import annotations

import http.client
import json
from typing import Any

_AUTH = "AWS4-HMAC-SHA256 Credential=ddblab/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"
KEY = {"PK": {"S": "H"}, "SK": {"S": "1"}}


def _send(port: int, body: bytes | dict[str, Any], op: str, **headers: str) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/",
            data,
            {
                "X-Amz-Target": f"DynamoDB_20120810.{op}",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": _AUTH,
                **headers,
            },
        )
        response = conn.getresponse()
        answer = response.read()
    finally:
        conn.close()
    return response.status, (json.loads(answer) if answer else {})


def _refused(answer: tuple[int, dict[str, Any]], *codes: str) -> str:
    """Assert DynamoDB's 400 shape with one of `codes`; return its message."""
    status, body = answer
    assert status == 400, answer
    assert str(body.get("__type", "")).rpartition("#")[2] in codes, answer
    message = str(body.get("message", ""))
    assert message and "\n" not in message, answer
    return message


def _still_serving(table: Any, server: Any) -> None:
    """A normal GetItem is answered, the seeded item is as it was, and the server wrote no traceback."""
    status, body = _send(server.port, {"TableName": table.name, "Key": KEY}, "GetItem")
    assert status == 200, body
    assert body["Item"]["n"] == {"N": "1"} and body["Item"]["s"] == {"S": "text"}, body
    assert not [line for line in server._stderr_tail if "Traceback" in line]
