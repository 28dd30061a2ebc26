"""A DynamoDB error answered on the client's side, for the few answers no local server can be made to give
(a transaction conflict on a snapshot, an expired session token): a botocore before-send hook returns it, and
botocore parses it exactly as it would the real one. `Answering` is a backend whose clients carry that hook."""

from __future__ import annotations

import json
from typing import Any

from botocore.awsrequest import AWSResponse

from tests.hooked_backend import WrappedBackend


def error_answer(request: Any, type_: str, message: str, **fields: Any) -> AWSResponse:
    """HTTP 400 with DynamoDB's JSON error body: `type_` as `__type` (e.g. ...#ExpiredTokenException)."""
    body = json.dumps({"__type": type_, "message": message, **fields}).encode()
    return AWSResponse(request.url, 400, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(body))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


class Answering(WrappedBackend):
    """The test's backend (wrapping a real one), whose clients send `event`'s requests to `answer` first: it
    returns an answer (`error_answer`), or None to let the request go on to the server."""

    event = "before-send.dynamodb"

    def client(self, **kwargs: Any) -> Any:
        client = self._backend.client(**kwargs)
        client.meta.events.register(self.event, self.answer)
        return client

    def answer(self, request: Any, **_: Any) -> AWSResponse | None:
        return None
