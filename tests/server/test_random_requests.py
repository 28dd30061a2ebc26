"""Whatever a client sends that botocore lets through, the server answers with DynamoDB's error types, never a 500:
seeded random requests of every item operation, with values of every type in keys, items and expression
values, and the expressions the patterns and the seed's examples use, against both profiles."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from bench import shared as bench_client
from engine.backends.backend import Backend
from engine.server import profile as profiles

UPDATES = [
    "SET v = :a", "ADD n :a", "REMOVE v", "DELETE s :a", "SET v = v + :a", "SET m.x = :a", "SET l[0] = :a",
    "SET v = if_not_exists(v, :a)", "SET l = list_append(l, :a)", "SET #n = :a", "SET v = :a, v = :a", "ADD n :a, m :a",
]  # fmt: skip
CONDITIONS = [
    "attribute_exists(pk)", "attribute_not_exists(pk)", "v = :a", "v < :a", "begins_with(v, :a)", "contains(v, :a)",
    "size(v) > :a", "attribute_type(v, :a)", "v IN (:a)", "v BETWEEN :a AND :a", "#n = :a",
]  # fmt: skip
KEY_CONDITIONS = ["pk = :a", "pk = :a AND sk > :a", "pk = :a AND begins_with(sk, :a)", "g = :a", "pk < :a"]
REQUESTS = 400  # per profile: about 3 s


class Requests:
    """Random requests from one seed: values of every type, keys right and wrong, expressions with and without
    their names and values."""

    def __init__(self, seed: int, table: str) -> None:
        self.rnd = random.Random(seed)
        self.table = table

    def value(self, depth: int = 0) -> dict[str, Any]:
        r = self.rnd
        kind = r.choice(["S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"] if depth < 2 else ["S", "N"])
        if kind == "S":
            return {"S": r.choice(["a", "", "xxxxx", "1"])}
        if kind == "N":
            return {"N": r.choice(["1", "-5", "1.5", "1e3", "abc", "", "0"])}
        if kind == "B":
            return {"B": r.choice([b"a", b""])}
        if kind in ("BOOL", "NULL"):
            return {kind: r.random() < 0.5}
        if kind == "M":
            return {"M": {r.choice(["a", "b", "pk"]): self.value(depth + 1) for _ in range(r.randint(0, 2))}}
        if kind == "L":
            return {"L": [self.value(depth + 1) for _ in range(r.randint(0, 2))]}
        members: dict[str, list[Any]] = {"SS": ["a", "b", ""], "NS": ["1", "2", "x"], "BS": [b"a", b"b"]}
        return {kind: [r.choice(members[kind]) for _ in range(r.randint(0, 2))]}

    def key(self) -> dict[str, Any]:
        r = self.rnd
        key: dict[str, Any] = {}
        if r.random() < 0.9:
            key["pk"] = self.value() if r.random() < 0.3 else {"S": r.choice(["a", "b"])}
        if r.random() < 0.9:
            key["sk"] = self.value() if r.random() < 0.3 else {"N": r.choice(["1", "2"])}
        if r.random() < 0.1:
            key["other"] = self.value()
        return key

    def item(self) -> dict[str, Any]:
        item = self.key()
        for _ in range(self.rnd.randint(0, 3)):
            item[self.rnd.choice(["v", "g", "n", "m", "pk"])] = self.value()
        return item

    def expressions(self, **request: Any) -> dict[str, Any]:
        """The request with the values and names its expressions use, most of the time."""
        text = " ".join(str(v) for k, v in request.items() if k.endswith("Expression"))
        if ":a" in text and self.rnd.random() < 0.95:
            request["ExpressionAttributeValues"] = {":a": self.value()}
        if "#n" in text and self.rnd.random() < 0.9:
            request["ExpressionAttributeNames"] = {"#n": "n"}
        return request

    def maybe_condition(self) -> dict[str, Any]:
        return {"ConditionExpression": self.rnd.choice(CONDITIONS)} if self.rnd.random() < 0.6 else {}

    def request(self) -> tuple[str, dict[str, Any]]:
        """One random request: the boto3 method's name and its arguments."""
        r, t = self.rnd, self.table
        op = r.choice(["put", "get", "update", "delete", "query", "scan", "bget", "bwrite", "tget", "twrite"])
        if op == "put":
            return "put_item", self.expressions(TableName=t, Item=self.item(), **self.maybe_condition())
        if op == "get":
            return "get_item", {"TableName": t, "Key": self.key(), "ConsistentRead": r.random() < 0.5}
        if op == "update":
            returns = r.choice(["NONE", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW", "ALL_OLD"])
            update = {"UpdateExpression": r.choice(UPDATES), "ReturnValues": returns, **self.maybe_condition()}
            return "update_item", self.expressions(TableName=t, Key=self.key(), **update)
        if op == "delete":
            return "delete_item", self.expressions(TableName=t, Key=self.key(), **self.maybe_condition())
        if op in ("query", "scan"):
            request: dict[str, Any] = {"TableName": t, **({"IndexName": "by-g"} if r.random() < 0.3 else {})}
            if op == "query":
                request["KeyConditionExpression"] = r.choice(KEY_CONDITIONS)
            if r.random() < 0.5:
                request["FilterExpression"] = r.choice(CONDITIONS)
            return op, self.expressions(**request)
        if op == "bget":
            keys = {"Keys": [self.key() for _ in range(r.randint(1, 3))], "ConsistentRead": r.random() < 0.5}
            return "batch_get_item", {"RequestItems": {t: keys}}
        if op == "bwrite":
            writes = [
                {"PutRequest": {"Item": self.item()}} if r.random() < 0.5 else {"DeleteRequest": {"Key": self.key()}}
                for _ in range(r.randint(1, 3))
            ]
            return "batch_write_item", {"RequestItems": {t: writes}}
        if op == "tget":
            return "transact_get_items", {"TransactItems": [{"Get": {"TableName": t, "Key": self.key()}}]}
        return "transact_write_items", {"TransactItems": [self.action() for _ in range(r.randint(1, 2))]}

    def action(self) -> dict[str, Any]:
        kind = self.rnd.choice(["Put", "Update", "Delete", "ConditionCheck"])
        body: dict[str, Any] = {"TableName": self.table}
        body["Item" if kind == "Put" else "Key"] = self.item() if kind == "Put" else self.key()
        if kind == "Update":
            body["UpdateExpression"] = self.rnd.choice(UPDATES)
        if kind == "ConditionCheck":
            body["ConditionExpression"] = self.rnd.choice(CONDITIONS)
        else:
            body.update(self.maybe_condition())
        return {kind: self.expressions(**body)}


@pytest.fixture(params=["exact", "aws-like"])
def table(request: pytest.FixtureRequest, embedded: Backend) -> Iterator[tuple[Any, str]]:
    client = bench_client.client(str(embedded.endpoint_url))  # the wire's types: Backend.client would serialize them
    name = f"random-requests-{request.param}"
    aws_like = profiles.ProfileSpec.parse("aws-like", {"latency_ms": 0, "latency_p99_ms": 0}).tag_value()
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
        **({"Tags": [{"Key": profiles.PROFILE_TAG, "Value": aws_like}]} if request.param == "aws-like" else {}),
    )
    yield client, name
    client.delete_table(TableName=name)


def test_no_request_gets_a_500_and_the_server_answers_on(table: tuple[Any, str]) -> None:
    client, name = table
    answers: Counter[str] = Counter()
    requests = Requests(seed=20261202, table=name)
    for _ in range(REQUESTS):
        op, arguments = requests.request()
        try:
            getattr(client, op)(**arguments)
            answers["ok"] += 1
        except ClientError as e:
            status = e.response["ResponseMetadata"]["HTTPStatusCode"]
            assert status < 500, (op, e.response["Error"])
            answers[e.response["Error"]["Code"]] += 1
        except ParamValidationError:
            answers["refused by botocore"] += 1
    # Not all refused: the requests reach the server, and most kinds of answer show up.
    assert answers["ok"] > REQUESTS // 10 and answers["ValidationException"] > REQUESTS // 10, answers
    assert answers["ConditionalCheckFailedException"] > 0 and answers["TransactionCanceledException"] > 0, answers
