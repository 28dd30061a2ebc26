"""DynamoDB's wire format, written once: the X-Amz-Target prefix, the JSON content type, and an error as
DynamoDB answers it (`Refused`: its code without the namespace, message, HTTP status and any other members, such
as a cancelled transaction's CancellationReasons). Every part of the server that says no says it through here."""

from __future__ import annotations

import json
from typing import Any

TARGET_PREFIX = "DynamoDB_20120810."  # X-Amz-Target: the prefix, then the operation
JSON_TYPE = "application/x-amz-json-1.0"  # the Content-Type of botocore's requests and of every answer
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"  # an error's __type: this, then its code


class Refused(Exception):
    """A request DynamoDB would refuse: its error code (no namespace), message and HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.extra = extra or {}  # more members of the error body, e.g. CancellationReasons


def error_body(code: str, message: str, extra: dict[str, Any] | None = None) -> bytes:
    """DynamoDB's JSON error body."""
    body: dict[str, Any] = {"__type": ERROR_PREFIX + code, "message": message}
    if extra:
        body.update(extra)
    return json.dumps(body).encode()


def refusal_body(refused: Refused) -> bytes:
    """The JSON error body of a refusal, with its extra members."""
    return error_body(refused.code, refused.message, refused.extra)
