"""The embedded server's fast path answers with the bytes moto's Flask app would: a corpus of botocore requests
over many operations (successes, refusals, odd inputs) replayed on a fast server and on plain moto.

    python -m bench.server.throughput --equivalence
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from typing import Any

from bench.shared import capturing_client
from engine.server.host.process import EmbeddedServer

REFERENCE_SERVER = """
from engine.server.host import serve
server = serve.make_http_server("127.0.0.1", 0, serve.build_app(fast=False))
print("LISTENING", server.server_port, flush=True)
server.serve_forever()
"""


def corpus() -> list[tuple[str, str, dict[str, str], bytes]]:
    """(label, path, headers, body) of botocore requests over many operations, successes and errors."""
    ddb, sent = capturing_client()
    t, h = "eq", "eqh"
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{h}"
    one = {":one": {"N": "1"}}

    def k(pk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": "1"}}

    def n(value: int) -> dict[str, str]:
        return {"N": str(value)}

    def call(operation: str, **params: Any) -> tuple[str, dict[str, Any]]:
        return operation, params

    def put(item: dict[str, Any], **params: Any) -> tuple[str, dict[str, Any]]:
        return call("put_item", TableName=t, Item=item, **params)

    def update(
        key: dict[str, Any], expression: str, values: dict[str, Any], **params: Any
    ) -> tuple[str, dict[str, Any]]:
        return call(
            "update_item", TableName=t, Key=key, UpdateExpression=expression, ExpressionAttributeValues=values, **params
        )

    schema = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    gsi = {
        "IndexName": "gix",
        "Projection": {"ProjectionType": "ALL"},
        "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
    }
    simple = {
        "TableName": h,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
    }
    set_expression = "SET #a = if_not_exists(#a, :z) + :one, l = list_append(l, :l) REMOVE m"
    put_t1 = {"TableName": t, "Item": k("t1"), "ConditionExpression": "attribute_not_exists(pk)"}
    calls = [
        call(
            "create_table",
            TableName=t,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=schema,
            GlobalSecondaryIndexes=[gsi],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "g")],
        ),
        call("create_table", **simple),
        call("create_table", **simple),
        call("list_tables"),
        put(
            {
                **k("a"),
                "n": n(5),
                "g": {"S": "x"},
                "l": {"L": [{"S": "q"}]},
                "m": {"M": {"z": {"BOOL": True}}},
                "ss": {"SS": ["b", "a"]},
            }
        ),
        put({**k("a"), "n": n(6), "g": {"S": "x"}}, ReturnValues="ALL_OLD"),
        put(k("a"), ConditionExpression="attribute_not_exists(pk)"),
        put({**k("a"), "n": n(6), "v": n(2)}, ConditionExpression="n = :v", ExpressionAttributeValues={":v": n(6)}),
        put(
            k("a"),
            ConditionExpression="v = :v",
            ExpressionAttributeValues={":v": n(9)},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        put(k("a"), ConditionExpression="v = :v AND", ExpressionAttributeValues={":v": n(9)}),
        put(k("a"), ConditionExpression="v = :v", ExpressionAttributeValues={":v": n(9), ":unused": n(1)}),
        call("put_item", TableName="missing", Item={"pk": {"S": "a"}}),
        # moto's validations that read the table's and its indexes' key names (Table.attribute_keys, fast_lookup.py)
        put({**k("e"), "g": {"S": ""}}),
        put({"pk": {"S": "e"}, "sk": {"S": ""}}),
        put({**k("e"), "m": {"M": {"s": {"SS": []}}}}),
        call("get_item", TableName=t, Key={**k("a"), "g": {"S": "x"}}),
        put(k("")),
        call("get_item", TableName=t, Key=k("a"), ConsistentRead=True),
        call(
            "get_item", TableName=t, Key=k("a"), ProjectionExpression="#n, l[0]", ExpressionAttributeNames={"#n": "n"}
        ),
        call("get_item", TableName=t, Key=k("zz"), ReturnConsumedCapacity="TOTAL"),
        call("get_item", TableName=t, Key={"pk": {"S": "zz"}}),
        update(k("a"), "ADD n :one", one),
        # the counters' ADD, applied by fast_add.py, and the shapes next to it that go moto's way
        update(k("a"), "  ADD  #c   :v ", {":v": n(-3)}, ExpressionAttributeNames={"#c": "c"}, ReturnValues="NONE"),
        update(k("a"), "ADD d :v", {":v": {"N": "2.5"}}),
        update(k("a"), "ADD d :one", one),
        update(k("a"), "ADD e :v", {":v": {"N": "1e3"}}),
        update(k("a"), "ADD e :one", one),
        update(k("a"), "ADD l :one", one),
        update(k("a"), "ADD sk :one", one),
        update(k("a"), "ADD g :one", one),
        update(k("a"), "ADD count :one", one),
        update(k("a"), "ADD n :one", {":one": {"N": "99999999999999999999999999999999999999"}}),
        call("get_item", TableName=t, Key=k("a"), ConsistentRead=True),
        update(k("a"), "ADD n :one", one, ReturnValues="ALL_NEW"),
        *[
            update(
                k("a"),
                set_expression,
                {**one, ":z": n(0), ":l": {"L": [n(1)]}},
                ReturnValues=rv,
                ExpressionAttributeNames={"#a": "cnt"},
            )
            for rv in ("UPDATED_OLD", "UPDATED_NEW", "ALL_OLD")
        ],
        update(
            k("a"),
            "SET n = n + :one",
            {**one, ":big": n(100)},
            ConditionExpression="n > :big",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        update(k("a"), "SET n = n + :one ADD", one),
        update(k("a"), "SET ss = ss + :one", one),
        update(k("new"), "ADD n :one", one, ReturnValues="ALL_NEW"),
        update(k("new"), "SET pk = :one", {":one": {"S": "1"}}),
        # the validator's walks (fast_walk.traverse) on each kind of node, and its refusals
        update(k("a"), "SET n = :one, n = :one", one),
        update(k("a"), "SET x = nosuch + :one", one),
        # binary values through the request parser and the response serializer
        put(
            {
                **k("bin"),
                "b": {"B": b"\x00\xffab"},
                "bs": {"BS": [b"x", b"\x01"]},
                "m": {"M": {"y": n(1)}},
                "l": {"L": [n(1), {"S": "x"}]},
            }
        ),
        update(k("bin"), "SET m.z = :one, l[0] = :one REMOVE l[1]", one, ReturnValues="ALL_NEW"),
        update(k("bin"), "SET m.q.r = :one", one),
        call("get_item", TableName=t, Key=k("bin")),
        update(k("bin"), "ADD bs :b", {":b": {"BS": [b"z"]}}, ReturnValues="UPDATED_NEW"),
        # ReturnValues NONE, given or not, skips moto's copy of the old item (fast_update.skip_old_item_copy)
        update(k("bin"), "ADD bs :b SET m.y = :one", {":b": {"BS": [b"y"]}, **one}, ReturnValues="NONE"),
        update(k("bin"), "REMOVE l[0]", {}, ReturnConsumedCapacity="TOTAL"),
        update({"pk": {"S": "bin"}}, "ADD n :one", one),  # no sort key: refused where moto reads the old item
        call("delete_item", TableName=t, Key=k("new"), ReturnValues="ALL_OLD"),
        call("delete_item", TableName=t, Key=k("new"), ConditionExpression="attribute_exists(pk)"),
        call("query", TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}),
        call(
            "query",
            TableName=t,
            IndexName="gix",
            KeyConditionExpression="g = :p",
            ExpressionAttributeValues={":p": {"S": "x"}},
        ),
        call(
            "query",
            TableName=t,
            KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
            FilterExpression="n > :n",
            ExpressionAttributeValues={":p": {"S": "a"}, ":s": {"S": "1"}, ":n": n(1)},
            Limit=1,
        ),
        call("scan", TableName=t),
        call(
            "scan", TableName=t, FilterExpression="size(l) > :n", ExpressionAttributeValues={":n": n(0)}, Select="COUNT"
        ),
        call("batch_write_item", RequestItems={t: [{"PutRequest": {"Item": k(f"b{i}")}} for i in range(5)]}),
        call("batch_get_item", RequestItems={t: {"Keys": [k(f"b{i}") for i in range(3)]}}),
        call(
            "transact_write_items",
            TransactItems=[
                {"Put": put_t1},
                {
                    "Update": {
                        "TableName": t,
                        "Key": k("a"),
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": one,
                    }
                },
            ],
        ),
        # an Update inside a transaction that is cancelled (undo.py swaps moto's `copy` around it too), then the item
        call(
            "transact_write_items",
            TransactItems=[
                {
                    "Update": {
                        "TableName": t,
                        "Key": k("a"),
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": one,
                    }
                },
                {"ConditionCheck": {"TableName": t, "Key": k("zz"), "ConditionExpression": "attribute_exists(pk)"}},
            ],
        ),
        call("get_item", TableName=t, Key=k("a"), ConsistentRead=True),
        # UpdateItem on a table with a stream: moto copies the old item for the stream record there
        call(
            "create_table",
            TableName="eqst",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        ),
        *[
            call(
                "update_item",
                TableName="eqst",
                Key={"pk": {"S": "s"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues=one,
                ReturnValues=rv,
            )
            for rv in ("NONE", "ALL_OLD")
        ],
        call("transact_write_items", ClientRequestToken="tok1", TransactItems=[{"Put": put_t1}]),
        *[
            call(
                "transact_write_items",
                ClientRequestToken="tok2",
                TransactItems=[{"Put": {"TableName": t, "Item": k(pk)}}],
            )
            for pk in ("t2", "t2", "t3")
        ],
        call("transact_get_items", TransactItems=[{"Get": {"TableName": t, "Key": k("a")}}]),
        *short_way_errors(call, put, update, k, t),
        *fast_item_calls(call),
        *aws_like_calls(call, k),
        call("update_time_to_live", TableName=h, TimeToLiveSpecification={"Enabled": True, "AttributeName": "exp"}),
        call("describe_time_to_live", TableName=h),
        call("tag_resource", ResourceArn=arn, Tags=[{"Key": "k", "Value": "v"}]),
        call("list_tags_of_resource", ResourceArn=arn),
        call("describe_table", TableName="missing"),
        call(
            "update_table",
            TableName=h,
            BillingMode="PROVISIONED",
            ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
        ),
        call("delete_table", TableName=h),
    ]
    requests = []
    for name, params in calls:
        getattr(ddb, name)(**params)
        request = sent.pop()
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        requests.append((name, "/", headers, body))
    signed = {k: v for k, v in requests[-1][2].items() if k != "X-Amz-Target"}
    odd = [
        ("bad JSON", "/", "PutItem", b"{not json"),
        ("unknown operation", "/", "FooBar", b"{}"),
        ("other path", "/x", "ListTables", b"{}"),
        ("no target", "/", "", b"{}"),
        ("CORS", "/", "ListTables", b"{}"),
        *odd_bodies(t),
        *other_account(),
    ]
    for label, path, target, body in odd:
        headers = {**signed, **({"X-Amz-Target": "DynamoDB_20120810." + target} if target else {})}
        if label == "CORS":
            headers["Origin"] = "http://x"
        elif label.startswith("account "):
            headers["X-Moto-Account-Id"] = "111122223333"
        requests.append((label, path, headers, body))
    return requests


def short_way_errors(call: Any, put: Any, update: Any, k: Any, t: str) -> list[tuple[str, dict[str, Any]]]:
    """Refusals of the calls the short way answers (engine/server/fast/short_way.py), one of each kind."""
    one = {":one": {"N": "1"}}
    check = {"ConditionCheck": {"TableName": t, "Key": k("a"), "ConditionExpression": "attribute_not_exists(pk)"}}
    return [
        call("get_item", TableName="missing", Key=k("a")),
        call(
            "update_item", TableName="missing", Key=k("a"), UpdateExpression="ADD n :one", ExpressionAttributeValues=one
        ),
        call("delete_item", TableName="missing", Key=k("a")),
        put(k("rv"), ReturnValues="ALL_NEW"),
        put(k("rc"), ReturnConsumedCapacity="TOTAL"),
        put(k("rc"), ReturnConsumedCapacity="BOGUS"),
        update(k("a"), "ADD n :one", one, ReturnValues="BOGUS"),
        call(
            "delete_item",
            TableName=t,
            Key=k("a"),
            ConditionExpression="n = :v",
            ExpressionAttributeValues={":v": one[":one"]},
        ),
        call("get_item", TableName=t, Key=k("a"), ProjectionExpression="#x"),
        call("get_item", TableName=t, Key=k("a"), AttributesToGet=["n"], ProjectionExpression="n"),
        call(
            "query", TableName="missing", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}
        ),
        call(
            "query",
            TableName=t,
            IndexName="nosuch",
            KeyConditionExpression="g = :p",
            ExpressionAttributeValues={":p": {"S": "x"}},
            ReturnConsumedCapacity="INDEXES",
        ),
        call("transact_write_items", TransactItems=[check]),
        call("transact_write_items", TransactItems=[{"Put": {"TableName": "missing", "Item": k("a")}}]),
        call("transact_get_items", TransactItems=[{"Get": {"TableName": "missing", "Key": k("a")}}]),
        call("batch_get_item", RequestItems={"missing": {"Keys": [k("a")]}}),
        call(
            "batch_write_item", RequestItems={t: [{"PutRequest": {"Item": k("d")}}, {"PutRequest": {"Item": k("d")}}]}
        ),
        call("batch_write_item", RequestItems={t: [{"DeleteRequest": {"Key": k(f"b{i}")}} for i in range(2)]}),
    ]


def fast_item_calls(call: Any) -> list[tuple[str, dict[str, Any]]]:
    """PutItem and GetItem on tables without an index, where fast_item.py answers plain items, and the requests next
    to them it leaves to moto (other types, other members, conditions failing, refusals)."""
    p, q = "eqp", "eqn"

    def k(pk: str, **attrs: Any) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": "1"}, **attrs}

    def put(item: dict[str, Any], **params: Any) -> tuple[str, dict[str, Any]]:
        return call("put_item", TableName=p, Item=item, **params)

    def get(key: dict[str, Any], **params: Any) -> tuple[str, dict[str, Any]]:
        return call("get_item", TableName=p, Key=key, **params)

    n, s = (lambda v: {"N": v}), (lambda v: {"S": v})
    version = {"ConditionExpression": "attribute_not_exists(pk) OR #v = :v", "ExpressionAttributeNames": {"#v": "v"}}
    return [
        call(
            "create_table",
            TableName=p,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
        ),
        call(
            "create_table",
            TableName=q,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
        ),
        put(k("a", s=s("x"), n=n("7"), b={"BOOL": False}, u=s('é✓"q"'), e=s(""))),
        get(k("a")),
        get(k("a"), ConsistentRead=True),
        get(k("a"), ConsistentRead=False, ReturnConsumedCapacity="NONE"),
        get(k("a"), ReturnConsumedCapacity="TOTAL"),
        get(k("a"), ProjectionExpression="n"),
        get(k("nosuch")),
        get({"pk": s("a")}),
        get(k(""), ConsistentRead=True),
        get({**k("a"), "x": s("1")}),
        # numbers: many digits, a fraction, signs, zeros, an exponent and a blank (moto's own way)
        *[
            put(k("num", n=n(v)))
            for v in ("12345678901234567890123456789012345678", "-0.00000000000000000000000000000000000001", "007")
        ],
        *[put(k("num", n=n(v))) for v in ("-0", "1e3", "1E-131", " 7", "1" * 39, "0." + "0" * 38 + "1", "x")],
        get(k("num")),
        # types fast_item leaves to moto, in a PutItem and then in the GetItem's answer
        put(k("set", ss={"SS": ["b", "a"]}, ns={"NS": ["1", "2"]})),
        get(k("set")),
        put(k("map", m={"M": {"x": n("1"), "y": {"M": {"z": {"BOOL": True}}}}}, l={"L": [s("q"), n("2")]})),
        get(k("map")),
        put(k("null", z={"NULL": True}, bin={"B": b"\x00\xff"})),
        get(k("null")),
        put(k("es", ss={"SS": []})),
        # attribute names that are type names, and keys at their limits and past them
        put(k("names", N=s("n"), S=n("1"), NULL={"BOOL": True})),
        get(k("names")),
        put(k("x" * 256)),
        put(k("x" * 257)),
        put(k("y" * 2049)),
        put({"pk": s("long"), "sk": s("z" * 1025)}),
        put({"pk": s(""), "sk": s("1")}),
        put({"pk": s("nosk")}),
        put({"pk": n("1"), "sk": s("1")}),
        # an item near 400 KB, and one past it
        put(k("big", v=s("v" * 409_000))),
        get(k("big")),
        put(k("big", v=s("v" * 409_600))),
        # members fast_item leaves to moto
        put(k("rv", n=n("1")), ReturnValues="ALL_OLD"),
        put(k("rv", n=n("2")), ReturnValues="NONE", ReturnConsumedCapacity="NONE"),
        put(k("rv", n=n("3")), ReturnConsumedCapacity="TOTAL"),
        put(k("rv"), ReturnValues="ALL_NEW"),
        put(k("rv"), Expected={"n": {"Value": n("3")}}),
        # conditions: passing, failing, with reserved names through ExpressionAttributeNames, and refused
        put(k("c", v=n("1")), ConditionExpression="attribute_not_exists(pk)"),
        put(k("c", v=n("1")), ConditionExpression="attribute_not_exists(pk)"),
        put(k("c", v=n("2")), **version, ExpressionAttributeValues={":v": n("1")}),
        put(k("c", v=n("3")), **version, ExpressionAttributeValues={":v": n("1")}),
        put(
            k("c", v=n("3")),
            **version,
            ExpressionAttributeValues={":v": n("1")},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        put(
            k("c", v=n("3")),
            ConditionExpression="#count = :v AND #size <> :w",
            ExpressionAttributeNames={"#count": "v", "#size": "size"},
            ExpressionAttributeValues={":v": n("2"), ":w": s("big")},
        ),
        put(k("c"), ConditionExpression="count = :v", ExpressionAttributeValues={":v": n("3")}),
        put(k("c"), ConditionExpression="v = :v AND", ExpressionAttributeValues={":v": n("3")}),
        put(k("c"), ConditionExpression="v = :nope", ExpressionAttributeValues={":v": n("3")}),
        put(
            k("c"),
            ConditionExpression="v = :v",
            ExpressionAttributeValues={":v": n("3")},
            ExpressionAttributeNames={"#x": "x"},
        ),
        put(k("c"), ConditionExpression="v = :v", ExpressionAttributeValues={}),
        put(k("c"), ExpressionAttributeValues={":v": n("3")}),
        put(k("c"), ExpressionAttributeNames={"#v": "v"}),
        put(k("c"), ConditionExpression=""),
        get(k("c")),
        # counters past 38 digits, and past the item size limit
        put(k("nines", n=n("9" * 38), v=s("v" * 409_500))),
        *[
            call(
                "update_item",
                TableName=p,
                Key=k("nines"),
                UpdateExpression=f"ADD {a} :one",
                ExpressionAttributeValues={":one": n("1")},
            )
            for a in ("n", "w", "longer_name_" * 10)
        ],
        call(
            "update_item",
            TableName=p,
            Key=k("nines"),
            UpdateExpression="ADD n :m",
            ExpressionAttributeValues={":m": n("-" + "9" * 38)},
        ),
        get(k("nines")),
        # the items written here, through moto's other operations
        call(
            "update_item",
            TableName=p,
            Key=k("a"),
            UpdateExpression="SET s = :x ADD n :one",
            ExpressionAttributeValues={":x": s("y"), ":one": n("1")},
            ReturnValues="ALL_NEW",
        ),
        call(
            "update_item",
            TableName=p,
            Key=k("c"),
            UpdateExpression="ADD v :one",
            ExpressionAttributeValues={":one": n("1")},
        ),
        call("query", TableName=p, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": s("c")}),
        call("scan", TableName=p, FilterExpression="b = :f", ExpressionAttributeValues={":f": {"BOOL": False}}),
        call("delete_item", TableName=p, Key=k("num"), ReturnValues="ALL_OLD"),
        call(
            "transact_write_items",
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": p,
                        "Key": k("c"),
                        "ConditionExpression": "v = :v",
                        "ExpressionAttributeValues": {":v": n("4")},
                    }
                }
            ],
        ),
        # a table whose key is a number
        call("put_item", TableName=q, Item={"id": n("5"), "v": s("x")}),
        call("put_item", TableName=q, Item={"id": n("5.0")}, ConditionExpression="attribute_not_exists(id)"),
        call("put_item", TableName=q, Item={"id": s("5")}),
        call("get_item", TableName=q, Key={"id": n("5")}),
        call("get_item", TableName=q, Key={"id": n("6")}),
        call("get_item", TableName=q, Key={"id": s("5")}),
        call("delete_table", TableName=q),
        # a table with a stream (moto records the write there)
        call("put_item", TableName="eqst", Item={"pk": s("p"), "v": n("1")}),
        call("get_item", TableName="eqst", Key={"pk": s("p")}),
    ]


def aws_like_calls(call: Any, k: Any) -> list[tuple[str, dict[str, Any]]]:
    """The hot calls on a table of the aws-like profile (SIMULATED; no network time, no random draw: strongly
    consistent reads only; not BatchGetItem, which the model reads as eventual whatever its tables ask), where
    the model wraps moto's answer."""
    a = "eqaws"
    spec = "aws-like latency_ms=0 latency_p99_ms=0 commit_ms=0"
    one = {":one": {"N": "1"}}
    return [
        call(
            "create_table",
            TableName=a,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            Tags=[{"Key": "ddblab:profile", "Value": spec}],
        ),
        call("put_item", TableName=a, Item={**k("a"), "n": {"N": "1"}}),
        call("put_item", TableName=a, Item=k("a"), ConditionExpression="attribute_not_exists(pk)"),
        call("update_item", TableName=a, Key=k("a"), UpdateExpression="ADD n :one", ExpressionAttributeValues=one),
        call("get_item", TableName=a, Key=k("a"), ConsistentRead=True),
        call(
            "query",
            TableName=a,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "a"}},
            ConsistentRead=True,
        ),
        call("transact_write_items", TransactItems=[{"Put": {"TableName": a, "Item": k("t")}}]),
        call("transact_get_items", TransactItems=[{"Get": {"TableName": a, "Key": k("t")}}]),
        call("batch_write_item", RequestItems={a: [{"PutRequest": {"Item": k("w")}}]}),
        call("delete_item", TableName=a, Key=k("a"), ReturnValues="ALL_OLD"),
        call("delete_table", TableName=a),
    ]


def odd_bodies(t: str) -> list[tuple[str, str, str, bytes]]:
    """Bodies moto reads otherwise than json.loads does (as a query string, as UTF-8 only) or takes in part (its
    parser drops members it does not know and null ones): the short way must leave each to moto, or agree."""
    key = '"Key": {"pk": {"S": "a"}, "sk": {"S": "1"}}'
    get = f'{{"TableName": "{t}", {key}}}'
    return [
        (
            "body with &",
            "/",
            "PutItem",
            f'{{"TableName": "{t}", "Item": {{"pk": {{"S": "&Action=ListTables"}}}}}}'.encode(),
        ),
        (
            "unknown and null members",
            "/",
            "GetItem",
            f'{{"TableName": "{t}", {key}, "Bogus": 1, "Limit": null}}'.encode(),
        ),
        ("leading space", "/", "GetItem", b"  " + get.encode()),
        ("UTF-8 BOM", "/", "GetItem", b"\xef\xbb\xbf" + get.encode()),
        ("UTF-16", "/", "GetItem", get.encode("utf-16-le")),
        ("a list", "/", "GetItem", b"[1]"),
        ("a null key value", "/", "GetItem", f'{{"TableName": "{t}", "Key": {{"pk": null}}}}'.encode()),
    ]


def other_account() -> list[tuple[str, str, str, bytes]]:
    """Calls in another account (moto's X-Moto-Account-Id header), where a table of the same name as another
    account's is another table: the direct answers (direct_item.py) find the account as moto does."""
    table = '"TableName": "eqacct"'
    key = '"Key": {"pk": {"S": "a"}}'
    return [
        ("account get, no table", "/", "GetItem", f"{{{table}, {key}}}".encode()),
        (
            "account create_table",
            "/",
            "CreateTable",
            f'{{{table}, "BillingMode": "PAY_PER_REQUEST", "KeySchema": [{{"AttributeName": "pk", "KeyType": "HASH"}}], '
            '"AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}'.encode(),
        ),
        ("account put", "/", "PutItem", f'{{{table}, "Item": {{"pk": {{"S": "a"}}, "n": {{"N": "1"}}}}}}'.encode()),
        (
            "account add",
            "/",
            "UpdateItem",
            f'{{{table}, {key}, "UpdateExpression": "ADD n :one", '
            '"ExpressionAttributeValues": {":one": {"N": "2"}}}'.encode(),
        ),
        ("account get", "/", "GetItem", f"{{{table}, {key}}}".encode()),
        ("account list_tables", "/", "ListTables", b"{}"),
    ]


def raw_exchange(port: int, path: str, headers: dict[str, str], body: bytes) -> tuple[str, str]:
    """One request on a fresh connection; the response head and body as text."""
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")]
    lines.append(f"Content-Length: {len(body)}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while True:
            head, sep, rest = data.partition(b"\r\n\r\n")
            found = re.search(rb"(?im)^content-length: *(\d+)", head) if sep else None
            if found and len(rest) >= int(found.group(1)):
                return head.decode("latin-1"), rest[: int(found.group(1))].decode()
            chunk = sock.recv(65536)
            if not chunk:
                return data.decode("latin-1"), ""
            data += chunk


def _comparable(head: str, body: str) -> tuple[str, str]:
    # Request ids are random; table descriptions carry creation times (which change their length and CRC).
    head = re.sub(r"(?im)^(x-amzn-requestid): .*$", r"\1: *", head)
    timeless = re.sub(r'"(CreationDateTime|LastIncreaseDateTime|LastDecreaseDateTime)": [0-9.e+]+', r'"\1": *', body)
    timeless = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+", "*", timeless)  # a stream's label and ARN
    if timeless != body:
        head = re.sub(r"(?im)^(x-amz-crc32|content-length): .*$", r"\1: *", head)
    return head, timeless


def equivalence() -> list[str]:
    """Replay the corpus on a fresh fast server and a fresh plain-moto one; return the differences."""
    requests = corpus()
    answers: list[list[tuple[str, str]]] = []
    reference = subprocess.Popen(
        [sys.executable, "-c", REFERENCE_SERVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )  # moto logs a traceback for each 500
    try:
        assert reference.stdout is not None
        ref_port = int(reference.stdout.readline().split()[1])
        with EmbeddedServer() as server:
            assert server.port is not None
            for port in (ref_port, server.port):
                answers.append(
                    [_comparable(*raw_exchange(port, path, headers, body)) for _, path, headers, body in requests]
                )
    finally:
        reference.terminate()
        reference.wait(10)
    differences = []
    for (label, *_), plain, fast in zip(requests, *answers, strict=True):
        if plain != fast:
            differences.append(f"{label}:\n    plain moto: {json.dumps(plain)}\n    fast path:  {json.dumps(fast)}")
    print(f"equivalence: {len(requests)} requests, {len(differences)} differences")
    return differences
