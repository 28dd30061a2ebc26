"""PutItem and GetItem where fast_item.py answers, and the calls next to them it leaves to moto."""

from __future__ import annotations

from typing import Any


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
