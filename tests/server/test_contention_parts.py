"""The aws-like model's parts on their own, at instants the test picks (no server, no clock): a partition key's
bucket and an item's transaction hold. test_aws_like.py shows the same behaviours through the server."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.server.faithful.limits import Refused
from engine.server.profile import ProfileSpec
from engine.server.simulated.buckets import Buckets
from engine.server.simulated.holds import Holds
from engine.server.simulated.refusals import encode_error

REF = ("us-east-1", "orders")
SLOW = ProfileSpec.parse("aws-like", {"write_units": 5, "read_units": 5})  # a bucket of one unit, 5 a second


def write(key: str) -> list[tuple[str, tuple[str, str]]]:
    return [("write", (key, "S"))]


def test_a_hot_key_is_throttled_until_its_bucket_refills_and_other_keys_are_not() -> None:
    buckets, counts = Buckets(), Counter[str]()
    buckets.admit("PutItem", {}, REF, write("HOT"), SLOW, 0.0, counts)
    with pytest.raises(Refused) as refused:
        buckets.admit("PutItem", {}, REF, write("HOT"), SLOW, 0.1, counts)  # 0.5 of a unit back: not enough
    assert refused.value.code == "ProvisionedThroughputExceededException"
    buckets.admit("PutItem", {}, REF, write("COLD"), SLOW, 0.1, counts)  # another partition key, its own bucket
    buckets.admit("PutItem", {}, REF, write("HOT"), SLOW, 0.2, counts)  # a whole unit back after 1/5 s
    assert counts["throttled"] == 1


def test_a_transaction_larger_than_the_bucket_passes_when_it_is_full_and_leaves_it_in_debt() -> None:
    buckets, counts = Buckets(), Counter[str]()
    twrite = [("twrite", ("HOT", "S"))]  # 2 units, the bucket holds 1
    buckets.admit("TransactWriteItems", {}, REF, twrite, SLOW, 0.0, counts)
    with pytest.raises(Refused) as refused:
        buckets.admit("TransactWriteItems", {}, REF, twrite, SLOW, 0.3, counts)  # -1 + 1.5 units: not full
    assert refused.value.code == "TransactionCanceledException"
    assert refused.value.extra["CancellationReasons"][0]["Code"] == "ThrottlingError"
    buckets.admit("TransactWriteItems", {}, REF, twrite, SLOW, 0.4, counts)  # full again: the rate holds


def test_a_held_item_refuses_writes_and_transactions_until_the_commit_window_ends() -> None:
    holds, counts = Holds(), Counter[str]()
    holds.hold(REF, [("twrite", ("A", "S"))], until=1.0)
    with pytest.raises(Refused) as single:
        holds.check("PutItem", REF, write("A"), 0.5, counts)
    assert single.value.code == "TransactionConflictException"
    with pytest.raises(Refused) as cancelled:
        holds.check("TransactWriteItems", REF, [("twrite", ("B", "S")), ("twrite", ("A", "S"))], 0.5, counts)
    reasons = [r["Code"] for r in cancelled.value.extra["CancellationReasons"]]
    assert reasons == ["None", "TransactionConflict"]  # in the transaction's order, only the held item
    holds.check("GetItem", REF, [("read", ("A", "S"))], 0.5, counts)  # a read outside a transaction never waits
    holds.check("PutItem", REF, write("A"), 1.0, counts)  # the window is over
    assert counts["transaction_conflicts"] == 2 and not holds.held(REF, ("A", "S"), 1.0)


def test_a_cancelled_transaction_is_answered_with_dynamodbs_error_body_and_its_reasons() -> None:
    holds = Holds()
    holds.hold(REF, [("twrite", ("A", "S"))], until=1.0)
    with pytest.raises(Refused) as cancelled:
        holds.check("TransactWriteItems", REF, [("twrite", ("A", "S"))], 0.0, Counter())
    body = encode_error(cancelled.value).decode()
    assert '"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"' in body
    assert '"CancellationReasons": [{"Code": "TransactionConflict"' in body


def test_an_item_key_finds_moto_s_own_keys_and_is_one_object_per_value() -> None:
    """The model's keys are interned KeyValues: equal to, and hashed as, moto's DynamoType of the same value (so
    they find moto's items), one object per value (a later request's lookup is by identity), a number by value."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    from engine.server import moto_store

    for raw in ({"S": "order-1"}, {"B": "AAE="}, {"N": "1.0"}):
        key, moto_key = moto_store.key_value(raw), DynamoType(raw)
        assert key == moto_key and moto_key == key and hash(key) == hash(moto_key)
        assert moto_store.key_value(dict(raw)) is key
        assert {moto_key: "item"}.get(key) == "item"
    assert moto_store.key_value({"N": "1"}) == DynamoType({"N": "1.00"})
    assert moto_store.key_value({"S": "1"}) != DynamoType({"N": "1"}) and moto_store.key_value(
        {"S": "a"}
    ) != DynamoType({"S": "b"})
    moto_store.INTERNED.clear()  # past its bound the table starts afresh: a new object, still equal
    assert moto_store.key_value({"S": "order-1"}) == moto_store.key_value({"S": "order-1"})
