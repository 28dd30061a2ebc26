"""Item sizes and capacity units as DynamoDB counts them.

Size: each attribute's name in UTF-8 plus its value (a string's UTF-8 bytes; a number about one byte per two
significant digits plus one). Units: a write takes one unit per started 1 KB of the item, a read one per started
4 KB with ConsistentRead and half that without; inside a transaction both cost twice. The per-partition
ceilings are DynamoDB's documented 1,000 write units and 3,000 read units per second."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
PARTITION_WCU = 1000
PARTITION_RCU = 3000


def value_size(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, (int, float, Decimal)):
        digits = len(str(abs(value)).replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, Mapping):
        return 3 + sum(len(str(k).encode()) + value_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return 3 + sum(1 + value_size(v) for v in value)
    return len(str(value).encode("utf-8"))


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(size: int, *, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return float(units * (2 if transactional else 1))


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    units = float(max(1, math.ceil(size / READ_UNIT_BYTES)))
    if transactional:
        return units * 2
    return units if consistent else units / 2
