"""The short way (short_way.py) answers the hot calls without moto's dispatch, from a handler set up as moto's own
setup_class would set it; a request moto would read otherwise goes moto's whole way. (That the answers are the
same bytes as moto's Flask app gives is test_fastpath's equivalence corpus.)"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench.shared import capturing_client
from engine.server.fast import handler as fastpath
from engine.server.fast import short_way
from engine.server.host import http_in, serve

pytestmark = pytest.mark.skipif(not fastpath.verified(), reason="the fast path is off with this moto release")


@pytest.fixture(scope="module")
def server() -> Any:
    """An app called in this process on captured botocore requests, with one table."""
    ddb, sent = capturing_client()
    app = serve.build_app()
    table = "sw-" + uuid.uuid4().hex[:8]

    def send(operation: str, **params: Any) -> tuple[int, dict[str, Any]]:
        getattr(ddb, operation)(**params)
        request = sent.pop()
        headers = [(k, v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()]
        raw = http_in.Request("POST", "/", "HTTP/1.1", [*headers, ("Host", "127.0.0.1:9")], request.body)
        payload, _, _ = serve._call(app, raw, "127.0.0.1", ("127.0.0.1", 9), multithread=False)
        head, _, body = payload.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), json.loads(body)

    send(
        "create_table",
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    )
    yield send, table
    app.close()


def test_the_hot_calls_skip_moto_dispatch(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb.responses import DynamoHandler

    send, t = server

    def no_dispatch(*_: Any, **__: Any) -> Any:
        raise AssertionError("went moto's whole way")

    monkeypatch.setattr(DynamoHandler, "dispatch", no_dispatch)
    key = {"pk": {"S": "a"}}
    assert send("put_item", TableName=t, Item={**key, "n": {"N": "1"}}) == (200, {})
    status, answer = send(
        "update_item",
        TableName=t,
        Key=key,
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    assert (status, answer["Attributes"]) == (200, {"n": {"N": "2"}})
    assert send("get_item", TableName=t, Key=key, ConsistentRead=True)[1] == {"Item": {**key, "n": {"N": "2"}}}
    status, refused = send("put_item", TableName=t, Item=key, ConditionExpression="attribute_not_exists(pk)")
    assert status == 400 and refused["__type"].endswith("ConditionalCheckFailedException")
    status, refused = send("get_item", TableName="missing-" + t, Key=key)
    assert status == 400 and refused["__type"].endswith("ResourceNotFoundException")
    query = send("query", TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": key["pk"]})
    assert query[1]["Count"] == 1
    assert send("transact_write_items", TransactItems=[{"Put": {"TableName": t, "Item": {"pk": {"S": "b"}}}}])[0] == 200
    got = send("transact_get_items", TransactItems=[{"Get": {"TableName": t, "Key": {"pk": {"S": "b"}}}}])
    assert got[1]["Responses"] == [{"Item": {"pk": {"S": "b"}}}]
    assert send("batch_write_item", RequestItems={t: [{"DeleteRequest": {"Key": {"pk": {"S": "b"}}}}]})[0] == 200
    batch = send("batch_get_item", RequestItems={t: {"Keys": [key, {"pk": {"S": "b"}}]}})
    assert batch[1]["Responses"][t] == [{**key, "n": {"N": "2"}}]
    assert send("delete_item", TableName=t, Key=key, ReturnValues="ALL_OLD")[1]["Attributes"] == {
        **key,
        "n": {"N": "2"},
    }


def test_the_handler_is_set_up_as_moto_sets_it_up(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb.responses import DynamoHandler

    send, t = server
    seen: list[dict[str, Any]] = []
    call_action = DynamoHandler.call_action

    def spy(self: Any) -> Any:
        state = dict(vars(self))
        state.pop("operation", None)
        state.pop("normalized_request", None)  # the long way's werkzeug request; the short way has none
        # moto parses a JSON body as a query string too, into keys no DynamoDB action reads (short_way.routable).
        state.pop("querystring")
        state.pop("data")
        state.pop("body", None)  # the text of the body; call_action replaces it with the parsed parameters
        state["headers"], state["form_data"] = dict(state["headers"]), dict(state["form_data"])
        for name in ("Amz-Sdk-Invocation-Id", "X-Amz-Date", "Authorization"):  # each botocore request its own
            state["headers"].pop(name)
        seen.append(state)
        return call_action(self)

    monkeypatch.setattr(DynamoHandler, "call_action", spy)
    item = {"pk": {"S": "s"}, "b": {"B": b"\x00\x01"}, "l": {"L": [{"N": "1"}, {"NULL": True}]}}
    send("put_item", TableName=t, Item=item, ReturnConsumedCapacity="TOTAL")
    monkeypatch.setattr(short_way, "routable", lambda *_: False)
    send("put_item", TableName=t, Item=item, ReturnConsumedCapacity="TOTAL")
    short, whole = seen
    assert sorted(short) == sorted(whole)
    for name, value in whole.items():
        assert short[name] == value, name
    assert short["params"]["Item"]["b"] == {"B": b"\x00\x01"}  # decoded from base64 as moto's parser does


@pytest.mark.parametrize(
    ("body", "params"),
    [
        (b'{"TableName": "t", "Key": {"pk": {"S": "&Action=ListTables"}}}', None),  # moto reads Action from it
        (b'\xef\xbb\xbf{"TableName": "t"}', None),  # moto decodes UTF-8 only: it sees no JSON
        ('{"TableName": "t"}'.encode("utf-16-le"), None),
        (b"[1]", [1]),
    ],
)
def test_a_body_moto_reads_otherwise_goes_moto_s_whole_way(body: bytes, params: Any) -> None:
    environ = {
        "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.GetItem",
        "PATH_INFO": "/",
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/x-amz-json-1.0",
        "HTTP_HOST": "127.0.0.1:9",
    }
    parsed = json.loads(body) if params is None else params
    assert not short_way.routable("GetItem", environ, body, parsed)
    plain = b'{"TableName": "t", "Key": {"pk": {"S": "a"}}}'
    assert short_way.routable("GetItem", environ, plain, json.loads(plain))  # the same request, plainly
