"""The HTTP head: control bytes in the request line or a header, an authorization without a region."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from tests.server.hostile.raw import KEY, _refused, _send, _still_serving

# -- the HTTP head ------------------------------------------------------------------------------------------


def _exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes on a fresh connection; read until the server closes it (a refusal closes it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _head(port: int, request_line: str, *headers: str, end: bool = True) -> bytes:
    lines = [request_line, f"Host: 127.0.0.1:{port}", "Content-Length: 0", *headers]
    return ("\r\n".join(lines) + ("\r\n\r\n" if end else "\r\n")).encode("latin-1")


@pytest.mark.parametrize(
    "raw",
    [
        "POST /\x00 HTTP/1.1|",
        "PO\x00ST / HTTP/1.1|",
        "POST / HTTP/1.1\x00|",
        "POST / HTTP/1.1|X-Amz-Target: DynamoDB_20120810.GetItem\x00",
        "POST / HTTP/1.1|X-\x00Name: a",
        "POST / HTTP/1.1|Authorization: AWS4\x00",
        "POST / HTTP/1.1|X-Bell: \x07",
        "GET /_lab/config\x00 HTTP/1.1|",
    ],
)
@pytest.mark.parametrize("complete", [True, False])
def test_a_control_byte_in_the_request_line_or_a_header_gets_a_400(
    raw: str, complete: bool, server: Any, table: Any
) -> None:
    # complete=False: the head never ends, as from a client that waits for an answer to its first line.
    line, _, header = raw.partition("|")
    answer = _exchange(server.port, _head(server.port, line, *([header] if header else []), end=complete))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer
    _refused((400, json.loads(body)), "SerializationException")
    _still_serving(table, server)


@pytest.mark.parametrize(
    "authorization",
    ["AWS4-HMAC-SHA256 Credential=x", "AWS4-HMAC-SHA256 Credential=KEY/20260101, Signature=0", "AWS4"],
)
def test_an_aws4_authorization_without_a_region_is_refused(authorization: str, server: Any, table: Any) -> None:
    answer = _send(server.port, {"TableName": table.name, "Key": KEY}, "GetItem", Authorization=authorization)
    _refused(answer, "IncompleteSignatureException")
    _still_serving(table, server)
