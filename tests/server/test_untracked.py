"""The embedded server does not keep every item version ever written: moto's model classes list each object they
make for moto's own state dashboard and never let go (74 MB after 60,000 overwrites of one item)."""

from __future__ import annotations

from engine.server.host.serve import build_app


def test_items_written_and_overwritten_are_not_kept_by_the_server_after_it_is_built() -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    for fast in (True, False):  # the fast path and plain moto alike
        build_app(fast=fast)
        for n in range(1_000):  # one item overwritten: each write makes a new Item
            Item(DynamoType({"S": "counter"}), None, {"PK": {"S": "counter"}, "n": {"N": str(n)}})
        assert len(Item.instances_tracked) == 0  # type: ignore[attr-defined]
