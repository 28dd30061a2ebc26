"""The corpus: botocore requests over many operations, successes and errors, then bodies botocore would not send."""

from __future__ import annotations

from typing import Any

from bench.server.equivalence.aws_like_calls import aws_like_calls
from bench.server.equivalence.fast_item_calls import fast_item_calls
from bench.server.equivalence.raw_bodies import hostile_bodies, odd_bodies, other_account
from bench.server.equivalence.short_way_refusals import short_way_errors
from bench.shared import capturing_client


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
        *hostile_bodies(t),
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
