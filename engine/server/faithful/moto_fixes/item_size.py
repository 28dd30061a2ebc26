"""moto's item-size limit set to DynamoDB's, and skipped where the request was sized already.

moto refuses items above 405,000 bytes (its guess at 400 KB); DynamoDB's limit is 400 KB = 409,600 bytes.
"""

from __future__ import annotations

from typing import Any

from engine.server.faithful.limits import MAX_ITEM_BYTES

# Operations whose every item moto writes is one the request carried whole, which `check` has sized as DynamoDB
# counts (and refused past MAX_ITEM_BYTES): a PutItem's Item, a BatchWriteItem's puts. moto need not size them
# again, attribute after attribute (its walk was about 80 Python calls for a three-attribute PutItem, and it
# counted numbers by their digits, more than DynamoDB does). An UpdateItem can grow an item: moto still sizes it.
SIZED_WHOLE = frozenset({"PutItem", "BatchWriteItem"})
request_sized = False  # True while moto applies such a request (FaithfulDynamoDB sets it, under its lock)


def install() -> None:
    """Requests are checked by limits.check first, so moto's own check only has to catch an UpdateItem that
    grows an item past the limit: give it DynamoDB's figure."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models import dynamo_type

    if getattr(dynamo_type.LimitedSizeDict, "_ddblab_limit", False):
        return

    def size_of(value: Any) -> int:
        if type(value) is not dynamo_type.DynamoType:
            return len(str(value).encode())
        # DynamoType.size of a number or a string, without its five type tests: what an item's counter is made of.
        if value.type == "N":
            return len(str(value.value))
        if value.type == "S" and type(value.value) is str:
            return len(value.value.encode("utf-8"))
        return int(value.size())

    def setitem(self: dict[str, Any], key: str, value: Any) -> None:
        if not request_sized:
            total = len(key.encode()) + size_of(value)
            for k, v in self.items():  # a loop, not sum() over a generator: this runs for every attribute written
                if k != key:
                    total += len(k.encode()) + size_of(v)
            if total > MAX_ITEM_BYTES:
                raise ItemSizeTooLarge
        dict.__setitem__(self, key, value)

    dynamo_type.LimitedSizeDict.__setitem__ = setitem  # type: ignore[method-assign]
    dynamo_type.LimitedSizeDict._ddblab_limit = True  # type: ignore[attr-defined]
