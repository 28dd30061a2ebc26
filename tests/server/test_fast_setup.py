"""The short setup_class (fast_setup.py) leaves a DynamoDB handler as moto's own setup_class does, for every
request the fast path calls plain, and an access key's account is the one moto finds."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from engine.server.fast import handler as fastpath

pytestmark = pytest.mark.skipif(not fastpath.verified(), reason="the fast path is off with this moto release")

_AUTH = "AWS4-HMAC-SHA256 Credential=ddblab/20261201/eu-west-3/dynamodb/aws4_request, SignedHeaders=host, Signature=x"


def _environ(body: bytes, **extra: str) -> dict[str, Any]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": "application/x-amz-json-1.0",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.PutItem",
        "HTTP_AUTHORIZATION": _AUTH,
        "HTTP_USER_AGENT": "Boto3/1.40 md/Botocore#1.40 ua/2.1 os/linux",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
    }
    environ.update(extra)
    return environ


def _state(handler: Any) -> dict[str, Any]:
    state = dict(vars(handler))
    for name in ("headers", "form_data"):  # each handler's own request: compared by content
        state[name] = dict(state[name])
    environ = state.pop("normalized_request").environ
    state["environ"] = {k: v for k, v in environ.items() if k not in ("wsgi.input", "werkzeug.request")}
    return state


def _outcome(setup: Any) -> Any:
    """The handler's state after `setup`, or the error it raised."""
    from moto.dynamodb.responses import DynamoHandler

    handler = DynamoHandler()
    try:
        setup(handler)
    except Exception as error:
        return type(error), str(error)
    return _state(handler)


@pytest.mark.parametrize(
    ("body", "extra"),
    [
        (b'{"TableName": "t", "Item": {"pk": {"S": "a"}}}', {}),
        # a body moto's query-string parse splits: "&" and "=" in the values, an "Action" among them
        (b'{"TableName": "t", "Item": {"pk": {"S": "a&b=c=d&+%41"}}, "ConditionExpression": "v = :v"}', {}),
        (b'{"TableName": "t", "Item": {"pk": {"S": "a&Action=Nothing"}}}', {}),  # moto takes the action from it
        (b"{}", {"HTTP_USER_AGENT": "aws-sdk region/ap-south-1 x"}),  # the region from the User-Agent
        (b"{}", {"HTTP_HOST": "dynamodb.sa-east-1.amazonaws.com"}),  # from the URL
        (b"{}", {"HTTP_AUTHORIZATION": "Basic eA=="}),  # from neither: the default region
        (b"", {}),  # an empty body: moto reads the headers as its query string (its own way)
        (b"{}", {"HTTP_X_MOTO_ACCOUNT_ID": "111122223333"}),
    ],
)
def test_the_short_setup_leaves_the_handler_as_motos_own(body: bytes, extra: dict[str, str]) -> None:
    from moto.core.responses import BaseResponse

    from engine.server.fast import setup as fast_setup

    fastpath.tune_moto()
    short = fast_setup.setup_class_for_plain(BaseResponse.setup_class)
    request = fastpath.prepared(_environ(body, **extra))
    assert request.plain
    fast = _outcome(lambda handler: short(handler, request, request.raw_url))
    request_too = fastpath.prepared(_environ(body, **extra))
    own = _outcome(
        lambda handler: BaseResponse.setup_class(
            handler, request_too, request_too.raw_url, request_too.headers.as_dict()
        )
    )
    assert fast == own
    if body == b"{}":
        assert fast["params"] == json.loads(body)  # and the parameters were parsed


def test_an_access_keys_account_is_the_one_moto_finds_and_its_use_is_recorded() -> None:
    from moto.iam.models import get_account_id_from, iam_backends

    from engine.server.fast import setup as fast_setup

    account = "000000000042"
    key = iam_backends[account]["aws"].create_temp_access_key()  # as STS makes one
    for access_key in ("ddblab", key.access_key_id, "AKIAUNKNOWN000000000"):
        assert fast_setup.account_of(access_key) == get_account_id_from(access_key)
    assert fast_setup.account_of(key.access_key_id) == account
    assert key.last_used is None
    fast_setup.mark_visited(account, key.access_key_id, "dynamodb", "us-east-1")
    assert key.last_used is not None and key.last_used.service == "dynamodb"
    fast_setup.mark_visited("000000000043", "ddblab", "dynamodb", "us-east-1")  # no such account: nothing to record
